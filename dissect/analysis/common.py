"""Helpers shared by the per-protocol trackers."""

from ..core import Field
from ..core.bounded import BoundedDict


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
        self.total_ns += round(seconds * 1e9)
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


def annotate_response(record, msg, tree, request_frame, request_ts, fields):
    """Wireshark-style generated fields on a reply: which frame asked, and how long it took.
    ``fields``: the protocol's FieldTable, which declares ``request_in`` and ``response_time``."""
    elapsed = max(0.0, record.ts - request_ts)
    msg.values["request_frame"] = request_frame
    msg.values["response_time"] = elapsed
    if tree:
        spec = fields.request_in
        msg.fields.append(Field(spec.key, spec.name, 0, 0, request_frame, generated=True))
        spec = fields.response_time
        msg.fields.append(Field(spec.key, spec.name, 0, 0, elapsed, display=f"{elapsed * 1000:.3f} ms",
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


def merge_latest(mine, theirs, combine):
    """Fold another worker's table of entries that say when they were last updated (``last_frame``)
    into this one (``-j``). An entry in both becomes ``combine(older, newer)``; the table keeps the
    order of last update and its size limit, as one process would."""
    combined = dict(mine)
    for key, entry in theirs.items():
        old = combined.get(key)
        if old is not None:
            newer, older = (entry, old) if entry["last_frame"] > old["last_frame"] else (old, entry)
            entry = combine(older, newer)
        combined[key] = entry
    mine.clear()
    for key, entry in sorted(combined.items(), key=lambda item: item[1]["last_frame"])[-mine.limit:]:
        mine[key] = entry


class ServersSeen:
    """The servers-seen table of ``--stats``: per server, the responses counted and each field's newest
    value, newest by the frame that carried it (a missing value leaves the older one).

    Each field keeps the frame it came from, so the table does not depend on the order in which
    replies are concluded, nor on how ``-j`` split them between workers: merging two workers'
    tables gives the table one process builds. Rows come out ordered by their newest frame."""

    __slots__ = ("rows",)

    def __init__(self, limit):
        self.rows = BoundedDict(limit)  # server -> (entry, {field: frame})

    def update(self, server, frame, fields):
        row = self.rows.get(server)
        if row is None:
            row = ({"server": server, "responses": 0, "last_frame": frame}, {})
            self.rows.put(server, row)
        else:
            self.rows.move_to_end(server)  # the row is updated in place
        entry, stamps = row
        entry["responses"] += 1
        entry["last_frame"] = max(entry["last_frame"], frame)
        for key, value in fields.items():
            if value is not None and frame >= stamps.get(key, -1):
                entry[key] = value
                stamps[key] = frame

    def merge(self, other):
        """Fold in another ``-j`` worker's table."""
        combined = dict(self.rows)
        for server, (entry, stamps) in other.rows.items():
            mine = combined.get(server)
            if mine is not None:
                entry, stamps = _newest_fields(mine, (entry, stamps))
            combined[server] = (entry, stamps)
        self.rows.clear()
        for server, row in sorted(combined.items(), key=_row_order)[-self.rows.limit:]:
            self.rows[server] = row

    def entries(self):
        """The rows, oldest first by their newest frame; each row's fields in one order (the count and
        frame first, then by name), whichever reply set them first."""
        return [_canonical(entry) for _, (entry, _) in sorted(self.rows.items(), key=_row_order)]

    def get(self, server):
        row = self.rows.get(server)
        return None if row is None else row[0]

    def __len__(self):
        return len(self.rows)


def _row_order(item):
    server, (entry, _) = item
    return entry["last_frame"], server


def _canonical(entry):
    head = {"server": entry["server"], "responses": entry["responses"], "last_frame": entry["last_frame"]}
    return {**head, **{key: entry[key] for key in sorted(entry) if key not in head}}


def _newest_fields(a, b):
    (first, first_stamps), (second, second_stamps) = a, b
    entry = {"server": first["server"], "responses": first["responses"] + second["responses"],
             "last_frame": max(first["last_frame"], second["last_frame"])}
    stamps = {}
    for key in {**first_stamps, **second_stamps}:
        one, two = first_stamps.get(key, -1), second_stamps.get(key, -1)
        entry[key], stamps[key] = (first[key], one) if one >= two else (second[key], two)
    return entry, stamps
