"""Helpers shared by the per-protocol trackers."""

from ..core.bounded import BoundedDict, put, refreshed
from ..core.model import new_field

_round_float = float.__round__  # round() of a float, without looking up __round__ on each call


class Timing:
    """Count, minimum, mean and maximum of response times, in constant memory.

    The total is kept in whole nanoseconds: integer sums do not depend on the order of the
    additions, so timings merged from ``-j`` workers give the same mean as one process."""

    __slots__ = ("count", "total_ns", "low", "high")

    def __init__(self):
        self.count = 0
        self.total_ns = 0
        self.low = None
        self.high = None

    def add(self, seconds):
        self.count += 1
        self.total_ns += _round_float(seconds * 1e9)
        self.low = seconds if self.low is None else min(self.low, seconds)
        self.high = seconds if self.high is None else max(self.high, seconds)

    def merge(self, other):
        if other.count:
            self.count += other.count
            self.total_ns += other.total_ns
            self.low = other.low if self.low is None else min(self.low, other.low)
            self.high = other.high if self.high is None else max(self.high, other.high)

    def as_dict(self):
        if not self.count:
            return {"count": 0}
        return {"count": self.count, "min": self.low, "mean": self.total_ns / self.count / 1e9, "max": self.high}


def elapsed_seconds(start, end):
    """Seconds from ``start`` to ``end`` (capture times: float seconds since 1970), at least 0, in whole microseconds.
    Such a float holds a time of this era to about 0.24 microsecond, and a difference of two carries that noise (45 µs
    of a microsecond capture read 45.061 µs): whole microseconds are what most captures' clocks give, and no finer
    part of a difference would be exact."""
    micros = (end - start) * 1_000_000 + 0.5
    micros -= micros % 1.0  # the whole microseconds (in C when compiled: round(x, 6) converts to decimal digits)
    return max(0.0, micros / 1_000_000)


def annotate_response(record, msg, tree, request_frame, request_ts, fields):
    """Wireshark-style generated fields on a reply: which frame asked, and how long it took.
    ``fields``: the protocol's FieldTable, which declares ``request_in`` and ``response_time``."""
    elapsed = elapsed_seconds(request_ts, record.ts)
    msg.values["request_frame"] = request_frame
    msg.values["response_time"] = elapsed
    if tree:
        spec = fields.request_in
        msg.fields.append(new_field(spec.key, spec.name, 0, 0, request_frame, None, display=None, generated=True))
        spec = fields.response_time
        msg.fields.append(new_field(spec.key, spec.name, 0, 0, elapsed, None, display=f"{elapsed * 1000:.3f} ms",
                                    generated=True))
    return elapsed


def merge_counts(mine, theirs, names=("requests", "answered")):
    """Add another worker's request and answer counts into this analyzer's."""
    for name in names:
        setattr(mine, name, getattr(mine, name) + getattr(theirs, name))


def merge_timings(mine, theirs):
    """Add another worker's response times, by request name, into this analyzer's."""
    for name, timing in theirs.items():
        mine.setdefault(name, Timing()).merge(timing)


def merge_latest(mine, theirs, combine, later=False, order=None):
    """Fold another worker's table of entries that say when they were last updated (their ``last_frame``)
    into this one (``-j``). An entry in both becomes ``combine(older, newer)``; the table keeps the
    order of last update and its size limit, as one process would. ``later``: ``theirs`` is the next capture
    file's (see ``Analyzer.follow``): its entries are the newer, whatever their frame numbers. ``order``: an
    entry's place in one process's table, where entries of one frame are updated in an order of their own (the
    servers of one master list); by default its ``last_frame``. Returns how many entries the limit left out."""
    if later:
        return refill(mine, in_file_order(mine, theirs, combine))
    combined = dict(mine)
    for key, entry in theirs.items():
        old = combined.get(key)
        if old is not None:
            newer, older = (entry, old) if entry.last_frame > old.last_frame else (old, entry)
            entry = combine(older, newer)
        combined[key] = entry
    order = order or _last_frame
    return refill(mine, sorted(combined.items(), key=lambda item: order(item[1])))


def _last_frame(entry):
    return entry.last_frame


def in_file_order(mine, theirs, combine):
    """The entries of the BoundedDicts ``mine`` and ``theirs`` (the next capture file's), oldest first: those only
    ``mine`` holds in its order, then those of ``theirs`` in its own, an entry in both as ``combine(mine's, its)``."""
    return [(key, entry) for key, entry in mine.items() if key not in theirs] + \
        [(key, entry if key not in mine else combine(mine[key], entry)) for key, entry in theirs.items()]


def refill(table, ordered):
    """Refill ``table`` (a BoundedDict) with the last of the (key, entry) pairs ``ordered`` oldest first that its
    limit holds; return how many it left out."""
    kept = ordered[-table.limit:]
    table.clear()
    table.update(kept)
    return len(ordered) - len(kept)


class ServersSeen:
    """The servers-seen table of ``--stats``: per server, the responses counted and each field's newest
    value, newest by the frame that carried it (a missing value leaves the older one).

    Each field keeps the frame it came from, so the table does not depend on the order in which
    replies are concluded, nor on how ``-j`` split them between workers: merging two workers'
    tables gives the table one process builds. Rows come out ordered by their newest frame. A run over
    many capture files folds each file's table into the run's in the files' order (``merge`` with
    ``later``): frame numbers start at 1 in each file, so a row also says which of the files folded in
    (``epoch``) its newest value came from, a later file's values are the newer, and rows come out ordered
    by their file, then their newest frame."""

    __slots__ = ("rows", "columns", "name_order", "epoch", "forgotten")

    def __init__(self, limit, columns):
        self.rows = BoundedDict(limit)  # server -> _Row
        self.columns = columns          # the fields' names, in the order update() takes their values
        self.name_order = tuple(sorted(range(len(columns)), key=columns.__getitem__))
        self.epoch = 0                  # the epoch of the last capture file folded in (0: one capture)
        self.forgotten = 0              # rows evicted past the limit, the least recently updated first

    def update(self, server, frame, values):
        """Count a response of ``server`` carried by frame ``frame``; ``values``: its fields in the order of
        ``columns``, None for a missing one."""
        row = refreshed(self.rows, server)  # the row is updated in place
        if row is None:
            row = _Row(len(self.columns), frame)
            if put(self.rows, server, row) is not None:
                self.forgotten += 1
        row.responses += 1
        newest = frame >= row.last_frame  # then no field has a newer frame: no comparison per field
        if newest:
            row.last_frame = frame
        for i in range(len(values)):
            value = values[i]
            if value is not None and (newest or frame >= row.frames[i]):
                row.values[i] = value
                row.frames[i] = frame

    def merge(self, other, later=False):
        """Fold in another ``-j`` worker's table, or with ``later`` the next capture file's, whose values are the
        newer whatever their frames. ``other`` is used up: its rows become this table's (with ``later``, their
        ``epoch`` moved past this table's)."""
        if later:
            base = self.epoch + 1
            for row in other.rows.values():
                row.epoch += base
            self.epoch = base + other.epoch
        combined = dict(self.rows)
        for server, row in other.rows.items():
            mine = combined.get(server)
            combined[server] = row if mine is None else _merged(mine, row, later)
        self.forgotten += other.forgotten + refill(self.rows, sorted(combined.items(), key=_row_order))

    def entries(self):
        """The rows, oldest first by their file (``epoch``), then their newest frame."""
        return [self._entry(server, row) for server, row in sorted(self.rows.items(), key=_row_order)]

    def get(self, server):
        row = self.rows.get(server)
        return None if row is None else self._entry(server, row)

    def newest_first(self):
        """(server, responses counted) from the row updated last back: a reader that follows the table stops at
        the first row it has already seen, and asks get() for the entries of the others."""
        for server, row in self.rows.newest_first():
            yield server, row.responses

    def __contains__(self, server):
        return server in self.rows

    def _entry(self, server, row):
        """A row as --stats shows it: the count and frame first, then the fields that have a value, by name."""
        entry = {"server": server, "responses": row.responses, "last_frame": row.last_frame}
        for i in self.name_order:
            if row.values[i] is not None:
                entry[self.columns[i]] = row.values[i]
        return entry

    def __len__(self):
        return len(self.rows)

    def report(self):
        """What ``--stats`` reports of the table: its rows (``servers``), and how many it forgot past its limit
        (``servers_forgotten``, where it did)."""
        report = {"servers": self.entries()}
        if self.forgotten:
            report["servers_forgotten"] = self.forgotten
        return report


class _Row:
    """One server of the table: per column, the newest value and the frame that carried it (None and -1 until
    a response has the field); ``epoch``: the capture file of its newest frame, where files were folded in."""

    __slots__ = ("responses", "last_frame", "values", "frames", "epoch")

    def __init__(self, width, frame):
        self.responses = 0
        self.last_frame = frame
        self.values = [None] * width
        self.frames = [-1] * width
        self.epoch = 0


def _row_order(item):
    server, row = item
    return row.epoch, row.last_frame, server


def _merged(a, b, later):
    """The row of a server in two tables: ``b``'s values are the newer where it has them, with ``later`` (a later
    file's), or else where their frames are."""
    row = _Row(len(a.values), b.last_frame if later else max(a.last_frame, b.last_frame))
    row.epoch = b.epoch if later else max(a.epoch, b.epoch)
    row.responses = a.responses + b.responses
    for i in range(len(a.values)):
        newer = b if b.frames[i] > a.frames[i] or later and b.frames[i] >= 0 else a
        row.values[i], row.frames[i] = newer.values[i], newer.frames[i]
    return row
