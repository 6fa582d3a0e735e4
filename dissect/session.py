"""The engine that runs a capture: frames in, records out, through the display filter, into statistics.

The command, its ``-j`` workers, live capture and the Python API all run captures through a
``Session``: it holds the registry of protocols, the pipeline (layers, dissectors, analysis), the
display filter, the ``--stats`` counters and the ``--fail-on`` verdict. What it keeps goes to a
*sink*, an object with ``frame(record)`` and ``analysis(record)``: a printer for the command, a list
for the API.
"""

from .core import SEVERITY_RANK
from .filter import compile_filter, evaluate, frame_values
from .pipeline import Pipeline
from .registry import Registry, all_field_tables, parse_decode_as
from .render.stats import StatsCollector


class Session:
    """One capture, frame by frame: call ``frame`` for each frame, then ``finish``.

    ``tree``: build field trees (views that show fields need them; a display filter turns them on).
    ``stats``: count what ``--stats`` shows. ``fail_on``: a severity; ``failed`` becomes true when a
    finding at or above it is seen, whether the filter shows its frame or not."""

    __slots__ = ("sink", "filter", "pipeline", "stats", "fail_rank", "failed")

    def __init__(self, sink, decode_as=(), display_filter=None, tree=False, stats=False, fail_on=None):
        self.sink = sink
        self.filter = compile_filter(display_filter, fields=filter_fields()) if display_filter else None
        registry = Registry(parse_decode_as(decode_as))
        self.pipeline = Pipeline(registry, tree=bool(tree) or self.filter is not None)
        self.stats = StatsCollector() if stats else None
        self.fail_rank = SEVERITY_RANK[fail_on] if fail_on else None
        self.failed = False

    @property
    def analyzers(self):
        return self.pipeline.analyzers

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

    def finish(self):
        """The capture ended: what is still pending is concluded, in the order its first frames came."""
        for rec in sorted(self.pipeline.finish(), key=finish_order):
            self.analysis(rec)

    def _frame(self, record):
        if self.fail_rank is not None and not self.failed:
            self._check_fail(record.all_findings())
        if self.stats is not None:
            self.stats.frame(record)
        if self.filter is None or evaluate(self.filter, frame_values(record)):
            self.sink.frame(record)

    def analysis(self, rec):
        """An analysis record concluded outside ``frame`` and ``finish`` (``-j`` merges use it)."""
        if self.fail_rank is not None and not self.failed:
            self._check_fail(rec.findings)
        if self.stats is not None:
            self.stats.analysis(rec)
        if self.filter is None or evaluate(self.filter, analysis_values(rec)):
            self.sink.analysis(rec)

    def _check_fail(self, findings):
        for finding in findings:
            if SEVERITY_RANK[finding.severity] >= self.fail_rank:
                self.failed = True
                return

    def stats_dict(self):
        """The ``--stats`` result (the ``-T json`` stats record); needs ``stats=True``."""
        return self.stats.as_dict(self.pipeline.analyzers)


def finish_order(rec):
    """What the capture's end concludes is shown in the order its first frames arrived."""
    return next((number for number in rec.frames if number is not None), 0)


def analysis_values(rec):
    """The keys a display filter sees on an analysis record."""
    values = {rec.protocol: [True], "analysis": [rec.name], f"{rec.protocol}.analysis": [rec.name]}
    for finding in rec.findings:
        values.setdefault("expert.code", []).append(finding.code)
        values.setdefault("expert.severity", []).append(finding.severity)
    return values


def filter_fields():
    """Every key a display filter may name, key -> type: the tables of the lower layers and of every
    registered protocol."""
    return {spec.key: spec.type for table in all_field_tables() for spec in table}
