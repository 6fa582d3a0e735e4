"""The command's output: the views a run asks for, fed the records a Session keeps, and the statistics."""

from .fields import FieldsRenderer
from .hexdump import HexRenderer
from .jsonout import JsonRenderer
from .text import SummaryRenderer, TreeRenderer


class Printer:
    """Sends each record to the chosen views: summary lines, ``-V`` trees, ``-x`` hex dumps, JSON, or
    ``-T fields`` columns; and each frame shown to ``writer`` (``-w``) when there is one.

    With ``stats`` or ``quiet`` no record is printed; with ``stats`` ``close`` writes the statistics
    (as text, or as JSON records: one a server seen, then the stats record)."""

    __slots__ = ("out", "json", "views", "writer", "summary", "json_only")

    def __init__(self, out, format="text", verbose=False, hexdump=False, color=False, stats=False, quiet=False,
                 fields=None, field_options=None, writer=None):
        self.out = out
        self.json = None
        self.views = []
        self.writer = writer
        silent = stats or quiet
        if format == "fields":
            if not silent:
                self.views.append(FieldsRenderer(out, fields, field_options))
        elif format != "text":
            self.json = JsonRenderer(out, lines=format == "jsonl")
            if not silent:
                self.views.append(self.json)
        elif not silent:
            if verbose:
                self.views.append(TreeRenderer(out, color))
            if hexdump:
                self.views.append(HexRenderer(out, color))
            if not self.views:
                self.views.append(SummaryRenderer(out, color))
        self._shortcuts()

    def add_view(self, view):
        """One more view of every record (``--html``'s report): every view is then called from the list."""
        self.views.append(view)
        self._shortcuts()

    def _shortcuts(self):
        # The summary alone, the commonest view, called directly (compiled, a C call) rather than from the list; and
        # the same for JSON alone (-T json, jsonl). With another view beside it, neither.
        only = self.views[0] if len(self.views) == 1 else None
        self.summary = only if type(only) is SummaryRenderer else None
        self.json_only = only if only is self.json else None

    @property
    def needs_tree(self):
        """True when a view shows fields, so the pipeline must build field trees."""
        return any(not isinstance(view, SummaryRenderer) for view in self.views)

    def frame(self, record):
        if self.writer is not None:
            self.writer.write(record)
        if self.summary is not None:
            self.summary.frame(record)
            return
        if self.json_only is not None:
            self.json_only.frame(record)
            return
        for view in self.views:
            view.frame(record)

    def analysis(self, rec):
        if self.summary is not None:
            self.summary.analysis(rec)
            return
        if self.json_only is not None:
            self.json_only.analysis(rec)
            return
        for view in self.views:
            view.analysis(rec)

    def close(self, stats=None, analyzers=None):
        """End the output; ``stats``: the run's StatsCollector, when ``--stats`` asked for it."""
        if stats is not None:
            analyzers = analyzers or {}
            if self.json is not None:
                for record in stats.json_records(analyzers):
                    self.json.extra(record)
            else:
                stats.render_text(self.out, analyzers)
        if self.json is not None:
            self.json.close()
        self.out.flush()
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()
