"""Coverage-guided fuzzing (atheris) of each dissector and of the capture reader.

Each target runs in its own process for a fixed budget; the parent prints inputs
tried and crashes found per target. A crash is any exception, or a caught
dissector error, or a field or finding outside its message, or for the capture
reader records that differ when the stream gives 7 bytes a read: atheris saves
the input as ``crash-*`` in the working directory, to become a regression test.

    python tools/fuzz.py [TARGET ...] [--runs N | --seconds S]
    targets: any registered protocol, or capture (default: all)
"""

import argparse
import glob
import io
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
# Coverage guidance comes from instrumenting Python bytecode: fuzz the source, not the compiled build.
os.environ.setdefault("DISSECT_PURE_PYTHON", "1")



def targets():
    """Every registered protocol (built-ins and installed plugins), then the capture reader."""
    import dissect
    return (*dissect.protocols(), "capture")


def seeds(target):
    """A protocol's declared examples; for the capture reader, the first bytes of each bundled capture and the
    tests' damaged pcapng files."""
    import dissect
    protocols = dissect.protocols()
    if target in protocols:
        return list(protocols[target].examples)
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap"))):
        with open(path, "rb") as handle:
            out.append(handle.read(3000))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "corrupt", "*.pcapng"))):  # pcapng, whole
        with open(path, "rb") as handle:
            out.append(handle.read())
    return out


def read_all(handle):
    """The frames read from ``handle`` as tuples, and the text of the error that ended the reading (or None)."""
    from dissect.capture.files import CaptureError, read_capture
    frames = []
    try:
        for f in read_capture(handle):
            frames.append((f.number, f.ts, f.caplen, f.wirelen, f.linktype, bytes(f.data), f.iface, f.error))
    except CaptureError as exc:
        return frames, str(exc)
    return frames, None


def check_message(msg, size):
    for field in msg.walk():
        if field.offset < 0 or field.length < 0 or field.offset + field.length > size:
            raise AssertionError(f"field {field!r} outside a message of {size} bytes")
        field.display  # noqa: B018 - formatting must not fail either
    for finding in msg.findings:
        if finding.code.endswith("dissector_error"):
            raise AssertionError(finding.message)
        if finding.offset is not None and not 0 <= finding.offset <= size:
            raise AssertionError(f"finding {finding!r} outside a message of {size} bytes")


def child(target, libfuzzer_args):
    import atheris
    import capkit
    with atheris.instrument_imports():
        from dissect.capture.files import Frame
        from dissect.pipeline import Pipeline
        from dissect.registry import Registry

    registry = Registry()

    def protocol_input(data):
        dissector = registry.get(target)
        for tree in (True, False):
            check_message(dissector.dissect(data, tree), len(data))

    def capture_input(data):
        frames, _ = whole = read_all(io.BytesIO(data))
        if read_all(capkit.Trickle(data, 7)) != whole:
            raise AssertionError("the records read from a stream 7 bytes at a time differ from those read at once")
        pipeline = Pipeline(Registry(), tree=True)
        for values in frames:
            record, _ = pipeline.frame(Frame(*values))
            for finding in record.findings:
                if finding.code == "dissect.internal_error":
                    raise AssertionError(finding.message)
            for msg in record.messages:
                check_message(msg, msg.length)
        pipeline.finish()

    corpus = tempfile.mkdtemp(prefix=f"fuzz-{target}-")
    for index, seed in enumerate(seeds(target)):
        with open(os.path.join(corpus, f"seed{index}"), "wb") as handle:
            handle.write(seed)
    atheris.Setup([sys.argv[0], *libfuzzer_args, corpus],
                  capture_input if target == "capture" else protocol_input)
    atheris.Fuzz()


def run(target, budget):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", target, "--", "-print_final_stats=1",
           "-max_len=4096", *budget]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=os.getcwd())
    executed = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    crashed = "ERROR" in proc.stderr or proc.returncode not in (0,)
    return int(executed.group(1)) if executed else 0, crashed, proc


def main():
    if "--child" in sys.argv:
        index = sys.argv.index("--child")
        target = sys.argv[index + 1]
        extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
        child(target, extra)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help="a registered protocol or capture (default: all)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--runs", type=int, default=None)
    budget.add_argument("--seconds", type=int, default=None)
    args = parser.parse_args()
    known = targets()
    unknown = [t for t in args.targets if t not in known]
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}: choose from {', '.join(known)}")
    limit = [f"-runs={args.runs}"] if args.runs else [f"-max_total_time={args.seconds or 60}"]
    failures = 0
    print(f"{'target':<10} {'inputs tried':>13} {'crashes':>8}")
    for target in args.targets or known:
        executed, crashed, proc = run(target, limit)
        failures += crashed
        print(f"{target:<10} {executed:>13,} {int(crashed):>8}", flush=True)
        if crashed:
            tail = "\n".join(proc.stderr.splitlines()[-25:])
            print(f"--- {target} crashed:\n{tail}\n---")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
