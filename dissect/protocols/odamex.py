"""Odamex launcher protocol (spec: odamex-launcher.txt). All numbers little-endian.

Messages: the launcher request (int 777123, alone or with a 4-byte key), the
master's server list (777123, server count, then IP and port per server), and
the server-info reply (int 5560020).

Real peers versus the spec (shared/DESIGN.md): real servers send the CTF bool
right after the teamplay bool, before the player list, where the spec puts it
after the WAD hashes; a request's 4-byte key is echoed after the token; newer
servers append an extension after the team block. The server-info reply is
decoded in every layout that could apply; the one that reads the packet exactly
to its end with valid values wins (the spec's first), and a note says so when it
is not the spec's. If none fits, the layout that read furthest is shown with an
error finding where it broke.
"""

import socket
import struct

from ..core import I16LE, I32LE, U16LE, U32LE, Cursor, Message, Truncated
from ..core.bounded import BoundedDict
from ..core.fmt import named
from ..registry import Dissector, register

LAUNCHER_TAG = 777123
SERVER_INFO_TAG = 5560020
TAG_BYTES = {struct.pack("<i", LAUNCHER_TAG): LAUNCHER_TAG, struct.pack("<i", SERVER_INFO_TAG): SERVER_INFO_TAG}
EXTENSION_MARKER_1 = 0x01020304
EXTENSION_MARKER_2 = 0x01020305
SERVER_PORT, MASTER_PORT = 10666, 15000

GAME_TYPES = {0: "COOP", 1: "Deathmatch", 2: "Deathmatch 2.0"}
SKILLS = {0: "ITYTD", 1: "HNTR", 2: "HMP", 3: "UV", 4: "NM"}
TEAMS = {0: "None", 1: "Blue", 2: "Red", 3: "Gold"}
EXTENSION_BOOLS = ("itemsrespawn", "weaponstay", "friendlyfire", "allowexit", "infiniteammo", "nomonsters",
                   "monstersrespawn", "fastmonsters", "allowjump", "freelook", "waddownload", "emptyreset",
                   "cleanmaps", "fragexitswitch")
HEX = set("0123456789abcdefABCDEF")

LAYOUT_NAMES = {"spec": "spec (CTF bool after the WAD hashes)",
                "real": "real servers (CTF bool right after the teamplay bool)"}


class _Broken(Exception):
    """A value outside its range: this layout does not fit the packet."""

    def __init__(self, offset):
        super().__init__(offset)
        self.offset = offset


def _bool_text(value):
    return {0: "false", 1: "true"}.get(value, f"{value} (not a bool)")


@register
class Odamex(Dissector):
    key = "odamex"
    title = "Odamex"
    transports = ("udp",)
    ports = (SERVER_PORT, MASTER_PORT)
    truncated_code = "odamex.truncated"
    truncated_rule = "spec: each field of the table follows the one before"

    def __init__(self):
        # (launcher, server) -> True when the launcher's last request carried a 4-byte key.
        self.keyed = BoundedDict(4096)

    def claims(self, payload, packet, on_port):
        tag = TAG_BYTES.get(bytes(payload[:4]))
        if tag is None:
            return False
        if on_port:
            return True
        size = len(payload)
        if tag == LAUNCHER_TAG:
            return size in (4, 8) or (size >= 6 and (size - 6) % 6 == 0)
        return size >= 16

    def observe(self, packet, msg):
        if packet is not None and msg.name == "launcher_request":
            self.keyed.put((packet.src, packet.sport, packet.dst, packet.dport), msg.values.get("key") is not None)

    # -- decoding --------------------------------------------------------------------------------
    def decode(self, cur, msg, packet):
        tag = cur.number(I32LE, "odamex.tag", "Tag", _tag_text)
        msg.values["tag"] = tag
        if tag == LAUNCHER_TAG:
            if cur.end in (4, 8):
                self._request(cur, msg, packet)
            else:
                self._master_list(cur, msg)
        elif tag == SERVER_INFO_TAG:
            self._server_info(cur, msg, packet)
        else:
            msg.name = "unknown"
            cur.flag_last("odamex.bad_value", "warning", f"tag {tag} is neither 777123 nor 5560020")

    def _request(self, cur, msg, packet):
        msg.name = "launcher_request"
        if cur.remaining() == 4:
            key = cur.raw("odamex.key", "Key", 4, lambda v: f"{v.hex(' ')} (echoed by the server after its token)")
            msg.values["key"] = key
        port = packet.dport if packet is not None else None
        role = {SERVER_PORT: "server info", MASTER_PORT: "master list"}.get(port)
        msg.values["role_by_port"] = role
        msg.info = f"Launcher request ({role} by port)" if role else "Launcher request"
        if "key" in msg.values:
            msg.info += f" key={msg.values['key'].hex()}"

    # master list ---------------------------------------------------------------------------------
    def _master_list(self, cur, msg):
        msg.name = "master_list"
        count = cur.number(I16LE, "odamex.server_count", "Server count")
        servers = []
        msg.values.update(server_count=count, servers=servers)
        try:
            while cur.remaining():
                servers.append(self._master_entry(cur))
        except Truncated as exc:
            cur.finding("odamex.truncated", "error",
                        f"{exc.available} bytes left where a server entry needs 6 (spec: IP as 4 bytes, then a "
                        f"short port)", exc.offset, exc.available)
        if len(servers) != count:
            cur.finding("odamex.count_mismatch", "warning",
                        f"server count says {count} but {len(servers)} entries are present (spec: '+Server IP "
                        f"... (Server count)')", 4, 2)
        msg.info = f"Master server list: {len(servers)} servers" + ("" if len(servers) == count else
                                                                       f" (count says {count})")

    @staticmethod
    def _master_entry(cur):
        with cur.subtree("odamex.server", "Server") as node:
            ip = socket.inet_ntoa(cur.raw("odamex.server.ip", "Server IP", 4, _ip_text))
            port = cur.number(U16LE, "odamex.server.port", "Server Port")
            node.display = node.value = f"{ip}:{port}"
        return f"{ip}:{port}"

    # server info ---------------------------------------------------------------------------------
    def _server_info(self, cur, msg, packet):
        msg.name = "server_info"
        keyed = packet is not None and self.keyed.get((packet.dst, packet.dport, packet.src, packet.sport), False)
        layout, echo, extension, broken, fitted = self._choose_layout(cur.data, keyed)
        start = cur.pos
        try:
            if fitted is not None and not cur.tree:
                # The trial that fitted was this very decode without a tree: keep its result.
                msg.values.update(fitted.values)
                msg.findings.extend(fitted.findings)
                cur.pos = cur.end
            else:
                _ServerInfo(cur, msg, layout, echo, extension).read()
            if cur.remaining():
                left = cur.remaining()
                cur.rest("odamex.trailing", "Trailing bytes")
                cur.flag_last("odamex.trailing_bytes", "warning",
                              f"{left} bytes after the last field of the server-info reply")
        except _Broken:
            pass  # the finding is already at the byte that broke
        except Truncated as exc:
            self._truncated(cur, msg, exc)
        msg.values.update(layout=layout, echoed_key=echo, extension=extension)
        cur.add("odamex.layout", "Layout", start, cur.end - start, layout, display=LAYOUT_NAMES[layout],
                generated=True)
        if broken:
            msg.add_finding("odamex.bad_layout", "note",
                            "no layout reads this reply to its end with valid values (spec layout, real-server "
                            f"layout, with and without the extension); shown as the {layout} layout, which read "
                            f"furthest", broken, 0)
        elif layout != "spec":
            msg.add_finding("odamex.real_layout", "note",
                            "the CTF bool follows the teamplay bool, as real Odamex servers send it; the spec puts "
                            "it after the PWAD MD5 hashes", 0, 0)
        if extension and not broken:
            msg.add_finding("odamex.extension", "note",
                            "newer-server extension after the team block (version, e-mail, limits, flags, per-player "
                            "stats, markers 0x01020304 and 0x01020305): beyond the spec, decoded, not trailing "
                            "garbage", msg.values.get("extension_offset"), 0)
        data = msg.values
        msg.info = (f'Server info "{data.get("name")}" map={data.get("map")} players {data.get("players")}/'
                    f'{data.get("max_players")} {GAME_TYPES.get(data.get("game_type"), "?")}')

    def _truncated(self, cur, msg, exc):
        cur.finding("odamex.truncated", "error",
                    f"{exc.name} runs off the end of the reply at offset {exc.offset} ({self.truncated_rule})",
                    exc.offset, exc.available)
        announced, decoded = msg.values.get("players"), msg.values.get("player_list")
        if decoded is not None and announced is not None and len(decoded) < announced:
            cur.finding("odamex.count_mismatch", "warning",
                        f"'Players in server' says {announced} but {len(decoded)} players could be decoded "
                        f"(spec: '+Player name (numplayers)')", exc.offset, exc.available)

    def _choose_layout(self, data, keyed):
        """(layout, echo, extension, broken_at, fitted message): the first candidate that fits, else the best
        partial one.

        A partial extension decode is preferred only when it read the version and a terminated e-mail
        string: with less, leftover bytes are more likely trailing bytes than a damaged extension.
        """
        # An echoed key is likely when the launcher sent one, or when the "name" would start with control bytes.
        echo_first = keyed or any(b < 0x20 for b in data[8:12])
        candidates = [(layout, echo, extension) for echo in ((True, False) if echo_first else (False, True))
                      for layout in ("spec", "real") for extension in (False, True)]
        best, best_rank = None, None
        for layout, echo, extension in candidates:
            reach, fits, marker_seen, trial = _trial(data, layout, echo, extension)
            if fits:
                return layout, echo, extension, None, trial
            rank = (reach if not extension or marker_seen else -1, not extension)
            if best_rank is None or rank > best_rank:
                best, best_rank = (layout, echo, extension), rank
        reach = best_rank[0] if best_rank[0] >= 0 else None
        return best[0], best[1], best[2], reach if reach is not None else len(data), None


def _trial(data, layout, echo, extension):
    """Decode without a tree: (bytes read before a break, fits exactly, extension recognized, the message)."""
    msg = Message("odamex", payload=data)
    cur = Cursor(msg, data, tree=False, pos=4)
    try:
        _ServerInfo(cur, msg, layout, echo, extension).read()
    except (_Broken, Truncated) as exc:
        return exc.offset, False, bool(msg.values.get("ext_recognized")), msg
    return cur.pos, cur.at_end(), bool(msg.values.get("ext_recognized")), msg


class _ServerInfo:
    """The server-info reply in one layout; raises _Broken at the first value out of range."""

    def __init__(self, cur, msg, layout, echo, extension):
        self.cur = cur
        self.msg = msg
        self.data = msg.values
        self.layout = layout
        self.echo = echo
        self.extension = extension

    def read(self):
        cur, data = self.cur, self.data
        data["token"] = cur.number(I32LE, "odamex.token", "Token")
        if self.echo:
            data["key"] = cur.raw("odamex.echoed_key", "Echoed key", 4)
        data["name"] = cur.cstring("odamex.name", "Server Name", "latin-1")
        data["players"] = cur.u8("odamex.players", "Players in server")
        data["max_players"] = cur.u8("odamex.max_players", "Maximum players")
        if data["players"] > data["max_players"]:
            cur.flag_last("odamex.too_many_players", "warning",
                          f"{data['players']} players in a server of {data['max_players']}")
        data["map"] = cur.cstring("odamex.map", "Current map", "latin-1")
        pwads = cur.u8("odamex.pwad_count", "PWAD count")
        data["pwads"] = [cur.cstring("odamex.pwad", "PWAD name", "latin-1") for _ in range(pwads)]
        data["game_type"] = self._enum("odamex.game_type", "Game type", GAME_TYPES)
        data["skill"] = self._enum("odamex.skill", "Skill level", SKILLS)
        data["teamplay"] = self._bool("odamex.teamplay", "Teamplay?")
        if self.layout == "real":
            data["ctf"] = self._bool("odamex.ctf", "CTF mode?")
        teams = data["teamplay"] or (self.layout == "real" and data["ctf"])
        data["player_list"] = []
        for _ in range(data["players"]):
            data["player_list"].append(self._player(teams))
        data["hashes"] = [self._hash() for _ in range(pwads)]
        if self.layout == "spec":
            data["ctf"] = self._bool("odamex.ctf", "CTF mode?")
        data["website"] = cur.cstring("odamex.website", "Server Website address", "latin-1")
        if data["teamplay"] or data["ctf"]:
            self._team_block()
        if self.extension:
            self._extension()

    def _bool(self, key, name):
        value = self.cur.u8(key, name, _bool_text)
        if value not in (0, 1):
            self._out_of_range(f"{name} is {value} (spec: bool is 'byte (1 or 0)')")
        return bool(value)

    def _enum(self, key, name, names):
        value = self.cur.u8(key, name, named(names))
        if value not in names:
            self._out_of_range(f"{name} {value} is not one of {', '.join(f'{k} = {v}' for k, v in names.items())}")
        return value

    def _out_of_range(self, message):
        cur = self.cur
        cur.flag_last("odamex.bad_value", "error", message)
        raise _Broken(cur.last_offset)

    def _player(self, teams):
        cur = self.cur
        with cur.subtree("odamex.player", "Player") as node:
            player = {"name": cur.cstring("odamex.player.name", "Player name", "latin-1"),
                      "frags": cur.number(I16LE, "odamex.player.frags", "Player frags"),
                      "ping": cur.number(I32LE, "odamex.player.ping", "Player ping", _milliseconds)}
            if teams:
                player["team"] = self._enum("odamex.player.team", "Player team", TEAMS)
            if cur.tree:
                node.name = f'Player "{player["name"]}"'
                node.display = f"frags {player['frags']}, ping {player['ping']} ms" + (
                    f", team {TEAMS.get(player.get('team'))}" if teams else "")
        return player

    def _hash(self):
        cur = self.cur
        value = cur.cstring("odamex.pwad_hash", "PWAD MD5 hash", "latin-1")
        if len(value) != 32 or not set(value) <= HEX:
            cur.flag_last("odamex.bad_hash", "warning", f'PWAD MD5 hash "{value}" is not 32 hex digits')
        return value

    def _team_block(self):
        cur, data = self.cur, self.data
        data["score_limit"] = cur.number(I32LE, "odamex.score_limit", "Teamplay/CTF score limit")
        scores = {}
        for team in ("blue", "red", "gold"):
            title = team.capitalize()
            if self._bool(f"odamex.{team}_team", f"{title} team?"):
                scores[team] = cur.number(I32LE, f"odamex.{team}_score", f"{title} score")
        data["team_scores"] = scores

    def _extension(self):
        cur, data = self.cur, self.data
        data["extension_offset"] = cur.pos
        ext = {}
        with cur.subtree("odamex.ext", "Extension (newer servers, beyond the spec)") as node:
            ext["version"] = cur.number(I16LE, "odamex.ext.version", "Version")
            ext["email"] = cur.cstring("odamex.ext.email", "E-mail", "latin-1")
            data["ext_recognized"] = True
            ext["time_limit"] = cur.number(I16LE, "odamex.ext.time_limit", "Time limit")
            ext["time_left"] = cur.number(I16LE, "odamex.ext.time_left", "Time left")
            ext["frag_limit"] = cur.number(I16LE, "odamex.ext.frag_limit", "Frag limit")
            ext["flags"] = {name: self._bool(f"odamex.ext.{name}", name) for name in EXTENSION_BOOLS}
            ext["player_stats"] = [self._player_stats(i) for i in range(data["players"])]
            self._marker(EXTENSION_MARKER_1)
            ext["max_players"] = cur.number(I16LE, "odamex.ext.max_players", "Max players")
            ext["spectators"] = [self._bool("odamex.ext.spectator", f"Player {i} spectator?")
                                 for i in range(data["players"])]
            self._marker(EXTENSION_MARKER_2)
            ext["password"] = cur.number(I16LE, "odamex.ext.password", "Password required", _bool_text)
            ext["game_version"] = cur.number(U32LE, "odamex.ext.game_version", "Game version", _version_text)
            patches = cur.u8("odamex.ext.patch_count", "Patch-file count")
            ext["patches"] = [cur.cstring("odamex.ext.patch", "Patch file", "latin-1") for _ in range(patches)]
            node.display = f"version {ext['version']}, {len(ext['patches'])} patch files"
        data["ext"] = ext

    def _player_stats(self, index):
        cur = self.cur
        with cur.subtree("odamex.ext.player", f"Player {index} stats") as node:
            stats = {"kills": cur.number(I16LE, "odamex.ext.kills", "Kills"),
                     "deaths": cur.number(I16LE, "odamex.ext.deaths", "Deaths"),
                     "minutes": cur.number(I16LE, "odamex.ext.minutes", "Minutes in game")}
            if cur.tree:
                node.display = f"{stats['kills']} kills, {stats['deaths']} deaths, {stats['minutes']} min"
        return stats

    def _marker(self, expected):
        cur = self.cur
        value = cur.number(U32LE, "odamex.ext.marker", "Marker", lambda v: f"0x{v:08x}")
        if value != expected:
            cur.flag_last("odamex.bad_value", "error", f"marker 0x{value:08x} is not 0x{expected:08x}")
            raise _Broken(cur.last_offset)


def _milliseconds(value):
    return f"{value} ms"


def _tag_text(tag):
    return {LAUNCHER_TAG: "777123 (launcher request / master list)",
            SERVER_INFO_TAG: "5560020 (server info reply)"}.get(tag, str(tag))


def _ip_text(raw):
    return socket.inet_ntoa(raw)


def _version_text(value):
    return f"{value} ({value // 256 // 256}.{value // 256 % 256}.{value % 256})"

