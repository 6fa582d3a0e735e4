"""Reflection and flood analysis across every protocol: what query traffic costs the servers that answer
it, who asks, who answers, and the traffic that has the shape of abuse.

A protocol declares on its Dissector class which of its messages are query requests and which are
replies: ``query_kinds``, message name -> ("request" | "reply", the request type a reply answers).
Optionally ``reply_limit``, the largest reply its spec allows (bytes of payload), and ``request_token``,
the ``msg.values`` key of a request's token, followed when its finding table declares
``<key>.token_reuse``. Nothing here knows a protocol.

A query is one request and the replies its server sends back to the asking endpoint, until that endpoint
asks the server the same type of request again (or the capture ends). Its amplification is its reply
bytes over its request bytes, counted in UDP payload (TCP: the message's bytes), and on the wire.

Rates are counted in whole seconds of the capture clock: "rate r sustained over w seconds" holds where at
least r x w messages fall within w consecutive seconds.

``-j`` needs no merge: its workers send each message reduced to what ``count`` reads, and the parent
counts them in frame order. A run over many capture files (``--to-parquet``, on Dask) folds each file's
analyzer into the run's in the files' order (``follow``): counts add up, peers and tokens unite, and the
rules that look across servers run on the merged state (``conclude``). Frame numbers start at 1 in each
file, so the later file's entries are the most recently used, its frames the later ones where first and
last frames or ties are chosen; the frame numbers shown are each their own file's. The tables are
bounded, least recently used entry out first; merged, they keep the entries one analysis of the files in
turn would keep while no table reached its limit, and when only entries that lived in one file each were
evicted. (``merge`` without ``later`` folds parts whose frames interleave, numbered alike: by the latest
frames.)

Besides the tables, each server keeps the address pair of its last message and each pair its last query, found
again without hashing a key (see ``_pair``): after the tables let them go, at most MAX_SERVERS pairs and
MAX_PAIRS + MAX_SERVERS queries more, a query no larger than its MAX_FRAMES reply frames. The analyzer keeps the
ends of the last TCP stream it was fed (see ``_stream_ends``).
"""

from collections import Counter

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from ..core import nocython as cython

from ..capture.tables import ABUSE_FINDINGS as W
from ..core import AnalysisRecord
from ..core.bounded import BoundedDict, held_at, kept, newest, peek, put, refreshed, refreshed_at
from ..core.fmt import endpoint
from .common import in_file_order, refill

KEY = W.protocol           # the key of the abuse analysis among the analyzers and in the --stats dict
DEFAULT_RATE = 20.0        # requests per second ...
DEFAULT_WINDOW = 5         # ... sustained over this many seconds
DEFAULT_TOP = 10           # rows of the top talkers and top servers
MIN_SERVERS = 3            # servers, each asked or answering once a second, before traffic is called reflection
MAX_HOSTS = 8192           # addresses followed at once
MAX_SERVERS = 10000        # server endpoints followed at once
MAX_PAIRS = 8192           # (source address, server) pairs watched for floods at once
MAX_OPEN = 8192            # queries waiting for more replies at once
MAX_BINS = 3600            # seconds of rate history kept per address ...
MAX_RATE_BINS = 65536      # ... and by all addresses together: past it, each keeps only its last window (see _fold_rates)
MAX_PEERS = 256            # distinct servers counted per address, distinct requesters per server
MAX_PEER_ENTRIES = 65536   # peers held by all addresses and servers together: past it the oldest are evicted
MAX_TOKENS = 16            # distinct tokens followed per address; past that it varies them, as browsers do
MAX_FLOODS = 1000          # request floods listed
MAX_FRAMES = 8             # reply frames listed for the worst query
MICRO = 1_000_000          # amplification factors are summed in millionths: integer sums merge exactly
_EXACT_REPLY_BYTES = (2**63 - 1) // MICRO  # reply bytes whose factor in millionths is reckoned in 64-bit integers
MAX_DIGITS = 4096          # factors kept by _three_digits: a query's sizes repeat, and so do their factors
MAX_ENDPOINTS = 4096       # TCP endpoint texts kept by _split
_ABSENT = object()         # a default that no value is (a plugin may set one to None)
_DIGITS = {}               # factor in millionths -> to 3 significant digits
_ENDPOINTS = {}            # TCP endpoint text -> (address, port)


class TrafficAnalyzer:
    """Fed every message of every protocol (``feed``); ``finish`` closes the open queries at the end of the
    capture, ``follow`` folds in the next file's analyzer, ``conclude`` gives the analysis records
    of the rules, ``stats`` the ``abuse`` part of ``--stats``."""

    __slots__ = ("protocols", "token_findings", "rate", "window", "threshold", "top",
                 "amplification", "unsolicited", "hosts", "servers", "pairs", "open", "floods", "evicted_hosts",
                 "evicted_servers", "evicted_pairs", "evicted_queries", "evicted_floods", "host_peers", "server_peers",
                 "peer_limit", "rate_bins", "bin_limit", "events", "clock", "clock_whole", "window_start", "stats_off",
                 "stream_texts", "stream_ends", "found")

    def __init__(self, declarations=(), rate=DEFAULT_RATE, window=DEFAULT_WINDOW, top=DEFAULT_TOP):
        """``declarations``: (protocol key, query_kinds, reply_limit, token key, token_reuse FindingSpec)."""
        check_thresholds(rate, window)
        self.protocols, self.token_findings = {}, {}  # protocol -> _Protocol; protocol -> its token_reuse FindingSpec
        for key, kinds, limit, token_key, token_finding in declarations:
            followed = token_key is not None and token_finding is not None
            self.protocols[key] = _Protocol(kinds, limit, token_key if followed else None)
            if followed:
                self.token_findings[key] = token_finding
        self.rate = float(rate)
        self.window = int(window)
        self.threshold = self.rate * self.window
        self.top = top
        self.amplification = {}                  # (protocol, request type) -> _Kind
        self.unsolicited = {}                    # protocol -> _Unsolicited
        self.hosts = BoundedDict(MAX_HOSTS)      # address -> _Host
        self.servers = BoundedDict(MAX_SERVERS)  # (address, port) -> _Server
        self.pairs = BoundedDict(MAX_PAIRS)      # (source address, server) -> _Pair
        self.open = BoundedDict(MAX_OPEN)        # (protocol, request type, client, server) -> _Query
        self.floods = {}                         # (source address, server) -> _Flood, the first MAX_FLOODS
        self.evicted_hosts = 0                   # entries evicted from each table (see ``evicted``) ...
        self.evicted_servers = self.evicted_pairs = self.evicted_queries = 0
        self.evicted_floods = 0                  # ... and the floods past MAX_FLOODS, not listed
        self.host_peers = 0                      # peers held by the addresses, and by the servers: together at
        self.server_peers = 0                    # most peer_limit
        self.peer_limit = MAX_PEER_ENTRIES       # (the limits as C integers in the compiled build: checked per message)
        self.rate_bins = 0                       # seconds held by the addresses' rates: see _fold_rates
        self.bin_limit = MAX_RATE_BINS
        self.events = None                       # a list: feed keeps the messages there (-j workers) for count
        self.clock = -1                          # the last message's second (see _tick) ...
        self.clock_whole = float("nan")          # ... as ts // 1 gives it ...
        self.window_start = self.clock - self.window + 1  # ... and the first second of the window ending there
        self.stats_off = False                   # True: no view reads stats(), queries' amplification is not kept
        self.stream_texts = (None, None)         # the last TCP message's client and server texts ...
        self.stream_ends = (None, None)          # ... and those ends as (address, port) (see _stream_ends)
        self.found = None                        # what the rules found when conclude ran, until the next message

    @classmethod
    def for_registry(cls, registry, rate=DEFAULT_RATE, window=DEFAULT_WINDOW, top=DEFAULT_TOP):
        """The analyzer for the protocols of ``registry``, from what their classes declare."""
        declarations = []
        for key, dissector in sorted(registry.dissectors.items()):
            findings = dissector.findings
            declarations.append((key, getattr(dissector, "query_kinds", None) or {},
                                 getattr(dissector, "reply_limit", None), getattr(dissector, "request_token", None),
                                 findings.get(f"{key}.token_reuse") if findings is not None else None))
        return cls(declarations, rate, window, top)

    # -- feeding ---------------------------------------------------------------------------------------
    def feed(self, frame, ts, packet, msg, size, wire):
        """Count one message of frame number ``frame`` at ``ts`` (``packet`` the frame's Packet: the pipeline
        reads them from its record in C): ``size`` its bytes (the UDP payload), ``wire`` the bytes it cost on
        the wire, headers included. With ``events`` a list, the message is kept there for ``count`` instead."""
        values = msg.values
        from_client = values.get("from_client", _ABSENT)
        if from_client is not _ABSENT:  # a TCP message says which side sent it: the packet at hand may be the other's
            client, server = self._stream_ends(values)
            if from_client:
                sender, receiver = client, server
            else:
                sender, receiver = server, client
        elif packet.src is not None:
            sender, receiver = (packet.src, packet.sport), (packet.dst, packet.dport)
        else:
            return
        if sender is None or ts is None:
            return
        protocol = msg.protocol
        declared = self.protocols.get(protocol)
        token = None
        if declared is not None and declared.token_key is not None:
            token = values.get(declared.token_key)
        if self.events is not None:
            self.events.append((frame, ts, protocol, msg.name, sender, receiver, token, size, wire))
        else:
            self._count(frame, ts, protocol, declared, msg.name, sender, receiver, token, size, wire)

    def _stream_ends(self, values):
        """A TCP message's (client, server) as (address, port), from its ``values``; or (None, None). A stream's
        messages name its ends by the same two texts, which the last stream's ends are found by (their identity)."""
        client, server = values.get("client"), values.get("server")
        texts = self.stream_texts
        if client is not texts[0] or server is not texts[1]:
            ends = _split(client), _split(server)
            self.stream_texts = client, server
            self.stream_ends = ends if ends[0] is not None and ends[1] is not None else (None, None)
        return self.stream_ends

    def count(self, frame, ts, protocol, name, sender, receiver, token, size, wire):
        """Count one message already reduced to what the analysis reads: ``feed``'s work after the message
        (``-j``'s workers send these to the parent, which counts them in frame order)."""
        self._count(frame, ts, protocol, self.protocols.get(protocol), name, sender, receiver, token, size, wire)

    def _count(self, frame, ts, protocol, declared, name, sender, receiver, token, size, wire):
        """``count``, with what ``protocol`` declares (``declared``, a _Protocol; None: nothing) at hand."""
        self.found = None
        message = declared.messages.get(name) if declared is not None else None
        if message is None:
            self._host(sender[0]).other(frame)
            return
        second = self._tick(ts)
        if message.request:
            self._request(frame, second, protocol, message, sender, receiver, token, size, wire)
        else:
            self._reply(frame, second, protocol, declared.limit, message.type, receiver, sender, size, wire)
        if self.host_peers + self.server_peers > self.peer_limit:
            self._trim_peers()
        if self.rate_bins > self.bin_limit:
            self._fold_rates()

    def _tick(self, ts):
        """The whole second of the capture clock that ``ts`` falls in: the clock's own object while the clock stays in
        that second (the rates find it by identity). ``window_start`` follows it: the first second of the window that
        ends in it."""
        whole = ts // 1
        if whole != self.clock_whole:
            self.clock_whole = whole
            self.clock = int(whole)
            self.window_start = self.clock - self.window + 1
        return self.clock

    def _request(self, frame, second, protocol, message, client, server, token, size, wire):
        entry = self._server(server, protocol)
        server = entry.endpoint  # one tuple for the server in every table that holds it
        key = (protocol, message.type, client, server)
        if self.stats_off:  # only stats() reads amplification: a query is kept only to tell its replies solicited
            kind = None
        else:
            kind = message.kind
            if kind is None:
                kind = message.kind = self._kind(protocol, message.type)
            self._close(peek(self.open, key))  # the previous one, which put replaces
            kind.requests += 1
            kind.request_bytes += size
            kind.request_wire += wire
        query = _new_query(kind, key, frame, size, wire)
        evicted = put(self.open, key, query)
        query.slot = newest(self.open)
        if evicted is not None:
            self.evicted_queries += 1
            self._close(evicted[1])
        host = self._host(client[0])
        held = _peer_count(host.queried)
        self.rate_bins += host.request(frame, second, server, size, self.window)
        self.host_peers += _peer_count(host.queried) - held
        held = _peer_count(entry.requesters)
        entry.request(client[0], frame)
        self.server_peers += _peer_count(entry.requesters) - held
        pair = self._pair(client[0], entry, protocol, frame)
        pair.query = query  # the query its server's next replies most likely answer
        self._asked(host, pair, client[0], server, frame, second)
        if token is not None:
            host.token(protocol, token, server, frame)

    def _reply(self, frame, second, protocol, limit, request, client, server, size, wire):
        """A reply of ``server`` to ``client``, to a request of type ``request``; ``limit``: the largest reply the
        protocol allows (None: no limit)."""
        answering = self._server(server, protocol)
        server = answering.endpoint
        answering.reply(frame, size, wire)
        host = self._host(client[0])
        held = _peer_count(host.repliers)
        self.rate_bins += host.receive(frame, second, server, size, self.window)
        self.host_peers += _peer_count(host.repliers) - held
        pair = self._pair(client[0], answering, protocol, frame)
        if pair.replied(second, self.window_start, self.window):
            host.servers_replying_fast += 1
        query = self._answered(pair, protocol, request, client, server)
        if query is None:
            if not self.stats_off:
                self._unsolicited(protocol).add(size, wire)
            answering.unsolicited += 1
            host.unsolicited += 1
        elif not self.stats_off and query.kind is not None:
            # what the query caused: amplification and the top talkers, which stats() shows (a query opened while
            # stats_off was set has no kind: it is not counted)
            kind = query.kind
            if not query.replies:
                kind.answered += 1
                host.answered += 1
            query.add(frame, size, wire)
            kind.replies += 1
            kind.reply_bytes += size
            kind.reply_wire += wire
            host.caused_bytes += size
            host.caused_wire += wire
        oversize = limit is not None and size > limit
        if oversize:
            if not self.stats_off:
                entry = self._unsolicited(protocol)
                entry.oversize += 1
            answering.oversize += 1
            host.oversize += 1
        if query is None or oversize:
            self.rate_bins += host.suspect(second, self.window)

    def _asked(self, host, pair, source, server, frame, second):
        """A request from ``source`` to ``server``: the flood watch of their pair."""
        if pair.asked(second, self.window_start, self.window):
            host.servers_asked_fast += 1
        if pair.asked_count >= self.threshold:
            self._flooding((source, server), pair, frame, pair.asked_count)

    def _pair(self, source, entry, protocol, frame):
        """The pair of ``source`` and the server of ``entry`` (a _Server), now the most recent. The server keeps its
        last pair's slot in the table: its messages come in runs to and from one address, found again unhashed."""
        pair = entry.pair
        if pair is None or pair.source != source or not refreshed_at(self.pairs, pair.slot, pair):
            pair = entry.pair = self._paired(source, entry.endpoint, protocol, frame)
        pair.last_frame = frame
        return pair

    def _paired(self, source, server, protocol, frame):
        """``_pair`` through the table's key."""
        key = (source, server)
        pair = refreshed(self.pairs, key)
        if pair is None:
            pair = _new_pair(protocol, source, frame)
            if put(self.pairs, key, pair) is not None:
                self.evicted_pairs += 1
        pair.slot = newest(self.pairs)
        return pair

    def _answered(self, pair, protocol, request, client, server):
        """The open query a reply of ``server`` to ``client`` answers, or None. Most often the last one of their pair,
        found through its slot; its server is the pair's, so the protocol, request type and client tell."""
        query = pair.query
        if query is not None and held_at(self.open, query.slot, query) and query.key[2] == client and \
                query.key[1] == request and query.key[0] == protocol:
            return query
        return peek(self.open, (protocol, request, client, server))

    def _flooding(self, key, pair, frame, count):
        flood = pair.flood
        if flood is None:
            flood = self.floods.get(key)
            if flood is None and len(self.floods) >= MAX_FLOODS:
                self.evicted_floods += 1
                flood = False
            elif flood is None:
                flood = self.floods[key] = _Flood(pair.protocol, pair.first_frame, frame)
            pair.flood = flood
        if flood:
            flood.peak = max(flood.peak, count)
            flood.requests = max(flood.requests, pair.total)

    def _close(self, query):
        """A query ends: its amplification joins its request type's (which only ``stats`` shows)."""
        if query is not None and not self.stats_off and query.kind is not None:
            query.kind.conclude(query)

    def _kind(self, protocol, request):
        kind = self.amplification.get((protocol, request))
        if kind is None:
            kind = self.amplification[(protocol, request)] = _Kind()
        return kind

    def _unsolicited(self, protocol):
        entry = self.unsolicited.get(protocol)
        if entry is None:
            entry = self.unsolicited[protocol] = _Unsolicited()
        return entry

    def _host(self, address):
        host = refreshed(self.hosts, address)
        if host is None:
            host = _Host()
            evicted = put(self.hosts, address, host)
            if evicted is not None:
                self._forget_host(evicted[1])
        return host

    def _server(self, server, protocol):
        entry = refreshed(self.servers, server)
        if entry is None:
            entry = _Server(protocol, server)
            evicted = put(self.servers, server, entry)
            if evicted is not None:
                self._forget_server(evicted[1])
        return entry

    def _trim_peers(self):
        """Evict the least recently used addresses or servers, from the table holding more peers, until all
        the peers held fit ``peer_limit``."""
        while self.host_peers + self.server_peers > self.peer_limit:
            if self.host_peers >= self.server_peers and len(self.hosts) > 1:
                self._forget_host(self.hosts.popitem(last=False)[1])
            elif len(self.servers) > 1:
                self._forget_server(self.servers.popitem(last=False)[1])
            else:
                return

    def _forget_host(self, host):
        self.evicted_hosts += 1
        self.host_peers -= _peer_count(host.queried) + _peer_count(host.repliers)
        self.rate_bins -= host.bins()

    def _fold_rates(self):
        """The addresses' rates hold more than ``bin_limit`` seconds in all: each keeps only the seconds of its last
        window, and what the windows before them counted is folded into its peak. The windows folded ended before
        the last message's second (``clock``), so the peaks stay exact while the capture's clock goes forward. Where
        even the last windows fill most of the budget (a window of many seconds, many addresses), the least recently
        used addresses are evicted, as for the peers, until a quarter of it is free: folding, which visits every
        address, then comes at most once every ``bin_limit`` / 4 seconds added."""
        cutoff = self.window_start
        for host in self.hosts.values():
            self.rate_bins -= host.fold_before(cutoff, self.window)
        while self.rate_bins > self.bin_limit * 3 // 4 and len(self.hosts) > 1:
            self._forget_host(self.hosts.popitem(last=False)[1])

    def _forget_server(self, server):
        self.evicted_servers += 1
        self.server_peers -= _peer_count(server.requesters)

    @property
    def evicted(self):
        """Table -> entries evicted ("floods": past MAX_FLOODS), for the tables that evicted any. The counts are kept
        as integer fields: a capture of many conversations evicts a query and a pair for most requests."""
        counts = {"hosts": self.evicted_hosts, "servers": self.evicted_servers, "pairs": self.evicted_pairs,
                  "queries": self.evicted_queries, "floods": self.evicted_floods}
        return {table: count for table, count in counts.items() if count}

    @evicted.setter
    def evicted(self, counts):
        self.evicted_hosts = counts.get("hosts", 0)
        self.evicted_servers = counts.get("servers", 0)
        self.evicted_pairs = counts.get("pairs", 0)
        self.evicted_queries = counts.get("queries", 0)
        self.evicted_floods = counts.get("floods", 0)

    # -- the end and merging ---------------------------------------------------------------------------
    def finish(self):
        """The capture ended: the open queries are concluded (the table keeps them, only for ``merge`` to count
        what the limit evicts). The rules wait for ``conclude``, which a merged run runs on the merged state."""
        if not self.stats_off:
            for query in self.open.values():
                self._close(query)
        return []

    def merge(self, other, later=False):
        """Fold in the analyzer of another part of the run, after both finished: with ``later``, the next capture
        file's, whose frames all came after these though their numbers start at 1 again (see ``follow``)."""
        self.found = None
        for key, kind in other.amplification.items():
            self._kind(*key).merge(kind, later)
        for protocol, entry in other.unsolicited.items():
            self._unsolicited(protocol).merge(entry)
        window = self.window
        if later:
            _count_fast_pairs_once(self.pairs, other)
        evicted = Counter(self.evicted)
        evicted.update({
            "hosts": _merge_recent(self.hosts, other.hosts, lambda a, b: a.merge(b, window, later), later),
            "servers": _merge_recent(self.servers, other.servers, lambda a, b: a.merge(b, later), later),
            "pairs": _merge_recent(self.pairs, other.pairs, lambda a, b: a.merge(b, later), later),
            "queries": _merge_recent(self.open, other.open, lambda a, b: a.merge(b, later), later)})
        floods = {**other.floods, **self.floods}
        for key in self.floods.keys() & other.floods.keys():
            floods[key] = self.floods[key].merge(other.floods[key], later)
        if later:  # this run's floods first, in their order, then the file's new ones
            ordered = list(self.floods.items()) + sorted(((key, flood) for key, flood in other.floods.items()
                                                          if key not in self.floods), key=_flood_order)
        else:
            ordered = sorted(floods.items(), key=_flood_order)
        self.floods = {key: floods[key] for key, _ in ordered[:MAX_FLOODS]}
        evicted["floods"] += max(0, len(ordered) - MAX_FLOODS)
        evicted.update(other.evicted)
        self.evicted = dict(+evicted)  # without the tables that evicted nothing
        self.host_peers = sum(_peer_count(h.queried) + _peer_count(h.repliers) for h in self.hosts.values())
        self.server_peers = sum(_peer_count(server.requesters) for server in self.servers.values())
        self.rate_bins = sum(host.bins() for host in self.hosts.values())

    def follow(self, other):
        """Fold in the analyzer of the run's next capture file (``--to-parquet``, ``--dask``): its entries are the
        newest, its floods and worst queries come after these where they tie, and an address's or a token's first
        frame stays the earlier file's."""
        self.merge(other, later=True)

    # -- the rules ---------------------------------------------------------------------------------------
    def conclude(self):
        """The analysis records of the rules, in the order of their first frames; then one note when state
        was evicted."""
        self.found = self.suspicions()  # stats() lists them too: the rules run once at the end of a run
        records = [self._record(suspicion) for suspicion in self.found]
        records.sort(key=lambda rec: (rec.frames[0] if rec.frames else 0, rec.name, rec.summary))
        if sum(self.evicted.values()):
            records.append(self._evicted_record())
        return records

    def suspicions(self):
        """What the rules found: one dict each, with its ``rule``, ``protocol``, ``frames`` and ``detail``."""
        found = [self._flood_suspicion(key, flood) for key, flood in self.floods.items()]
        answering = {address for (address, _), server in self.servers.items() if server.replies}
        for address, host in self.hosts.items():
            found.extend(self._host_suspicions(address, host, address in answering))
        return found

    def _flood_suspicion(self, key, flood):
        source, server = key
        rate = flood.peak / self.window
        return {"rule": "request_flood", "protocol": flood.protocol, "frames": [flood.first_frame, flood.frame],
                "source": source, "server": endpoint(*server), "requests": flood.requests,
                "peak_requests": flood.peak, "peak_rate": rate,
                "detail": f"{source} sent {flood.peak} requests to {endpoint(*server)} within {self.window} s "
                          f"({rate:.1f}/s; {self._rule_text()})"}

    def _host_suspicions(self, address, host, answers):
        """``answers``: the address answers queries itself (a server)."""
        found = []
        reflection = None if answers else self._reflection(address, host)
        if reflection is not None:
            found.append(reflection)
        elif host.suspects is not None and (peak := host.suspects.peak(self.window)) >= self.threshold:
            found.append({"rule": "unsolicited_replies", "frames": [host.first_frame],
                          "address": address, "unsolicited": host.unsolicited, "oversize": host.oversize,
                          "peak_rate": peak / self.window,
                          "detail": f"{address} received {peak} replies within {self.window} s that answer no "
                                    f"request seen or exceed their protocol's size limit ({host.unsolicited} "
                                    f"without a request, {host.oversize} oversize in all; {self._rule_text()})"})
        tokens = sorted(_token_table(host.tokens).items(), key=_token_order)
        for (protocol, token), (count, frame, servers) in tokens:
            if count >= self.threshold and len(servers) >= MIN_SERVERS:
                found.append({"rule": "token_reuse", "protocol": protocol, "frames": [frame], "address": address,
                              "token": token, "requests": count,
                              "detail": f"{address} sent token {token} in {count} requests to {len(servers)} or more "
                                        f"servers (threshold: {self.threshold:g} requests to {MIN_SERVERS} "
                                        f"servers)"})
        return found

    def _reflection(self, address, host):
        """The shape of reflection, seen from the servers' side (the address asks several servers, each at least
        once a second and fast in all, and does nothing else) or from the victim's (several servers answer it,
        each at least once a second and fast in all, and it asked for nothing). A browser's refresh asks each
        server once: it is neither."""
        servers = _peer_count(host.repliers)
        if servers < MIN_SERVERS or host.others:
            return None
        if host.requests:
            peak = host.rates.peak(self.window)
            if peak < self.threshold or host.servers_asked_fast < MIN_SERVERS:
                return None
            view = "sender"
            detail = (f"{servers} servers replied to {address}, which sent nothing but query requests: "
                      f"{host.requests} to {_peer_count(host.queried)} servers, {host.servers_asked_fast} of them "
                      f"at least once a second, up to {peak} within {self.window} s ({peak / self.window:.1f}/s)")
        else:
            peak = host.replies.peak(self.window)
            if peak < self.threshold or host.servers_replying_fast < MIN_SERVERS:
                return None
            view = "victim"
            detail = (f"{servers} servers sent {host.received} replies to {address}, which sent no request; "
                      f"{host.servers_replying_fast} of them at least once a second, up to {peak} within "
                      f"{self.window} s ({peak / self.window:.1f}/s)")
        return {"rule": "reflection", "frames": [host.first_frame], "address": address,
                "view": view, "servers": servers, "requests": host.requests, "replies": host.received,
                "reply_bytes": host.received_bytes, "peak_rate": peak / self.window,
                "detail": f"{detail}; {self._rule_text()}"}

    def _rule_text(self):
        return f"threshold {self.rate:g}/s sustained over {self.window} s"

    def _record(self, suspicion):
        rule = suspicion["rule"]
        if rule == "token_reuse":  # the protocol's own finding, and its record
            protocol, spec = suspicion["protocol"], self.token_findings[suspicion["protocol"]]
        else:
            protocol, spec = KEY, getattr(W, rule)
        result = {key: value for key, value in suspicion.items() if key not in ("rule", "frames", "detail")}
        return AnalysisRecord(protocol, rule, suspicion["frames"], result, [spec.at(suspicion["detail"])],
                              _summary(suspicion))

    def _evicted_record(self):
        counts = dict(sorted(self.evicted.items()))
        listed = ", ".join(f"{count} {table}" for table, count in counts.items())
        detail = (f"evicted to stay within the limits ({MAX_HOSTS} addresses, {MAX_SERVERS} servers, "
                  f"{self.peer_limit} peers counted by them in all, {self.bin_limit} seconds of their rates' history "
                  f"in all, {MAX_PAIRS} address pairs, {MAX_OPEN} open queries, {MAX_FLOODS} floods listed): {listed}; "
                  f"rates, rankings and rules cover what was kept")
        return AnalysisRecord(KEY, "state_evicted", [], counts, [W.state_evicted.at(detail)],
                              f"abuse analysis state evicted: {listed}")

    # -- --stats -------------------------------------------------------------------------------------
    def stats(self):
        """The ``abuse`` part of ``--stats``: amplification per protocol and request type, top talkers, top
        servers, what the rules found. (No ``servers`` key: that name feeds the servers-seen tables.)"""
        return {
            "thresholds": {"rate": self.rate, "window": self.window, "min_servers": MIN_SERVERS},
            "protocols": self._protocol_rows(),
            "amplification": [kind.as_dict(protocol, request)
                              for (protocol, request), kind in sorted(self.amplification.items())],
            "top_talkers": self._top_talkers(),
            "top_servers": self._top_servers(),
            "suspicions": [_listed(s) for s in sorted(self._found(), key=_suspicion_order)],
            "evicted": dict(sorted(self.evicted.items())),
        }

    def _found(self):
        """``suspicions()``, those of ``conclude`` while no message came since (``found``): the rules run once."""
        return self.suspicions() if self.found is None else self.found

    def _protocol_rows(self):
        rows = {}
        for (protocol, _), kind in sorted(self.amplification.items()):
            row = rows.setdefault(protocol, _protocol_row(protocol))
            for name in ("requests", "request_bytes", "request_wire", "replies", "reply_bytes", "reply_wire"):
                row[name] += getattr(kind, name)
        for protocol, entry in sorted(self.unsolicited.items()):
            row = rows.setdefault(protocol, _protocol_row(protocol))
            row.update(unsolicited_replies=entry.count, unsolicited_bytes=entry.size, oversize_replies=entry.oversize)
        out = []
        for protocol, row in sorted(rows.items()):
            row["amplification"] = _ratio(row["reply_bytes"], row["request_bytes"])
            row["wire_amplification"] = _ratio(row["reply_wire"], row["request_wire"])
            out.append(_renamed(row))
        return out

    def _top_talkers(self):
        talkers = sorted(((address, host) for address, host in self.hosts.items() if host.requests),
                         key=lambda item: (-item[1].requests, item[0]))
        return [host.as_dict(address, self.window) for address, host in talkers[:self.top]]

    def _top_servers(self):
        ranked = sorted(self.servers.items(), key=lambda item: (-item[1].bytes_out, -item[1].requests, item[0]))
        return [server.as_dict(address) for address, server in ranked[:self.top]]


def is_abuse_record(rec):
    """Whether an analysis record is one of this analysis's: its own (``abuse.*``) and the ``token_reuse``
    records it raises in a protocol's name."""
    return rec.protocol == KEY or rec.name == "token_reuse"


def check_thresholds(rate, window):
    """ValueError unless the rate is a positive number and the window a whole number of seconds, at least 1."""
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not rate > 0 or rate == float("inf"):
        raise ValueError(f"the abuse rate must be a positive number of requests per second, not {rate!r}")
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window != int(window) or window < 1:
        raise ValueError(f"the abuse window must be a whole number of seconds, at least 1, not {window!r}")


# -- what the protocols declare -------------------------------------------------------------------------
@cython.no_gc
@cython.cclass
class _Protocol:
    """What one protocol declares (see the module's docstring): its query messages by name, each a _QueryMessage; the
    largest reply its spec allows (None: no limit); the ``msg.values`` key of a request's token (None: not followed)."""

    __slots__ = ("messages", "limit", "token_key")

    def __init__(self, kinds, limit, token_key):
        self.messages = {name: _QueryMessage(kind[0] == "request", kind[1]) for name, kind in dict(kinds).items()}
        self.limit = limit
        self.token_key = token_key


@cython.no_gc
@cython.cclass
class _QueryMessage:
    """A query message of a protocol: a request (``request`` true) or a reply, of request type ``type``. A request's
    ``kind`` is the _Kind of its type in the analyzer's ``amplification``, once one was counted (None before)."""

    __slots__ = ("request", "type", "kind")

    def __init__(self, request, type):
        self.request = request
        self.type = type
        self.kind = None


# -- what is kept ---------------------------------------------------------------------------------------
# The entries hold numbers, texts, tuples, lists and sets of those, and entries of the kinds below them: none refers
# back to one that holds it, so none is in a cycle, and the compiled build leaves them out of the cyclic collector
# (``cython.no_gc``): nothing to track as each is made and freed (which a table full of churn does for each request),
# nothing for a collection to walk.
@cython.no_gc
@cython.cclass
class _Query:
    """One request and the replies it drew so far; ``kind``: the _Kind of its request type; ``key`` and ``slot``: its
    key and slot in the open queries. Made by _new_query."""

    __slots__ = ("kind", "key", "slot", "frame", "size", "wire", "replies", "reply_bytes", "reply_wire", "frames")

    @property
    def last_frame(self):
        return self.frame  # the open queries are used in the order of their requests

    def merge(self, other, later=False):
        """The same query in two workers' tables: never, as a query lives in one conversation; in two files'
        (``later``: ``other`` the later one), the later."""
        return self if self.frame >= other.frame and not later else other

    def add(self, frame, size, wire):
        self.replies += 1
        self.reply_bytes += size
        self.reply_wire += wire
        frames = self.frames
        if frames is None:
            self.frames = [frame]
        elif len(frames) < MAX_FRAMES and frames[-1] != frame:
            frames.append(frame)


def _new_query(kind, key, frame, size, wire):
    """A _Query (made here, without the argument parsing of a constructor call: one a request)."""
    query = _Query.__new__(_Query)
    query.kind = kind
    query.key = key
    query.slot = 0
    query.frame = frame
    query.size = size
    query.wire = wire
    query.replies = 0
    query.reply_bytes = 0
    query.reply_wire = 0
    query.frames = None
    return query


@cython.no_gc
@cython.cclass
class _Kind:
    """The queries of one request type of one protocol, and their amplification."""

    __slots__ = ("requests", "request_bytes", "request_wire", "answered", "replies", "reply_bytes", "reply_wire",
                 "factor_micro", "factors", "worst")
    SUMS = ("requests", "request_bytes", "request_wire", "answered", "replies", "reply_bytes", "reply_wire",
            "factor_micro")

    def __init__(self):
        for name in self.SUMS:
            setattr(self, name, 0)
        self.factors = {}         # an answered query's factor, to 3 significant digits -> queries (the median)
        self.worst = None         # (factor in millionths, request frame, reply frames, client, server)

    def conclude(self, query):
        """A query of this type ended: its factor counted, if it drew replies."""
        if not query.replies:
            return
        micro = _factor(query.reply_bytes, query.size)
        self.factor_micro += micro
        factor = _three_digits(micro)
        self.factors[factor] = self.factors.get(factor, 0) + 1
        if _beats(micro, query.frame, self.worst):
            key = query.key  # (protocol, request type, client, server)
            self.worst = (micro, query.frame, list(query.frames), key[2], key[3])

    def merge(self, other, later=False):
        """Add another worker's queries of the type; ``later``: a later file's, whose worst query does not win a tie
        (its request came after this one's, whatever their frame numbers)."""
        for name in self.SUMS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for factor, count in other.factors.items():
            self.factors[factor] = self.factors.get(factor, 0) + count
        worst = other.worst
        if worst is not None and (self.worst is None or worst[0] > self.worst[0] if later else
                                  _beats(worst[0], worst[1], self.worst)):
            self.worst = worst

    def as_dict(self, protocol, request):
        answered = sum(self.factors.values())
        row = {"protocol": protocol, "request": request, "requests": self.requests, "answered": self.answered,
               "replies": self.replies, "replies_per_request": _ratio(self.replies, self.requests),
               "request_bytes": self.request_bytes, "reply_bytes": self.reply_bytes,
               "request_wire_bytes": self.request_wire, "reply_wire_bytes": self.reply_wire,
               "amplification": _ratio(self.reply_bytes, self.request_bytes),
               "wire_amplification": _ratio(self.reply_wire, self.request_wire),
               "per_query": None, "worst": None}
        if answered:
            row["per_query"] = {"mean": self.factor_micro / answered / MICRO, "median": _median(self.factors),
                                "max": self.worst[0] / MICRO}
            micro, frame, frames, client, server = self.worst
            row["worst"] = {"amplification": micro / MICRO, "request_frame": frame, "reply_frames": frames,
                            "client": endpoint(*client), "server": endpoint(*server)}
        return row


@cython.no_gc
@cython.cclass
class _Unsolicited:
    """Replies of one protocol that answer no request seen, and replies over its size limit."""

    __slots__ = ("count", "size", "wire", "oversize")

    def __init__(self):
        self.count = self.size = self.wire = self.oversize = 0

    def add(self, size, wire):
        self.count += 1
        self.size += size
        self.wire += wire

    def merge(self, other):
        self.count += other.count
        self.size += other.size
        self.wire += other.wire
        self.oversize += other.oversize


@cython.no_gc
@cython.cclass
class _Rate:
    """Messages per whole second, for the peak over a window. At most MAX_BINS seconds are kept: before the
    oldest is dropped, the window that starts there is counted into ``folded``. ``add`` returns the seconds it added
    to those held (1 or 0), ``fold_before`` those it dropped: the analyzer counts them all (``bin_limit``).
    Most messages fall in the second of the one before, which the analyzer's clock gives as the same object: that
    second's messages are counted aside (``latest``, ``latest_count``) and written into its bin by ``_settle``, which
    every reader of the counts calls first."""

    __slots__ = ("bins", "folded", "latest", "latest_count")

    def __init__(self):
        self.bins = {}
        self.folded = 0
        self.latest = None    # the second counted last, held in bins (None: none, or dropped) ...
        self.latest_count = 0  # ... and its messages, which its bin may not show yet

    def add(self, second, window, count=1):
        if second is self.latest:
            self.latest_count += count
            return 0
        self._settle()
        bins = self.bins
        held = bins.get(second)
        added = 0
        if held is None:
            added = 1
            if len(bins) >= MAX_BINS:
                self._fold(next(iter(bins)), window)
                added = 0
            bins[second] = held = 0
        self.latest = second
        self.latest_count = held + count
        return added

    def _settle(self):
        """The latest second's messages written into its bin."""
        if self.latest is not None:
            self.bins[self.latest] = self.latest_count

    def _fold(self, second, window):
        """Drop ``second``, the oldest held, the window that starts there counted into ``folded`` (settled first)."""
        self.folded = max(self.folded, _window_total(self.bins, second, window))
        del self.bins[second]
        if second == self.latest:
            self.latest = None

    def fold_before(self, cutoff, window):
        """Drop the seconds before ``cutoff``, the windows that start at them counted into ``folded``; return how many
        were dropped."""
        self._settle()
        old = sorted([second for second in self.bins if second < cutoff])
        for second in old:  # oldest first: a window reads only the seconds from its start on, still all held
            self._fold(second, window)
        return len(old)

    def peak(self, window):
        """The most messages within ``window`` consecutive seconds."""
        self._settle()
        seconds = sorted(self.bins)
        best = total = start = 0
        for second in seconds:
            total += self.bins[second]
            while seconds[start] <= second - window:
                total -= self.bins[seconds[start]]
                start += 1
            best = max(best, total)
        return max(best, self.folded)

    def merge(self, other, window):
        self.folded = max(self.folded, other.folded)
        other._settle()
        for second, count in sorted(other.bins.items()):
            self.add(second, window, count)


def _window_total(bins, first, window):
    """The messages of ``bins`` within ``window`` seconds from ``first`` on."""
    total = 0
    for second in range(first, first + window):
        total += bins.get(second, 0)
    return total


@cython.no_gc
@cython.cclass
class _Host:
    """One address: what it asked and what came back to it."""

    __slots__ = ("requests", "request_bytes", "others", "answered", "caused_bytes", "caused_wire", "received",
                 "received_bytes", "unsolicited", "oversize", "servers_asked_fast", "servers_replying_fast", "first",
                 "last", "first_frame", "last_frame", "rates", "replies", "suspects", "queried", "repliers", "tokens")
    # servers_asked_fast, servers_replying_fast: servers it asked, or that answered it, at least once a second
    # sustained over the window (each pair lives in one -j worker, so the counts add up)
    SUMS = ("requests", "request_bytes", "others", "answered", "caused_bytes", "caused_wire", "received",
            "received_bytes", "unsolicited", "oversize", "servers_asked_fast", "servers_replying_fast")

    def __init__(self):
        # Most addresses of a spoofed flood send one request: what they keep is made as small as it can be.
        self.requests = self.request_bytes = self.others = self.answered = self.caused_bytes = 0
        self.caused_wire = self.received = self.received_bytes = self.unsolicited = self.oversize = 0
        self.servers_asked_fast = self.servers_replying_fast = 0
        self.first = self.last = None   # the seconds of its first and last request
        self.first_frame = None         # the first frame that asked for it or answered it
        self.last_frame = None          # the last one
        self.rates = None               # _Rate of its requests
        self.replies = None             # _Rate of the replies it received
        self.suspects = None            # _Rate of replies to it without a request, or oversize
        self.queried = None             # servers it asked (peers: see _add_peer)
        self.repliers = None            # servers that replied to it (peers)
        self.tokens = None              # its tokens: see token()

    def request(self, frame, second, server, size, window):
        self.requests += 1
        self.request_bytes += size
        if self.rates is None:
            self.rates = _Rate()
            self.first = self.last = second
        else:
            self.first = min(self.first, second)
            self.last = max(self.last, second)
        self.queried = _add_peer(self.queried, server)
        self._seen(frame)
        return self.rates.add(second, window)

    def receive(self, frame, second, server, size, window):
        self.received += 1
        self.received_bytes += size
        self._seen(frame)
        if self.replies is None:
            self.replies = _Rate()
        self.repliers = _add_peer(self.repliers, server)
        return self.replies.add(second, window)

    def suspect(self, second, window):
        if self.suspects is None:
            self.suspects = _Rate()
        return self.suspects.add(second, window)

    def bins(self):
        """The seconds its rates hold."""
        return sum(len(rate.bins) for rate in (self.rates, self.replies, self.suspects) if rate is not None)

    def fold_before(self, cutoff, window):
        """``_Rate.fold_before`` for each of its rates: the seconds dropped."""
        return sum(rate.fold_before(cutoff, window) for rate in (self.rates, self.replies, self.suspects)
                   if rate is not None)

    def token(self, protocol, token, server, frame):
        """Count a request's token. ``tokens``: None before the first; (protocol, token, server, frame) after
        one request; then {(protocol, token): [requests, first frame, servers (at most MIN_SERVERS)]}; False
        once the address used more than MAX_TOKENS tokens."""
        tokens = self.tokens
        if tokens is False:
            return
        if tokens is None:
            self.tokens = (protocol, token, server, frame)
            return
        if type(tokens) is tuple:
            tokens = self.tokens = _token_table(tokens)
        entry = tokens.get((protocol, token))
        if entry is None:
            if len(tokens) >= MAX_TOKENS:
                self.tokens = False
                return
            entry = tokens[(protocol, token)] = [0, frame, ()]
        entry[0] += 1
        if server not in entry[2] and len(entry[2]) < MIN_SERVERS:
            entry[2] += (server,)

    def other(self, frame):
        """A message of it that is no query request (nor a reply: servers are known by theirs)."""
        self.others += 1
        self._seen(frame)

    def _seen(self, frame):
        if self.first_frame is None:
            self.first_frame = self.last_frame = frame
        else:
            self.first_frame = min(self.first_frame, frame)
            self.last_frame = max(self.last_frame, frame)

    def merge(self, other, window, later=False):
        """Add another worker's view of the address; ``later``: a later file's, whose frames came after these."""
        for name in self.SUMS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.first = _least(self.first, other.first)
        self.last = _most(self.last, other.last)
        if later:
            self.first_frame = other.first_frame if self.first_frame is None else self.first_frame
            self.last_frame = self.last_frame if other.last_frame is None else other.last_frame
        else:
            self.first_frame = _least(self.first_frame, other.first_frame)
            self.last_frame = _most(self.last_frame, other.last_frame)
        for name in ("rates", "replies", "suspects"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is None:
                setattr(self, name, theirs)
            elif theirs is not None:
                mine.merge(theirs, window)
        self.queried = _union_peers(self.queried, other.queried)
        self.repliers = _union_peers(self.repliers, other.repliers)
        self.tokens = _merge_tokens(self.tokens, other.tokens, later)
        return self

    def as_dict(self, address, window):
        span = max(window, self.last - self.first + 1 if self.first is not None else 0)
        peak = self.rates.peak(window) if self.rates is not None else 0
        return {"address": address, "requests": self.requests, "mean_rate": self.requests / span,
                "peak_rate": peak / window, "servers": _peer_count(self.queried),
                "answered_share": _ratio(self.answered, self.requests), "reply_bytes": self.caused_bytes,
                "reply_wire_bytes": self.caused_wire}


@cython.no_gc
@cython.cclass
class _Server:
    """One server endpoint: the requests it received and the replies it sent."""

    __slots__ = ("protocol", "endpoint", "requests", "replies", "bytes_out", "wire_out", "unsolicited", "oversize",
                 "requesters", "last_frame", "pair")
    SUMS = ("requests", "replies", "bytes_out", "wire_out", "unsolicited", "oversize")

    def __init__(self, protocol, endpoint):
        self.protocol = protocol
        self.endpoint = endpoint  # the (address, port) tuple its table's key is: the other tables share it
        self.requests = self.replies = self.bytes_out = self.wire_out = self.unsolicited = self.oversize = 0
        self.requesters = None  # peers: see _add_peer
        self.last_frame = 0
        self.pair = None        # the _Pair of its last message (see TrafficAnalyzer._pair)

    def request(self, address, frame):
        self.requests += 1
        self.requesters = _add_peer(self.requesters, address)
        self.last_frame = max(self.last_frame, frame)

    def reply(self, frame, size, wire):
        self.last_frame = max(self.last_frame, frame)
        self.replies += 1
        self.bytes_out += size
        self.wire_out += wire

    def merge(self, other, later=False):
        for name in self.SUMS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.requesters = _union_peers(self.requesters, other.requesters)
        self.last_frame = other.last_frame if later else max(self.last_frame, other.last_frame)
        return self

    def as_dict(self, server):
        return {"server": endpoint(*server), "protocol": self.protocol, "requests": self.requests,
                "replies": self.replies, "bytes_out": self.bytes_out, "wire_bytes_out": self.wire_out,
                "requesters": _peer_count(self.requesters), "unsolicited_replies": self.unsolicited,
                "oversize_replies": self.oversize}


@cython.no_gc
@cython.cclass
class _Pair:
    """One source address and one server: its requests and its replies within the last window (the flood
    watch), and whether each reached one a second over a window. A window's seconds are kept flat,
    [second, messages, second, messages ...], oldest first. Made by _new_pair."""

    __slots__ = ("protocol", "source", "slot", "query", "first_frame", "last_frame", "total", "asked_recent",
                 "asked_count", "replied_recent", "replied_count", "asked_fast", "replied_fast", "flood")

    def asked(self, second, start, window):
        """Count a request of ``second`` (``start``: the first second of the window ending there) into ``asked_count``,
        the requests within the window: whether the pair just reached one a second."""
        self.total += 1
        if self.asked_recent is None:
            self.asked_recent = []
        self.asked_count += 1 - _slide(self.asked_recent, second, start)
        if self.asked_fast or self.asked_count < window:
            return False
        self.asked_fast = True
        return True

    def merge(self, other, later=False):
        """The same pair in two workers' tables: never, as a pair of addresses lives in one worker; in two files'
        (``later``: ``other`` the later one), the later."""
        return self if self.last_frame >= other.last_frame and not later else other

    def replied(self, second, start, window):
        """Count a reply, as ``asked`` a request: whether the pair just reached one a second."""
        if self.replied_recent is None:
            self.replied_recent = []
        self.replied_count += 1 - _slide(self.replied_recent, second, start)
        if self.replied_fast or self.replied_count < window:
            return False
        self.replied_fast = True
        return True


def _new_pair(protocol, source, frame):
    """A _Pair (made here, without the argument parsing of a constructor call: one a new pair)."""
    pair = _Pair.__new__(_Pair)
    pair.protocol = protocol
    pair.source = source        # its source address
    pair.slot = 0               # its slot in the pairs table
    pair.query = None           # the _Query of its last request
    pair.first_frame = pair.last_frame = frame
    pair.total = 0              # requests in all
    pair.asked_recent = None
    pair.asked_count = 0        # requests within the window
    pair.replied_recent = None
    pair.replied_count = 0      # replies within the window
    pair.asked_fast = False
    pair.replied_fast = False
    pair.flood = None           # its _Flood once it crossed the threshold (False: past MAX_FLOODS)
    return pair


def _slide(recent, second, start):
    """Count a message of ``second`` into ``recent``, a window's seconds (``start``: the first second of the window
    ending at ``second``); return how many messages left it."""
    if recent and second <= recent[-2]:  # the same second, or a clock that went back: the latest one
        recent[-1] += 1
        return 0
    recent.append(second)
    recent.append(1)
    gone = 0
    while recent[0] < start:
        gone += recent[1]
        del recent[:2]
    return gone


@cython.no_gc
@cython.cclass
class _Flood:
    __slots__ = ("protocol", "first_frame", "frame", "peak", "requests")

    def __init__(self, protocol, first_frame, frame):
        self.protocol = protocol
        self.first_frame = first_frame  # the pair's first request
        self.frame = frame              # the request that crossed the threshold
        self.peak = 0
        self.requests = 0

    def merge(self, other, later=False):
        """The same flood in two parts of the run: the first to cross the threshold, with the larger counts;
        ``later``: ``other`` is a later file's, whose flood came after this one and whose requests came on top of
        these."""
        first, second = (self, other) if later or (self.frame, self.first_frame) <= (other.frame, other.first_frame) \
            else (other, self)
        first.peak = max(first.peak, second.peak)
        first.requests = first.requests + second.requests if later else max(first.requests, second.requests)
        return first


# -- helpers -----------------------------------------------------------------------------------------
def _three_digits(micro):
    """A factor in millionths, to 3 significant digits."""
    factor = _DIGITS.get(micro)
    if factor is None:
        factor = kept(_DIGITS, micro, float(f"{micro / MICRO:.3g}"), MAX_DIGITS)
    return factor


def _factor(reply_bytes, request_bytes):
    """``reply_bytes`` over ``request_bytes`` in millionths, rounded down (a request of no bytes counts as one): in C
    integers while the product fits 64 bits, exact past them."""
    scale = MICRO
    if reply_bytes <= _EXACT_REPLY_BYTES:
        return reply_bytes * scale // max(1, request_bytes)
    return int(reply_bytes) * MICRO // max(1, request_bytes)


def _beats(micro, frame, worst):
    """True when a query of amplification ``micro`` (millionths) and request frame ``frame`` is worse than ``worst``:
    a larger factor, then the earlier request."""
    return worst is None or micro > worst[0] or micro == worst[0] and frame < worst[1]


def _split(text):
    """``10.0.0.1:26000`` or ``[2001:db8::1]:26000`` -> (address, port). A stream's endpoints repeat: each
    text's tuple is made once (the first MAX_ENDPOINTS texts), then compared by identity."""
    if not text:
        return None
    ends = _ENDPOINTS.get(text)
    if ends is None:
        address, _, port = text.rpartition(":")
        ends = kept(_ENDPOINTS, text, (address.strip("[]"), int(port) if port.isdigit() else None), MAX_ENDPOINTS)
    return ends


def _add_peer(peers, peer):
    """Distinct peers, at most MAX_PEERS: None, then the one peer itself (most addresses of a flood know one
    server, most servers one requester), then a set."""
    if peers is None:
        return peer
    if type(peers) is not set:
        return peers if peers == peer else {peers, peer}
    if len(peers) < MAX_PEERS:
        set.add(peers, peer)  # the set's own add: a C call when compiled
    return peers


def _peer_set(peers):
    return set() if peers is None else peers if type(peers) is set else {peers}


def _peer_count(peers):
    return 0 if peers is None else len(peers) if type(peers) is set else 1


def _union_peers(mine, theirs):
    union = _peer_set(mine) | _peer_set(theirs)
    if len(union) <= 1:
        return next(iter(union), None)
    return union if len(union) <= MAX_PEERS else set(sorted(union, key=repr)[:MAX_PEERS])


def _token_table(tokens):
    """An address's tokens as {(protocol, token): [requests, first frame, servers]} ({} for none or varied)."""
    if not tokens:
        return {}
    if type(tokens) is tuple:
        protocol, token, server, frame = tokens
        return {(protocol, token): [1, frame, (server,)]}
    return tokens


def _merge_tokens(mine, theirs, later=False):
    """Two parts' token tables of an address, as one; ``later``: ``theirs`` is a later file's, whose first frames
    came after these."""
    if mine is False or theirs is False:
        return False
    if not theirs:
        return mine
    if not mine:
        return theirs
    merged = {key: list(entry) for key, entry in _token_table(mine).items()}
    theirs = _token_table(theirs)
    for key, (count, frame, servers) in theirs.items():
        entry = merged.get(key)
        if entry is None:
            merged[key] = [count, frame, servers]
            continue
        entry[0] += count
        entry[1] = entry[1] if later else min(entry[1], frame)
        entry[2] = tuple(sorted(set(entry[2]) | set(servers), key=repr))[:MIN_SERVERS]
    return False if len(merged) > MAX_TOKENS else merged


def _merge_recent(mine, theirs, combine, later=False):
    """Fold another worker's table (a BoundedDict of entries with a ``last_frame``) into ``mine``, combining
    the entries in both; keep those last used by the latest frames, in that order, as one process's LRU
    would; return how many the limit evicted. ``later``: ``theirs`` is the next capture file's, whose entries
    were all used after these: they are the newest, in their table's order."""
    if later:
        return refill(mine, in_file_order(mine, theirs, combine))
    combined = dict(mine)
    for key, entry in theirs.items():
        old = combined.get(key)
        combined[key] = entry if old is None else combine(old, entry)
    return refill(mine, sorted(combined.items(), key=lambda item: (item[1].last_frame or 0, repr(item[0]))))


def _count_fast_pairs_once(pairs, next_file):
    """Before ``next_file``'s analyzer is folded in after the one whose table ``pairs`` is: a pair of addresses fast
    in both files is one server asked (or answering) at least once a second, which the earlier file counted."""
    for key, pair in next_file.pairs.items():
        old = pairs.get(key)
        host = next_file.hosts.get(key[0])
        if old is not None and host is not None:
            host.servers_asked_fast -= old.asked_fast and pair.asked_fast
            host.servers_replying_fast -= old.replied_fast and pair.replied_fast


def _flood_order(item):
    key, flood = item
    return flood.frame, key


def _least(a, b):
    return b if a is None else a if b is None else min(a, b)


def _most(a, b):
    return b if a is None else a if b is None else max(a, b)


def _median(factors):
    """The lower median of a histogram {value: count}."""
    total = sum(factors.values())
    seen = 0
    for value in sorted(factors):
        seen += factors[value]
        if 2 * seen >= total:
            return value
    return None


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else None


def _protocol_row(protocol):
    return {"protocol": protocol, "requests": 0, "request_bytes": 0, "request_wire": 0, "replies": 0,
            "reply_bytes": 0, "reply_wire": 0, "unsolicited_replies": 0, "unsolicited_bytes": 0,
            "oversize_replies": 0}


def _renamed(row):
    """A protocol row with the wire figures named as in the amplification rows."""
    out = dict(row)
    out["request_wire_bytes"] = out.pop("request_wire")
    out["reply_wire_bytes"] = out.pop("reply_wire")
    return out


def _token_order(item):
    (protocol, token), (count, frame, _) = item
    return frame, protocol, repr(token)


def _suspicion_order(suspicion):
    return suspicion["frames"][0] or 0, suspicion["rule"], suspicion["detail"]


def _listed(suspicion):
    """A suspicion as ``--stats`` lists it: without its detail, its frames a list of its own."""
    listed = {key: value for key, value in suspicion.items() if key != "detail"}
    listed["frames"] = list(listed["frames"])
    return listed


def _summary(suspicion):
    rule = suspicion["rule"]
    if rule == "request_flood":
        return (f"request flood {suspicion['source']} → {suspicion['server']} ({suspicion['protocol']}): "
                f"{suspicion['peak_requests']} requests within the window ({suspicion['peak_rate']:.1f}/s), "
                f"{suspicion['requests']} in all")
    if rule == "reflection":
        what = "victim of reflection" if suspicion["view"] == "victim" else "reflection toward"
        return (f"{what} {suspicion['address']}: {suspicion['servers']} servers sent it {suspicion['replies']} "
                f"replies, {suspicion['reply_bytes']} bytes")
    if rule == "unsolicited_replies":
        return (f"unsolicited replies to {suspicion['address']}: {suspicion['unsolicited']} without a request, "
                f"{suspicion['oversize']} oversize")
    return f"token {suspicion['token']} reused by {suspicion['address']} in {suspicion['requests']} requests"
