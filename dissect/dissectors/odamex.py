"""Odamex launcher protocol (spec: odamex-launcher.txt). All numbers little-endian.

Messages: the launcher request (int 777123, alone or with a 4-byte key), the
master's server list (777123, server count, then IP and port per server), and
the server-info reply (int 5560020).

Real servers versus the spec (docs/odamex.md has the tables). Odamex's own writer
(the old-protocol launcher reply) differs from the spec's table in five ways:
the spec's "game type" byte is a bool *deathmatch*; the CTF bool follows the
teamplay bool instead of the PWAD hashes; every player carries a team byte, the
player's team in team games and TEAM_NONE otherwise, with Odamex's numbering
(blue 0, red 1, green 2 in three-team builds, then NUMTEAMS, then TEAM_NONE: 3
with two teams, 4 with three; NUMTEAMS itself is read as no team too); the team
block (score limit, then a bool and a score per team of the build) is written
only in team deathmatch and CTF; and newer servers append an extension. A
request's 4-byte key is echoed after the token.

The spec's own layout is read as its table is written: a team byte for every
player (0 while teamplay is off), the three team bools always, the score limit
and the scores only when teamplay or CTF is on. An older reading of it (no team
byte and no team bools while teams are off) is kept as a last resort.

The reply is decoded in every candidate layout; the first that reads it exactly
to its end with valid values and without warnings wins (real servers' first:
replies that fit two layouts have no players, and real servers are their likely
source), and a note names a layout that is not the spec's. If none fits, the
candidate that read furthest is shown with an error where it broke. A walk over
the bytes, checking each candidate's ranges, markers and end, finds the winner
without decoding when one fits cleanly; the reply is then decoded once.
"""

import struct

from ..core import I16LE, I32LE, U16LE, U32LE, Truncated
from ..core.bounded import BoundedDict, peek, put
from ..core.cursor import as_bytes, new_cursor
from ..core.fmt import ValueTexts, counted, decimal_text, hex_text, named, or_unknown
from ..core.model import add_prepared, new_field, new_message, prepared_finding
from ..core.tables import FieldTable, FindingTable
from ..registry import Dissector

LAUNCHER_TAG = 777123
SERVER_INFO_TAG = 5560020
MASTER_UPDATE_SIZE = 6  # a server's keep-alive to a master: the server-info tag and a port
EXTENSION_MARKER_1 = 0x01020304
EXTENSION_MARKER_2 = 0x01020305
SERVER_PORT, MASTER_PORT = 10666, 15000
ROLES_BY_PORT = {SERVER_PORT: "server info", MASTER_PORT: "master list"}  # what a request's port says it asks
MASTER_ENTRY = struct.Struct("<4sH")  # a master list's server: IPv4 address, port
ENTRY_SIZE = MASTER_ENTRY.size

GAME_TYPES = {0: "COOP", 1: "Deathmatch", 2: "Deathmatch 2.0"}
SKILLS = {0: "ITYTD", 1: "HNTR", 2: "HMP", 3: "UV", 4: "NM"}
# Real servers write sv_skill.asInt(): Odamex's skill_t (sk_ntm 0, sk_baby 1 ... sk_nightmare 5), the cvar's range 0-7
# (6 and 7: skills a MAPINFO defines).
REAL_SKILLS = {0: "no things", 1: "ITYTD", 2: "HNTR", 3: "HMP", 4: "UV", 5: "NM", 6: "custom 6", 7: "custom 7"}
REAL_SKILL_TEXTS = {value: f"{name} ({value})" for value, name in REAL_SKILLS.items()}
SPEC_TEAMS = {0: "None", 1: "Blue", 2: "Red", 3: "Gold"}
SPEC_BLOCK_TEAMS = ("Blue", "Red", "Gold")
REAL_BLOCK_TEAMS = ("Blue", "Red", "Green")  # Odamex's team_t: TEAM_BLUE, TEAM_RED[, TEAM_GREEN], NUMTEAMS, TEAM_NONE
EXTENSION_BOOLS = ("itemsrespawn", "weaponstay", "friendlyfire", "allowexit", "infiniteammo", "nomonsters",
                   "monstersrespawn", "fastmonsters", "allowjump", "freelook", "waddownload", "emptyreset",
                   "cleanmaps", "fragexitswitch")
HEX_DIGITS = b"0123456789abcdefABCDEF"  # what bytes.translate deletes: a hash leaves nothing

SPEC, REAL, COMPACT = "spec", "real", "spec_compact"
LAYOUT_NAMES = {SPEC: "spec (CTF bool after the PWAD hashes)",
                REAL: "real servers (CTF bool right after the teamplay bool)",
                COMPACT: "spec, without team bytes or team bools while teams are off"}


def real_teams(count):
    """Odamex's team numbers in a build with ``count`` teams. TEAM_NONE follows NUMTEAMS (3 with two teams);
    NUMTEAMS itself, the value right after the last team, is read as no team too."""
    names = dict(enumerate(REAL_BLOCK_TEAMS[:count]))
    names[count] = "None (NUMTEAMS)"
    names[count + 1] = "None (TEAM_NONE)"
    return names


def real_mode(deathmatch, teamplay, ctf):
    """The game mode the real writer's three bools stand for."""
    if ctf:
        return "CTF"
    if teamplay:
        return "Team deathmatch"
    return "Deathmatch" if deathmatch else "Cooperative"


BOOL_TEXTS = {0: "false", 1: "true"}


def _bool_text(value):
    texts = BOOL_TEXTS
    text = texts.get(value)
    return f"{value} (not a bool)" if text is None else text


def _milliseconds(value):
    return f"{decimal_text(value)} ms"


TAG_TEXTS = {LAUNCHER_TAG: "777123 (launcher request / master list)", SERVER_INFO_TAG: "5560020 (server info reply)"}


def _tag_text(tag):
    texts = TAG_TEXTS
    text = texts.get(tag)
    return str(tag) if text is None else text


def _key_text(raw):
    return f"{raw.hex(' ')} (echoed by the server after its token)"


def _ip_text(value):
    if isinstance(value, bytes):
        return _dotted(bytes(value), 0) if len(value) == 4 else value.hex(" ")
    return str(value)


def _version_text(value):
    # Odamex's MAKEVER: major * 256 + minor * 10 + patch
    return f"{value} ({value // 256}.{value % 256 // 10}.{value % 256 % 10})"


def _marker_text(value):
    return hex_text(value, 8)


# The formatters of the ints most fields show, their texts made once (see ValueTexts).
BOOL_DISPLAY = ValueTexts(_bool_text, BOOL_TEXTS)
TAG_DISPLAY = ValueTexts(_tag_text, TAG_TEXTS)

F = FieldTable("odamex", messages=True, title="Odamex", entries=[
    ("tag", "Tag", "int32", "777123: launcher request or master list; 5560020: server-info reply", TAG_DISPLAY),
    ("key", "Key", "bytes", "launcher request: 4 extra bytes, which a server echoes after its token", _key_text),
    ("server_count", "Server count", "int16", "master list: the number of servers listed"),
    ("server", "Server", "string", "master list: one server, ip:port", str),
    ("server.ip", "Server IP", "address", "master list: the server's IPv4 address", _ip_text),
    ("server.port", "Server Port", "uint16", "master list: the server's port"),
    ("port", "Server port", "uint16", "master update: the port the server takes queries on (its own, or "
                                      "sv_natport behind NAT)"),
    ("token", "Token", "int32", "server info: a random token the server issues"),
    ("echoed_key", "Echoed key", "bytes", "server info: the 4-byte key of the request, echoed"),
    ("name", "Server Name", "string", "server info: the server's name"),
    ("players", "Players in server", "uint8", "server info: players in the game"),
    ("max_players", "Maximum players", "uint8", "server info: player slots"),
    ("map", "Current map", "string", "server info: the map being played"),
    ("pwad_count", "PWAD count", "uint8", "server info: the number of WAD names that follow (the spec: PWADs only; "
                                          "real servers list the IWAD first, leaving out only odamex.wad)"),
    ("pwad", "PWAD name", "string", "server info: one PWAD's file name"),
    ("game_type", "Game type", "uint8", "spec layout: 0 COOP, 1 Deathmatch, 2 Deathmatch 2.0", named(GAME_TYPES)),
    ("deathmatch", "Deathmatch", "bool", "real layout: true in deathmatch and team deathmatch, false in coop and "
                                         "CTF", BOOL_DISPLAY),
    ("skill", "Skill level", "uint8", "server info: spec layout 0 ITYTD, 1 HNTR, 2 HMP, 3 UV, 4 NM; real servers "
                                      "(sv_skill) 0 no things, 1 ITYTD, 2 HNTR, 3 HMP, 4 UV, 5 NM, 6-7 custom",
     named(SKILLS)),
    ("teamplay", "Teamplay?", "bool", "server info: team deathmatch (real layout) or teamplay (spec)", BOOL_DISPLAY),
    ("ctf", "CTF mode?", "bool", "server info: capture the flag", BOOL_DISPLAY),
    ("game_mode", "Game mode", "string", "generated, real layout: Cooperative, Deathmatch, Team deathmatch or CTF, "
                                         "from the deathmatch, teamplay and CTF bools", str),
    ("player", "Player", "none", "server info: one player's record"),
    ("player.name", "Player name", "string", "the player's name"),
    ("player.frags", "Player frags", "int16", "the player's frags"),
    ("player.ping", "Player ping", "int32", "the player's ping in milliseconds", _milliseconds),
    ("player.team", "Player team", "uint8", "spec layout: 0 None, 1 Blue, 2 Red, 3 Gold; real servers: 0 Blue, "
                                            "1 Red, 2 Green (three-team builds), no team: TEAM_NONE, 3 with two "
                                            "teams, 4 with three (or NUMTEAMS, the value before it)"),
    ("pwad_hash", "PWAD MD5 hash", "string", "server info: one PWAD's MD5 digest in hex, in the order of the names"),
    ("website", "Server Website address", "string", "server info: the server's web site (real servers: its "
                                                    "download sites)"),
    ("score_limit", "Teamplay/CTF score limit", "int32", "server info, team games: the score that ends the game"),
    ("team", "Team", "string", "server info: one team of the team block, by name", str),
    ("team.in_play", "Team in play?", "bool", "whether the team plays; its score follows when it does",
     BOOL_DISPLAY),
    ("team.score", "Team score", "int32", "the team's score"),
    ("layout", "Layout", "string", "generated: the layout the reply was read in: spec, real or spec_compact"),
    ("trailing", "Trailing bytes", "bytes", "bytes after the last field of the reply"),
    ("ext", "Extension", "none", "server info: newer servers' fields after the team block (beyond the spec)"),
    ("ext.version", "Version", "int16", "the server's protocol version (65 on real servers)"),
    ("ext.email", "E-mail", "string", "the server administrator's e-mail address"),
    ("ext.time_limit", "Time limit", "int16", "minutes"),
    ("ext.time_left", "Time left", "int16", "minutes"),
    ("ext.frag_limit", "Frag limit", "int16", "frags that end the game"),
    *[(f"ext.{flag}", flag, "bool", f"the server's sv_{flag} setting", BOOL_DISPLAY) for flag in EXTENSION_BOOLS],
    ("ext.player", "Player stats", "none", "one player's kills, deaths and minutes"),
    ("ext.kills", "Kills", "int16", "the player's kills"),
    ("ext.deaths", "Deaths", "int16", "the player's deaths"),
    ("ext.minutes", "Minutes in game", "int16", "minutes since the player joined"),
    ("ext.marker", "Marker", "uint32", "0x01020304 before the maximum players, 0x01020305 before the password",
     ValueTexts(_marker_text, (EXTENSION_MARKER_1, EXTENSION_MARKER_2))),
    ("ext.max_players", "Max players", "int16", "the server's sv_maxplayers"),
    ("ext.spectator", "Spectator?", "bool", "one player's spectator flag, in player order", BOOL_DISPLAY),
    ("ext.password", "Password required", "int16", "1 when joining needs a password", BOOL_DISPLAY),
    ("ext.game_version", "Game version", "uint32", "Odamex's version, major * 256 + minor * 10 + patch",
     _version_text),
    ("ext.patch_count", "Patch-file count", "uint8", "DeHackEd/BEX patch files named after it (0 on newer "
                                                     "servers)"),
    ("ext.patch", "Patch file", "string", "one patch file's name"),
    ("request_in", "Request in frame", "uint32", "generated: the frame of the launcher request this reply answers"),
    ("response_time", "Response time", "float", "generated: seconds from the request to this reply"),
])

W = FindingTable("odamex", messages=True, entries=[
    ("truncated", "error", "spec: each field of the table follows the one before"),
    ("trailing_bytes", "warning", "the layout read has no more fields"),
    ("bad_tag", "warning", "spec: requests and master lists start with int 777123, server replies with 5560020"),
    ("bad_value", "error", "spec: a bool is 'byte (1 or 0)'; game types, skill levels and player teams take the "
                           "values the spec's notes list (real servers number teams blue 0, red 1, green 2, and "
                           "TEAM_NONE after NUMTEAMS)"),
    ("count_mismatch", "warning", "spec: '+Server IP ... (Server count)' and '+Player name (numplayers)': one entry "
                                  "per count"),
    ("too_many_players", "warning", "'Players in server' is at most 'Maximum players'"),
    ("bad_hash", "warning", "spec: '+PWAD MD5 hashes': an MD5 digest, 32 hex digits"),
    ("real_layout", "note", "real Odamex servers write a deathmatch bool where the spec has the game type, the CTF "
                            "bool right after the teamplay bool (the spec: after the PWAD MD5 hashes), a team byte "
                            "for every player, and the team block only in team games"),
    ("mode_conflict", "warning", "spec: 'If CTF is enabled, Teamplay will be enabled and deathmatch (2.0?)' and 'If "
                                 "Teamplay is enabled, then deathmatch (2.0?) will be too'"),
    ("compact_layout", "note", "the spec's table lists a team byte for every player and the three team bools "
                               "always; this reply leaves them out while teamplay is off"),
    ("extension", "note", "beyond the spec: newer servers append version, e-mail, limits, flags, per-player stats "
                          "and markers 0x01020304 / 0x01020305 after the team block; decoded, not trailing bytes"),
    ("bad_layout", "note", "no layout (real servers', the spec's, the spec's without team fields; each with and "
                           "without an echoed key and the extension) reads this reply to its end with valid values"),
])

SEVERE = frozenset({"warning", "error"})
SHARED = frozenset({W.too_many_players.code})  # found before the layouts part: no evidence for or against one
# Entries read in loops, looked up once: a table lookup walks the dotted path on every call. (A child called
# "name" is hidden by FieldSpec's own name attribute anyway: it is reached through its parent's children.)
PLAYER_NAME, PLAYER_FRAGS, PLAYER_PING, PLAYER_TEAM = (F.player.children[part]
                                                       for part in ("name", "frags", "ping", "team"))
TEAM_IN_PLAY, TEAM_SCORE = F.team.in_play, F.team.score
LISTED_SERVER, LISTED_IP, LISTED_PORT = F.server, F.server.ip, F.server.port  # a master list's entries
EXT_FLAGS = tuple((flag, F.ext.children[flag]) for flag in EXTENSION_BOOLS)
EXT_FLAG_VALUES = dict.fromkeys(EXTENSION_BOOLS, False)  # the flags' dict in its order, copied and filled
EXT_KILLS, EXT_DEATHS, EXT_MINUTES, EXT_SPECTATOR = F.ext.kills, F.ext.deaths, F.ext.minutes, F.ext.spectator
EXT, EXT_PLAYER, EXT_MARKER = F.ext, F.ext.player, F.ext.marker
# Read for every message, looked up once: F.<name> and W.<name> go through the tables' __getattr__ at every use.
TAG, KEY, REAL_LAYOUT, EXTENSION_FOUND = F.tag, F.key, W.real_layout, W.extension
# A server-info reply's fields.
TOKEN, ECHOED_KEY, NAME, PLAYERS, MAX_PLAYERS, MAP, PWAD_COUNT = (
    F.token, F.echoed_key, F.name, F.players, F.max_players, F.map, F.pwad_count)
PWAD, DEATHMATCH, SKILL, TEAMPLAY, CTF, GAME_MODE, GAME_TYPE = (
    F.pwad, F.deathmatch, F.skill, F.teamplay, F.ctf, F.game_mode, F.game_type)
WEBSITE, SCORE_LIMIT, TEAM, PLAYER, PWAD_HASH, LAYOUT, TRAILING = (
    F.website, F.score_limit, F.team, F.player, F.pwad_hash, F.layout, F.trailing)
(EXT_VERSION, EXT_EMAIL, EXT_TIME_LIMIT, EXT_TIME_LEFT, EXT_FRAG_LIMIT, EXT_MAX_PLAYERS, EXT_PASSWORD,
 EXT_GAME_VERSION, EXT_PATCH_COUNT, EXT_PATCH) = (F.ext.children[part] for part in (
    "version", "email", "time_limit", "time_left", "frag_limit", "max_players", "password", "game_version",
    "patch_count", "patch"))


class _Broken(Exception):
    """A value outside its range: this layout does not fit the packet."""

    def __init__(self, offset):
        super().__init__(offset)
        self.offset = offset


class _Candidate:
    """One way to read a server-info reply: a layout, the team count of the build, an echoed key, the extension;
    ``lenient``: a value out of range is flagged and the reading goes on (see _lenient_fit)."""

    __slots__ = ("layout", "teams", "echo", "extension", "lenient")

    def __init__(self, layout, teams, echo, extension, lenient=False):
        self.layout = layout
        self.teams = teams
        self.echo = echo
        self.extension = extension
        self.lenient = lenient


def _candidates(echoes):
    # Real servers always append the extension: try it first for them; spec peers send none.
    shapes = [(REAL, 2, (True, False)), (REAL, 3, (True, False)), (SPEC, 3, (False, True)),
              (COMPACT, 3, (False, True))]
    return tuple(_Candidate(layout, teams, echo, extension) for echo in echoes
                 for layout, teams, extensions in shapes for extension in extensions)


# The candidates in the order they are tried: with an echoed key first, with one last, or without one (a reply to a
# request seen without a key: there is none to echo).
ECHO_FIRST, ECHO_LAST, NO_ECHO = "echo first", "echo last", "no echo"
CANDIDATES = {ECHO_FIRST: _candidates((True, False)), ECHO_LAST: _candidates((False, True)),
              NO_ECHO: _candidates((False,))}
REAL_TEAM_NAMES = {count: real_teams(count) for count in (2, 3)}


class Odamex(Dissector):
    key = "odamex"
    title = "Odamex"
    transports = ("udp",)
    ports = (SERVER_PORT, MASTER_PORT)
    fields = F
    findings = W
    analyzer = "dissect.analysis.odamex:OdamexAnalyzer"
    truncated = W.truncated
    cut_findings = (W.count_mismatch, W.bad_layout)
    # The query request and its replies, by message name: (role, the request a reply answers). The abuse
    # analysis (dissect/analysis/abuse.py) measures amplification and request rates from these.
    query_kinds = {
        "launcher_request": ("request", "launcher_request"),
        "server_info": ("reply", "launcher_request"),
        "master_list": ("reply", "launcher_request"),
    }
    # Valid messages, as the protocol's tests and fuzzers start from (see tests/test_properties.py).
    examples = (
        bytes.fromhex("a3db0b00"),
        bytes.fromhex("a3db0b0061626364"),
        bytes.fromhex("a3db0b00020001020304aa2905060708ab29"),
        bytes.fromhex("d4d65400aa29"),
        bytes.fromhex("d4d65400070000004f64616d65782074657374207365727665720003084d415030310001756b7261696e652e77616400"
                      "010301446f6f6d677579000c0030000000014d6172696e6500feff7000000002436861696e67756e6e65720005002100"
                      "0000016136663865613965346238636531306664396135626236653065663137643234000068747470733a2f2f6f6461"
                      "6d65782e6578616d706c65000500000001030000000000"),
        bytes.fromhex("d4d65400070000004f64616d65782074657374207365727665720003084d415030310001756b7261696e652e77616400"
                      "00030001446f6f6d677579000c0030000000014d6172696e6500feff7000000002436861696e67756e6e657200050021"
                      "0000000161366638656139653462386365313066643961356262366530656631376432340068747470733a2f2f6f6461"
                      "6d65782e6578616d706c6500050000000100000000010100000000410061646d696e406f64616d65782e6578616d706c"
                      "650014000c00320001000001000000000101010000000a00000005000b00010005000c00020005000403020108000000"
                      "000503020100003c0a000000"),
        bytes.fromhex("d4d65400070000004f64616d65782074657374207365727665720003084d415030310001756b7261696e652e77616400"
                      "01030100446f6f6d677579000c0030000000014d6172696e6500feff7000000002436861696e67756e6e657200050021"
                      "0000000161366638656139653462386365313066643961356262366530656631376432340068747470733a2f2f6f6461"
                      "6d65782e6578616d706c6500050000000100000000010000000000410061646d696e406f64616d65782e6578616d706c"
                      "650014000c00320001000001000000000101010000000a00000005000b00010005000c00020005000403020108000000"
                      "000503020100003c0a000000"),
        bytes.fromhex("d4d65400070000004f64616d65782074657374207365727665720003084d415030310001756b7261696e652e77616400"
                      "01030000446f6f6d677579000c0030000000044d6172696e6500feff7000000004436861696e67756e6e657200050021"
                      "0000000461366638656139653462386365313066643961356262366530656631376432340068747470733a2f2f6f6461"
                      "6d65782e6578616d706c6500410061646d696e406f64616d65782e6578616d706c650014000c00320001000001000000"
                      "000101010000000a00000005000b00010005000c00020005000403020108000000000503020100003c0a000000"),
    )

    def __init__(self):
        # (launcher, server) -> True when the launcher's last request carried a 4-byte key.
        self.keyed = BoundedDict(4096)

    def claims(self, payload, packet, on_port):
        return _claims(as_bytes(payload), on_port)

    def observe(self, packet, msg):
        _observe(self.keyed, packet, msg)

    # -- decoding --------------------------------------------------------------------------------
    def decode(self, cur, msg, packet):
        _decode(self.keyed, cur, msg, packet)


# The dissector's steps with the cursor, message and packet typed (odamex.pxd): read in C, not as attributes.
def _decode(keyed, cur, msg, packet):
    tag = cur.number(I32LE, TAG)
    msg.values["tag"] = tag
    if tag == LAUNCHER_TAG:
        if cur.end == 4 or cur.end == 8:
            _request(cur, msg, packet)
        else:
            _master_list(cur, msg)
    elif tag == SERVER_INFO_TAG:
        if cur.end == MASTER_UPDATE_SIZE and not cur.missing:
            _master_update(cur, msg)
        else:
            _server_info(keyed, cur, msg, packet)
    else:
        msg.name = "unknown"
        cur.flag_last(W.bad_tag, f"tag {tag} is neither 777123 nor 5560020")


def _request(cur, msg, packet):
    msg.name = "launcher_request"
    values = msg.values
    key = cur.raw(KEY, 4) if cur.remaining() == 4 else None
    if key is not None:
        values["key"] = key
    roles = ROLES_BY_PORT
    role = roles.get(packet.dport) if packet is not None else None
    values["role_by_port"] = role
    info = f"Launcher request ({role} by port)" if role else "Launcher request"
    msg.info = info if key is None else f"{info} key={key.hex()}"


# master update -------------------------------------------------------------------------------
def _master_update(cur, msg):
    """A server's keep-alive to a master (sv_master.cpp: SV_UpdateMasterServer, every 25 s): the reply tag, then the
    port it takes queries on. A server-info reply is at least 16 bytes, so 6 whole bytes are this."""
    msg.name = "master_update"
    port = msg.values["port"] = cur.number(U16LE, F.port)
    msg.info = f"Master update: server port {port}"


# master list ---------------------------------------------------------------------------------
def _master_list(cur, msg):
    msg.name = "master_list"
    count = cur.number(I16LE, F.server_count)
    servers = _master_entries(cur)
    msg.values.update(server_count=count, servers=servers)
    try:
        if cur.remaining():
            _master_entry(cur)  # a partial entry: it adds its fields and raises Truncated where they end
    except Truncated as exc:
        cur.finding(W.truncated, f"{exc.available} bytes left where a server entry needs 6 (an IP of 4 bytes, "
                                 f"then a short port)", exc.offset, exc.available)
    if len(servers) != count:
        present = "1 entry is" if len(servers) == 1 else f"{len(servers)} entries are"
        cur.finding(W.count_mismatch, f"server count says {count} but {present} present", 4, 2)
    msg.info = (f"Master server list: {counted(len(servers), 'server')}"
                + ("" if len(servers) == count else f" (count says {count})"))


def _observe(keyed, packet, msg):
    """A launcher request's key remembered for the reply: (launcher, server) -> whether it carried one."""
    if packet is not None and msg.name == "launcher_request":
        put(keyed, (packet.src, packet.sport, packet.dst, packet.dport), msg.values.get("key") is not None)


# server info ---------------------------------------------------------------------------------
def _server_info(keyed, cur, msg, packet):
    msg.name = "server_info"
    key_sent = None if packet is None else peek(keyed, (packet.dst, packet.dport, packet.src, packet.sport))
    choice, broken, fitted = _choose_layout(cur.data, key_sent)
    start = cur.pos
    try:
        if fitted is not None and not cur.tree:
            # The trial that fitted was this very decode without a tree: keep its result.
            msg.values.update(fitted.values)
            msg.findings.extend(fitted.findings)
            cur.pos = cur.end
        elif fitted is None and broken is None and not cur.tree:
            _summary_read(cur, msg, choice)
        else:
            _reader(cur, msg, choice).read()
        if cur.remaining():
            left = cur.remaining()
            cur.rest(TRAILING)
            cur.flag_last(W.trailing_bytes, f"{left} bytes after the last field of the server-info reply")
    except _Broken:
        pass  # the finding is already at the byte that broke
    except Truncated as exc:
        _truncated(cur, msg, exc)
    values = msg.values
    values["layout"], values["echoed_key"], values["extension"] = choice.layout, choice.echo, choice.extension
    if cur.tree:
        cur.add(LAYOUT, start, cur.end - start, choice.layout, display=_layout_text(choice, values),
                generated=True)
    _layout_findings(msg, choice, broken)
    msg.info = (f'Server info "{or_unknown(values.get("name"))}" map={or_unknown(values.get("map"))} players '
                f'{or_unknown(values.get("players"))}/{or_unknown(values.get("max_players"))} '
                f'{or_unknown(values.get("mode"))}')


def _layout_findings(msg, choice, broken):
    if broken is not None:
        msg.report(W.bad_layout, f"shown in the {choice.layout} layout, which read furthest before a complaint",
                   broken, 0)
    elif choice.layout == REAL:
        add_prepared(msg, REAL_LAYOUT_NOTE, 0, 0)
    elif choice.layout == COMPACT:
        add_prepared(msg, COMPACT_LAYOUT_NOTE, 0, 0)
    if choice.extension and broken is None:
        add_prepared(msg, EXTENSION_NOTE, msg.values.get("extension_offset"), 0)


# The notes most replies get, their texts made once.
REAL_LAYOUT_NOTE, COMPACT_LAYOUT_NOTE, EXTENSION_NOTE = (
    prepared_finding(REAL_LAYOUT, "read in the real servers' layout"),
    prepared_finding(W.compact_layout, "read without team bytes and team bools"),
    prepared_finding(EXTENSION_FOUND, "newer servers' extension after the team block"))


def _truncated(cur, msg, exc):
    cur.finding(W.truncated, f"{exc.name} runs off the end of the reply at offset {exc.offset}", exc.offset,
                exc.available)
    announced, decoded = msg.values.get("players"), msg.values.get("player_list")
    if decoded is not None and announced is not None and len(decoded) < announced:
        cur.finding(W.count_mismatch, f"'Players in server' says {announced} but {len(decoded)} players could "
                                      f"be decoded", exc.offset, exc.available)


def _claims(payload, on_port):
    """``claims`` of a payload's bytes."""
    size = len(payload)
    if size < 4:
        return False
    tag = payload[0] | payload[1] << 8 | payload[2] << 16 | payload[3] << 24  # as I32LE reads the two tags
    if tag != LAUNCHER_TAG and tag != SERVER_INFO_TAG:
        return False
    if on_port:
        return True
    if tag == LAUNCHER_TAG:
        return size in (4, 8) or (size >= 6 and (size - 6) % 6 == 0)
    return size >= 16


def _master_entry(cur):
    """One entry, field by field: the way for an entry cut short, whose field reports where it ends."""
    node = cur.open_subtree(LISTED_SERVER)
    address = None
    try:
        address = _dotted(cur.raw(LISTED_IP, 4), 0)
        cur.set_last(address)
        entry = f"{address}:{cur.number(U16LE, LISTED_PORT)}"
        if node is not None:
            node.value = entry
    except Truncated:
        if node is not None:  # no value: the tree shows what the entry held before it ended
            node.display = "?" if address is None else f"{address}:?"
        raise
    finally:
        cur.close_subtree(node)
    return entry


OCTETS = [str(value) for value in range(256)]  # an address's bytes as text: looked up, not converted
_COMPILED = not __file__.endswith(".py")


def _dotted(data, pos):
    """The IPv4 address in data[pos:pos + 4] as inet_ntoa writes it."""
    if _COMPILED:
        return _c_entry_text(data, pos, False)  # C (odamex.pxd): its digits written, not joined from texts
    octets = OCTETS
    return f"{octets[data[pos]]}.{octets[data[pos + 1]]}.{octets[data[pos + 2]]}.{octets[data[pos + 3]]}"


def _entry_text(data, pos):
    """The "a.b.c.d:port" text of the master list's entry at data[pos:pos + 6]."""
    if _COMPILED:
        return _c_entry_text(data, pos, True)
    return f"{_dotted(data, pos)}:{data[pos + 4] | data[pos + 5] << 8}"


def _master_entries(cur):
    """The whole entries from here, a MasterEntries (with a tree, their texts made as the fields are, see
    _entry_with_fields), and the cursor left where _master_entry leaves it. A partial entry at the end is left to
    _master_entry (it reports it)."""
    data, start, size = cur.data, cur.pos, ENTRY_SIZE
    count = (cur.end - start) // size
    stop = start + count * size
    texts = None
    if cur.tree:
        texts = [_entry_with_fields(cur, data, start + index * size) for index in range(count)]
    if count:
        cur.pos = stop
        cur.last_offset, cur.last_length = stop - 2, 2  # the last port read
    return MasterEntries(data[start:stop], texts)


class MasterEntries:
    """A master list's entries (``msg.values["servers"]``): a sequence of their "a.b.c.d:port" texts, which reads as
    the list of them (indexes, slices, iteration, ==, pickling). Kept as the entries' bytes, 6 an entry, the texts
    made when first read; ``keys()`` gives the entries as numbers without their texts (see ``entry_text``)."""

    __slots__ = ("data", "texts")

    def __init__(self, data, texts=None):
        self.data = data    # the entries' bytes: each an IPv4 address, then a little-endian port
        self.texts = texts  # their texts once made (with a tree, as the fields are); None before

    def keys(self):
        """The entries each as one number, its port << 32 | its address (as the analysis keys the servers listed:
        the address's last byte, in the low bits, spreads them in a dict where most share a port)."""
        data = self.data
        keys = []
        for index in range(len(data) // ENTRY_SIZE):
            pos = index * ENTRY_SIZE
            key = data[pos + 4] | data[pos + 5] << 8
            for each in range(pos, pos + 4):
                key = key << 8 | data[each]
            keys.append(key)
        return keys

    def texts_made(self):
        texts = self.texts
        if texts is None:
            data = self.data
            texts = self.texts = []
            for index in range(len(data) // ENTRY_SIZE):
                texts.append(_entry_text(data, index * ENTRY_SIZE))
        return texts

    def __len__(self):
        return len(self.data) // ENTRY_SIZE

    def __getitem__(self, index):
        return self.texts_made()[index]  # a slice: a list, as a list's is

    def __iter__(self):
        return iter(self.texts_made())

    def __eq__(self, other):
        if isinstance(other, MasterEntries):
            return self.data == other.data  # one text an entry's bytes, and one entry's bytes a text
        return self.texts_made() == other

    def __repr__(self):
        return f"MasterEntries({self.texts_made()!r})"

    def __reduce__(self):  # pickled as the list it stands for
        return list, (self.texts_made(),)


def entry_text(key):
    """The "a.b.c.d:port" text of one of ``MasterEntries.keys()``."""
    return f"{key >> 24 & 255}.{key >> 16 & 255}.{key >> 8 & 255}.{key & 255}:{key >> 32}"


def _entry_with_fields(cur, data, pos):
    """The entry at ``pos``, and the fields _master_entry adds for it, made at once: the server's subtree, its
    address (shown as text) and its port: about 1,700 instructions less than reading them through the Cursor one by
    one, where a master list holds hundreds of entries."""
    address, entry = _dotted(data, pos), _entry_text(data, pos)
    port = data[pos + 4] | data[pos + 5] << 8
    node = cur.add(LISTED_SERVER, pos, ENTRY_SIZE, entry)
    node.children = [new_field(LISTED_IP.key, LISTED_IP.name, pos, 4, address, str),  # its text: shown as it is
                     new_field(LISTED_PORT.key, LISTED_PORT.name, pos + 4, 2, port, LISTED_PORT.fmt)]
    return entry


def _layout_text(choice, values):
    text = LAYOUT_NAMES[choice.layout]
    if choice.layout == REAL:
        shown = values.get("teams_in_build")
        text += f", {shown}-team build" if shown else ", team count not shown"
    return text


def _choose_layout(data, keyed):
    """(candidate, offset where it broke or None, the trial message when one was decoded and fitted). ``keyed``:
    whether the launcher's request carried a key, None where no request was seen.

    The first candidate that fits without warnings wins; else the fitting one with the fewest warnings; else
    the one that read furthest before its first complaint (a reading that goes on after a bad hash is not a
    better one), ties to the earlier candidate. A partial extension counts only when it read the version and
    a terminated e-mail string: with less, leftover bytes are more likely trailing bytes than a damaged
    extension. The walk finds the first clean fit where there is one; the trials decide the rest."""
    candidates = CANDIDATES[echo_order(data, keyed)]
    index = _clean_fit(data, candidates)
    if index >= 0:
        return candidates[index], None, None
    return trials_choice(data, candidates, keyed)


def trials_choice(data, candidates, keyed):
    """_choose_layout's answer where no candidate fits cleanly, from decoding the reply in each candidate (the walk
    decides the clean fits alike). Where none fits and the reading that went furthest broke at a value out of range
    (not at the reply's end, as a reply cut short does), a reading that flags at most MAX_LENIENT such values and
    reads on past them to the reply's exact end is shown instead: one bad byte in a real reply no longer shows the
    garbage of a layout that read a few bytes further before its first complaint."""
    candidate, broken, trial, at_value = _tried_layout(data, candidates)
    choice = candidate, broken, trial
    if broken is None:
        return choice
    if keyed is None and candidate.echo and _short_name(data):
        return _lenient_fit(data, CANDIDATES[NO_ECHO]) or choice
    if at_value:
        return _lenient_fit(data, candidates) or choice
    return choice


def _broke_at_a_value(reach, trial):
    """Whether a trial that stopped at ``reach`` stopped at a value out of range (_Broken, raised where its bad_value
    is), not by running off the reply's end or short of it."""
    for finding in trial.findings:
        if finding.code == BAD_VALUE and finding.offset == reach:
            return True
    return False


def _short_name(data):
    """Whether bytes 8-11 hold a name of up to three printable characters and its terminator: what a reading with an
    echoed key would take for the key."""
    for index in range(8, min(12, len(data))):
        if data[index] == 0:
            return True
        if data[index] < 0x20:
            return False
    return False


def echo_order(data, keyed):
    """Which CANDIDATES to try: an echoed key is likely when the launcher sent one, or, where its request was not
    seen, when the "name" would start with control bytes; a request seen without a key has none echoed."""
    if keyed is None:
        return ECHO_FIRST if _has_control_byte(data, 8, 12) and not _short_name(data) else ECHO_LAST
    return ECHO_FIRST if keyed else NO_ECHO


def _tried_layout(data, candidates):
    """_choose_layout's answer from decoding the reply in each of ``candidates`` in turn, and whether the reading shown
    where none fits broke at a value out of range (see trials_choice)."""
    fit, fit_warnings, best, best_rank, best_at_value = None, None, None, None, False
    heads, bodies = {}, {}
    for candidate in candidates:
        if candidate.echo not in heads:
            heads[candidate.echo] = _head_trial(data, candidate)
        reach, fits, marker_seen, trial = _trial(data, candidate, heads[candidate.echo], bodies)
        if fits:
            warnings = _severe_count(trial.findings)
            if not warnings:
                return candidate, None, trial, False
            if fit is None or warnings < fit_warnings:
                fit, fit_warnings = (candidate, trial), warnings
            continue
        if candidate.extension and not marker_seen:
            continue  # no better than the same layout without the extension, which is tried too
        rank = _partial_rank(reach, trial)
        if best_rank is None or rank > best_rank:
            best, best_rank, best_at_value = candidate, rank, _broke_at_a_value(reach, trial)
    if fit is not None:
        return fit[0], None, fit[1], False
    return best, best_rank[1], None, best_at_value


def _lenient_fit(data, candidates):
    """The candidate that, reading on past each value out of range (flagged as odamex.bad_value), reads the reply
    exactly to its end with at most MAX_LENIENT such values and the fewest complaints in all (warnings and errors:
    a bad hash too); of those, the one whose first complaint comes furthest on (as the trials rank readings that
    break), then the earlier (see trials_choice). Also where no
    request was seen and the reading that went furthest took bytes 8-11 for an echoed key though they hold a short
    name: a name of two or three letters puts its terminator among them, and a reading that takes them for a key
    goes on a long way before it breaks. (candidate, None, the trial message), or None."""
    best, best_rank = None, None
    for candidate in candidates:
        lenient = _Candidate(candidate.layout, candidate.teams, candidate.echo, candidate.extension, True)
        msg = new_message("odamex", data, 0)
        cur = new_cursor(msg, data, False, 4)
        try:
            _reader(cur, msg, lenient).read()
        except Truncated:
            continue
        if not cur.at_end():
            continue
        if sum(1 for finding in msg.findings if finding.code == BAD_VALUE) > MAX_LENIENT:
            continue
        # the fewest complaints (bad values, bad hashes: a misreading makes both), then the first one furthest on
        complaints = [finding.offset for finding in msg.findings
                      if finding.severity in SEVERE and finding.code not in SHARED]
        rank = (-len(complaints), min(complaints, default=len(data)))
        if best_rank is None or rank > best_rank:
            best, best_rank = (lenient, None, msg), rank
    return best


# -- the layout walk ------------------------------------------------------------------------------------
# Most replies fit one candidate cleanly. The walk tells which from the bytes alone (in C in the compiled build),
# checking what a trial checks (each value's range, the markers, the reply's end) without a message, a field or
# an exception; the reply is then read once, in that layout. Where no candidate fits cleanly (a warning on the way:
# more players than slots, a PWAD hash that is not one; or a value no layout takes), the trials decide.
BROKE = -1  # where the walk's helpers end when the candidate breaks
BAD_VALUE = W.bad_value.code
MAX_LENIENT = 2  # values out of range a reading may read on past (see _lenient_fit): more, and it is no fit
# The enums' tables number their values from 0 without gaps: a value is valid up to the largest.
LAST_GAME_TYPE, LAST_SKILL, LAST_SPEC_TEAM = max(GAME_TYPES), max(SKILLS), max(SPEC_TEAMS)
LAST_REAL_SKILL = max(REAL_SKILLS)


def _clean_fit(data, candidates):
    """The index in ``candidates`` of the first one whose trial reads the reply to its end with valid values and no
    warning (the trials' winner), or -1 where none does."""
    for index in range(len(candidates)):
        if _walk(data, candidates[index]):
            return index
    return -1


def _walk(data, candidate):
    """Whether ``candidate``'s trial reads the reply to its end with valid values and no warning."""
    end = len(data)
    pos = _after_string(data, 12 if candidate.echo else 8, end)  # the tag, the token, the echoed key; the name
    if pos < 0 or pos + 2 > end:
        return False
    players = data[pos]
    if players > data[pos + 1]:
        return False  # too_many_players
    pos = _after_string(data, pos + 2, end)  # the map
    if pos < 0 or pos >= end:
        return False
    pwads = data[pos]
    pos = _after_strings(data, pos + 1, end, pwads)
    layout = candidate.layout
    real = layout == REAL
    if pos < 0 or pos + (4 if real else 3) > end:
        return False
    if real:  # deathmatch, skill, teamplay, CTF
        if data[pos] > 1 or data[pos + 1] > LAST_REAL_SKILL or data[pos + 2] > 1 or data[pos + 3] > 1:
            return False
        teamplay, ctf = data[pos + 2], data[pos + 3]
        pos += 4
    else:  # game type, skill, teamplay
        if data[pos] > LAST_GAME_TYPE or data[pos + 1] > LAST_SKILL or data[pos + 2] > 1:
            return False
        teamplay, ctf = data[pos + 2], 0
        pos += 3
    pos = _walk_players(data, pos, end, players, candidate, teamplay, ctf)
    if pos < 0:
        return False
    for each in range(pwads):  # their MD5 hashes
        start = pos
        pos = _after_string(data, pos, end)
        if pos - start != 33 or not _hex_digits(data, start, pos - 1):
            return False  # cut, or bad_hash
    if not real:
        if pos >= end or data[pos] > 1:
            return False
        ctf = data[pos]
        pos += 1
    pos = _after_string(data, pos, end)  # the website
    if pos >= 0:
        pos = _walk_teams(data, pos, end, layout, candidate.teams, teamplay or ctf)
    if pos >= 0 and candidate.extension:
        pos = _walk_extension(data, pos, end, players)
    return pos == end


def _team_bounds(layout, teams, teamplay, ctf):
    """The lowest and the highest team byte the writer of ``layout`` (``teams``: the real build's team count) puts
    in a player record, all those between too; ``ctf`` as known before the players (the spec reads it later)."""
    if layout == REAL:  # blue, red[, green] in team games; NUMTEAMS and TEAM_NONE in any
        return (0 if teamplay or ctf else teams), teams + 1
    if layout == SPEC and not teamplay:
        return 0, 0  # spec note: player teams other than 0 only appear if Teamplay/CTF is enabled
    return 0, LAST_SPEC_TEAM


def _walk_players(data, pos, end, players, candidate, teamplay, ctf):
    """Past the player records (name, frags, ping, team byte where the layout has one), or BROKE; the team byte
    within _team_bounds."""
    layout = candidate.layout
    low, high = _team_bounds(layout, candidate.teams, teamplay, ctf)
    team_byte = layout != COMPACT or teamplay
    for each in range(players):
        pos = _after_string(data, pos, end)
        if pos < 0:
            return BROKE
        pos += 6  # frags, ping
        if team_byte:
            if pos >= end or not low <= data[pos] <= high:
                return BROKE
            pos += 1
    return pos if pos <= end else BROKE


def _walk_teams(data, pos, end, layout, teams, teams_on):
    """Past the team block as _team_block reads it, or BROKE."""
    if layout != REAL:
        teams = len(SPEC_BLOCK_TEAMS)
    if not teams_on and layout != SPEC:
        return pos  # real servers and the compact reading write the block in team games only
    if teams_on:
        pos += 4  # the score limit
    for each in range(teams):
        if pos >= end or data[pos] > 1:
            return BROKE
        in_play = data[pos] == 1
        pos += 5 if in_play and teams_on else 1  # the bool, and the team's score where the block has scores
    return pos if pos <= end else BROKE


def _walk_extension(data, pos, end, players):
    """Past the newer servers' extension, or BROKE."""
    pos = _after_string(data, pos + 2, end)  # the version, the e-mail
    if pos < 0:
        return BROKE
    pos += 6  # time limit, time left, frag limit
    flags = len(EXTENSION_BOOLS)
    if not _bools(data, pos, pos + flags, end):
        return BROKE
    pos += flags + 6 * players  # each player's kills, deaths, minutes
    if not _is_marker(data, pos, end, EXTENSION_MARKER_1):
        return BROKE
    pos += 6  # the marker, max players
    if not _bools(data, pos, pos + players, end):  # spectators
        return BROKE
    pos += players
    if not _is_marker(data, pos, end, EXTENSION_MARKER_2):
        return BROKE
    if pos + 6 <= end and (data[pos + 4] > 1 or data[pos + 5]):
        return BROKE  # the password flag (a short) not 0 or 1: read field by field, which flags it
    pos += 10  # the marker, password, game version
    if pos >= end:
        return BROKE
    return _after_strings(data, pos + 1, end, data[pos])  # the patch files


def _after_string(data, pos, end):
    """The offset after the null byte that ends the string at ``pos``, or BROKE (``pos`` not negative, ``end`` within
    the data)."""
    raw = data  # compiled, a C pointer to the bytes (odamex.pxd): read without bounds checks, each below end
    while pos < end:
        if raw[pos] == 0:
            return pos + 1
        pos += 1
    return BROKE


def _after_strings(data, pos, end, count):
    for each in range(count):
        pos = _after_string(data, pos, end)
        if pos < 0:
            return BROKE
    return pos


def _bools(data, start, stop, end):
    """Whether ``data[start:stop]`` is all there and each byte 0 or 1."""
    return stop <= end and _zeros_and_ones(data, start, stop)


def _is_marker(data, pos, end, marker):
    """Whether the little-endian uint32 at ``pos`` is all there and is ``marker``."""
    return (pos + 4 <= end and data[pos] == marker & 0xFF and data[pos + 1] == marker >> 8 & 0xFF
            and data[pos + 2] == marker >> 16 & 0xFF and data[pos + 3] == marker >> 24)


def _hex_digits(data, start, stop):
    """Whether every byte of ``data[start:stop]`` is a hex digit (HEX_DIGITS); ``stop`` within the data."""
    raw = data  # compiled, a C pointer to the bytes, as in _after_string
    for index in range(start, stop):
        digit = raw[index]
        if not (0x30 <= digit <= 0x39 or 0x61 <= digit <= 0x66 or 0x41 <= digit <= 0x46):
            return False
    return True


def _has_control_byte(data, start, stop):
    """Whether a byte below 0x20 is among ``data[start:stop]``."""
    for index in range(start, min(stop, len(data))):
        if data[index] < 0x20:
            return True
    return False


def _severe_count(findings):
    """How many of ``findings`` are warnings or errors."""
    count = 0
    for finding in findings:
        if finding.severity in SEVERE:
            count += 1
    return count


def _partial_rank(reach, trial):
    """(bytes the layout itself read, bytes read in all) before the first complaint. The layout comes first: an
    extension read from a byte the layout could still explain is a misreading."""
    complaints = [f.offset for f in trial.findings if f.severity in SEVERE and f.code not in SHARED]
    clean = min([reach] + complaints)
    return min(clean, trial.values.get("extension_offset", clean)), clean


def _head_trial(data, candidate):
    """The fields every layout shares, read once for all candidates with the same echo: (where the layouts
    begin or None when the head itself is cut, where it was cut, the message so far)."""
    msg = new_message("odamex", data, 0)
    cur = new_cursor(msg, data, False, 4)
    try:
        _reader(cur, msg, candidate).head()
    except Truncated as exc:
        return None, exc.offset, msg
    return cur.pos, None, msg


def _trial(data, candidate, head, bodies):
    """Decode without a tree: (bytes read before a break, fits exactly, extension recognized, the message). The
    candidates with and without the extension read the same body before it: ``bodies`` keeps it per shape."""
    shape = (candidate.layout, candidate.teams, candidate.echo)
    body = bodies.get(shape)
    if body is None:
        body = bodies[shape] = _body_trial(data, candidate, head)
    without, end = body
    if not candidate.extension or end is None:
        return without  # a body that broke breaks the same with the extension after it
    msg = _fork(data, end.msg)
    cur = new_cursor(msg, data, False, end.pos)
    try:
        _reader(cur, msg, candidate)._extension()
    except (_Broken, Truncated) as exc:
        return exc.offset, False, bool(msg.values.get("ext_recognized")), msg
    return cur.pos, cur.at_end(), bool(msg.values.get("ext_recognized")), msg


def _body_trial(data, candidate, head):
    """The trial without the extension, and the cursor where the body ended (None when it broke)."""
    pos, cut, shared = head
    msg = _fork(data, shared)
    if pos is None:
        return (cut, False, False, msg), None
    cur = new_cursor(msg, data, False, pos)
    try:
        _reader(cur, msg, candidate).body()
    except (_Broken, Truncated) as exc:
        return (exc.offset, False, False, msg), None
    return (cur.pos, cur.at_end(), False, msg), cur


def _fork(data, shared):
    """A trial's own message, holding what the message ``shared`` has read so far."""
    msg = new_message("odamex", data, 0)
    msg.values.update(shared.values)
    msg.findings.extend(shared.findings)
    return msg


class _ServerInfo:
    """The server-info reply in one candidate layout; raises _Broken at the first value out of range. Made by
    _reader."""

    __slots__ = ("cur", "values", "layout", "teams", "echo", "extension", "team_names", "lenient")

    def read(self):
        self.head()
        self.body()
        if self.extension:
            self._extension()

    def body(self):
        """Everything after the PWAD names up to the extension: the part the layouts differ in."""
        cur, values = self.cur, self.values
        pwads = values["pwads"]
        self.modes()
        values["player_list"] = players = []
        allowed = self._allowed_teams()  # what decides it is read before the players
        for _ in range(values["players"]):
            players.append(self._player(allowed))
        values["hashes"] = [self._hash() for _ in pwads]
        if self.layout != REAL:
            self._spec_ctf()
            values["mode"] = _spec_mode(values)
        values["website"] = cur.cstring(WEBSITE, "latin-1")
        self._team_block()
        if self.layout == REAL and (players or "score_limit" in values):
            values["teams_in_build"] = self.teams

    def head(self):
        """Token, echoed key, name, player counts, map and PWAD names: the same in every layout."""
        cur, values = self.cur, self.values
        values["token"] = cur.number(I32LE, TOKEN)
        if self.echo:
            values["key"] = cur.raw(ECHOED_KEY, 4)
        values["name"] = cur.cstring(NAME, "latin-1")
        players = values["players"] = cur.u8(PLAYERS)
        max_players = values["max_players"] = cur.u8(MAX_PLAYERS)
        if players > max_players:
            cur.flag_last(W.too_many_players, f"{players} players in a server of {max_players}")
        values["map"] = cur.cstring(MAP, "latin-1")
        count = cur.u8(PWAD_COUNT)
        values["pwads"] = [cur.cstring(PWAD, "latin-1") for _ in range(count)]

    def modes(self):
        """The game's settings after the PWAD names: the layout's bools and enums, and the game mode they make."""
        if self.layout == REAL:
            self._real_modes()
        else:
            self._spec_modes()

    def _spec_modes(self):
        values = self.values
        values["game_type"] = self._enum(GAME_TYPE, GAME_TYPES)
        values["skill"] = self._enum(SKILL, SKILLS)
        values["teamplay"] = self._bool(TEAMPLAY)
        if values["teamplay"] and values["game_type"] == 0:
            self.cur.flag_last(W.mode_conflict, "teamplay is on in a COOP game")

    def _spec_ctf(self):
        """The spec's CTF bool, after the PWAD hashes, and what the spec's notes say comes with it."""
        cur, values = self.cur, self.values
        values["ctf"] = self._bool(CTF)
        _check_spec_ctf(cur, values, cur.last_offset)

    def _real_modes(self):
        cur, values = self.cur, self.values
        start = cur.pos
        deathmatch = values["deathmatch"] = self._bool(DEATHMATCH)
        skill = values["skill"] = self._enum(SKILL, REAL_SKILLS)
        if cur.tree and skill in REAL_SKILL_TEXTS:
            cur.set_last(skill, REAL_SKILL_TEXTS[skill])  # the field's own display names the spec's numbering
        teamplay = values["teamplay"] = self._bool(TEAMPLAY)
        ctf = values["ctf"] = self._bool(CTF)
        values["mode"] = mode = real_mode(deathmatch, teamplay, ctf)
        cur.add(GAME_MODE, start, 4, mode, display=None, generated=True)

    def _teams_on(self):
        values = self.values
        return values["teamplay"] or values.get("ctf", False)

    # fields -------------------------------------------------------------------------------------
    def _bool(self, spec):
        cur = self.cur
        value = cur.u8(spec)
        if value > 1:
            self._out_of_range(f"{spec.name} is {value}, not 0 or 1")
        if cur.tree:
            cur.set_last(value == 1)
        return value == 1

    def _enum(self, spec, names):
        value = self.cur.u8(spec)
        if value not in names:
            self._out_of_range(f"{spec.name} {value} is not one of "
                               f"{', '.join([f'{k} = {v}' for k, v in names.items()])}")
        return value

    def _out_of_range(self, detail):
        cur = self.cur
        cur.flag_last(W.bad_value, detail)
        if not self.lenient:
            raise _Broken(cur.last_offset)

    def _player(self, allowed):
        cur = self.cur
        if not cur.tree:
            return self._player_fields(allowed)  # no node to nest them in
        node = cur.open_subtree(PLAYER)  # not a with block: a reply lists many players
        try:
            player = self._player_fields(allowed)
            node.name = f'Player "{player["name"]}"'
            node.display = f"frags {decimal_text(player['frags'])}, ping {decimal_text(player['ping'])} ms" + (
                f", team {self._team_name(player['team'])}" if "team" in player else "")
        finally:
            cur.close_subtree(node)
        return player

    def _player_fields(self, allowed):
        cur = self.cur
        player = {"name": cur.cstring(PLAYER_NAME, "latin-1"),
                  "frags": cur.number(I16LE, PLAYER_FRAGS),
                  "ping": cur.number(I32LE, PLAYER_PING)}
        if self.layout != COMPACT or self.values["teamplay"]:
            player["team"] = self._team(allowed)
        return player

    def _team(self, allowed):
        cur = self.cur
        team = cur.u8(PLAYER_TEAM)
        if team not in allowed:
            self._out_of_range(f"player team {team} is not one of "
                               f"{', '.join([f'{k} = {self.team_names[k]}' for k in allowed])}{self._team_context()}")
        if cur.tree:
            cur.set_last(team, f"{self._team_name(team)} ({decimal_text(team)})")
        return team

    def _team_context(self):
        if self._teams_on():
            return ""
        return " outside team games" if self.layout == REAL else " while teamplay is off"

    def _team_name(self, team):
        return self.team_names.get(team, "not a team")  # out of range: read on only in a lenient reading

    def _allowed_teams(self):
        """The team values the writer of this layout puts in a player record, with what is known so far."""
        low, high = _team_bounds(self.layout, self.teams, self.values["teamplay"], self.values.get("ctf", False))
        return list(range(low, high + 1))

    def _hash(self):
        cur = self.cur
        value = cur.cstring(PWAD_HASH, "latin-1")
        if cur.last_length != 33 or cur.last_raw.translate(None, HEX_DIGITS):  # 32 digits and the terminator
            cur.flag_last(W.bad_hash, f'PWAD MD5 hash "{value}" is not 32 hex digits')
        return value

    # team block -----------------------------------------------------------------------------------
    def _team_block(self):
        teams_on = self._teams_on()
        if self.layout == REAL:
            if teams_on:
                self._teams(REAL_BLOCK_TEAMS[:self.teams], with_limit=True, scored=True)
        elif self.layout == SPEC:
            self._teams(SPEC_BLOCK_TEAMS, with_limit=teams_on, scored=teams_on)
        elif teams_on:
            self._teams(SPEC_BLOCK_TEAMS, with_limit=True, scored=True)

    def _teams(self, names, with_limit, scored):
        cur, values = self.cur, self.values
        if with_limit:
            values["score_limit"] = cur.number(I32LE, SCORE_LIMIT)
        scores = {}
        for name in names:
            with cur.subtree(TEAM, value=name, name=f"{name} team") as node:
                in_play = self._bool(TEAM_IN_PLAY)
                if in_play and scored:
                    scores[name.lower()] = cur.number(I32LE, TEAM_SCORE)
                if cur.tree:
                    node.display = (f"score {scores[name.lower()]}" if name.lower() in scores
                                    else "in play" if in_play else "not in play")
        values["team_scores"] = scores

    # extension -------------------------------------------------------------------------------------
    def _extension(self):
        cur, values = self.cur, self.values
        players = values["players"]
        values["extension_offset"] = cur.pos
        ext = {}
        with cur.subtree(EXT, value=None, name="Extension (newer servers, beyond the spec)") as node:
            ext["version"] = cur.number(I16LE, EXT_VERSION)
            ext["email"] = cur.cstring(EXT_EMAIL, "latin-1")
            values["ext_recognized"] = True
            ext["time_limit"] = cur.number(I16LE, EXT_TIME_LIMIT)
            ext["time_left"] = cur.number(I16LE, EXT_TIME_LEFT)
            ext["frag_limit"] = cur.number(I16LE, EXT_FRAG_LIMIT)
            ext["flags"] = self._flags()
            ext["player_stats"] = [self._player_stats(i) for i in range(players)]
            self._marker(EXTENSION_MARKER_1)
            ext["max_players"] = cur.number(I16LE, EXT_MAX_PLAYERS)
            ext["spectators"] = [self._bool(EXT_SPECTATOR) for _ in range(players)]
            self._marker(EXTENSION_MARKER_2)
            ext["password"] = password = cur.number(I16LE, EXT_PASSWORD)
            if password not in (0, 1):  # flagged, not a broken layout: the markers around it placed it
                cur.flag_last(W.bad_value, f"{EXT_PASSWORD.name} is {password}, not 0 or 1")
            ext["game_version"] = cur.number(U32LE, EXT_GAME_VERSION)
            patches = cur.u8(EXT_PATCH_COUNT)
            ext["patches"] = [cur.cstring(EXT_PATCH, "latin-1") for _ in range(patches)]
            if cur.tree:
                node.display = f"version {ext['version']}, {len(ext['patches'])} patch files"
        values["ext"] = ext

    def _flags(self):
        """The extension's bools. Where their bytes are all there and 0 or 1, read at once into a copy of
        EXT_FLAG_VALUES (in C in the compiled build), with a tree their fields added as _bool adds them; else one by
        one, as _bool reports a bad one."""
        cur = self.cur
        start, stop = cur.pos, cur.pos + len(EXTENSION_BOOLS)
        if stop > cur.end or not _zeros_and_ones(cur.data, start, stop):
            return {flag: self._bool(spec) for flag, spec in EXT_FLAGS}
        flags = EXT_FLAG_VALUES.copy()
        data = cur.data
        for index in range(len(EXTENSION_BOOLS)):
            flag, spec = EXT_FLAGS[index]
            flags[flag] = value = data[start + index] == 1
            if cur.tree:
                cur.add(spec, start + index, 1, value)
        cur.pos = stop
        cur.last_offset, cur.last_length = stop - 1, 1  # the last bool read, as _bool leaves it
        return flags

    def _player_stats(self, index):
        cur = self.cur
        if not cur.tree:
            return _stats_fields(cur)  # no node to nest them in
        node = cur.open_subtree(EXT_PLAYER, None, f"Player {index} stats")
        try:
            stats = _stats_fields(cur)
            node.display = (f"{decimal_text(stats['kills'])} kills, {decimal_text(stats['deaths'])} deaths, "
                            f"{decimal_text(stats['minutes'])} min")
        finally:
            cur.close_subtree(node)
        return stats

    def _marker(self, expected):
        cur = self.cur
        value = cur.number(U32LE, EXT_MARKER)
        if value != expected:
            self._out_of_range(f"marker 0x{value:08x} is not 0x{expected:08x}")


def _check_spec_ctf(cur, values, offset):
    """The spec's notes on a CTF bool that is on (at ``offset``): teamplay and deathmatch come with it."""
    if values["ctf"] and not values["teamplay"]:
        cur.finding(W.mode_conflict, "CTF is on but teamplay is off", offset, 1)
    if values["ctf"] and values["game_type"] == 0:
        cur.finding(W.mode_conflict, "CTF is on in a COOP game", offset, 1)


def _zeros_and_ones(data, start, stop):
    """Whether every byte of ``data[start:stop]`` is 0 or 1; ``stop`` within the data."""
    raw = data  # compiled, a C pointer to the bytes, as in _after_string
    for index in range(start, stop):
        if raw[index] > 1:
            return False
    return True


def _summary_read(cur, msg, choice):
    """A reply that the walk found to fit ``choice`` cleanly, read without a tree: its head and its game mode (what
    the info line and the servers seen show), the rest left for ``full_values`` (``values["unread"]`` says how to
    read it). A clean fit has no value out of range; the spec's notes on the game mode are checked here as in a
    reading with a tree (``mode_conflict``), and what is left unread holds no finding."""
    reader = _reader(cur, msg, choice)
    reader.head()
    reader.modes()
    data, end, pos, values = cur.data, cur.end, cur.pos, msg.values
    real = choice.layout == REAL
    if not real or choice.extension:  # the spec's CTF bool, and the extension's offset, lie past the players
        pos = _walk_players(data, pos, end, values["players"], choice, values["teamplay"], real and values["ctf"])
        pos = _after_strings(data, pos, end, len(values["pwads"]))  # the PWAD hashes
        if not real:
            values["ctf"] = data[pos] == 1
            _check_spec_ctf(cur, values, pos)
            values["mode"] = _spec_mode(values)
            pos += 1
        if choice.extension:  # its note points there
            values["extension_offset"] = _walk_teams(data, _after_string(data, pos, end), end, choice.layout,
                                                     choice.teams, values["teamplay"] or values["ctf"])
    values["unread"] = (choice.layout, choice.teams, choice.echo, choice.extension)
    cur.pos = cur.end


def full_values(msg):
    """A server-info reply's ``msg.values`` as a reading with a tree has them: where the reading without one left the
    rest of a clean reply unread, it is read now (once: the values are completed in place)."""
    values = msg.values
    unread = values.pop("unread", None)
    if unread is not None:
        read = new_message("odamex", msg.payload, 0)
        _reader(new_cursor(read, msg.payload, False, 4), read, _Candidate(*unread)).read()
        values.update(read.values)
    return values


def _reader(cur, msg, candidate):
    """A _ServerInfo (made here, without the argument parsing of a constructor call: several a reply)."""
    reader = _ServerInfo.__new__(_ServerInfo)
    reader.cur = cur
    reader.values = msg.values
    reader.layout = candidate.layout
    reader.teams = candidate.teams
    reader.echo = candidate.echo
    reader.extension = candidate.extension
    reader.team_names = REAL_TEAM_NAMES[candidate.teams] if candidate.layout == REAL else SPEC_TEAMS
    reader.lenient = candidate.lenient
    return reader


def _stats_fields(cur):
    return {"kills": cur.number(I16LE, EXT_KILLS), "deaths": cur.number(I16LE, EXT_DEATHS),
            "minutes": cur.number(I16LE, EXT_MINUTES)}


def _spec_mode(values):
    mode = GAME_TYPES.get(values["game_type"], f"game type {values['game_type']}")  # out of range: a lenient reading
    if values["ctf"]:
        return mode + " CTF"
    return mode + " teamplay" if values["teamplay"] else mode
