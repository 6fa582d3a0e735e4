"""NetQuake across packets: request/reply pairing, rule walks, player walks, servers seen."""

from ..core import AnalysisRecord
from ..core.bounded import BoundedDict, peek, put
from ..dissectors.netquake import (CCREP_ACCEPT, CCREP_PLAYER_INFO, CCREP_REJECT, CCREP_RULE_INFO,
                                  CCREP_SERVER_INFO, CCREQ_CONNECT, CCREQ_PLAYER_INFO, CCREQ_RULE_INFO,
                                  CCREQ_SERVER_INFO, COMMANDS, F, W)
from ..core.fmt import counted, endpoint
from .base import Analyzer
from .common import ServersSeen, Timing, annotate_response, merge_counts, merge_timings

MAX_CONVERSATIONS = 4096
MAX_SERVERS = 10000
MAX_WALK_ITEMS = 256
SEEN_COLUMNS = ("host_name", "level_name", "players", "max_players", "version", "response_time")

REPLY_TO = {CCREP_SERVER_INFO: CCREQ_SERVER_INFO, CCREP_PLAYER_INFO: CCREQ_PLAYER_INFO,
            CCREP_RULE_INFO: CCREQ_RULE_INFO, CCREP_ACCEPT: CCREQ_CONNECT, CCREP_REJECT: CCREQ_CONNECT}
TIMED_AS = {reply: COMMANDS[request] for reply, request in REPLY_TO.items()}  # the timing a reply's time goes to



class _Walk:
    """A rule walk or a player walk between one client and one server."""

    __slots__ = ("kind", "client", "server", "frames", "items", "requested", "ended")

    def __init__(self, kind, client, server):
        self.kind = kind
        self.client = endpoint(*client)
        self.server = endpoint(*server)
        self.frames = []
        self.items = []
        self.requested = []
        self.ended = False

    def add_frame(self, number):
        if len(self.frames) < MAX_WALK_ITEMS * 2:
            self.frames.append(number)


class _Conversation:
    __slots__ = ("pending", "players_pending", "rule_walk", "player_walk", "last_rule", "current_players")

    def __init__(self):
        self.pending = {}          # request command -> (frame, ts, detail)
        self.players_pending = {}  # player_number -> (frame, ts)
        self.rule_walk = None
        self.player_walk = None
        self.last_rule = None
        self.current_players = None


class NetQuakeAnalyzer(Analyzer):
    __slots__ = ("conversations", "timings", "requests", "answered", "servers")

    def __init__(self):
        super().__init__()
        self.conversations = BoundedDict(MAX_CONVERSATIONS)
        self.timings = {}
        self.requests = 0
        self.answered = 0
        self.servers = ServersSeen(MAX_SERVERS, SEEN_COLUMNS)

    def feed(self, record, msg, tree):
        values = msg.values
        command = values.get("command")
        packet = record.packet  # its addresses are read in C when compiled (the record's are properties)
        if command is None or packet.src is None:
            return []
        if command in REPLY_TO:
            return self._reply(record, packet, msg, command, tree)
        if command in COMMANDS:
            return self._request(record, packet, msg, command)
        return []

    # -- requests ---------------------------------------------------------------
    def _request(self, record, packet, msg, command):
        out = []
        # one flat key for the client's and the server's endpoints: hashed and compared faster than two tuples
        conv = self._conversation((packet.src, packet.sport, packet.dst, packet.dport), out)
        self.requests += 1
        if command == CCREQ_PLAYER_INFO:
            self._player_request(record, packet, msg, conv, out)
        else:
            conv.pending[command] = (record.number, record.ts, msg.values.get("rule"))
        if command == CCREQ_RULE_INFO:
            self._rule_request(record, packet, msg, conv, out)
        return out

    def _player_request(self, record, packet, msg, conv, out):
        number = msg.values.get("player_number")
        if number is None:
            return  # cut before its player number: it asks for no player a walk or a reply can name
        conv.players_pending[number] = (record.number, record.ts)
        walk = conv.player_walk
        if walk is None and _past_last_player(number, conv.current_players):
            return  # a client probing for the end of the list: the spec says no reply comes, no walk starts
        if walk is None or (number == 0 and walk.requested):
            if walk is not None:
                out.append(self._conclude(walk))
            walk = conv.player_walk = _Walk("player_walk", (packet.src, packet.sport), (packet.dst, packet.dport))
        if len(walk.requested) < MAX_WALK_ITEMS:
            walk.requested.append(number)
        walk.add_frame(record.number)

    def _rule_request(self, record, packet, msg, conv, out):
        rule = msg.values.get("rule")
        if rule is None:
            return
        if rule == "":
            if conv.rule_walk is not None:
                out.append(self._conclude(conv.rule_walk))
            conv.rule_walk = _Walk("rule_walk", (packet.src, packet.sport), (packet.dst, packet.dport))
        elif conv.last_rule is not None and rule != conv.last_rule:
            msg.report(W.walk_out_of_order,
                       f'rule request names "{rule}" but the last reply named "{conv.last_rule}"', 5, len(rule) + 1)
        if conv.rule_walk is not None:
            conv.rule_walk.add_frame(record.number)

    # -- replies ------------------------------------------------------------------
    def _reply(self, record, packet, msg, command, tree):
        out = []
        conv = self._conversation((packet.dst, packet.dport, packet.src, packet.sport), out)
        request = self._match(conv, msg, command)
        if request is not None:
            elapsed = annotate_response(record, msg, tree, request[0], request[1], F)
            self.answered += 1
            name = TIMED_AS[command]
            timing = self.timings.get(name)
            if timing is None:
                timing = self.timings[name] = Timing()
            timing.add(elapsed)
        if command == CCREP_SERVER_INFO:
            conv.current_players = msg.values.get("current_players")
            if not self.stats_off:
                self._server_seen((packet.src, packet.sport), record, msg)
        elif command == CCREP_RULE_INFO:
            self._rule_reply(record, msg, conv, out)
        elif command == CCREP_PLAYER_INFO:
            self._player_reply(record, msg, conv, out, request is not None)
        return out

    def _match(self, conv, msg, command):
        if command == CCREP_PLAYER_INFO:
            return conv.players_pending.pop(msg.values.get("player_number"), None)
        return conv.pending.pop(REPLY_TO[command], None)

    def _rule_reply(self, record, msg, conv, out):
        walk = conv.rule_walk
        values = msg.values
        if values.get("end_of_rules"):
            conv.last_rule = None
            if walk is not None:
                walk.add_frame(record.number)
                walk.ended = True
                out.append(self._conclude(walk))
                conv.rule_walk = None
            return
        rule = values.get("rule")
        conv.last_rule = rule
        if walk is not None and rule is not None:
            walk.add_frame(record.number)
            if len(walk.items) < MAX_WALK_ITEMS:
                walk.items.append({"rule": rule, "value": values.get("value")})

    def _player_reply(self, record, msg, conv, out, requested):
        """A player's reply joins the walk when it answers a request (``requested``): a number no request asked for,
        or a reply repeated after its request was answered, is not a player of the walk (it was counted as one)."""
        walk = conv.player_walk
        values = msg.values
        if walk is None or "address" not in values:
            return
        walk.add_frame(record.number)
        if not requested:
            return
        player = {key: values.get(key) for key in ("player_number", "name", "colors", "frags", "connect_time",
                                                     "address")}
        items = walk.items
        for index in range(len(items)):
            if items[index]["player_number"] == player["player_number"]:
                items[index] = player  # asked again and answered again: the latest answer
                break
        else:
            if len(items) < MAX_WALK_ITEMS:
                items.append(player)
        expected = conv.current_players
        if expected is not None and len({p["player_number"] for p in walk.items}) >= expected:
            walk.ended = True
            out.append(self._conclude(walk, expected))
            conv.player_walk = None

    def _server_seen(self, server, record, msg):
        data = msg.values
        server = endpoint(*server)
        self.servers.update(server, record.number, (  # in SEEN_COLUMNS order
            data.get("host_name"), data.get("level_name"), data.get("current_players"), data.get("max_players"),
            data.get("version"), data.get("response_time")))

    # -- state ----------------------------------------------------------------------
    def _conversation(self, key, out):
        conv = peek(self.conversations, key)
        if conv is None:
            conv = _Conversation()
            evicted = put(self.conversations, key, conv)
            if evicted is not None:
                out.extend(self._conclude_all(evicted[1], evicted=True))
        return conv

    def _conclude_all(self, conv, evicted=False):
        out = []
        for walk in (conv.rule_walk, conv.player_walk):
            if walk is not None:
                out.append(self._conclude(walk, conv.current_players, evicted))
        conv.rule_walk = conv.player_walk = None
        return out

    def _conclude(self, walk, expected=None, evicted=False):
        findings = []
        if evicted:
            findings.append(W.state_evicted.at(f"more than {MAX_CONVERSATIONS} conversations in flight: the "
                                               f"oldest was concluded early"))
        if walk.kind == "rule_walk":
            result = {"client": walk.client, "server": walk.server, "rules": walk.items, "complete": walk.ended}
            if not walk.ended:
                findings.append(W.incomplete_walk.at("rule walk ended without the 5-byte end-of-rules reply"))
            summary = f"rule walk {walk.client} → {walk.server}: {counted(len(walk.items), 'rule')}" + \
                ("" if walk.ended else " (incomplete)")
        else:
            answered = {p["player_number"] for p in walk.items}
            unanswered = [n for n in dict.fromkeys(walk.requested)
                          if n not in answered and not _past_last_player(n, expected)]
            # Complete where every number below the last server info's count has answered, also where that count
            # came after the replies or went down after them (a player left): concluded here, not at a reply.
            ended = walk.ended or _all_answered(answered, expected)
            result = {"client": walk.client, "server": walk.server, "players": walk.items,
                      "requested": walk.requested, "unanswered": unanswered, "expected": expected,
                      "complete": ended}
            summary = f"player walk {walk.client} → {walk.server}: {counted(len(walk.items), 'player')}" + \
                (f" of {expected}" if expected is not None else "") + ("" if ended else " (incomplete)")
        return AnalysisRecord("netquake", walk.kind, walk.frames, result, findings, summary)

    def finish(self):
        out = []
        for conv in self.conversations.values():
            out.extend(self._conclude_all(conv))
        return out

    def merge(self, other, later=False):
        """Fold in another ``-j`` worker's analyzer (its conversations are disjoint from these), or with ``later`` the
        next capture file's (see ``Analyzer.follow``)."""
        merge_counts(self, other)
        merge_timings(self.timings, other.timings)
        self.servers.merge(other.servers, later)

    def follow(self, other):
        self.merge(other, later=True)

    def stats(self):
        return {"requests": self.requests, "answered": self.answered,
                "response_times": {name: t.as_dict() for name, t in sorted(self.timings.items())},
                **self.servers.report()}


def _all_answered(answered, current_players):
    """Whether every player number below ``current_players`` (None: not known) is in ``answered``."""
    if current_players is None:
        return False
    for number in range(current_players):
        if number not in answered:
            return False
    return True


def _past_last_player(number, current_players):
    """Player numbers go from 0 to current_players - 1; the spec: a bad player number gets no reply."""
    return current_players is not None and number is not None and number >= current_players

