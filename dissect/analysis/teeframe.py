"""TeeFrame across packets: response assembly, request matching, and the server browser.

The spec's 'Receiving Multiple Packets': group packets by the server's address,
port and response token (and here the client too); iext is packet 0, iex+ carries
its number (1 to 63; other numbers are flagged by the decoder and never stored);
duplicates are ignored; the list is complete when the records collected equal
Num Clients. A vanilla inf3 is one packet, complete as it arrives.

State is bounded: responses pending at once, records kept per response, and the
records kept across all pending responses (past that budget the response that has
held records longest is concluded early with teeframe.state_evicted).
"""

from ..core import AnalysisRecord
from ..core.bounded import BoundedDict, peek, popped, put
from ..capture.tables import FRAME_FINDINGS
from ..core.fmt import decimal_text, endpoint, or_unknown
from ..dissectors.teeframe import F, INF3_MAX_RECORDS, W, ClientRecords
from .base import Analyzer
from .common import ServersSeen, Timing, annotate_response, elapsed_seconds, merge_counts

MAX_PENDING = 4096          # responses being assembled at once
MAX_REQUESTS = 4096         # requests waiting for their first reply: most that wait long never get one
MAX_RECORDS = 4096          # client records kept for one response (63 packets of 1400 bytes hold fewer)
MAX_HELD_RECORDS = 160_000  # client records kept across all pending responses: about 64 MB at ~400 bytes each
MAX_SERVERS = 10000
MAX_DONE = 4096             # recently concluded responses, to recognize their late packets
MAX_FRAMES = 128            # frame numbers listed for one response
LAST_PACKET_NUMBER = 63
# The fields of packet 0 a response keeps.
INFO_KEYS = ("version", "name", "map", "map_crc", "map_size", "game_type", "flags", "num_players", "max_players",
             "num_clients", "max_clients")
INFO_TEMPLATE = dict.fromkeys(INFO_KEYS + ("identifier",))
SEEN_COLUMNS = ("name", "map", "game_type", "version", "players", "max_players", "clients", "max_clients", "password",
                "response_time")


CUT_MESSAGE = FRAME_FINDINGS.cut_message  # a response short of records the capture did not keep: no fault of the server


class _Response:
    __slots__ = ("server", "client", "token", "key", "info", "records", "frames", "first_ts", "request",
                 "findings", "clients_omitted", "held", "dropped_records", "vanilla", "num_clients", "num_players",
                 "cut")

    def __init__(self, server, client, token, key):
        self.server = server
        self.client = client
        self.token = token
        self.key = key              # (server, client, token): its key in the pending ones
        self.info = None            # packet 0's msg.values (iext / inf3); a copy of its info fields where
                                    # records of it were dropped
        self.records = {}           # packet number (0 to 63) -> its client records (a ClientRecords, or a list)
        self.frames = []
        self.first_ts = None
        self.request = None         # (frame, ts) of the matching request
        self.findings = []
        self.clients_omitted = False
        self.held = 0               # records kept in ``records``
        self.dropped_records = 0    # records counted but not kept
        self.vanilla = False        # packet 0 is a vanilla inf3
        self.num_clients = None     # packet 0's Num Clients and Num Players, read once
        self.num_players = None
        self.cut = False            # the capture's snap length cut one of its packets: records may be missing

    def collected(self):
        return self.held + self.dropped_records

    def complete(self):
        if self.info is None:
            return False
        if self.vanilla:
            return True  # one packet: nothing more will come
        expected = self.num_clients
        return expected is not None and (self.collected() >= expected or self.clients_omitted)

    def elapsed(self):
        """Seconds from the matching request to the first packet; None without one."""
        return elapsed_seconds(self.request[1], self.first_ts) if self.request is not None else None

    def result(self):
        """A concluded response's result, built when a view reads it: nothing changes a response once concluded."""
        info = self.info
        out = {"server": self.server, "client": self.client, "token": self.token,
               "info": _info(info) if info else None, "num_clients": None if info is None else info.get("num_clients"),
               "records": self.collected(), "clients": _clients(self), "packets": sorted(self.records),
               "complete": self.complete()}
        if self.request is not None:
            out["request_frame"] = self.request[0]
            out["response_time"] = self.elapsed()
        if self.clients_omitted:
            out["clients_omitted"] = True
        return out

    def truncated_list(self):
        """An inf3 list that holds the most records an inf3 can, or fewer records than its counts."""
        if not self.vanilla:
            return False
        collected = self.collected()
        if collected >= INF3_MAX_RECORDS:
            return True
        for count in (self.num_clients, self.num_players):
            if count is not None and count > collected:
                return True
        return False


class TeeFrameAnalyzer(Analyzer):
    __slots__ = ("pending", "requests", "latest_token", "done", "servers", "timing", "request_count", "answered",
                 "held", "holders")

    def __init__(self):
        super().__init__()
        self.pending = BoundedDict(MAX_PENDING)
        self.requests = BoundedDict(MAX_REQUESTS)
        self.latest_token = BoundedDict(MAX_PENDING)   # (client, server) -> token of the last request
        self.done = BoundedDict(MAX_DONE)
        self.servers = ServersSeen(MAX_SERVERS, SEEN_COLUMNS)
        self.timing = Timing()
        self.request_count = 0
        self.answered = 0
        self.held = 0                   # client records kept across all pending responses
        self.holders = {}               # keys of the pending responses that keep records, oldest first

    def feed(self, record, msg, tree):
        values = msg.values
        ident = values.get("identifier")
        packet = record.packet  # its addresses are read in C when compiled (the record's are properties)
        if packet.src is None:
            return []
        if ident == "gie3" and "response_token" in values:
            return self._request(record, packet, msg)
        if ident in ("iext", "iex+", "inf3"):
            token = values.get("token")
            if token is not None:
                return self._response(record, packet, msg, tree, ident, token)
        return []

    # -- requests ----------------------------------------------------------------------------------
    def _request(self, record, packet, msg):
        client, server = endpoint(packet.src, packet.sport), endpoint(packet.dst, packet.dport)
        token = msg.values["response_token"]
        self.request_count += 1
        put(self.requests, (client, server, token), (record.number, record.ts))
        popped(self.done, (server, client, token))  # a new request may reuse a token
        out = []
        previous = peek(self.latest_token, (client, server))
        if previous is not None and previous != token:
            stale = popped(self.pending, (server, client, previous))
            if stale is not None:
                out.append(self._conclude(stale, superseded_by=record.number))
        put(self.latest_token, (client, server), token)
        return out

    # -- responses ---------------------------------------------------------------------------------
    def _response(self, record, packet, msg, tree, ident, token):
        server, client = endpoint(packet.src, packet.sport), endpoint(packet.dst, packet.dport)
        key = (server, client, token)
        number = _packet_number(ident, msg.values)
        if number is None:
            return []
        # Unrequested packets (token -1) are each a fresh one, not a copy of the last: they are not remembered.
        done = peek(self.done, key) if token != -1 else None
        if done is not None:
            if number in done:
                _duplicate(msg, number, token)
            elif type(done) is _Concluded:
                _after_conclusion(msg, number, token, done.why)
            else:
                _after_complete(msg, number, token)
            return []
        out = []
        response = peek(self.pending, key)
        new = response is None
        if new:
            response = _Response(server, client, token, key)
            if len(self.pending) >= self.pending.limit:  # full: the oldest makes way now, as put would have it
                out.append(self._conclude(self.pending.popitem(last=False)[1], superseded_by=None, evicted="pending"))
            self._match_request(response, record, msg, tree)
        elif response.request is not None:
            annotate_response(record, msg, tree, response.request[0], response.request[1], F)
        if number in response.records:
            _duplicate(msg, number, token)
            return out
        self._add_packet(response, record, msg, ident, number, out)
        if response.complete():
            if not new:
                del self.pending[key]
            if token != -1:
                put(self.done, key, _packet_numbers(response.records))
            out.append(self._conclude(response))
        else:
            self._hold(response, new)
        return out

    def _hold(self, response, new):
        """A response left incomplete by its packet: a new one joins the pending ones (_response made its place),
        and one that keeps records the holders, in the order they began to keep them. One complete with its first
        packet, most are, joins neither."""
        if new:
            put(self.pending, response.key, response)
        if response.held:
            self.holders[response.key] = True

    def _match_request(self, response, record, msg, tree):
        response.first_ts = record.ts
        request = popped(self.requests, (response.client, response.server, response.token))
        if request is not None:
            response.request = request
            elapsed = annotate_response(record, msg, tree, request[0], request[1], F)
            self.timing.add(elapsed)
            self.answered += 1
        elif response.token != -1:
            response.findings.append(W.unmatched_token.at(
                f"response token {response.token} matches no request seen from {response.client}; the request may "
                f"predate the capture"))

    def _add_packet(self, response, record, msg, ident, number, out):
        values = msg.values
        clients = values.get("clients")
        if clients is None:
            clients = []
        records = self._keep(response, clients, out)
        response.records[number] = records
        if record.packet.cut:  # the snap length cut the datagram: its message has the capture.cut_message note
            response.cut = True
        if len(response.frames) < MAX_FRAMES:
            response.frames.append(record.number)
        if number == 0:
            # Its INFO_KEYS, read with get, the result's info made of them when read; where _keep dropped records,
            # a copy of them, which does not hold the packet's records as its values do.
            response.info = values if records is clients else _info(values)
            response.vanilla = ident == "inf3"
            response.clients_omitted = bool(values.get("clients_omitted"))
            response.num_clients, response.num_players = values.get("num_clients"), values.get("num_players")

    def _keep(self, response, records, out):
        """The records of a packet that fit within the response's limit and the total budget; the rest are
        counted only. Makes room in the budget by concluding the responses that have held records longest."""
        count, budget = len(records), MAX_HELD_RECORDS  # read once: typed, the sums below are C's
        room = min(count, MAX_RECORDS - response.held)
        key = response.key
        while room > 0 and self.held + room > budget:
            oldest = _oldest_holder(self.holders, key)
            if oldest is None:
                break
            out.append(self._conclude(self.pending.pop(oldest), superseded_by=None, evicted="records"))
        room = max(0, min(room, budget - self.held))
        response.dropped_records += count - room
        if room < count:
            records = records[:room]
        if room:
            response.held += room
            self.held += room
        return records

    # -- conclusions -----------------------------------------------------------------------------
    def _conclude(self, response, superseded_by=None, evicted=None):
        self._release(response)
        findings = list(response.findings)
        complete = response.complete()
        collected = response.collected()
        info = response.info
        expected = response.num_clients
        if complete and not response.clients_omitted:
            self._check_complete(response, findings)
        if not complete and response.cut:  # no fault of the server: the capture did not keep all it sent
            findings.append(CUT_MESSAGE.at(f"{collected} of {or_unknown(expected)} client records of response token "
                                           f"{response.token} from {response.server}: the capture's snap length cut "
                                           f"packets of the response"))
        elif not complete:
            findings.append(W.incomplete_response.at(self._incomplete_reason(
                response, collected, expected, superseded_by, evicted)))
        if not complete and (superseded_by is not None or evicted) and response.token != -1:
            # its packets may still come: they are told as this response's, not assembled into another
            put(self.done, response.key, _Concluded(_packet_numbers(response.records), _why(superseded_by, evicted)))
        elif complete and response.clients_omitted and collected:
            findings.append(W.count_mismatch.at(
                f"{collected} client records arrived in iex+ packets, but the iext (packet 0) gives none for Num "
                f"Clients {or_unknown(expected)} (rate limited): the list is neither whole nor omitted"))
        if response.dropped_records:
            findings.append(W.state_evicted.at(f"{response.dropped_records} client records beyond {MAX_RECORDS} for "
                                               f"one response or {MAX_HELD_RECORDS} in all were not kept"))
        if evicted == "pending":
            findings.append(W.state_evicted.at(f"more than {MAX_PENDING} responses pending at once: the oldest was "
                                               f"concluded early"))
        elif evicted == "records":
            findings.append(W.state_evicted.at(f"pending responses held {MAX_HELD_RECORDS} client records in all: the "
                                               f"one holding records longest was concluded early"))
        if info and not self.stats_off:
            self._server_seen(response, info, response.elapsed())
        summary = (f"server info {response.server} token={or_unknown(response.token)}: {decimal_text(collected)}/"
                   f"{or_unknown(expected)} clients in packets {_packet_list(response.records)}"
                   f"{' complete' if complete else ' INCOMPLETE'}")
        return AnalysisRecord("teeframe", "server_info", response.frames, response.result, findings, summary)

    def _release(self, response):
        """The response leaves the pending ones: its records no longer count against the budget."""
        if response.held:
            self.held -= response.held
            self.holders.pop(response.key, None)

    def _check_complete(self, response, findings):
        if response.truncated_list():
            findings.append(W.truncated_list.at(
                f"the inf3 list may be cut: {response.collected()} records for Num Clients {response.num_clients} "
                f"and Num Players {response.num_players}; the is-player count is not compared"))
            return
        if response.collected() != response.num_clients:
            findings.append(W.count_mismatch.at(f"{response.collected()} client records collected but Num Clients "
                                                f"is {response.num_clients}"))
        if response.dropped_records:
            return  # the is-player count needs every record
        players = 0
        for records in response.records.values():
            players += _players(records)
        if response.num_players is not None and players != response.num_players:
            findings.append(W.count_mismatch.at(f"{players} records have Is Player 1 but Num Players is "
                                                f"{response.num_players}"))

    @staticmethod
    def _incomplete_reason(response, collected, expected, superseded_by, evicted):
        why = _why(superseded_by, evicted)
        have = "no iext (packet 0) arrived" if response.info is None else \
            f"{collected} of {or_unknown(expected)} client records arrived"
        return f"response token {response.token} from {response.server} is incomplete: {have} before {why}"

    def _server_seen(self, response, info, elapsed):
        flags = info.get("flags")
        self.servers.update(response.server, response.frames[-1] if response.frames else 0, (  # in SEEN_COLUMNS order
            info.get("name"), info.get("map"), info.get("game_type"), info.get("version"), response.num_players,
            info.get("max_players"), response.num_clients, info.get("max_clients"),
            None if flags is None else bool(flags & 1), elapsed))

    def finish(self):
        out = [self._conclude(response) for response in list(self.pending.values())]
        self.pending.clear()
        return out

    def merge(self, other, later=False):
        """Fold in another ``-j`` worker's analyzer (its conversations are disjoint from these), or with ``later`` the
        next capture file's (see ``Analyzer.follow``)."""
        merge_counts(self, other, ("request_count", "answered"))
        self.timing.merge(other.timing)
        self.servers.merge(other.servers, later)

    def follow(self, other):
        self.merge(other, later=True)

    def stats(self):
        return {"requests": self.request_count, "answered": self.answered,
                "response_times": {"gie3": self.timing.as_dict()}, **self.servers.report()}


def _info(values):
    """The fields of packet 0 that a response's result shows, from its values."""
    info = INFO_TEMPLATE.copy()  # its keys in order: filled, not grown key by key
    for key in INFO_KEYS:
        info[key] = values.get(key)
    info["identifier"] = values["identifier"]
    return info


PACKET_NUMBERS = [str(number) for number in range(LAST_PACKET_NUMBER + 1)]  # the only keys of a response's records


def _packet_list(records):
    """The packet numbers of a response's records, in order, as a comma-separated text."""
    if len(records) == 1:  # most responses are one packet: no list to sort and join
        for number in records:
            return PACKET_NUMBERS[number]
    return ",".join([PACKET_NUMBERS[number] for number in sorted(records)])


def _packet_numbers(records):
    """The packet numbers of a response's records, a few, in a tuple, which is small; most responses are one packet,
    packet 0, and share one."""
    if len(records) == 1 and 0 in records:
        return ONLY_PACKET_0
    return tuple(records)


ONLY_PACKET_0 = (0,)


def _clients(response):
    clients = []
    for number in sorted(response.records):
        records = response.records[number]
        clients.extend(records.dicts() if type(records) is ClientRecords else records)
    return clients


def _players(records):
    """How many of a packet's client records have Is Player 1 (a ClientRecords counts them as they are read)."""
    if type(records) is ClientRecords:
        return records.players
    return sum([1 for client in records if client.get("is_player") == 1])


def _oldest_holder(holders, key):
    """The key of the pending response that has held records longest, other than ``key``; None if none."""
    for other in holders:
        if other != key:
            return other
    return None


def _packet_number(ident, values):
    """0 for iext and inf3, the packet number of an iex+ when it is 1 to 63; None otherwise (an iex+ with
    another number is flagged by the decoder and not stored)."""
    if ident != "iex+":
        return 0
    number = values.get("packet_number")
    return number if number is not None and 1 <= number <= LAST_PACKET_NUMBER else None


class _Concluded:
    """A response concluded before it was complete, as ``done`` remembers it: the numbers of the packets it had, and
    why it was concluded (a new request superseded it, or it was evicted), for the packets of it that come later."""

    __slots__ = ("numbers", "why")

    def __init__(self, numbers, why):
        self.numbers = numbers
        self.why = why

    def __contains__(self, number):
        return number in self.numbers


def _why(superseded_by, evicted):
    if superseded_by is not None:
        return f"a new request (frame {superseded_by}) superseded it"
    return "it was evicted" if evicted else "the capture ended"


def _after_conclusion(msg, number, token, why):
    msg.report(W.incomplete_response, f"packet {number} of response token {token} arrived after the response was "
                                      f"concluded incomplete ({why}), and is not counted")


def _after_complete(msg, number, token):
    msg.report(W.count_mismatch, f"packet {number} of response token {token} arrived after the response had its Num "
                                 f"Clients records, and is not counted")


def _duplicate(msg, number, token):
    msg.report(W.duplicate_packet, f"packet {number} of response token {token} arrived again and is ignored")
