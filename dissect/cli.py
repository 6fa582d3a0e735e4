"""The ``dissect`` command: argument parsing and printing, on top of the engine (``session.py``)."""

import argparse
import errno
import gc
import io
import os
import re
import sys

from . import __version__
from .capture.sources import CaptureFiles, read_once, source_name
from .capture.writer import WriteError, open_writer, pick_format
from .filter import check_keys
from .core.escape import tell
from .core.interrupt import defer_interrupt
from .progress import Progress, on_terminal
from .registry import UsageError, all_field_tables, all_finding_tables, load_protocols, protocol_key
from .render.fields import FieldOptions
from .render.output import BatchedOutput, OutputError
from .render.printer import Printer
from .analysis.abuse import DEFAULT_RATE, DEFAULT_WINDOW, check_thresholds
from .session import Session, abuse_options, explain_failure, filter_fields, read_frames

MAX_JOBS = 256  # -j: worker processes at most (each holds the state of its conversations, up to the limits)
# --dask ADDRESS: a scheduler's address has a scheme or a port; what has neither is a capture file it took
SCHEME_ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
PORT_ADDRESS = re.compile(r"[^/\s]+:[0-9]{1,5}")


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's, told the terminal's width: argparse makes one to check each argument added, and without a width
    it imports shutil to ask (shutil imports bz2, lzma and more: about 2 ms of every start-up)."""

    def __init__(self, prog):
        super().__init__(prog, width=_terminal_columns() - 2)


def _terminal_columns():
    """``shutil.get_terminal_size().columns``: $COLUMNS, else the width of the terminal on standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser():
    parser = _ArgumentParser(
        prog="dissect", formatter_class=_HelpFormatter,
        description="Dissect game-server query traffic (TeeFrame, NetQuake, Odamex, Soldat) in pcap/pcapng files.")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="pcap or pcapng files (plain, gzip, bzip2, xz, zstd or lz4), read in turn as one "
                             "capture; - reads standard input")
    parser.add_argument("-r", "--read-file", action="append", default=[], metavar="FILE",
                        help="read this capture (as tshark -r; - is standard input); repeatable")
    parser.add_argument("-V", "--verbose", action="store_true", help="field tree; every field shows [offset:length]")
    parser.add_argument("-x", "--hex", action="store_true", help="annotated hex dump of each frame")
    parser.add_argument("-T", "--format", choices=("text", "json", "jsonl", "fields"), default="text")
    parser.add_argument("-e", "--field", action="append", default=[], metavar="KEY",
                        help="with -T fields: a column (repeatable), e.g. -e frame.number -e ip.src")
    parser.add_argument("-E", "--field-option", action="append", default=[], metavar="NAME=VALUE",
                        help="with -T fields: header=y|n, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a, "
                             "aggregator=C (as tshark)")
    parser.add_argument("-Y", "--filter", metavar="EXPR",
                        help="display filter, e.g. 'netquake.control.command == 0x83'")
    parser.add_argument("-d", "--decode-as", action="append", metavar="udp.port==N,PROTO", default=[],
                        help="force a dissector on a port (repeatable)")
    parser.add_argument("--stats", action="store_true",
                        help="protocol counts, transactions, response times, findings, servers seen (no frame "
                             "lines); counts what -Y shows")
    parser.add_argument("--fail-on", choices=("error", "warning", "note"),
                        help="exit 1 when a finding at or above this severity exists")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-frame output (with --stats, -w)")
    parser.add_argument("-n", dest="no_resolve", action="store_true",
                        help="no name resolution (accepted for tshark's habit: dissect never resolves names)")
    parser.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N",
                        help="dissect capture files in N processes, conversations spread over them; output and "
                             f"analysis are the same as with one (0: one per CPU core; at most {MAX_JOBS})")
    parser.add_argument("--payload", metavar="HEX", help="dissect one message given in hex (needs --protocol)")
    parser.add_argument("--payload-file", metavar="FILE", help="dissect one message from a file of raw bytes")
    parser.add_argument("--protocol", metavar="PROTO", help="protocol of --payload / --payload-file")
    parser.add_argument("-G", dest="list_fields", choices=("fields", "findings"),
                        help="list every field key (key, protocol, type, name, description) or every finding code "
                             "(code, severity, rule), tab-separated, and exit")
    parser.add_argument("-c", "--count", type=_positive, metavar="N", help="stop after N frames (files and live)")
    parser.add_argument("-w", "--write", metavar="OUT",
                        help="write the frames shown (all, without -Y) to OUT, byte for byte; - is standard output")
    parser.add_argument("--html", metavar="REPORT.html",
                        help="also write one self-contained HTML report: overview, server browser, plots, and "
                             "linked packet list, field tree and hex dump")
    parser.add_argument("--html-limit", type=_positive, default=None, metavar="N",
                        help="frames in the report's panes (default 500,000); the overview counts all")
    parser.add_argument("--abuse-rate", type=_rate, default=DEFAULT_RATE, metavar="PER_SECOND",
                        help=f"requests a second that count as a flood or a reflection (default {DEFAULT_RATE:g})")
    parser.add_argument("--abuse-window", type=_window, default=DEFAULT_WINDOW, metavar="SECONDS",
                        help=f"... sustained over this many seconds (default {DEFAULT_WINDOW})")
    parser.add_argument("--to-parquet", metavar="DIR",
                        help="write frames, messages, findings and analysis tables as Parquet into DIR "
                             "(pip install 'dissect-gameq[scale]')")
    parser.add_argument("--dask", nargs="?", const="local", metavar="ADDRESS",
                        help="dissect the files on a Dask cluster, one task a file: local (the default) starts "
                             "one on this machine, tcp://HOST:PORT joins a running scheduler")
    parser.add_argument("-F", dest="write_format", choices=("pcap", "pcapng"),
                        help="format of -w (default: pcapng when OUT ends in .pcapng, else pcap)")
    live = parser.add_argument_group("live capture")
    live.add_argument("-i", "--interface", metavar="IFACE", action="append",
                      help="capture live on this interface, by name or by its -D number (needs root)")
    live.add_argument("-f", "--capture-filter", metavar="BPF", help="capture filter, e.g. 'udp port 26000'")
    live.add_argument("-a", "--autostop", metavar="duration:SECONDS", type=_duration,
                      help="stop after this many seconds")
    live.add_argument("-D", "--list-interfaces", action="store_true", help="list the interfaces and exit")
    parser.add_argument("-v", action="version", version=f"dissect {__version__}", help="print the version and exit")
    parser.add_argument("--version", action="version", version=f"dissect {__version__}")
    return parser


def _ascii_int(text):
    """``text`` as an int where it is ASCII digits and nothing else, else None: int() would also take other scripts'
    digits, a sign, spaces and underscores."""
    return int(text) if text.isascii() and text.isdigit() else None


def _ascii_float(text):
    """float(text) for ASCII text; ValueError for any other (float() takes other scripts' digits)."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)


def _positive(text):
    value = _ascii_int(text) or 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _jobs(text):
    value = _ascii_int(text)
    if value is None or value > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"expected a number of processes from 0 (one per core) to {MAX_JOBS}, "
                                         f"got {text!r}")
    return value or os.cpu_count() or 1


def _rate(text):
    try:
        return _ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of requests per second, got {text!r}") from None


def _window(text):
    value = _ascii_int(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a whole number of seconds, got {text!r}")
    return value


def _duration(text):
    prefix, _, number = text.partition(":")
    try:
        seconds = _ascii_float(number)
    except ValueError:
        seconds = -1
    if prefix != "duration" or not 0 < seconds < float("inf"):  # not NaN either: no clock would ever reach it
        raise argparse.ArgumentTypeError(f"expected duration:SECONDS, got {text!r}")
    return seconds


def main(argv=None):
    original = sys.stdout
    sys.stdout = stdout = _buffered(original) if original is not None else _closed_output()
    try:
        stdout.reconfigure(encoding="utf-8", errors="replace")
    except (AttributeError, ValueError):
        pass
    try:
        return _main(argv, stdout)
    finally:
        if stdout is not original:
            try:
                stdout.flush()
            except (OSError, ValueError):
                _drop_output(stdout)
            sys.stdout = original


class _ClosedDescriptor(io.RawIOBase):
    """Standard output when the command was started without one (``dissect f >&-``): what the run writes there
    fails as a write to a closed descriptor does, and a run that writes nothing there (``-q -w out.pcap``) runs."""

    def writable(self):
        return True

    def write(self, data):
        raise OSError(errno.EBADF, "it was closed when dissect started")


def _closed_output():
    return io.TextIOWrapper(io.BufferedWriter(_ClosedDescriptor()), encoding="utf-8", errors="replace")


def _buffered(stream):
    """``stream`` (standard output) with a buffered binary layer under its text.

    Under ``python -u`` or PYTHONUNBUFFERED the layer is the raw file. A write to a pipe that a signal
    interrupts once part of it is in (SIGTERM to a live capture whose reader is slow) returns that part's
    length, and neither a text stream nor a raw file writes the rest: records would be cut and lost. A
    BufferedWriter goes on until every byte is out; the command flushes where output must stream."""
    if not isinstance(getattr(stream, "buffer", None), io.RawIOBase):
        return stream
    try:
        stream.flush()
        raw = io.FileIO(stream.fileno(), "w", closefd=False)
    except (OSError, ValueError):
        return stream
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="replace",
                            line_buffering=stream.line_buffering)


def _main(argv, stdout):
    out = BatchedOutput(stdout)
    try:
        code = _run(build_parser().parse_args(argv), out)
        out.flush()
        return code
    except UsageError as exc:
        out.flush()
        tell(str(exc))
        return 2
    except BrokenPipeError:
        # The reader went away (``dissect f | head``): stop quietly.
        out.discard()
        _drop_output(stdout)
        return 0
    except OutputError as exc:
        out.discard()
        _drop_output(stdout)
        tell(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # never a traceback for a user; the frames already shown stay shown
        try:
            out.flush()
        except Exception:  # the output itself failed: what it holds is lost, the error is still told
            out.discard()
            _drop_output(stdout)
        tell(f"internal error: {type(exc).__name__}: {exc}")
        return 2


def _drop_output(stream):
    """Point the stream's descriptor at /dev/null: what it still holds when its reader has gone or its disk
    is full is dropped, instead of failing again when the interpreter flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
        stream.flush()
    except (OSError, ValueError):
        pass


def use_color(choice, stream):
    if choice != "auto":
        return choice == "always"
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _printer(args, out, writer=None):
    return Printer(out, format=args.format, verbose=args.verbose or args.payload_mode, hexdump=args.hex,
                   color=use_color(args.color, out), stats=args.stats, quiet=args.quiet, fields=args.field,
                   field_options=args.field_options, writer=writer)


def _session(args, printer):
    return Session(printer, decode_as=args.decode_as, display_filter=args.filter, tree=printer.needs_tree,
                   stats=args.stats, fail_on=args.fail_on, analyzer_stats=args.stats or bool(args.html),
                   **abuse_options(args))


def _run(args, out):
    args.payload_mode = args.payload is not None or args.payload_file is not None
    listing = "-G" if args.list_fields else "-D" if args.list_interfaces else None
    if listing and (args.files or args.read_file):
        raise UsageError(f"{listing} lists and exits: leave out the capture files")
    if args.list_fields:
        return _list_fields(args.list_fields, out)
    _check_views(args)
    _one_interface(args)
    _tune_garbage_collector()
    if args.list_interfaces:
        from .capture.live import list_interfaces
        for index, name in list_interfaces():
            out.write(f"{index}. {name}\n")
        return 0
    if args.payload_mode:
        if args.html:
            raise UsageError("--html reports on captures, not on --payload")
        if args.write:
            raise UsageError("-w writes a capture's frames: --payload has none")
        given = {"-r": bool(args.read_file), "-j": args.jobs > 1, "-c": args.count is not None,
                 "--to-parquet": args.to_parquet is not None,
                 "--dask": args.dask is not None, "-i": args.interface is not None,
                 "-f": args.capture_filter is not None, "-a": args.autostop is not None}
        ignored = [flag for flag, present in given.items() if present]
        if ignored:
            raise UsageError(f"--payload dissects one message: leave out {', '.join(ignored)} (they go with captures)")
        return _run_payload(args, out)
    if args.protocol:
        raise UsageError("--protocol goes with --payload or --payload-file")
    if args.dask not in (None, "local") and not _scheduler_address(args.dask):
        # `--dask a.pcap b.pcap`: the optional ADDRESS took the first capture (one that may not exist: its error is
        # then the file's); --dask alone means local
        args.files, args.dask = [args.dask] + args.files, "local"
    args.files = args.files + args.read_file
    _check_output_names(args)
    live_only = [flag for flag, value in (("-f", args.capture_filter), ("-a", args.autostop)) if value is not None]
    if args.interface:
        if args.files:
            raise UsageError("give capture files or -i IFACE, not both")
        if args.jobs > 1:
            raise UsageError("-j works on capture files; live capture runs in one process")
        if args.html:
            raise UsageError("--html goes with capture files (capture with -w, then report on the file)")
        if args.to_parquet is not None or args.dask is not None:
            raise UsageError("--to-parquet and --dask go with capture files (capture with -w, then convert the file)")
        return _run_live(args, out)
    if live_only:
        verb = "go" if len(live_only) > 1 else "goes"
        raise UsageError(f"{', '.join(live_only)} {verb} with -i IFACE (live capture)")
    if not args.files:
        raise UsageError("no input: give a capture FILE (- for standard input), -i IFACE, or --payload HEX "
                         "--protocol PROTO (see --help)")
    if args.files.count("-") > 1:
        raise UsageError("standard input can be read once: give - once")
    if args.to_parquet is not None or args.dask is not None:
        return _run_scale(args, out)
    _check_overwrites(args)
    if args.jobs > 1 and (args.write or args.count or args.html):
        raise UsageError("-w, -c and --html run in one process: leave out -j")
    once = next((what for what in map(read_once, args.files) if what), None) if args.jobs > 1 else None
    if once is not None:
        tell(f"-j reads its input twice (once to share the work out), but {once} is read once: running in one process")
        args.jobs = 1
    if args.jobs > 1:
        from .parallel import run_parallel
        args.color = "always" if use_color(args.color, out) else "never"
        return run_parallel(args, out)
    return _run_files(args, out)


def _scheduler_address(text):
    """Whether ``text`` reads as a Dask scheduler's address (``tcp://host:8786``, ``host:8786``, ``[::1]:8786``)
    rather than a path (which has no port, or a slash)."""
    return bool(SCHEME_ADDRESS.fullmatch(text) or PORT_ADDRESS.fullmatch(text))


def _run_scale(args, out):
    """``--to-parquet`` and ``--dask``: tables out, files as tasks (dissect/scale.py)."""
    ignored = [flag for flag, value in (("-V", args.verbose), ("-x", args.hex), ("-w", args.write),
                                        ("-c", args.count), ("--html", args.html), ("-j", args.jobs > 1),
                                        ("-T fields", args.format == "fields")) if value]
    if ignored:
        verb = "does" if len(ignored) == 1 else "do"
        raise UsageError(f"{', '.join(ignored)} {verb} not go with --to-parquet or --dask (the tables are the output)")
    if args.format != "text" and not args.stats:
        raise UsageError(f"-T {args.format} formats --stats' record under --to-parquet or --dask (the tables are "
                         f"Parquet): add --stats, or leave -T out")
    from .scale import run_to_parquet
    return run_to_parquet(args.files, args.to_parquet, decode_as=args.decode_as, display_filter=args.filter,
                          dask=args.dask, stats=args.stats, out=out, format=args.format, fail_on=args.fail_on,
                          abuse=(args.abuse_rate, args.abuse_window))


def _check_frame_views(args):
    """-V, -x and -T fields show frames, which --stats and -q do not print."""
    views = [flag for flag, chosen in (("-V", args.verbose), ("-x", args.hex),
                                       ("-T fields", args.format == "fields")) if chosen]
    if views and (args.stats or args.quiet):
        instead = "--stats shows counts instead of frames" if args.stats else "-q shows no frames"
        raise UsageError(f"{instead}: leave out {', '.join(views)}")
    if args.quiet and args.format in ("json", "jsonl") and not args.stats:
        raise UsageError(f"-q shows no frames: -T {args.format} writes only --stats' record then (add --stats, "
                         f"or leave -q out)")


def _check_output_names(args):
    """-w OUT and --html REPORT, where given, name a file (-w - is standard output)."""
    for flag, path in (("-w", args.write), ("--html", args.html)):
        if path is not None and not path:
            raise UsageError(f"{flag} needs a file name{' (- is standard output)' if flag == '-w' else ''}")


def _check_overwrites(args):
    """-w OUT and --html REPORT are neither an input (standard input's file too) nor the same file: opening -w's
    would empty the input before it is read, the report would replace it, or the capture written."""
    outputs = [(flag, path) for flag, path in (("-w", args.write), ("--html", args.html))
               if path and not (flag == "-w" and path == "-")]
    if len(outputs) == 2 and _same_output(args.write, args.html):
        raise UsageError(f"-w and --html name the same file ({args.html}): the report would overwrite the capture")
    for flag, path in outputs:
        held = _file_id(path)
        for source in args.files if held is not None else ():
            if _file_id(source, inputs=True) == held:
                harm = "writing it would empty it before it is read" if flag == "-w" else "the report would replace it"
                raise UsageError(f"{flag} {path} is the input {source_name(source)}: {harm}")


def _same_output(one, other):
    """Whether two outputs name one file: the same (device, inode) where it exists, else the same path resolved."""
    held = _file_id(one)
    return held == _file_id(other) if held is not None else os.path.realpath(one) == os.path.realpath(other)


def _file_id(path, inputs=False):
    """The (device, inode) of the file at ``path`` (with ``inputs``, ``-`` is standard input's), or None where there
    is none."""
    try:
        found = os.fstat(sys.stdin.fileno()) if inputs and path == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError):
        return None
    return found.st_dev, found.st_ino


def _check_views(args):
    """Options that the chosen view would ignore are errors, not silence (as tshark)."""
    try:
        check_thresholds(args.abuse_rate, args.abuse_window)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.format != "text" and (args.verbose or args.hex):
        raise UsageError(f"-V and -x are text views: leave them out with -T {args.format}")
    if args.format == "fields" and not args.field:
        raise UsageError("-T fields needs at least one -e KEY")
    if args.format != "fields" and (args.field or args.field_option):
        raise UsageError("-e and -E go with -T fields")
    if args.write_format and not args.write:
        raise UsageError(f"-F {args.write_format} is the format of -w OUT: give -w, or leave -F out")
    if args.html_limit is not None and not args.html:
        raise UsageError("--html-limit goes with --html REPORT.html")
    if args.write == "-":  # standard output carries the capture: nothing else may be printed there
        views = [flag for flag, chosen in (("-V", args.verbose), ("-x", args.hex), (f"-T {args.format}",
                 args.format != "text"), ("--stats", args.stats)) if chosen]
        if views:
            them = "them" if len(views) > 1 else "it"
            raise UsageError(f"-w - writes the capture to standard output, where {', '.join(views)} would write "
                             f"too: write the capture to a file (-w OUT), or leave {them} out")
        args.quiet = True
    _check_frame_views(args)
    try:
        args.field_options = FieldOptions.parse(args.field_option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.field:
        check_keys(args.field, filter_fields())


def _run_files(args, out):
    printer = _printer(args, out)
    report = _open_report(args, printer, args.files)
    session = _session(args, printer)
    printer.writer = _open_writer(args)  # after the filter is compiled: a bad one leaves -w's file as it was
    if report is not None:
        report.watch(session.analyzers)
    files = CaptureFiles(args.files, limit=args.count)
    interrupted = False
    guard = None
    try:
        try:
            guard = defer_interrupt(False)  # SIGINT's handler while the files are read (see _read_files)
            _read_files(files, session, guard)
        finally:
            if guard is not None:
                guard.restore()
    except KeyboardInterrupt:  # Ctrl-C: conclude as the end of the capture does, then exit 130
        interrupted = True
    except WriteError as exc:  # -w failed: stop reading, conclude with what was read
        files.errors.append(str(exc))
        writer, printer.writer = printer.writer, None
        if writer is not None:
            writer.abandon()
            outside = writer.not_as_read_error()
            if outside is not None:
                files.errors.append(outside)
    if guard is not None and guard.pending:  # a Ctrl-C held during the frame whose write failed
        interrupted = True
    if printer.writer is not None and not files.read_any:  # no capture read: -w's file is left as it was
        writer, printer.writer = printer.writer, None
        writer.discard()
    try:
        _conclude(session, printer)
    except WriteError as exc:
        files.errors.append(str(exc))
    if report is not None:
        _close_report(report, session, files.errors)
    if not interrupted:
        explain_failure(session.failed, session.filter is not None)
    for error in files.errors:  # after Ctrl-C too: the frames read were written, and so were their faults
        tell(str(error))
    if interrupted:
        return 130
    if files.errors:
        return 2
    return 1 if session.failed else 0


def _open_writer(args):
    if not args.write:
        return None
    try:
        return open_writer(args.write, pick_format(args.write, args.write_format))
    except WriteError as exc:
        raise UsageError(str(exc)) from None


def _open_report(args, printer, sources):
    """``--html``: the report is one more view of the records (it needs field trees)."""
    if not args.html:
        return None
    from .render.html import DEFAULT_LIMIT, HtmlReport
    try:
        report = HtmlReport(args.html, limit=args.html_limit or DEFAULT_LIMIT, sources=list(map(str, sources)))
    except OSError as exc:
        raise UsageError(f"{args.html}: cannot write: {exc.strerror or exc}") from None
    printer.add_view(report)
    return report


def _close_report(report, session, errors):
    try:
        report.close(session.analyzers, errors)
    except OSError as exc:
        errors.append(f"{report.path}: cannot write: {exc.strerror or exc}")


def _conclude(session, printer):
    session.finish()
    printer.close(session.stats, session.analyzers)


GC_THRESHOLD = 100_000  # the collector's first generation (see _tune_garbage_collector)


def _tune_garbage_collector():
    """Per-frame objects die by reference counting, in cycles almost never: the cyclic collector
    mostly walks live objects for nothing. Freezing what the imports made takes those out of its
    walks. Its first generation is collected after GC_THRESHOLD more containers were made than freed:
    on query traffic the analyses' bounded tables grow by 100,000 to 200,000 before they are full,
    and each pass walks the entries made since the last (a 50,000-frame summary: 0.13 s in 8 passes
    at 20,000, 0.06 s in 2 at 100,000). The cyclic garbage that can wait for a pass (none was found on
    the benchmark's captures) is bounded by it: 100,000 small lists are 10 MB."""
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 50, 50)


def _read_files(files, session, guard):
    """Read the files in turn as one capture (frame numbers go on), a Ctrl-C taken as ``read_frames`` says;
    ``files.errors`` says why any stopped."""
    progress = Progress(files.paths) if on_terminal() else None
    try:
        read_frames(files, session, guard, progress)
    finally:
        if progress is not None:
            progress.done()


def _one_interface(args):
    """``-i`` given once: its interface, as a string (tshark captures on every -i; dissect on one)."""
    if args.interface is None:
        return
    if len(args.interface) > 1:
        raise UsageError(f"-i {' -i '.join(args.interface)}: dissect captures on one interface at a time")
    args.interface = args.interface[0]


def _run_live(args, out):
    import signal
    from .capture.live import LiveCapture, LiveError
    printer = _printer(args, out)
    session = _session(args, printer)
    try:
        capture = LiveCapture(args.interface, args.capture_filter, args.count, args.autostop, args.write,
                              args.write_format)
    except LiveError as exc:
        raise UsageError(str(exc)) from None
    previous = {sig: signal.signal(sig, capture.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    tell(f"capturing on {capture.iface}" + (f" ({args.capture_filter})" if args.capture_filter else ""))
    try:
        for frame in capture.frames():
            session.frame(frame)
            out.flush()  # live output streams line by line
    finally:
        capture.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _conclude(session, printer)
    dropped = "" if capture.dropped is None else f", {capture.dropped} dropped by the kernel"
    tell(f"{capture.received} packets captured on {capture.iface}{dropped}")
    if capture.write_error:
        tell(f"{capture.write_error}: capture stopped")
    if capture.time_error:
        tell(str(capture.time_error))
    if capture.write_error or capture.time_error:
        return 2
    return 1 if session.failed else 0


def _list_fields(what, out):
    """``-G fields`` / ``-G findings``: the tables, one tab-separated line each (tshark's -G style)."""
    if what == "fields":
        for table in all_field_tables():
            for spec in table:
                out.write(f"{spec.key}\t{table.protocol}\t{spec.type}\t{spec.name}\t{spec.description}\n")
    else:
        for table in all_finding_tables():
            for spec in table:
                out.write(f"{spec.code}\t{spec.severity}\t{spec.rule}\n")
    return 0


def _run_payload(args, out):
    if args.payload is not None and args.payload_file is not None:
        raise UsageError("give --payload or --payload-file, not both")
    protocols = load_protocols()
    if not args.protocol:
        raise UsageError(f"--payload needs --protocol (one of: {', '.join(sorted(protocols))})")
    if protocol_key(args.protocol) is None:
        raise UsageError(f"unknown protocol {args.protocol!r} (known: {', '.join(sorted(protocols))})")
    args.protocol = protocol_key(args.protocol)
    if args.files:
        raise UsageError("--payload takes no capture files")
    printer = _printer(args, out)
    session = _session(args, printer)
    session.payload(_read_payload(args), args.protocol)
    printer.close(session.stats, {})
    return 1 if session.failed else 0


HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
MAX_PAYLOAD = 1 << 20  # bytes of --payload-file: a message is at most a TCP stream's line of 64 KiB


def _read_payload(args):
    if args.payload_file is not None:
        name = args.payload_file
        try:
            if name == "-":  # standard input, as -r - reads it
                data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
            else:
                with open(name, "rb") as handle:
                    data = handle.read(MAX_PAYLOAD + 1)
        except OSError as exc:
            raise UsageError(f"{name}: cannot read: {exc.strerror}") from None
        if len(data) > MAX_PAYLOAD:
            raise UsageError(f"{name}: more than {MAX_PAYLOAD} bytes: no message is that long")
        return data
    text = "".join(args.payload.split()).replace(":", "")
    if text.lower().startswith("0x"):
        text = text[2:]
    if len(text) % 2 and all(c in HEX_DIGITS for c in text):
        raise UsageError(f"--payload has an odd number of hex digits ({len(text)}): each byte is two")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"--payload is not hex: {args.payload[:40]!r}") from None
