"""Files in and out as tshark users expect: standard input, compressed captures, -w of the frames
shown, -c, -T fields, and tshark's small habits (-q, -v, -n, views that ignore an option)."""

import bz2
import csv
import gzip
import io
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import zlib

import lz4.frame
import pytest
import zstandard

import capkit

from conftest import ROOT, capture, jsonl, run_cli
from dissect.capture.sources import open_capture

SESSION = capture("netquake-session.pcap")
COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
               "zst": lambda data: zstandard.ZstdCompressor().compress(data), "lz4": lz4.frame.compress}


def _run_stdin(*args, data):
    proc = subprocess.run([sys.executable, "-m", "dissect", *map(str, args)], input=data, capture_output=True,
                          cwd=ROOT, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def _session_pcapng(tmp_path):
    """The NetQuake session written as pcapng (a section header, an interface, an enhanced packet block a
    frame), and the offset where its first packet block ends."""
    path = tmp_path / "session.pcapng"
    capkit.write_pcapng(path, [(0, frame.ts, frame.data) for frame in open_capture(SESSION)], [1])
    data = path.read_bytes()
    end = 0
    for _ in range(3):
        end += int.from_bytes(data[end + 4:end + 8], "little")
    return path, data, end


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_pipes_records_are_read_as_they_come(tmp_path, fmt):
    """-c 1 on standard input ends after the first record although the writer keeps the pipe open: reading
    never waits for more of a pipe than the record at hand (the records are cut from what each read returns)."""
    if fmt == "pcap":
        data = open(SESSION, "rb").read()
        first = 24 + 16 + int.from_bytes(data[32:36], "little")  # the file header and the first record
    else:
        _, data, first = _session_pcapng(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-c", "1", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        proc.stdin.write(data[:first])
        proc.stdin.flush()
        code = proc.wait(timeout=30)  # with the pipe still open: a reader waiting for more would time out
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
    assert code == 0, err
    assert out.decode().splitlines() == run_cli("-c", "1", SESSION)[1].splitlines()


@pytest.mark.parametrize("view", [(), ("-V",), ("-x",)])
def test_pcapng_gives_what_pcap_gives(tmp_path, view):
    """The same frames in either format, from a file and through a pipe (where blocks come in pieces). The
    views that print the times to the microsecond: a pcapng time is its count of microseconds times 1e-6, a
    pcap time its seconds plus that, and the two floats may differ in the last bit (JSON prints them whole)."""
    path, data, _ = _session_pcapng(tmp_path)
    expected = run_cli(*view, SESSION)
    assert run_cli(*view, path) == expected
    assert _run_stdin(*view, "-", data=data) == expected
    assert expected[0] == 0 and len(expected[1].splitlines()) > 40


@pytest.mark.parametrize("view", [(), ("-V",), ("-x",), ("-T", "jsonl"), ("-T", "json"), ("--stats",),
                                  ("-T", "fields", "-e", "frame.number", "-e", "netquake.control.command")])
def test_standard_input_gives_what_the_file_gives(view):
    data = open(SESSION, "rb").read()
    expected = run_cli(*view, SESSION)
    assert _run_stdin(*view, "-", data=data) == expected
    assert _run_stdin(*view, "-r", "-", data=data) == expected
    assert expected[0] == 0 and expected[1]


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_compressed_captures_are_recognized_by_their_bytes(tmp_path, suffix):
    data = open(capture("soldat-session.pcap"), "rb").read()
    packed = tmp_path / "capture.bin"  # no telling name: the magic bytes decide
    packed.write_bytes(COMPRESSORS[suffix](data))
    expected = run_cli("-T", "jsonl", capture("soldat-session.pcap"))
    assert run_cli("-T", "jsonl", packed) == expected
    assert _run_stdin("-T", "jsonl", "-", data=packed.read_bytes()) == expected


def test_a_truncated_compressed_capture_keeps_the_frames_before_the_cut(tmp_path):
    packed = tmp_path / "cut.pcap.gz"
    whole = gzip.compress(open(SESSION, "rb").read())
    packed.write_bytes(whole[:len(whole) // 2])
    code, out, err = run_cli(packed)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"dissect: {packed}")
    assert "Traceback" not in err and len(out.splitlines()) > 5


@pytest.mark.parametrize("suffix", ["gz", "xz", "lz4"])
def test_a_damaged_compressed_capture_keeps_the_frames_made_before_the_damage(tmp_path, suffix):
    """A few bytes damaged halfway through a compressed capture (the session 40 times, 160 KB; lz4 makes blocks of
    64 KB): the frames decompressed before the damage come out, then one line says it is damaged (all were lost where
    the first 16 KB chunk of input met the damage in one step, which loses what it would have made). The frames shown
    are the capture's own first frames."""
    session = open(SESSION, "rb").read()
    data = session + session[24:] * 39
    plain = tmp_path / "plain.pcap"
    plain.write_bytes(data)
    damaged = bytearray(COMPRESSORS[suffix](data))
    middle = len(damaged) // 2
    damaged[middle:middle + 4] = bytes(b ^ 0xFF for b in damaged[middle:middle + 4])
    packed = tmp_path / f"damaged.pcap.{suffix}"
    packed.write_bytes(bytes(damaged))
    code, out, err = run_cli("-T", "jsonl", packed)
    assert code == 2 and err.count("\n") == 1 and "damaged" in err and "Traceback" not in err
    shown = [r for r in jsonl(out) if r["kind"] == "frame"]
    whole = [r for r in jsonl(run_cli("-T", "jsonl", plain)[1]) if r["kind"] == "frame"]
    assert 3 <= len(shown) < len(whole)
    assert [r["info"] for r in shown] == [r["info"] for r in whole[:len(shown)]]


ZEROS = 16 << 20  # records of zeros: a compressed capture of empty records inflates a thousand to a million times


def _zeros_pcap():
    record = struct.pack("<IIII", 1700000000, 0, 262144, 262144) + bytes(262144)
    return open(SESSION, "rb").read(24) + record * (ZEROS // len(record) + 1)


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_each_step_of_decompression_makes_at_most_a_step_of_bytes(tmp_path, suffix):
    """A 16 KiB chunk of compressed zeros made 16 MB (gzip) to 512 MB (zstd) in one step before; a step makes at
    most STEP bytes now (8 MiB for zstd: 256 bytes of input, and its smallest block, 4 bytes, makes 128 KiB), and the
    bytes are all there."""
    from dissect.capture.sources import STEP, open_input
    data = _zeros_pcap()
    path = tmp_path / "zeros.bin"
    path.write_bytes(COMPRESSORS[suffix](data))
    assert path.stat().st_size < len(data) // 200
    reader = open_input(str(path))
    stream = reader.raw
    buffer, sizes, made = bytearray(64 << 20), [], []
    while size := stream.readinto(buffer):
        sizes.append(size)
        made.append(bytes(buffer[:size]))
    assert b"".join(made) == data
    assert max(sizes) <= (8 << 20 if suffix == "zst" else STEP) and len(sizes) >= len(data) // (8 << 20)


def _wide_zstd(data):
    """A zstd frame asking for a 256 MiB window, as `zstd --long=28` writes (streamed: no content size to shrink it)."""
    params = zstandard.ZstdCompressionParameters(window_log=28)
    wide = io.BytesIO()
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(wide, closefd=False) as writer:
        writer.write(data)
    return wide.getvalue()


def _wide_xz(data):
    """An xz stream whose block header asks for a 256 MiB dictionary (compressed with 1 MiB: the header's property
    byte 16 set to 32, the header's CRC32 made again)."""
    packed = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_LZMA2,
                                                                             "dict_size": 1 << 20}]))
    size = (packed[12] + 1) * 4  # the block header, after the 12-byte stream header
    header = packed[12:12 + size]
    assert header[2:5] == b"\x21\x01\x10"  # filter LZMA2, 1 byte of properties: 1 MiB
    header[4] = 32
    header[-4:] = struct.pack("<I", zlib.crc32(bytes(header[:-4])))
    packed[12:12 + size] = header
    return bytes(packed)


@pytest.mark.parametrize("kind, make, error", [("zstd", _wide_zstd, "ZstdError"), ("xz", _wide_xz, "LZMAError")])
def test_a_decompressor_window_over_the_limit_is_refused_with_one_line(tmp_path, kind, make, error):
    """A stream that asks its decompressor to keep 256 MiB is refused before any of it is kept, with the limit
    named (xz had no limit: a stream could ask 4 GiB)."""
    from dissect.capture.sources import MAX_WINDOW
    packed = tmp_path / "wide.bin"
    packed.write_bytes(make(open(SESSION, "rb").read()))
    code, out, err = run_cli(packed)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"dissect: {packed}: {kind} data asks for a window larger than the {MAX_WINDOW >> 20} MiB "
                          f"a decompressor may keep ({error}: ")


def test_j_on_standard_input_runs_in_one_process():
    data = open(SESSION, "rb").read()
    code, out, err = _run_stdin("-j", "2", "-", data=data)
    assert code == 0 and out == run_cli(SESSION)[1]
    assert err == ("dissect: -j reads its input twice (once to share the work out), but standard input is read once: "
                   "running in one process\n")


def test_j_on_a_character_device_names_it_and_runs_in_one_process():
    code, out, err = run_cli("-j", "2", os.devnull)
    assert (code, out) == (2, "")
    assert err == (f"dissect: -j reads its input twice (once to share the work out), but {os.devnull} (a character "
                   f"device) is read once: running in one process\n"
                   f"dissect: {os.devnull}: not a capture file: 0 bytes is too short for a header\n")


def test_j_on_a_fifo_names_it_and_runs_in_one_process(tmp_path):
    fifo = tmp_path / "session.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["cp", SESSION, str(fifo)])
    try:
        code, out, err = run_cli("-j", "2", fifo)
    finally:  # the writer waits for a reader until one opens the FIFO: stopped, should dissect not open it
        writer.kill()
        writer.wait()
    assert code == 0 and out == run_cli(SESSION)[1]
    assert err == (f"dissect: -j reads its input twice (once to share the work out), but {fifo} (a pipe or FIFO) is "
                   f"read once: running in one process\n")


def test_j_on_a_directory_says_only_what_one_process_says(tmp_path):
    """A directory is not read twice but not read at all: the error is the one a single process gives, with no word
    on -j's way of reading (which named it a pipe)."""
    one, two = run_cli(tmp_path), run_cli("-j", "2", tmp_path)
    assert two == one and one[0] == 2 and one[2] == f"dissect: {tmp_path}: cannot open: Is a directory\n"


def _frames(path):
    return [(frame.number, round(frame.ts, 6), frame.data, frame.linktype) for frame in open_capture(str(path))]


@pytest.mark.parametrize("name,args", [("out.pcap", ()), ("out.pcapng", ()), ("out.bin", ("-F", "pcapng"))])
def test_write_keeps_the_frames_the_filter_shows(tmp_path, name, args):
    out = tmp_path / name
    code, text, err = run_cli("-Y", "netquake.control.command == 0x84", "-w", out, *args, SESSION)
    assert (code, err) == (0, "")
    kept = [int(line.split()[0]) for line in text.splitlines()]
    original = {number: rest for number, *rest in _frames(SESSION)}
    written = _frames(out)
    assert [tuple(rest) for _, *rest in written] == [tuple(original[number]) for number in kept]
    assert open(out, "rb").read(4) == (b"\x0a\x0d\x0d\x0a" if name != "out.pcap" else b"\xd4\xc3\xb2\xa1")
    assert jsonl(run_cli("-T", "jsonl", out)[1])[0]["info"].startswith("CCREP_PLAYER_INFO")


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_written_files_read_back_in_tshark(tmp_path):
    for name in ("out.pcap", "out.pcapng"):
        out = tmp_path / name
        assert run_cli("-q", "-c", "7", "-w", out, SESSION)[0] == 0
        proc = subprocess.run(["tshark", "-r", str(out), "-T", "fields", "-e", "frame.number", "-e", "frame.len",
                               "-e", "udp.dstport"], capture_output=True, text=True, timeout=120)
        rows = [line.split("\t") for line in proc.stdout.splitlines()]
        ours = [(str(n), str(len(data))) for n, _, data, _ in _frames(SESSION)[:7]]
        assert [tuple(row[:2]) for row in rows] == ours
        assert rows[0][2] == "26000"


def test_write_to_standard_output_and_count(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dissect", "-c", "3", "-w", "-", SESSION], capture_output=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and proc.stderr == b""
    out = tmp_path / "piped.pcap"
    out.write_bytes(proc.stdout)
    assert [frame[2] for frame in _frames(out)] == [frame[2] for frame in _frames(SESSION)[:3]]


@pytest.mark.parametrize("spelling", ["same", "symlink", "hard link", "dotted", "-r"])
def test_writing_onto_an_input_is_refused_and_the_input_kept(tmp_path, spelling):
    """-w OUT opened (emptied) before the input is read would destroy a capture given as both: refused, however
    the output names the input, with the input's bytes untouched."""
    source = tmp_path / "in.pcap"
    shutil.copyfile(SESSION, source)
    out = {"same": source, "symlink": tmp_path / "link.pcap", "hard link": tmp_path / "hard.pcap",
           "dotted": tmp_path / ".." / tmp_path.name / "in.pcap", "-r": source}[spelling]
    if spelling == "symlink":
        out.symlink_to(source)
    elif spelling == "hard link":
        os.link(source, out)
    inputs = ["-r", str(source)] if spelling == "-r" else [str(source)]
    code, stdout, err = run_cli("-q", *inputs, "-w", str(out))
    assert code == 2 and stdout == ""
    assert err == f"dissect: -w {out} is the input {source}: writing it would empty it before it is read\n"
    assert source.read_bytes() == open(SESSION, "rb").read()


@pytest.mark.parametrize("case", ["missing input", "not a capture", "bad filter"])
def test_a_run_that_reads_no_capture_leaves_the_written_file_as_it_was(tmp_path, case):
    """tshark opens -w's file only once the filter is compiled and the input read: an earlier capture there is kept
    (dissect emptied it), and a file that was not there is not made."""
    earlier = tmp_path / "earlier.pcap"
    shutil.copyfile(SESSION, earlier)
    absent = tmp_path / "absent.pcap"
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"garbage!" * 8)
    args = {"missing input": [str(tmp_path / "missing.pcap")], "not a capture": [str(junk)],
            "bad filter": ["-Y", "udp.port ==", SESSION]}[case]
    for out in (earlier, absent):
        code, stdout, err = run_cli("-q", *args, "-w", str(out))
        assert code == 2 and stdout == "" and err.startswith("dissect: ") and err.count("\n") == 1
    assert earlier.read_bytes() == open(SESSION, "rb").read()
    assert not absent.exists()


def test_a_link_to_no_file_as_the_output_of_a_run_that_reads_nothing_makes_no_file(tmp_path):
    """-w through a symbolic link to a file that does not exist: as for a name that does not exist, nothing is
    made where no capture was read (the link's target was made, with an executable mode)."""
    link, target = tmp_path / "link.pcap", tmp_path / "target.pcap"
    link.symlink_to(target)
    code, _, err = run_cli("-q", str(tmp_path / "missing.pcap"), "-w", str(link))
    assert code == 2 and "cannot open" in err
    assert not target.exists() and link.is_symlink()
    assert run_cli("-q", "-c", "2", SESSION, "-w", str(link))[0] == 0
    assert target.stat().st_mode & 0o111 == 0 and len(_frames(target)) == 2


def test_a_capture_whose_first_record_is_damaged_is_written_as_a_capture_of_no_frames(tmp_path):
    """Its header was read, so the run read a capture (tshark writes the output, then stops at the record): the
    earlier file at -w is replaced by a capture of no frames, not kept as if nothing had been read."""
    damaged = tmp_path / "damaged.pcap"
    damaged.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                        + struct.pack("<IIII", 1, 0, 48, 48) + b"\0" * 10)
    out = tmp_path / "out.pcap"
    shutil.copyfile(SESSION, out)
    code, _, err = run_cli("-q", str(damaged), "-w", str(out))
    assert code == 2 and "cut short" in err
    assert out.read_bytes()[:4] == b"\xd4\xc3\xb2\xa1" and out.stat().st_size == 24


def test_a_written_file_is_emptied_only_when_a_capture_is_read(tmp_path):
    """An input that cannot be read beside one that can: the output holds the readable one's frames, and an
    earlier file longer than them keeps none of its bytes."""
    out = tmp_path / "out.pcap"
    out.write_bytes(b"\xee" * 100_000)
    code, stdout, err = run_cli("-q", "-c", "3", "-w", str(out), str(tmp_path / "missing.pcap"), SESSION)
    assert (code, stdout) == (2, "") and "missing.pcap: cannot open" in err
    assert [frame[2] for frame in _frames(out)] == [frame[2] for frame in _frames(SESSION)[:3]]
    assert out.stat().st_size == 24 + sum(16 + len(frame[2]) for frame in _frames(SESSION)[:3])


@pytest.mark.parametrize("name, head", [("out.pcap", b"\xd4\xc3\xb2\xa1"), ("out.pcapng", b"\x0a\x0d\x0d\x0a")])
def test_a_capture_of_no_frames_is_written_as_a_capture_of_no_frames(tmp_path, name, head):
    """tshark writes a file of no frames that reads back; dissect wrote a pcap of 0 bytes, which is no capture."""
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    out = tmp_path / name
    out.write_bytes(open(SESSION, "rb").read())
    assert run_cli("-q", str(empty), "-w", str(out)) == (0, "", "")
    data = out.read_bytes()
    assert data[:4] == head and len(data) == (24 if name == "out.pcap" else 28)
    assert run_cli("--stats", str(out))[1].startswith("Frames: 0, bytes: 0")


def test_the_report_onto_an_input_or_onto_the_written_capture_and_an_empty_name_are_refused(tmp_path):
    source = tmp_path / "in.pcap"
    shutil.copyfile(SESSION, source)
    report = tmp_path / "r.html"
    for args, message in (
            (["--html", str(source)], f"--html {source} is the input {source}: the report would replace it"),
            (["-w", str(report), "--html", str(report)], f"-w and --html name the same file ({report}): the report "
                                                          f"would overwrite the capture"),
            (["-w", ""], "-w needs a file name (- is standard output)"),
            (["--html", ""], "--html needs a file name")):
        code, stdout, err = run_cli("-q", str(source), *args)
        assert (code, stdout, err) == (2, "", f"dissect: {message}\n")
    assert source.read_bytes() == open(SESSION, "rb").read() and not report.exists()


@pytest.mark.parametrize("flag, harm", [("-w", "writing it would empty it before it is read"),
                                        ("--html", "the report would replace it")])
def test_an_output_that_is_the_file_on_standard_input_is_refused(tmp_path, flag, harm):
    source = tmp_path / "in.pcap"
    shutil.copyfile(SESSION, source)
    with open(source, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "dissect", "-q", "-", flag, str(source)], stdin=stdin,
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"dissect: {flag} {source} is the input standard input: {harm}\n"
    assert source.read_bytes() == open(SESSION, "rb").read()


def test_a_report_named_dash_is_a_file_not_standard_input(tmp_path):
    """--html - writes a file named "-" (only -w - is standard output): no clash with a capture on standard input."""
    with open(SESSION, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "dissect", "-q", "-", "--html", "-"], stdin=stdin,
                              capture_output=True, text=True, cwd=tmp_path, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (tmp_path / "-").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def _pcapng_in_seconds(path, seconds, tsoffset=None):
    """The NetQuake session's first frames in a pcapng counting whole seconds (if_tsresol 0): ``seconds[i]`` the
    i-th frame's units, ``tsoffset`` the interface's if_tsoffset."""
    frames = [frame.data for frame in open_capture(SESSION)][:len(seconds)]
    capkit.write_pcapng_units(path, [(0, units, frame) for units, frame in zip(seconds, frames)], [1], 0, tsoffset)
    return frames


def _stamps(path):
    """Each written frame's timestamp as stored: pcap (seconds, microseconds); pcapng (high, low) of its count of
    microseconds."""
    data = path.read_bytes()
    stamps = []
    if data[:4] == b"\xd4\xc3\xb2\xa1":
        offset = 24
        while offset < len(data):
            seconds, micros, caplen, _ = struct.unpack_from("<IIII", data, offset)
            stamps.append((seconds, micros))
            offset += 16 + caplen
        return stamps
    offset = 0
    while offset < len(data):
        kind, length = struct.unpack_from("<II", data, offset)
        if kind == 6:
            stamps.append(struct.unpack_from("<II", data, offset + 12))
        offset += length
    return stamps


@pytest.mark.parametrize("name,units,tsoffset,first,stamps", [
    ("out.pcap", [1_700_000_000, 2 ** 64 - 1, 2 ** 64 - 1], None,
     "frame 2's time 1.8446744073709552e+19 is outside what pcap timestamps hold as dissect "
     "writes them (0 to 4294967295.999999 s since 1970): written as 4294967295.999999; 1 more frame likewise",
     [(1_700_000_000, 0), (2 ** 32 - 1, 999_999), (2 ** 32 - 1, 999_999)]),
    ("out.pcapng", [1_700_000_000, 2 ** 64 - 1], None,
     "frame 2's time 1.8446744073709552e+19 is outside what pcapng timestamps hold as "
     "dissect writes them (0 to 18446744073709.551615 s since 1970): written as 18446744073709.551615",
     [divmod(1_700_000_000 * 10 ** 6, 2 ** 32), (2 ** 32 - 1, 2 ** 32 - 1)]),
    ("out.pcap", [2 ** 40, 2 ** 40 + 2], -(2 ** 40) - 1, "frame 1's time -1.0 is outside what pcap timestamps hold "
     "as dissect writes them (0 to 4294967295.999999 s since 1970): written as 0.000000", [(0, 0), (1, 0)])])
def test_a_time_the_output_cannot_hold_is_written_as_the_nearest_and_named(tmp_path, name, units, tsoffset, first,
                                                                          stamps):
    """-w keeps every frame, its bytes as read; a time beyond what the format's timestamps hold (pcap: 32-bit
    seconds; pcapng: 64-bit microseconds; neither before 1970) is written as the nearest one it holds, and the
    run ends with an error naming the first such frame (exit 2), after every frame's line."""
    source = tmp_path / "seconds.pcapng"
    frames = _pcapng_in_seconds(source, units, tsoffset)
    out = tmp_path / name
    code, text, err = run_cli("-w", out, source)
    assert (code, err) == (2, f"dissect: {out}: {first}\n")
    shown = [int(line.split()[0]) for line in text.splitlines() if line.split()[0].isdigit()]
    assert shown == list(range(1, len(units) + 1))
    assert [data for _, _, data, _ in _frames(out)] == frames
    assert _stamps(out) == stamps
    assert run_cli("-q", "-w", tmp_path / "again.pcapng", out)[:3:2] == (0, "")  # what was written fits pcapng


def test_a_nanosecond_time_in_the_last_microsecond_of_pcap_is_held(tmp_path):
    """4294967295.9999996 s rounds up to 2**32 s, past pcap's end, yet its seconds fit: written as the last
    microsecond, no error (the rounding, not the time, is beyond the format)."""
    frame = open_capture(SESSION).__next__().data
    source = tmp_path / "ns.pcap"
    source.write_bytes(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
                       + struct.pack("<IIII", 2 ** 32 - 1, 999_999_600, len(frame), len(frame)) + frame)
    out = tmp_path / "out.pcap"
    assert run_cli("-q", "-w", out, source)[:3:2] == (0, "")
    assert _stamps(out) == [(2 ** 32 - 1, 999_999)]


def test_a_time_outside_is_named_when_a_link_type_ends_the_writing(tmp_path):
    """The link-type error stops -w; the frames written before it keep their faults: both are told."""
    import netquake_peer as nq
    ip = capkit.udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000, nq.ccreq_server_info())
    source = tmp_path / "two.pcapng"
    capkit.write_pcapng_units(source, [(0, 2 ** 64 - 1, bytes(capkit.ethernet(ip))), (1, 0, bytes(ip))], [1, 101], tsresol=0)
    out = tmp_path / "out.pcap"
    code, _, err = run_cli("-q", "-w", out, source)
    assert code == 2
    assert err.splitlines() == [
        f"dissect: {out}: frame 2 has link type 101 but the pcap holds link type 1: a pcap has one link type "
        f"(write pcapng: -F pcapng)",
        f"dissect: {out}: frame 1's time 1.8446744073709552e+19 is outside what pcap timestamps hold as dissect "
        f"writes them (0 to 4294967295.999999 s since 1970): written as 4294967295.999999"]
    assert _stamps(out) == [(2 ** 32 - 1, 999_999)]


def test_payload_with_write_is_an_error():
    code, out, err = run_cli("--payload", "8000000c025155414b450003", "--protocol", "netquake", "-w", "-")
    assert (code, out, err) == (2, "", "dissect: -w writes a capture's frames: --payload has none\n")


@pytest.mark.parametrize("args,views", [(("-V",), "-V"), (("-T", "jsonl"), "-T jsonl"), (("--stats",), "--stats"),
                                        (("-q", "--stats"), "--stats"), (("-x", "--stats"), "-x, --stats")])
def test_a_view_beside_a_capture_written_to_standard_output_is_an_error(args, views):
    """-w - puts the capture on standard output: a view printed there too would corrupt it (as tshark refuses)."""
    proc = subprocess.run([sys.executable, "-m", "dissect", "-w", "-", *args, SESSION], capture_output=True,
                          cwd=ROOT, timeout=60)
    them = "them" if "," in views else "it"
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (f"dissect: -w - writes the capture to standard output, where {views} would "
                                    f"write too: write the capture to a file (-w OUT), or leave {them} out\n")


def test_an_internal_error_keeps_the_lines_of_the_frames_before_it(tmp_path):
    """A fault no handler expects ends the run with one line on stderr (exit 2), never a traceback, and the
    frames already shown stay in the output (it is written in blocks: they were still in its buffer)."""
    script = ("import sys\nfrom dissect import cli\nfrom dissect.capture import writer\n"
              "write = writer.PcapWriter.write\n"
              "def failing(self, frame):\n"
              "    if frame.number == 4:\n        raise RuntimeError('made to fail at frame 4')\n"
              "    write(self, frame)\n"
              "writer.PcapWriter.write = failing\n"
              f"sys.exit(cli.main(['-w', {str(tmp_path / 'out.pcap')!r}, {SESSION!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stderr) == (2, "dissect: internal error: RuntimeError: made to fail at frame 4\n")
    assert [int(line.split()[0]) for line in proc.stdout.splitlines()] == [1, 2, 3]
    assert len(_frames(tmp_path / "out.pcap")) == 3


def test_count_stops_and_concludes_as_the_end_does():
    code, out, _ = run_cli("-c", "5", "-T", "jsonl", SESSION)
    records = jsonl(out)
    assert [r["frame"] for r in records if r["kind"] == "frame"] == [1, 2, 3, 4, 5]
    walk = [r for r in records if r["kind"] == "analysis"]
    assert walk and walk[0]["name"] == "player_walk" and walk[0]["result"]["complete"] is False


def test_pcap_of_several_link_types_is_an_error_naming_the_conflict(tmp_path):
    from capkit import ethernet, sll, udp_packet, write_pcapng
    import netquake_peer as nq
    mixed = tmp_path / "mixed.pcapng"
    ip = udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000, nq.ccreq_server_info())
    write_pcapng(mixed, [(0, 1700000000.0, ethernet(ip)), (1, 1700000001.0, sll(ip))], [1, 113])
    code, _, err = run_cli("-q", "-w", tmp_path / "out.pcap", mixed)
    assert code == 2
    assert err == (f"dissect: {tmp_path / 'out.pcap'}: frame 2 has link type 113 but the pcap holds link type 1: "
                   f"a pcap has one link type (write pcapng: -F pcapng)\n")
    assert run_cli("-q", "-w", tmp_path / "out.pcapng", mixed)[0] == 0
    assert [f[3] for f in _frames(tmp_path / "out.pcapng")] == [1, 113]


def test_a_link_type_pcapng_cannot_hold_is_an_error_not_an_internal_one(tmp_path):
    """pcap's header holds a 32-bit link type, a pcapng interface 16 bits: the frames before are written, the frame of
    link type 65536 stops the writing with the error naming it (it was an internal error), and a pcap takes it."""
    from capkit import ethernet, udp_packet, write_pcap
    import netquake_peer as nq
    good, odd = tmp_path / "good.pcap", tmp_path / "odd.pcap"
    write_pcap(good, [(1700000000.0, ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000,
                                                          nq.ccreq_server_info())))])
    write_pcap(odd, [(1700000001.0, b"\x01\x02\x03\x04")], linktype=65536)
    out = tmp_path / "out.pcapng"
    code, _, err = run_cli("-q", "-w", out, good, odd, good)
    assert code == 2
    assert err == (f"dissect: {out}: frame 2 has link type 65536, which a pcapng interface cannot hold (16 bits: at "
                   f"most 65535); write pcap: -F pcap\n")
    assert [f[3] for f in _frames(out)] == [1]
    assert run_cli("-q", "-w", tmp_path / "out.pcap", odd)[0] == 0
    assert [f[3] for f in _frames(tmp_path / "out.pcap")] == [65536]


def test_field_columns_parse_as_csv():
    code, out, err = run_cli("-T", "fields", "-E", "header=y", "-E", "separator=,", "-E", "quote=d",
                             "-e", "frame.number", "-e", "ip.src", "-e", "netquake.control.host_name",
                             "-e", "netquake.control.current_players", "-Y", "netquake.control.command == 0x83",
                             SESSION)
    assert (code, err) == (0, "")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["frame.number", "ip.src", "netquake.control.host_name", "netquake.control.current_players"]
    assert rows[1] == ["2", "127.0.0.1", "dissect test server", "3"]
    # as tshark writes them: the header and an empty column unquoted
    assert out.splitlines()[:2] == ["frame.number,ip.src,netquake.control.host_name,netquake.control.current_players",
                                    '"2","127.0.0.1","dissect test server","3"']
    code, out, err = run_cli("-T", "fields", "-E", "quote=d", "-e", "frame.number", "-e", "netquake.control.host_name",
                             "-c", "2", SESSION)
    assert (code, out, err) == (0, '"1"\t\n"2"\t"dissect test server"\n', "")


def test_frame_time_is_the_time_json_gives(tmp_path):
    """frame.time: the shortest decimal of the float, as JSON writes it, not nine digits of its binary noise
    (1796018819.744587898 for a microsecond capture's .744588)."""
    code, out, _ = run_cli("-T", "fields", "-e", "frame.time", "-c", "3", SESSION)
    assert (code, out.split()) == (0, ["1796018819.744588", "1796018819.744693", "1796018819.744796"])
    _, shown, _ = run_cli("-T", "jsonl", "-c", "3", SESSION)
    assert [float(text) for text in out.split()] == [r["time"] for r in jsonl(shown) if r["kind"] == "frame"]
    whole = tmp_path / "whole.pcap"  # a whole second: no decimals, as before
    whole.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                      + struct.pack("<IIII", 1700000000, 0, 14, 14) + bytes(14))
    assert run_cli("-T", "fields", "-e", "frame.time", whole) == (0, "1700000000\n", "")


def test_response_times_are_whole_microseconds_of_a_microsecond_capture():
    """A response time is the difference of two float times near 1.8e9 s, which hold about 0.24 µs: 45 µs read
    0.000045061 and 105 µs 0.00010514259338378906. In whole microseconds they are the capture's own."""
    code, out, _ = run_cli("-T", "fields", "-e", "frame.number", "-e", "netquake.response_time", "-c", "4", SESSION)
    assert (code, out) == (0, "1\t\n2\t0.000105\n3\t\n4\t0.000045\n")
    _, stats, _ = run_cli("--stats", "-T", "json", SESSION)
    times = json.loads(stats)[-1]["transactions"]["netquake"]["response_times"]["CCREQ_SERVER_INFO"]
    assert (times["min"], times["max"]) == (0.000048, 0.000105)


def test_field_occurrence_and_aggregator():
    args = ("-T", "fields", "-e", "ip.addr", "-c", "1", SESSION)
    assert run_cli(*args)[1] == "127.0.0.1,127.0.0.1\n"
    assert run_cli("-E", "occurrence=f", *args)[1] == "127.0.0.1\n"
    assert run_cli("-E", "aggregator=/s", *args)[1] == "127.0.0.1 127.0.0.1\n"


def test_field_columns_check_their_keys():
    code, out, err = run_cli("-T", "fields", "-e", "netquake.control.curent_players", SESSION)
    assert (code, out) == (2, "")
    assert "did you mean netquake.control.current_players?" in err and err.count("\n") == 1


@pytest.mark.parametrize("args,message", [
    (("-T", "json", "-V"), "-V and -x are text views: leave them out with -T json"),
    (("-T", "jsonl", "-x"), "-V and -x are text views: leave them out with -T jsonl"),
    (("-T", "fields",), "-T fields needs at least one -e KEY"),
    (("-e", "frame.number"), "-e and -E go with -T fields"),
    (("-E", "quote=x", "-T", "fields", "-e", "frame.number"), "bad -E 'quote=x': quote is one of d, s, n"),
    (("-E", "separator=ab", "-T", "fields", "-e", "frame.number"),
     "bad -E 'separator=ab': separator is one character, /t (a tab) or /s (a space)"),
    (("-E", "aggregator=", "-T", "fields", "-e", "frame.number"),
     "bad -E 'aggregator=': aggregator is one character, /t (a tab) or /s (a space)"),
])
def test_options_a_view_would_ignore_are_errors(args, message):
    assert run_cli(*args, SESSION) == (2, "", f"dissect: {message}\n")


def test_quiet_version_and_no_resolution():
    assert run_cli("-q", SESSION) == (0, "", "")
    code, out, _ = run_cli("-v")
    assert code == 0 and out.startswith("dissect ")
    assert run_cli("-n", SESSION) == run_cli(SESSION)


def test_stats_count_what_the_filter_shows():
    _, out, _ = run_cli("--stats", "-T", "jsonl", "-Y", "netquake.control.command == 0x83", SESSION)
    stats = [r for r in jsonl(out) if r["kind"] == "stats"][0]
    assert stats["frames"] == 2 and stats["protocols"] == {"netquake": 2}


def test_fail_on_names_the_finding_the_filter_hides():
    code, out, err = run_cli("--fail-on", "note", "-Y", "netquake.control.command == 0x83", SESSION)
    assert code == 1 and len(out.splitlines()) == 2
    assert err == "dissect: --fail-on: frame 4 has note netquake.little_endian_long (not shown by the filter)\n"


# -- standard output that cannot take the output ------------------------------------------------------
@pytest.fixture(scope="module")
def long_capture(tmp_path_factory):
    import bench
    path = tmp_path_factory.mktemp("out") / "mixed.pcap"
    bench.write_mixed(str(path), 2000)
    return path


def _run_into(target, *args, unbuffered):
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    with open(target, "wb") as out:
        proc = subprocess.run([sys.executable, "-m", "dissect", *map(str, args)], stdout=out, stderr=subprocess.PIPE,
                              cwd=ROOT, env=env, timeout=120)
    return proc.returncode, proc.stderr.decode("utf-8")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize("view", [[], ["-T", "jsonl"], ["-j", "2", "-V"]])
def test_a_full_disk_is_one_line_and_status_2(long_capture, view, unbuffered):
    code, err = _run_into("/dev/full", *view, long_capture, unbuffered=unbuffered)
    assert (code, err) == (2, "dissect: standard output: cannot write: No space left on device\n")


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_reader_that_goes_away_stops_the_output_quietly(long_capture, unbuffered):
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-V", str(long_capture)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT, env=env)
    assert proc.stdout.readline().startswith(b"Frame 1: ")
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


@pytest.mark.parametrize("name", ["out.pcap", "out.pcapng"])
def test_a_record_of_no_interface_is_left_out_and_named(tmp_path, name):
    """A pcapng packet block of an interface never described is read as a corrupt record with no link type and no
    bytes: -w leaves it out (a pcap's one link type is then the first frame written's, not Ethernet made up for it),
    writes the others as read, and ends with an error naming it."""
    import netquake_peer as nq
    frame = bytes(capkit.sll(capkit.udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000, nq.ccreq_server_info())))
    source = tmp_path / "lost.pcapng"
    capkit.write_pcapng_units(source, [(5, 1_000_000, frame), (0, 2_000_000, frame), (7, 3_000_000, frame),
                                       (0, 4_000_000, frame)], [113])
    out = tmp_path / name
    code, _, err = run_cli("-q", "-w", out, source)
    assert (code, err) == (2, f"dissect: {out}: frame 1 is a corrupt record with no link type and no bytes: not "
                              f"written; 1 more frame likewise\n")
    assert _frames(out) == [(1, 2.0, frame, 113), (2, 4.0, frame, 113)]
