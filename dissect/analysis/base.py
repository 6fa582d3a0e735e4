"""The base of every protocol's cross-packet tracker: what a tracker that has nothing to say does."""


class Analyzer:
    """One per protocol and run. The pipeline calls ``feed`` with each decoded message, ``stream_closed``
    when a TCP stream of the protocol ends, and ``finish`` at the end of the capture; ``-j`` calls
    ``merge`` to fold another worker's tracker into this one, a run over many capture files ``follow`` to fold
    in the next file's; ``stats`` feeds ``--stats``.
    Subclasses override what they track; these defaults track nothing.

    ``stats_off``: no view of the run reads ``stats`` (the pipeline sets it, True for a run without
    ``--stats`` or a report), so what only ``stats`` shows, such as the servers-seen table, need not be kept.
    False as this ``__init__`` leaves it: an analyzer made outside a pipeline keeps everything."""

    __slots__ = ("stats_off",)

    def __init__(self):
        self.stats_off = False

    def feed(self, record, msg, tree):
        """Learn from one message of ``record`` (a frame); return the analysis records it concludes."""
        return []

    def stream_closed(self, stream):
        """TCP stream number ``stream`` ended: return what that concludes."""
        return []

    def finish(self):
        """The capture ended: return what is still pending, concluded."""
        return []

    def merge(self, other):
        """Fold ``other`` (the same class, from another -j worker) into this tracker."""

    def follow(self, other):
        """Fold in ``other``, the tracker of the run's next capture file (``--to-parquet`` and ``--dask`` dissect
        each file on its own, then fold them in the files' order): its frames came after all of this one's, though
        their numbers start at 1 again. This default merges as ``-j`` does; the built-in trackers take the file's
        values as the newer (their ``merge`` with ``later``)."""
        self.merge(other)

    def stats(self):
        """What --stats shows of this protocol: a dict; its ``servers`` list feeds the servers-seen table."""
        return {}
