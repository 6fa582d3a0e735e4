"""The engine that runs a capture: frames in, records out, through the display filter, into statistics.

The command, its ``-j`` workers, live capture and the Python API all run captures through a
``Session``: it holds the registry of protocols, the pipeline (layers, dissectors, analysis), the
display filter, the ``--stats`` counters and the ``--fail-on`` verdict. What it keeps goes to a
*sink*, an object with ``frame(record)`` and ``analysis(record)``: a printer for the command, a list
for the API.
"""

from .analysis.abuse import DEFAULT_RATE, DEFAULT_WINDOW, KEY as ABUSE, check_thresholds, is_abuse_record
from .core import SEVERITY_RANK
from .core.escape import tell
from .core.interrupt import take_signals
from .filter import compile_filter, evaluate, frame_values
from .pipeline import Pipeline
from .registry import Registry, UsageError, all_field_tables, parse_decode_as
from .render.printer import Printer
from .render.stats import StatsCollector


class Session:
    """One capture, frame by frame: call ``frame`` for each frame, then ``finish``.

    ``tree``: build field trees (views that show fields need them; a display filter turns them on).
    ``stats``: count what ``--stats`` shows (the frames and records the filter shows). ``analyzer_stats``: a
    view reads the analyzers' ``stats()`` (the HTML report does without ``stats``); None: as ``stats``. ``fail_on``: a
    severity; ``failed`` becomes a true FailReason at the first finding at or above it, whether the
    filter shows its frame or not. ``abuse_rate`` requests per second sustained over ``abuse_window``
    seconds: the threshold of the abuse analysis's rules (``--abuse-rate``, ``--abuse-window``)."""

    __slots__ = ("sink", "printer", "filter", "pipeline", "stats", "fail_rank", "failed", "phase", "current")

    def __init__(self, sink, decode_as=(), display_filter=None, tree=False, stats=False, fail_on=None,
                 abuse_rate=DEFAULT_RATE, abuse_window=DEFAULT_WINDOW, analyzer_stats=None):
        self.sink = sink
        self.printer = sink if type(sink) is Printer else None  # the command's sink, called in C when compiled
        try:
            check_thresholds(abuse_rate, abuse_window)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.filter = compile_filter(display_filter, fields=filter_fields()) if display_filter else None
        registry = Registry(parse_decode_as(decode_as))
        self.pipeline = Pipeline(registry, tree=bool(tree) or self.filter is not None, abuse_rate=abuse_rate,
                                 abuse_window=abuse_window,
                                 analyzer_stats=bool(stats) if analyzer_stats is None else analyzer_stats)
        self.stats = StatsCollector() if stats else None
        self.fail_rank = SEVERITY_RANK[fail_on] if fail_on else None
        self.failed = False
        self.phase, self.current = 0, 0  # where a finding is met: FailReason.at

    @property
    def analyzers(self):
        """Each protocol's analyzer by its key, and the abuse analysis under ``"abuse"``."""
        return {**self.pipeline.analyzers, ABUSE: self.pipeline.traffic}

    def frame(self, frame, packet=None):
        """Dissect one frame (``packet``: the frame already decoded by ``decode_frame``, if it was)."""
        record, concluded = self.pipeline.frame(frame, packet)
        self._frame(record)
        for rec in concluded:
            self.analysis(rec)

    def payload(self, payload, key):
        """Dissect one bare message of protocol ``key``; return its frame record (frame 1, no layers)."""
        record = self.pipeline.payload(payload, key)
        self._frame(record)
        return record

    def skip(self, frame):
        """A frame that another ``-j`` worker dissects: only the capture's clock moves."""
        self.pipeline.skip(frame)

    def finish(self, conclude=True):
        """The capture ended: what is still pending is concluded, in the order its first frames came; then
        what the abuse analysis concludes across conversations (without ``conclude``: a run of several files
        concludes it on them folded)."""
        for rec in sorted(self.pipeline.finish(), key=finish_order):
            self.ending(rec)
        if conclude:
            self.conclude(self.pipeline.traffic)

    def ending(self, rec):
        """A record the capture's end concludes (``finish`` gives them in ``finish_order``)."""
        self.phase, self.current = 1, finish_order(rec)
        self.analysis(rec)

    def conclude(self, traffic):
        """The abuse analysis's records for the whole capture (``-j``: ``traffic`` merged from the workers)."""
        self.phase, self.current = 2, 0
        for rec in traffic.conclude():
            self.analysis(rec)

    def _frame(self, record):
        self.current = record.number  # the records frame() concludes after it are met at this frame too
        shown = self.filter is None or evaluate(self.filter, frame_values(record))
        if self.fail_rank is not None and self.failed is False:
            self._check_fail(record.all_findings(), f"frame {record.number}", shown)
        if shown:
            if self.stats is not None:
                self.stats.frame(record)
            if self.printer is not None:
                self.printer.frame(record)
            else:
                self.sink.frame(record)

    def analysis(self, rec):
        """An analysis record concluded outside ``frame`` and ``finish`` (``-j`` merges use it)."""
        shown = self.filter is None or evaluate(self.filter, analysis_values(rec))
        if self.fail_rank is not None and self.failed is False:
            self._check_fail(rec.findings, f"the {rec.protocol} {rec.name} record of frames {rec.frames[:4]}", shown)
        if shown:
            if self.stats is not None:
                self.stats.analysis(rec)
            if self.printer is not None:
                self.printer.analysis(rec)
            else:
                self.sink.analysis(rec)

    def _check_fail(self, findings, where, shown):
        for finding in findings:
            if SEVERITY_RANK[finding.severity] >= self.fail_rank:
                self.failed = FailReason(finding.code, finding.severity, where, shown, (self.phase, self.current))
                return

    def stats_dict(self):
        """The ``--stats`` result (the ``-T json`` stats record); needs ``stats=True``."""
        return self.stats.as_dict(self.analyzers)


class FailReason:
    """The finding that made ``--fail-on`` fail the run: its code, severity, where, whether it was shown, and
    ``at``, when one process meets it: (0, frame number) while frames are read, (1, first frame) for a record
    the capture's end concludes, (2, 0) for the abuse analysis's (``-j`` keeps the workers' first)."""

    __slots__ = ("code", "severity", "where", "shown", "at")

    def __init__(self, code, severity, where, shown, at=(0, 0)):
        self.code = code
        self.severity = severity
        self.where = where
        self.shown = shown
        self.at = at

    def __bool__(self):
        return True

    def __str__(self):
        return f"{self.where} has {self.severity} {self.code}" + ("" if self.shown else " (not shown by the filter)")


def first_failure(reasons):
    """The FailReason one process would meet first among those of ``-j``'s sessions (false ones skipped), or
    False."""
    return min((reason for reason in reasons if reason), key=lambda reason: reason.at, default=False)


def explain_failure(reason, filtered):
    """With -Y, a finding that fails the run may sit in a frame that is not shown: stderr says which it was."""
    if reason and filtered and not reason.shown:
        tell(f"--fail-on: {reason}")


def abuse_options(args):
    """The Session's abuse thresholds from the command's options (--abuse-rate, --abuse-window)."""
    return {"abuse_rate": args.abuse_rate, "abuse_window": args.abuse_window}


def read_frames(files, session, guard, progress=None):
    """Dissect the frames of ``files`` (CaptureFiles: the files in turn, as one capture) in ``session``. With
    ``guard`` SIGINT's handler (a DeferredInterrupt, not holding), a Ctrl-C that comes while a frame is dissected is
    raised once the frame is done: the frame is written, and the analyses that the end of the run concludes are not
    left half updated. One that comes while a frame is read is raised at once (a FIFO may keep the read waiting).
    ``progress``: a Progress, shown every 16,384 frames."""
    for frame in files:
        if guard is not None:
            guard.holding = True
            session.frame(frame)
            guard.holding = False
            if guard.pending:
                raise KeyboardInterrupt
        else:
            session.frame(frame)
        take_signals()
        if progress is not None and not frame.number & 0x3FFF:
            progress.show(frame.number, *files.position())


def finish_order(rec):
    """What the capture's end concludes is shown in the order its first frames arrived."""
    return next((number for number in rec.frames if number is not None), 0)


def analysis_values(rec):
    """The keys a display filter sees on an analysis record."""
    values = {rec.protocol: [True], "analysis": [rec.name], f"{rec.protocol}.analysis": [rec.name]}
    if rec.protocol != ABUSE and is_abuse_record(rec):  # a protocol's token_reuse: an abuse record too
        values[ABUSE], values[f"{ABUSE}.analysis"] = [True], [rec.name]
    for finding in rec.findings:
        values.setdefault("expert.code", []).append(finding.code)
        values.setdefault("expert.severity", []).append(finding.severity)
    if rec.findings:
        values["expert"] = [True]
    return values


def filter_fields():
    """Every key a display filter may name, key -> type: the tables of the lower layers and of every
    registered protocol."""
    return {spec.key: spec.type for table in all_field_tables() for spec in table}
