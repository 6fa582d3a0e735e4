"""Whole captures, damaged, through every view of the command: no internal error and no traceback.

Each case takes a run of consecutive records from a bundled capture, edits some of them past their
Ethernet header (bytes, flipped bits, insertions, deletions, limit integers, the protocols' separators),
sometimes shuffles, repeats or cuts the run, and gives the file to ``dissect`` in one of its views
(``-j 2`` among them), in this process. A case fails where the command exits with a code other than 0,
1 or 2, writes a traceback, or reports an internal error: its own ("internal error: ..." on stderr), a
frame's ("[internal error]") or a dissector's ("internal dissector error", in the views that show
findings). Its file is kept in --keep. Unlike tools/fuzz.py, which fuzzes one dissector's bytes at a
time, this runs the whole pipeline: reassembly, the analyses, the renderers and the workers, compiled
where the build is.

    python tools/fuzz_views.py [--cases N] [--seed S] [--keep DIR] [CAPTURE ...]
"""

import argparse
import glob
import os
import random
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import capkit  # noqa: E402

VIEWS = ([], ["-V"], ["-x"], ["-T", "json"], ["-T", "jsonl"], ["--stats"], ["--stats", "-T", "json"],
         ["-T", "jsonl", "--stats"], ["-T", "fields", "-e", "frame.number", "-e", "odamex.name", "-e", "expert.code"],
         ["-V", "-j", "2"], ["--stats", "-j", "2"])
EDGES = (0, 0xFFFFFFFF, 0x7FFFFFFF, 65535, 65536)
SEPARATORS = (b"\xff\xff", b"\x00\x00", b"\xc2\xa9", b"\n\n", b"\\\\", b"-9")
RECORD_HEADER, ETHERNET = 16, 14
MAX_RUN = 400  # records a case takes


def pcap_records(data):
    """A little-endian pcap file's header and its records (header and bytes)."""
    if data[:4] != b"\xd4\xc3\xb2\xa1":
        raise SystemExit("only little-endian pcap files are supported as seeds")
    offsets = capkit.record_offsets(data)
    return data[:24], [data[start:end] for start, end in zip(offsets, offsets[1:] + [len(data)])]


def edit_record(rng, record):
    """One to five edits past the Ethernet header; the record's lengths follow them, but now and then not."""
    data = bytearray(record)
    for _ in range(rng.randrange(1, 6)):
        if len(data) <= RECORD_HEADER + ETHERNET + 28:
            break
        at, pick = rng.randrange(RECORD_HEADER + ETHERNET, len(data)), rng.random()
        if pick < 0.4:
            data[at] = rng.randrange(256)
        elif pick < 0.55:
            data[at] ^= 1 << rng.randrange(8)
        elif pick < 0.7:
            data[at:at] = rng.randbytes(rng.randrange(1, 20))
        elif pick < 0.8:
            del data[at:at + rng.randrange(1, 30)]
        elif pick < 0.9:
            data[at:at + 4] = struct.pack("<I", rng.choice(EDGES))
        else:
            data[at:at + 2] = rng.choice(SEPARATORS)
    if rng.random() < 0.98:
        captured = len(data) - RECORD_HEADER
        wire = struct.unpack_from("<I", data, 12)[0]
        # the length on the wire kept, or 7 bytes more than captured: a record the snap length cut
        data[8:16] = struct.pack("<II", captured, max(wire, captured) if rng.random() < 0.8 else captured + 7)
    return bytes(data)


def make_case(rng, header, records):
    """A capture file: the pcap ``header`` and a run of consecutive ``records``, some of them edited."""
    start = rng.randrange(len(records))
    run = records[start:start + rng.randrange(1, MAX_RUN + 1)]
    for _ in range(rng.randrange(1, 2 + len(run) // 4)):
        index = rng.randrange(len(run))
        run[index] = edit_record(rng, run[index])
    if rng.random() < 0.2:
        rng.shuffle(run)
    if rng.random() < 0.2:
        run += run[:rng.randrange(len(run))]
    case = header + b"".join(run)
    return case[:rng.randrange(24, len(case) + 1)] if rng.random() < 0.05 else case


def run_case(main, view, path, out_path, err_path):
    """The command's exit code, and what it wrote to stdout and to stderr."""
    saved = os.dup(1), os.dup(2)
    files = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), \
        os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.dup2(files[0], 1)
        os.dup2(files[1], 2)
        try:
            code = main(view + [path])
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:  # what the command let through is the finding
            code = f"{type(exc).__name__}: {exc}"
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, *files):
            os.close(fd)
    return code, _read(out_path), _read(err_path)


def _read_bytes(path):
    with open(path, "rb") as stream:
        return stream.read()


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as stream:
        return stream.read()


def failure(code, output, errors):
    """Why a case failed, or None."""
    if code not in (0, 1, 2):
        return f"exit {code!r}"
    for text in (errors, output):
        for mark in ("Traceback", "internal error", "internal dissector error"):
            at = text.find(mark)
            if at >= 0:
                return text[at:text.find("\n", at) if "\n" in text[at:] else None][:300]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("captures", nargs="*", help="pcap files to start from (default: captures/*.pcap)")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", default=".", help="where failing cases are written (default: here)")
    args = parser.parse_args(argv)
    from dissect.cli import main as dissect_main
    rng = random.Random(args.seed)
    seeds = [pcap_records(_read_bytes(path))
             for path in args.captures or sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap")))]
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "case.pcap")
        out_path, err_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
        for number in range(args.cases):
            header, records = rng.choice(seeds)
            case, view = make_case(rng, header, records), rng.choice(VIEWS)
            with open(path, "wb") as out:
                out.write(case)
            why = failure(*run_case(dissect_main, view, path, out_path, err_path))
            if why is not None:
                failed += 1
                kept = os.path.join(args.keep, f"views-crash-{args.seed}-{number}.pcap")
                with open(kept, "wb") as out:
                    out.write(case)
                print(f"case {number}: dissect {' '.join(view)} {kept}: {why}", flush=True)
    print(f"{args.cases} cases, {failed} failed (seed {args.seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
