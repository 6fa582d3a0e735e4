"""The ``dissect`` command: argument parsing and wiring, no protocol knowledge."""

import argparse
import gc
import os
import sys

from . import __version__
from .capture.files import CaptureFiles, Frame
from .capture.layers import Packet
from .core import SEVERITY_RANK
from .filter import compile_filter, evaluate, frame_values
from .pipeline import FrameRecord, Pipeline
from .registry import Registry, UsageError, load_protocols, parse_decode_as
from .render.hexdump import HexRenderer
from .render.jsonout import JsonRenderer
from .render.stats import StatsCollector
from .render.text import SummaryRenderer, TreeRenderer


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    parser = _ArgumentParser(
        prog="dissect",
        description="Dissect game-server query traffic (TeeFrame, NetQuake, Odamex, Soldat) in pcap/pcapng files.")
    parser.add_argument("files", nargs="*", metavar="FILE", help="pcap or pcapng files, read in turn as one capture")
    parser.add_argument("-V", "--verbose", action="store_true", help="field tree; every field shows [offset:length]")
    parser.add_argument("-x", "--hex", action="store_true", help="annotated hex dump of each frame")
    parser.add_argument("-T", "--format", choices=("text", "json", "jsonl"), default="text")
    parser.add_argument("-Y", "--filter", metavar="EXPR", help="display filter, e.g. 'netquake.control.command == 0x83'")
    parser.add_argument("-d", "--decode-as", action="append", metavar="udp.port==N,PROTO", default=[],
                        help="force a dissector on a port (repeatable)")
    parser.add_argument("--stats", action="store_true",
                        help="protocol counts, transactions, response times, findings, servers seen (no frame lines)")
    parser.add_argument("--fail-on", choices=("error", "warning", "note"),
                        help="exit 1 when a finding at or above this severity exists")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N",
                        help="dissect capture files in N processes, conversations spread over them; output and "
                             "analysis are the same as with one (0: one per CPU core)")
    parser.add_argument("--payload", metavar="HEX", help="dissect one message given in hex (needs --protocol)")
    parser.add_argument("--payload-file", metavar="FILE", help="dissect one message from a file of raw bytes")
    parser.add_argument("--protocol", metavar="PROTO", help="protocol of --payload / --payload-file")
    live = parser.add_argument_group("live capture")
    live.add_argument("-i", "--interface", metavar="IFACE", help="capture live on this interface (needs root)")
    live.add_argument("-f", "--capture-filter", metavar="BPF", help="capture filter, e.g. 'udp port 26000'")
    live.add_argument("-c", "--count", type=_positive, metavar="N", help="stop after N packets")
    live.add_argument("-a", "--autostop", metavar="duration:SECONDS", type=_duration,
                      help="stop after this many seconds")
    live.add_argument("-w", "--write", metavar="OUT.pcap", help="also write the captured packets to a pcap file")
    live.add_argument("-D", "--list-interfaces", action="store_true", help="list the interfaces and exit")
    parser.add_argument("--version", action="version", version=f"dissect {__version__}")
    return parser


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _jobs(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0: one per core), got {text!r}")
    return value or os.cpu_count() or 1


def _duration(text):
    prefix, _, number = text.partition(":")
    try:
        seconds = float(number)
    except ValueError:
        seconds = -1
    if prefix != "duration" or seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected duration:SECONDS, got {text!r}")
    return seconds


def main(argv=None):
    stdout = sys.stdout
    try:
        stdout.reconfigure(encoding="utf-8", errors="replace")
    except (AttributeError, ValueError):
        pass
    out = _Batched(stdout)
    try:
        code = _run(build_parser().parse_args(argv), out)
        out.flush()
        return code
    except UsageError as exc:
        out.flush()
        print(f"dissect: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``dissect f | head``): stop quietly.
        out.discard()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # never a traceback for a user
        print(f"dissect: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


class _Batched:
    """Collects output lines and writes them in batches: one write call per line costs more than the line."""

    BATCH = 512

    def __init__(self, stream):
        self.stream = stream
        self.parts = []

    def write(self, text):
        self.parts.append(text)
        if len(self.parts) >= self.BATCH:
            self.flush()

    def flush(self):
        if self.parts:
            text = "".join(self.parts)
            self.parts.clear()
            self.stream.write(text)
        self.stream.flush()

    def discard(self):
        self.parts.clear()

    def isatty(self):
        return self.stream.isatty()

    def fileno(self):
        return self.stream.fileno()


def _use_color(choice, stream):
    if choice != "auto":
        return choice == "always"
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


class Output:
    """Sends every record to the chosen views and keeps what exit codes and --stats need."""

    def __init__(self, args, out):
        self.out = out
        color = _use_color(args.color, out)
        self.filter = compile_filter(args.filter) if args.filter else None
        self.stats = StatsCollector() if args.stats else None
        self.fail_rank = SEVERITY_RANK[args.fail_on] if args.fail_on else None
        self.failed = False
        self.json = None
        self.views = []
        if args.format != "text":
            self.json = JsonRenderer(out, lines=args.format == "jsonl")
            if not args.stats:
                self.views.append(self.json)
        elif not args.stats:
            if args.verbose or args.payload_mode:
                self.views.append(TreeRenderer(out, color))
            if args.hex:
                self.views.append(HexRenderer(out, color))
            if not self.views:
                self.views.append(SummaryRenderer(out, color))

    def _check_fail(self, findings):
        if self.fail_rank is not None and not self.failed:
            for finding in findings:
                if SEVERITY_RANK[finding.severity] >= self.fail_rank:
                    self.failed = True
                    return

    def frame(self, record):
        self._check_fail(record.all_findings())
        if self.stats:
            self.stats.frame(record)
        if self.filter is not None and not evaluate(self.filter, frame_values(record)):
            return
        for view in self.views:
            view.frame(record)

    def analysis(self, rec):
        self._check_fail(rec.findings)
        if self.stats:
            self.stats.analysis(rec)
        if self.filter is not None and not evaluate(self.filter, _analysis_values(rec)):
            return
        for view in self.views:
            view.analysis(rec)

    def close(self, analyzers):
        if self.stats:
            if self.json is not None:
                for key, analyzer in sorted(analyzers.items()):
                    for server in analyzer.stats().get("servers", ()):
                        self.json.extra({"kind": "server", "protocol": key, **server})
                self.json.extra(self.stats.as_dict(analyzers))
            else:
                self.stats.render_text(self.out, analyzers)
        if self.json is not None:
            self.json.close()
        self.out.flush()


def _analysis_values(rec):
    values = {rec.protocol: [True], "analysis": [rec.name], f"{rec.protocol}.analysis": [rec.name]}
    for finding in rec.findings:
        values.setdefault("expert.code", []).append(finding.code)
        values.setdefault("expert.severity", []).append(finding.severity)
    return values


def _run(args, out):
    load_protocols()
    _tune_garbage_collector()
    args.payload_mode = args.payload is not None or args.payload_file is not None
    if args.list_interfaces:
        from .capture.live import list_interfaces
        for index, name in list_interfaces():
            out.write(f"{index}. {name}\n")
        return 0
    if args.payload_mode:
        return _run_payload(args, out)
    if args.protocol:
        raise UsageError("--protocol goes with --payload or --payload-file")
    live_only = [flag for flag, value in (("-f", args.capture_filter), ("-c", args.count), ("-a", args.autostop),
                                          ("-w", args.write)) if value is not None]
    if args.interface:
        if args.files:
            raise UsageError("give capture files or -i IFACE, not both")
        if args.jobs > 1:
            raise UsageError("-j works on capture files; live capture runs in one process")
        return _run_live(args, out)
    if live_only:
        raise UsageError(f"{', '.join(live_only)} go with -i IFACE (live capture)")
    if not args.files:
        raise UsageError("no input: give a capture FILE, -i IFACE, or --payload HEX --protocol PROTO (see --help)")
    if args.jobs > 1:
        from .parallel import run_parallel
        return run_parallel(args, out)
    output, pipeline = _setup(args, out)
    errors = _read_files(args.files, pipeline, output)
    _conclude(pipeline, output)
    for error in errors:
        print(f"dissect: {error}", file=sys.stderr)
    if errors:
        return 2
    return 1 if output.failed else 0


def _tune_garbage_collector():
    """Per-frame objects die by reference counting, in cycles almost never: the cyclic collector
    mostly walks live objects for nothing. Freezing what the imports made takes those out of its
    walks, and a larger first generation runs it less often (about 6% of the time on JSON)."""
    gc.freeze()
    gc.set_threshold(20000, 50, 50)


def _read_files(paths, pipeline, output):
    """Read the files in turn as one capture (frame numbers go on); return the reasons any stopped early."""
    files = CaptureFiles(paths)
    progress = _Progress(paths) if sys.stderr.isatty() else None
    for frame in files:
        _one_frame(frame, pipeline, output)
        if progress is not None and not frame.number & 0x3FFF:
            progress.show(frame.number, *files.position())
    if progress is not None:
        progress.done()
    return files.errors


class _Progress:
    """Frames read and percent of the file being read, on stderr when it is a terminal and the file is large."""

    MIN_SIZE = 20 * 1024 * 1024

    def __init__(self, paths):
        import time
        self.clock = time.monotonic
        self.sizes = [_size(path) for path in paths]
        self.shown = False
        self.last = self.clock()

    def show(self, frames, index, position):
        """``position``: how many bytes of file ``index`` have been read."""
        size = self.sizes[index]
        if size < self.MIN_SIZE or self.clock() - self.last < 0.5:
            return
        self.last = self.clock()
        sys.stderr.write(f"\r{frames:,} frames, {100.0 * position / size:5.1f}%")
        sys.stderr.flush()
        self.shown = True

    def done(self):
        if self.shown:
            sys.stderr.write("\r" + " " * 40 + "\r")
            sys.stderr.flush()


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _setup(args, out):
    registry = Registry(parse_decode_as(args.decode_as))
    output = Output(args, out)
    tree = args.verbose or args.hex or args.format != "text" or output.filter is not None
    return output, Pipeline(registry, tree=tree)


def _one_frame(frame, pipeline, output, packet=None):
    record, analyses = pipeline.frame(frame, packet)
    output.frame(record)
    for rec in analyses:
        output.analysis(rec)


def _conclude(pipeline, output):
    for rec in sorted(pipeline.finish(), key=finish_order):
        output.analysis(rec)
    output.close(pipeline.analyzers)


def finish_order(rec):
    """What the capture's end concludes is shown in the order its first frames arrived."""
    return next((number for number in rec.frames if number is not None), 0)


def _run_live(args, out):
    import signal
    from .capture.live import LiveCapture, LiveError
    output, pipeline = _setup(args, out)
    try:
        capture = LiveCapture(args.interface, args.capture_filter, args.count, args.autostop, args.write)
    except LiveError as exc:
        raise UsageError(str(exc)) from None
    previous = {sig: signal.signal(sig, capture.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    print(f"dissect: capturing on {args.interface}" + (f" ({args.capture_filter})" if args.capture_filter else ""),
          file=sys.stderr, flush=True)
    try:
        for frame in capture.frames():
            _one_frame(frame, pipeline, output)
            out.flush()  # live output streams line by line
    finally:
        capture.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _conclude(pipeline, output)
    dropped = "" if capture.dropped is None else f", {capture.dropped} dropped by the kernel"
    print(f"dissect: {capture.received} packets captured on {args.interface}{dropped}", file=sys.stderr)
    return 1 if output.failed else 0


def _run_payload(args, out):
    if args.payload is not None and args.payload_file is not None:
        raise UsageError("give --payload or --payload-file, not both")
    if not args.protocol:
        raise UsageError(f"--payload needs --protocol (one of: {', '.join(sorted(load_protocols()))})")
    if args.protocol not in load_protocols():
        raise UsageError(f"unknown protocol {args.protocol!r} (known: {', '.join(sorted(load_protocols()))})")
    if args.files:
        raise UsageError("--payload takes no capture files")
    payload = _read_payload(args)
    output = Output(args, out)
    registry = Registry()
    dissector = registry.get(args.protocol)
    frame = Frame(1, 0.0, len(payload), len(payload), None, payload)
    packet = Packet()
    packet.top, packet.payload = "payload", payload
    record = FrameRecord(frame, packet)
    msg = dissector.dissect(payload, True, None, 0)
    msg.frames.append(1)
    record.messages.append(msg)
    record.protocol = dissector.key
    record.info = msg.info
    output.frame(record)
    output.close({})
    return 1 if output.failed else 0


def _read_payload(args):
    if args.payload_file is not None:
        try:
            with open(args.payload_file, "rb") as handle:
                return handle.read(1 << 20)
        except OSError as exc:
            raise UsageError(f"{args.payload_file}: cannot read: {exc.strerror}") from None
    text = "".join(args.payload.split()).replace(":", "")
    if text.lower().startswith("0x"):
        text = text[2:]
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"--payload is not hex: {args.payload[:40]!r}") from None
