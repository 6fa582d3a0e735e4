"""Soldat across lines: one record per list exchange (request, list begin, servers, list end)."""

from ..core import AnalysisRecord, Finding
from ..core.bounded import BoundedDict
from ..protocols.soldat import GAME_STYLES, REQUEST_FIELDS, SERVER_FIELDS
from .base import Analyzer
from .common import Timing, merge_counts, merge_servers

MAX_EXCHANGES = 4096
MAX_SERVERS_PER_LIST = 10000
MAX_SERVERS = 10000
FILTER_KEYS = [key for key, *_ in REQUEST_FIELDS]
SERVER_KEYS = [key for key, *_ in SERVER_FIELDS]


class _Exchange:
    __slots__ = ("client", "lobby", "filters", "announced", "servers", "received", "frames", "start_ts", "elapsed",
                 "ended")

    def __init__(self, client, lobby):
        self.client = client
        self.lobby = lobby
        self.filters = None
        self.announced = None
        self.servers = []
        self.received = 0
        self.frames = []
        self.start_ts = None
        self.elapsed = None
        self.ended = False


class SoldatAnalyzer(Analyzer):
    __slots__ = ("exchanges", "servers", "timing", "requests", "answered")

    def __init__(self):
        self.exchanges = BoundedDict(MAX_EXCHANGES)
        self.servers = BoundedDict(MAX_SERVERS)
        self.timing = Timing()
        self.requests = 0
        self.answered = 0

    def feed(self, record, msg, tree):
        stream = msg.values.get("stream")
        if stream is None:
            return []
        out = []
        name = msg.name
        exchange = self.exchanges.get(stream)
        if name == "request_list" or exchange is None:
            if exchange is not None:
                out.append(self._conclude(stream, exchange, "a new request arrived on the stream"))
            exchange = _Exchange(msg.values.get("client"), msg.values.get("server"))
            evicted = self.exchanges.put(stream, exchange)
            if evicted is not None:
                out.append(self._conclude(*evicted, "too many list exchanges were open at once (evicted)"))
        if record.number is not None and len(exchange.frames) < 64:
            exchange.frames.extend(f for f in msg.frames if f not in exchange.frames)
        if name == "request_list":
            self.requests += 1
            exchange.filters = {key: msg.values.get(key) for key in FILTER_KEYS}
            exchange.start_ts = record.ts
        elif name == "list_begin":
            exchange.announced = msg.values.get("servercount")
        elif name == "server":
            self._server(exchange, msg)
        elif name == "list_end":
            exchange.ended = True
            if exchange.start_ts is not None and record.ts is not None:
                exchange.elapsed = max(0.0, record.ts - exchange.start_ts)
                self.answered += 1
                self.timing.add(exchange.elapsed)
            del self.exchanges[stream]
            out.append(self._conclude(stream, exchange))
        return out

    def _server(self, exchange, msg):
        exchange.received += 1
        entry = {key: msg.values.get(key) for key in SERVER_KEYS}
        if len(exchange.servers) < MAX_SERVERS_PER_LIST:
            exchange.servers.append(entry)
        address = f"{entry['ip']}:{entry['port']}"
        seen = self.servers.get(address) or {"server": address, "responses": 0}
        seen["responses"] += 1
        seen.update(name=entry["name"], map=entry["map"], players=entry["players"],
                    max_players=entry["maxplayers"], game_type=GAME_STYLES.get(entry["gamestyle"]),
                    version=entry["version"], password=None if entry["passworded"] is None
                    else bool(entry["passworded"]), listed_by=exchange.lobby,
                    last_frame=msg.frames[-1] if msg.frames else 0)
        self.servers.put(address, seen)

    def _conclude(self, stream, exchange, why=None):
        findings = []
        if not exchange.ended:
            findings.append(Finding("soldat.missing_end", "warning",
                                    f"the list never reached its end line h ({why or 'the stream ended'}; spec: "
                                    f"'104 List End ... signifies the end of the server list')"))
        elif exchange.announced is not None and exchange.received != exchange.announced:
            findings.append(Finding("soldat.count_mismatch", "warning",
                                    f"{exchange.received} servers listed between f and h, but SERVERCOUNT is "
                                    f"{exchange.announced} (spec: 'SERVERCOUNT is the number of servers in the "
                                    f"list')"))
        result = {"stream": stream, "client": exchange.client, "lobby": exchange.lobby, "filters": exchange.filters,
                  "announced": exchange.announced, "received": exchange.received, "servers": exchange.servers,
                  "complete": exchange.ended and exchange.received == exchange.announced}
        if exchange.elapsed is not None:
            result["time"] = exchange.elapsed
        summary = (f"server list {exchange.lobby} → {exchange.client}: {exchange.received} servers"
                   f" of {exchange.announced}" + ("" if exchange.ended else " (no end line)"))
        return AnalysisRecord("soldat", "server_list", exchange.frames, result, findings, summary)

    def stream_closed(self, stream):
        exchange = self.exchanges.pop(stream, None)
        return [self._conclude(stream, exchange)] if exchange is not None else []

    def finish(self):
        out = [self._conclude(stream, exchange, "the capture ended") for stream, exchange in self.exchanges.items()]
        self.exchanges.clear()
        return out

    def merge(self, other):
        """Fold in another ``-j`` worker's analyzer (its streams are disjoint from these)."""
        merge_counts(self, other)
        self.timing.merge(other.timing)
        merge_servers(self.servers, other.servers)

    def stats(self):
        return {"requests": self.requests, "answered": self.answered,
                "response_times": {"list": self.timing.as_dict()}, "servers": list(self.servers.values())}
