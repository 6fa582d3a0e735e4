"""The command's output: the views a run asks for, fed the records a Session keeps, and the statistics."""

from .hexdump import HexRenderer
from .jsonout import JsonRenderer
from .text import SummaryRenderer, TreeRenderer


class Printer:
    """Sends each record to the chosen views: summary lines, ``-V`` trees, ``-x`` hex dumps, or JSON.

    With ``stats`` no record is printed: ``close`` writes the statistics instead (as text, or as JSON
    records: one a server seen, then the stats record)."""

    def __init__(self, out, format="text", verbose=False, hexdump=False, color=False, stats=False):
        self.out = out
        self.json = None
        self.views = []
        if format != "text":
            self.json = JsonRenderer(out, lines=format == "jsonl")
            if not stats:
                self.views.append(self.json)
        elif not stats:
            if verbose:
                self.views.append(TreeRenderer(out, color))
            if hexdump:
                self.views.append(HexRenderer(out, color))
            if not self.views:
                self.views.append(SummaryRenderer(out, color))

    @property
    def needs_tree(self):
        """True when a view shows fields, so the pipeline must build field trees."""
        return any(not isinstance(view, SummaryRenderer) for view in self.views)

    def frame(self, record):
        for view in self.views:
            view.frame(record)

    def analysis(self, rec):
        for view in self.views:
            view.analysis(rec)

    def close(self, stats=None, analyzers=None):
        """End the output; ``stats``: the run's StatsCollector, when ``--stats`` asked for it."""
        if stats is not None:
            analyzers = analyzers or {}
            if self.json is not None:
                for key, analyzer in sorted(analyzers.items()):
                    for server in analyzer.stats().get("servers", ()):
                        self.json.extra({"kind": "server", "protocol": key, **server})
                self.json.extra(stats.as_dict(analyzers))
            else:
                stats.render_text(self.out, analyzers)
        if self.json is not None:
            self.json.close()
        self.out.flush()
