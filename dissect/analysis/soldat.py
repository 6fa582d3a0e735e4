"""Soldat across lines: one record per list exchange (request, list begin, servers, list end).

What the open lists hold is budgeted in all, not per list: at most MAX_HELD_ENTRIES server
entries and MAX_HELD_BYTES bytes (estimated, text included) across every list not yet
concluded. Past the budget the oldest open list is concluded early (soldat.state_evicted);
a list that alone reaches it, or MAX_SERVERS_PER_LIST, counts its further servers without
keeping them (the result's ``omitted``).

A lobby sends the same server lines to every client that asks for the list: the row of a server line without a
finding (its values in SERVER_KEYS order, their estimated bytes, and its servers-seen columns) is kept by the line's
bytes, which give it again, for up to MAX_ROWS lines of at most MAX_ROW_LINE bytes; past MAX_ROWS the table begins
anew.
"""

from sys import getsizeof

from ..capture.tables import FRAME_FINDINGS
from ..core import AnalysisRecord
from ..core.bounded import BoundedDict, peek, popped, put
from ..core.fmt import counted, decimal_text, or_unknown
from ..dissectors.soldat import FILTER_KEYS, GAME_STYLES, SERVER_KEYS, W, clip, server_values
from .base import Analyzer
from .common import ServersSeen, Timing, elapsed_seconds, merge_counts

MAX_EXCHANGES = 4096
MAX_SERVERS_PER_LIST = 10000
MAX_HELD_ENTRIES = 200_000
MAX_HELD_BYTES = 64 * 1024 * 1024
MAX_SERVERS = 10000
MAX_FRAMES = 64                   # frame numbers a list record keeps: the first, and the latest last
MAX_TEXT = 256                    # characters of a name or map kept in the servers-seen table
MAX_ROWS = 1024                   # server lines whose row is kept by their bytes (see _row)
MAX_ROW_LINE = 512                # bytes of a line so kept
SEEN_COLUMNS = ("name", "map", "players", "max_players", "game_type", "version", "password", "listed_by")
# Where _seen finds its columns among a server's values.
IP, PORT, PASSWORDED, NAME, MAP, PLAYERS, MAXPLAYERS, GAMESTYLE, VERSION = [
    SERVER_KEYS.index(key) for key in ("ip", "port", "passworded", "name", "map", "players", "maxplayers",
                                       "gamestyle", "version")]
CUT_MESSAGE = FRAME_FINDINGS.cut_message  # a list short of lines the capture did not keep: no fault of the peer
EMPTY_TUPLE_BYTES = getsizeof(())
TUPLE_SLOT_BYTES = getsizeof((None,)) - EMPTY_TUPLE_BYTES
_STR_BYTES = str.__sizeof__  # sys.getsizeof of a str (it is not tracked by the garbage collector), called unbound


def _cost(values):
    """Estimated bytes a kept tuple of values holds: the tuple (its getsizeof), its slot in a list, and its
    text."""
    cost = EMPTY_TUPLE_BYTES + TUPLE_SLOT_BYTES * len(values) + 8
    for value in values:
        if type(value) is str:
            size = _STR_BYTES(value)
            cost += size
    return cost


class _Exchange:
    __slots__ = ("client", "lobby", "filters", "announced", "servers", "received", "cost", "frames", "start_ts",
                 "elapsed", "ended", "lost", "uncaptured", "cut_server", "begun")

    def __init__(self, client, lobby):
        self.client = client
        self.lobby = lobby
        self.filters = None          # the request's filter values, in FILTER_KEYS order
        self.announced = None
        self.servers = []            # the server entries kept, each a tuple in SERVER_KEYS order
        self.received = 0
        self.cost = 0                # estimated bytes held by filters and servers
        self.frames = []
        self.start_ts = None
        self.elapsed = None
        self.ended = False
        self.lost = False            # bytes of the stream were lost while the list was open
        self.uncaptured = False      # bytes of the stream were not captured (snap length) while it was open
        self.cut_server = False      # the stream ended inside a server line, which is not counted
        self.begun = False           # its f line came (its SERVERCOUNT may be no number)


class SoldatAnalyzer(Analyzer):
    __slots__ = ("exchanges", "servers", "timing", "requests", "answered", "held_entries", "held_bytes", "rows")

    def __init__(self):
        super().__init__()
        self.exchanges = BoundedDict(MAX_EXCHANGES)
        self.servers = ServersSeen(MAX_SERVERS, SEEN_COLUMNS)
        self.timing = Timing()
        self.requests = 0
        self.answered = 0
        self.held_entries = 0        # server entries kept by all open lists
        self.held_bytes = 0          # their estimated bytes, and the filters'
        self.rows = {}               # a server line's bytes -> its row, see _row

    def feed(self, record, msg, tree):
        values = msg.values
        stream = values.get("stream")
        if stream is None:
            return []
        out = []
        name = msg.name
        request = name == "request_list"
        exchange = peek(self.exchanges, stream)
        if request or exchange is None or name == "list_begin" and (exchange.begun or exchange.received):
            if exchange is not None:  # a new request, or an f after a list began: the list before it ends here
                why = "a new request arrived on the stream" if request else "a new list began (f)"
                out.append(self._conclude(stream, exchange, why))
            exchange = self._open(stream, msg, out)
        if values.get("after_gap"):
            exchange.lost = True
        if values.get("after_uncaptured"):
            exchange.uncaptured = True
        if record.number is not None:
            _add_frames(exchange.frames, msg.frames)
        if name == "server":  # first: most lines are server entries
            if values.get("cut_by_end"):
                exchange.cut_server = True  # the stream ended inside the line: its values may be cut short
            else:
                self._server(stream, exchange, msg, out)
        elif request:
            self.requests += 1
            exchange.filters = tuple([_text(values.get(key)) for key in FILTER_KEYS])
            self._hold(exchange, 0, _cost(exchange.filters))
            exchange.start_ts = record.ts
        elif name == "list_begin":
            exchange.begun = True
            exchange.announced = values.get("servercount")
        elif name == "list_end":
            exchange.ended = True
            if exchange.start_ts is not None and record.ts is not None:
                exchange.elapsed = elapsed_seconds(exchange.start_ts, record.ts)
                self.answered += 1
                self.timing.add(exchange.elapsed)
            del self.exchanges[stream]
            out.append(self._conclude(stream, exchange))
        return out

    def _open(self, stream, msg, out):
        exchange = _Exchange(msg.values.get("client"), msg.values.get("server"))
        evicted = put(self.exchanges, stream, exchange)
        if evicted is not None:
            out.append(self._evict(*evicted, f"more than {MAX_EXCHANGES} server lists were open at once"))
        return exchange

    def _server(self, stream, exchange, msg, out):
        exchange.received += 1
        values, cost, seen = self._row(msg)
        if len(exchange.servers) < MAX_SERVERS_PER_LIST:
            self._make_room(stream, cost, out)
            if self.held_entries < MAX_HELD_ENTRIES and self.held_bytes + cost <= MAX_HELD_BYTES:
                exchange.servers.append(values)
                self._hold(exchange, 1, cost)
        if not self.stats_off:
            self._seen(exchange, _seen_columns(values) if seen is None else seen, msg.frames)

    def _row(self, msg):
        """A server line's values in SERVER_KEYS order, their _cost, and its _seen_columns (None where no view reads
        them), kept by the line's bytes (see the module's docstring): the same bytes decode to the same values."""
        line = msg.payload
        keep = type(line) is bytes and len(line) <= MAX_ROW_LINE and not msg.findings  # a finding: maybe cut
        row = self.rows.get(line) if keep else None
        if row is None:
            values = server_values(msg.values)
            row = values, _cost(values), None if self.stats_off else _seen_columns(values)
            if keep:
                if len(self.rows) >= MAX_ROWS:
                    self.rows.clear()  # begun anew with the lines that come now (a server's line changes)
                self.rows[line] = row
        return row

    def _make_room(self, stream, cost, out):
        """Conclude the oldest open lists, other than this stream's, until a new entry fits the budget."""
        while (self.held_entries >= MAX_HELD_ENTRIES or self.held_bytes + cost > MAX_HELD_BYTES) \
                and len(self.exchanges) > 1:
            # The oldest list, taken in one step (iter() would list every key), unless it is this stream's: that one
            # goes back as the newest, and the next oldest is taken.
            oldest, exchange = self.exchanges.popitem(last=False)
            if oldest == stream:
                self.exchanges[stream] = exchange
                oldest, exchange = self.exchanges.popitem(last=False)
            out.append(self._evict(oldest, exchange, f"open server lists hold more than {MAX_HELD_ENTRIES} entries or "
                                                     f"{MAX_HELD_BYTES} bytes in all"))

    def _hold(self, exchange, entries, cost):
        exchange.cost += cost
        self.held_entries += entries
        self.held_bytes += cost

    def _release(self, exchange):
        self.held_entries -= len(exchange.servers)
        self.held_bytes -= exchange.cost
        exchange.cost = 0

    def _seen(self, exchange, seen, frames):
        """The servers-seen row of a listed server, ``seen`` its _seen_columns."""
        address, columns = seen
        self.servers.update(address, frames[-1] if frames else 0, columns + (exchange.lobby,))

    def _evict(self, stream, exchange, why):
        return self._conclude(stream, exchange, evicted=f"{why}: the oldest (stream {stream}) is concluded early")

    def _conclude(self, stream, exchange, why=None, evicted=None):
        self._release(exchange)
        findings = []
        if evicted:
            findings.append(W.state_evicted.at(evicted))
        elif not exchange.ended:
            why = why or "the stream ended"
            if exchange.cut_server:
                why += " inside a server line, which is not counted"
            findings.append(W.missing_end.at(f"the list never reached its end line h ({why})"))
        elif exchange.announced is not None and exchange.received != exchange.announced:
            findings.append(_count_finding(exchange))
        announced = "?" if exchange.announced is None else exchange.announced  # no f line seen
        summary = (f"server list {exchange.lobby} → {exchange.client}: {counted(exchange.received, 'server')}"
                   f" of {announced}" + ("" if exchange.ended else " (no end line)"))
        return AnalysisRecord("soldat", "server_list", exchange.frames, lambda: _result(stream, exchange), findings,
                              summary)

    def stream_closed(self, stream):
        exchange = popped(self.exchanges, stream)
        return [self._conclude(stream, exchange)] if exchange is not None else []

    def finish(self):
        out = [self._conclude(stream, exchange, "the capture ended") for stream, exchange in self.exchanges.items()]
        self.exchanges.clear()
        self.rows.clear()
        return out

    def merge(self, other, later=False):
        """Fold in another ``-j`` worker's analyzer (its streams are disjoint from these), or with ``later`` the
        next capture file's (see ``Analyzer.follow``)."""
        merge_counts(self, other)
        self.timing.merge(other.timing)
        self.servers.merge(other.servers, later)

    def follow(self, other):
        self.merge(other, later=True)

    def stats(self):
        return {"requests": self.requests, "answered": self.answered,
                "response_times": {"list": self.timing.as_dict()}, **self.servers.report()}


def _count_finding(exchange):
    """A list whose servers between f and h are not SERVERCOUNT: the peer's fault, unless lines were missing because
    the capture's snap length cut them (and no bytes were lost)."""
    counts = f"{counted(exchange.received, 'server')} listed between f and h"
    if exchange.uncaptured and not exchange.lost:
        return CUT_MESSAGE.at(f"{counts}, SERVERCOUNT is {exchange.announced}: the capture's snap length cut lines "
                              f"of the list")
    lost = "; bytes of the stream were lost" if exchange.lost else ""
    return W.count_mismatch.at(f"{counts}, but SERVERCOUNT is {exchange.announced}{lost}")


def _seen_columns(values):
    """A server's address in the servers-seen table, and its columns there but the last (the lobby that listed it),
    in SEEN_COLUMNS order; ``values``: the server's values in SERVER_KEYS order."""
    address = f"{clip(or_unknown(values[IP]), MAX_TEXT)}:{or_unknown(values[PORT])}"
    passworded = values[PASSWORDED]
    return address, (_text(values[NAME]), _text(values[MAP]), values[PLAYERS], values[MAXPLAYERS],
                     GAME_STYLES.get(values[GAMESTYLE]), values[VERSION],
                     None if passworded is None else bool(passworded))


def _add_frames(frames, more):
    """The frame numbers of ``more`` not listed yet, added up to MAX_FRAMES in all (a line sent a byte a segment
    comes in thousands of frames: each looked for in a list that grew with them made the line quadratic); past that
    a later frame takes the last place, so that the record spans the list to the frame that ended it."""
    for frame in more:
        if not (frames and frames[-1] == frame) and frame not in frames:  # most often the last one listed
            if len(frames) < MAX_FRAMES:
                frames.append(frame)
            elif frame > frames[-1]:
                frames[-1] = frame


def _text(value):
    return clip(value, MAX_TEXT) if isinstance(value, str) else value


def _keyed(keys, values):
    """``dict(zip(keys, values))`` without zip's pairs (a list's servers: 17 values each)."""
    out = {}
    for index in range(min(len(keys), len(values))):
        out[keys[index]] = values[index]
    return out


def _result(stream, exchange):
    """The record's result, built when a view reads it."""
    filters = None if exchange.filters is None else _keyed(FILTER_KEYS, exchange.filters)
    result = {"stream": stream, "client": exchange.client, "lobby": exchange.lobby, "filters": filters,
              "announced": exchange.announced, "received": exchange.received,
              "servers": [_keyed(SERVER_KEYS, values) for values in exchange.servers],
              "omitted": exchange.received - len(exchange.servers),
              "complete": exchange.ended and exchange.received == exchange.announced}
    if exchange.elapsed is not None:
        result["time"] = exchange.elapsed
    return result
