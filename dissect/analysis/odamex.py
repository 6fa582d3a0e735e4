"""Odamex across packets: request/reply pairing, master server lists, and servers seen."""

from functools import partial

from ..core import AnalysisRecord
from ..core.bounded import BoundedDict, popped, put, refreshed
from ..dissectors.odamex import (F, REAL, REAL_TEAM_NAMES, SPEC_TEAMS, MasterEntries, entry_text, full_values,
                                 real_teams)
from ..core.fmt import endpoint, or_unknown
from .base import Analyzer
from .common import ServersSeen, Timing, annotate_response, merge_counts, merge_latest, merge_timings

MAX_PENDING = 4096             # requests waiting for their reply: most that wait long never get one
MAX_SERVERS = 10000
MAX_LISTED = 10000
MAX_MASTERS = 8                # masters remembered per listed server
SEEN_COLUMNS = ("name", "map", "players", "max_players", "game_type", "layout", "response_time")
INFO_KEYS = ("name", "map", "players", "max_players", "mode", "game_type", "deathmatch", "skill", "teamplay", "ctf",
             "website", "pwads", "layout", "teams_in_build", "score_limit", "team_scores")


class OdamexAnalyzer(Analyzer):
    __slots__ = ("pending", "servers", "listed", "latest_list", "timings", "requests", "answered",
                 "listings_forgotten")

    def __init__(self):
        super().__init__()
        # (launcher address, port, peer address, port) -> (frame, ts): one flat key, hashed and compared faster than
        # two tuples
        self.pending = BoundedDict(MAX_PENDING)
        self.servers = ServersSeen(MAX_SERVERS, SEEN_COLUMNS)  # server info per server
        # server named by a master reply, as its key (MasterEntries.keys) -> _Listing
        self.listed = BoundedDict(MAX_LISTED)
        self.listings_forgotten = 0  # listings evicted past MAX_LISTED
        # the entries' bytes of the master list _list took in last, and its listings in its order (see _list)
        self.latest_list = None
        self.timings = {"master_list": Timing(), "server_info": Timing()}
        self.requests = 0
        self.answered = 0

    def feed(self, record, msg, tree):
        packet = record.packet  # its addresses are read in C when compiled (the record's are properties)
        src, sport, dst, dport = packet.src, packet.sport, packet.dst, packet.dport
        if src is None:
            return []
        if msg.name == "launcher_request":
            self.requests += 1
            put(self.pending, (src, sport, dst, dport), (record.number, record.ts))
            return []
        if msg.name not in ("master_list", "server_info"):
            return []
        request = popped(self.pending, (dst, dport, src, sport))
        peer, launcher = endpoint(src, sport), endpoint(dst, dport)
        result = {"launcher": launcher, ("master" if msg.name == "master_list" else "server"): peer}
        if request is None:
            frames = [record.number]
        else:
            elapsed = annotate_response(record, msg, tree, request[0], request[1], F)
            self.answered += 1
            timing = self.timings[msg.name]
            timing.add(elapsed)
            result["request_frame"] = request[0]
            result["response_time"] = elapsed
            frames = [request[0], record.number]
        if msg.name == "master_list":
            return [self._master_list(peer, msg, result, frames)]
        return [self._server_info(peer, msg, result, frames)]

    def _master_list(self, master, msg, result, frames):
        servers = msg.values.get("servers")
        if servers is None:  # the reply ends before its server count
            servers = NO_ENTRIES
        if not self.stats_off:
            self._list(master, servers, frames[-1])
        result.update(request_was="master list request", server_count=msg.values.get("server_count"))
        summary = f"master list from {master}: {len(servers)} servers"
        return AnalysisRecord("odamex", "master_list", frames, partial(_master_result, result, servers), [], summary)

    def _list(self, master, servers, frame):
        """The servers a master listed, into the table of listings ``stats`` shows. Masters send the same list again
        and again: a list with the same entries as the one before already has its listings as the newest in its
        order, and refreshing them would change nothing. Only their masters and last frame change."""
        latest = self.latest_list
        if latest is not None and latest[0] == servers.data:
            listings = latest[1]
        else:
            listings = self._listings(servers.keys(), frame)
            # Past the table's limit a list evicts its own first entries: the next list's are not all there.
            self.latest_list = (servers.data, listings) if len(listings) <= self.listed.limit else None
        for listing in listings:
            if master not in listing.masters:
                listing.masters = (listing.masters + [master])[-MAX_MASTERS:]
                listing.firsts = (listing.firsts + [frame])[-MAX_MASTERS:]
            listing.last_frame = frame

    def _listings(self, keys, frame):
        """The listings of ``keys`` in ``listed``, in their order, each made the newest; a new one without a
        master."""
        listed = self.listed
        listings = []
        for index in range(len(keys)):
            key = keys[index]
            listing = refreshed(listed, key)
            if listing is None:
                listing = _Listing([], [], frame)
                if put(listed, key, listing) is not None:
                    self.listings_forgotten += 1
            listing.index = index  # its place in the list: the listings of one frame are in this order
            listings.append(listing)
        return listings

    def _server_info(self, server, msg, result, frames):
        data = msg.values
        if not self.stats_off:
            self.servers.update(server, frames[-1], (  # in SEEN_COLUMNS order
                data.get("name"), data.get("map"), data.get("players"), data.get("max_players"), data.get("mode"),
                data.get("layout"), result.get("response_time")))
        summary = (f'server info from {server}: "{or_unknown(data.get("name"))}" {or_unknown(data.get("players"))}/'
                   f'{or_unknown(data.get("max_players"))}')
        # The message itself only where the rest of its reply is to be read (a reading without a tree): a record
        # that an API user keeps then holds its bytes, not a field tree.
        unread = msg if "unread" in data else None
        return AnalysisRecord("odamex", "server_info", frames, partial(_server_result, data, unread, result), [],
                              summary)

    def finish(self):
        return []

    def merge(self, other, later=False):
        """Fold in another ``-j`` worker's analyzer (its conversations are disjoint from these), or with ``later`` the
        next capture file's (see ``Analyzer.follow``)."""
        merge_counts(self, other)
        merge_timings(self.timings, other.timings)
        self.servers.merge(other.servers, later)
        self.listings_forgotten += other.listings_forgotten + merge_latest(
            self.listed, other.listed, _follow_listings if later else _merge_listings, later, _listing_order)
        self.latest_list = None  # the merge reorders the listings

    def follow(self, other):
        self.merge(other, later=True)

    def stats(self):
        listed = {entry_text(key): listing for key, listing in self.listed.items()}
        seen = self.servers.report()
        servers = []
        for server in seen["servers"]:
            listing = listed.get(server["server"])
            servers.append(dict(server, listed_by=listing.masters if listing else []))
        for address, listing in listed.items():
            if address not in self.servers:
                servers.append({"server": address, "listed_by": listing.masters, "responses": 0,
                                "last_frame": listing.last_frame})
        seen["servers"] = servers
        report = {"requests": self.requests, "answered": self.answered,
                  "response_times": {name: t.as_dict() for name, t in self.timings.items()}, **seen}
        if self.listings_forgotten:
            report["listings_forgotten"] = self.listings_forgotten
        return report


NO_ENTRIES = MasterEntries(b"")


class _Listing:
    """A server as master replies listed it: the masters in the order they first listed it (the latest MAX_MASTERS),
    the frame of each one's first listing (``firsts``), the frame of the latest listing, and the server's place in
    that listing's list (``index``: the servers of one list are refreshed in its order)."""

    __slots__ = ("masters", "firsts", "last_frame", "index")

    def __init__(self, masters, firsts, last_frame, index=0):
        self.masters = masters
        self.firsts = firsts
        self.last_frame = last_frame
        self.index = index


def _listing_order(listing):
    """Where one process's table has a listing: by its latest list's frame, then its place in that list."""
    return listing.last_frame, listing.index


def _master_result(result, servers):
    """A master list's result, built when a view reads it: its servers' texts."""
    result["servers"] = list(servers)
    return result


def _server_result(data, unread, result):
    """A server info reply's result, built when a view reads it: from its values, completed first where ``unread``
    (its message) has the rest of the reply to read."""
    if unread is not None:
        data = full_values(unread)
    info = {key: data.get(key) for key in INFO_KEYS}
    info["player_list"] = _named_teams(data)
    if data.get("ext"):
        info["extension"] = data["ext"]
    out = dict(result)
    out["request_was"], out["info"] = "server info request", info
    return out


def _merge_listings(older, newer):
    """One server listed in two ``-j`` workers: the masters of both in the order they first listed it, as one process
    has them (each worker saw some of the masters' lists), the latest MAX_MASTERS."""
    first = dict(zip(newer.masters, newer.firsts))
    for master, frame in zip(older.masters, older.firsts):
        if frame < first.get(master, frame + 1):
            first[master] = frame
    ordered = sorted(first.items(), key=_second)[-MAX_MASTERS:]
    return _Listing([master for master, _ in ordered], [frame for _, frame in ordered], newer.last_frame,
                    newer.index)


def _follow_listings(mine, theirs):
    """One server listed in this capture file and the next: this file's masters, then the next file's that are new
    (as a reading of the files in turn lists them), the latest MAX_MASTERS. A first frame is its own file's."""
    new = [index for index, master in enumerate(theirs.masters) if master not in mine.masters]
    masters = (mine.masters + [theirs.masters[index] for index in new])[-MAX_MASTERS:]
    firsts = (mine.firsts + [theirs.firsts[index] for index in new])[-MAX_MASTERS:]
    return _Listing(masters, firsts, theirs.last_frame, theirs.index)


def _second(pair):
    return pair[1]


def _named_teams(data):
    """The decoded players, each with its team's name in the numbering of the layout read."""
    players = data.get("player_list")
    if players is None:
        return None
    names = SPEC_TEAMS
    if data.get("layout") == REAL:
        count = data.get("teams_in_build") or 2
        names = REAL_TEAM_NAMES.get(count) or real_teams(count)  # the dissector's, made once for its builds
    named = []
    for player in players:
        entry = dict(player)
        if "team" in player:
            entry["team_name"] = names.get(player["team"])
        named.append(entry)
    return named
