"""NetQuake control packets (spec: netquake-control.txt, John Cash, 8/12/96).

All Quake packets start with a 4-byte big-endian header: two bytes of flags, then
two bytes of length inclusive of the header. Control packets have flags 0x8000
and one command byte; nine commands are defined.

Real peers versus the spec: the spec says every multi-byte number is big-endian,
but Quake, DarkPlaces and qstat write the payload longs (port, colors, frags,
connect_time) little-endian. They are decoded little-endian, with a note finding
saying so; should a peer send them big-endian as the spec says (the little-endian
reading gives an impossible port or colour byte and the big-endian one does not, or,
for colors 0, which read alike both ways, a negative connect_time where the
big-endian one is not), the big-endian reading is used and noted instead.

Non-control packets (data, ack, unreliable) carry a header and a big-endian
sequence number; their game messages are not decoded.
"""

from ..core import I32BE, I32LE, U16BE, U32BE
from ..core.bounded import BoundedDict, put
from ..core.cursor import as_bytes, unpack
from ..core.fmt import ValueTexts, hex16, hex_text
from ..core.model import add_prepared, prepared_finding
from ..core.tables import FieldTable, FindingTable
from ..registry import Dissector

NETFLAG_CTL = 0x8000
NETFLAG_DATA = 0x0001
NETFLAG_ACK = 0x0002
NETFLAG_NAK = 0x0004
NETFLAG_EOM = 0x0008
NETFLAG_UNRELIABLE = 0x0010
DATA_FLAG_NAMES = ((NETFLAG_DATA, "DATA"), (NETFLAG_ACK, "ACK"), (NETFLAG_NAK, "NAK"), (NETFLAG_EOM, "EOM"),
                   (NETFLAG_UNRELIABLE, "UNRELIABLE"))
KNOWN_DATA_FLAGS = {NETFLAG_DATA, NETFLAG_DATA | NETFLAG_EOM, NETFLAG_ACK, NETFLAG_NAK, NETFLAG_UNRELIABLE}

NET_PROTOCOL_VERSION = 3
GAME_NAME = "QUAKE"

CCREQ_CONNECT = 0x01
CCREQ_SERVER_INFO = 0x02
CCREQ_PLAYER_INFO = 0x03
CCREQ_RULE_INFO = 0x04
CCREP_ACCEPT = 0x81
CCREP_REJECT = 0x82
CCREP_SERVER_INFO = 0x83
CCREP_PLAYER_INFO = 0x84
CCREP_RULE_INFO = 0x85

COMMANDS = {
    CCREQ_CONNECT: "CCREQ_CONNECT",
    CCREQ_SERVER_INFO: "CCREQ_SERVER_INFO",
    CCREQ_PLAYER_INFO: "CCREQ_PLAYER_INFO",
    CCREQ_RULE_INFO: "CCREQ_RULE_INFO",
    CCREP_ACCEPT: "CCREP_ACCEPT",
    CCREP_REJECT: "CCREP_REJECT",
    CCREP_SERVER_INFO: "CCREP_SERVER_INFO",
    CCREP_PLAYER_INFO: "CCREP_PLAYER_INFO",
    CCREP_RULE_INFO: "CCREP_RULE_INFO",
}
REQUESTS = (CCREQ_CONNECT, CCREQ_SERVER_INFO, CCREQ_PLAYER_INFO, CCREQ_RULE_INFO)
COLOR_MAX = 13
CONNECT_TIME_AFTER_COLORS = 8  # colors, frags, then connect_time: longs of four bytes
# Plausible frags and connect times, to tell the byte order where colors read the same both ways: a small number
# read in the other order is a large one (5 big-endian is 83,886,080 little-endian).
FRAGS_LIMIT = 0x10000          # |frags| below it
CONNECT_TIME_LIMIT = 1 << 24   # seconds, about 194 days
MAX_CONVERSATIONS = 4096


def _flags_text(flags):
    if flags == NETFLAG_CTL:
        return "0x8000 (CTL)"
    names = [name for bit, name in DATA_FLAG_NAMES if flags & bit]
    if flags & NETFLAG_CTL:
        names.insert(0, "CTL")
    return f"{hex16(flags)} ({'|'.join(names) or 'none'})"


def _command_text(command):
    names = COMMANDS
    return f"{names.get(command, 'unknown')} ({hex_text(command, 2)})"


def colors_text(colors):
    return f"{colors} (shirt {(colors >> 4) & 0x0F}, pants {colors & 0x0F})"


def seconds(value):
    minutes, secs = divmod(value, 60)
    return f"{value} s ({minutes}:{secs:02d})" if value >= 0 else f"{value} s"


F = FieldTable("netquake", messages=True, title="NetQuake", entries=[
    ("flags", "Flags", "uint16", "header flags: 0x8000 for control packets, DATA/ACK/NAK/EOM/UNRELIABLE bits "
                                 "otherwise", ValueTexts(_flags_text, [NETFLAG_CTL])),
    ("length", "Length", "uint16", "the packet's length, header included"),
    ("sequence", "Sequence", "uint32", "sequence number of a data, ack or unreliable packet"),
    ("data", "Game data", "bytes", "a data packet's game messages (not decoded)", lambda v: f"{len(v)} bytes"),
    ("trailing", "Trailing bytes", "bytes", "bytes after the last field of a control packet"),
    ("control.command", "Command", "uint8", "control command: 0x01-0x04 requests, 0x81-0x85 replies",
     ValueTexts(_command_text, COMMANDS)),
    ("control.body", "Body", "bytes", "the body of a control packet with an unknown command"),
    ("control.game_name", "Game Name", "string", 'CCREQ_CONNECT / CCREQ_SERVER_INFO: "QUAKE"'),
    ("control.net_protocol_version", "Net Protocol Version", "uint8", "NET_PROTOCOL_VERSION, 3"),
    ("control.player_number", "Player Number", "uint8", "CCREQ_PLAYER_INFO / CCREP_PLAYER_INFO: the player slot"),
    ("control.rule", "Rule", "string", "CCREQ_RULE_INFO: the previous rule (empty: the first); "
                                       "CCREP_RULE_INFO: the rule's name"),
    ("control.value", "Value", "string", "CCREP_RULE_INFO: the rule's value"),
    ("control.end_of_rules", "End of rules", "bool", "generated: a 5-byte CCREP_RULE_INFO ends the rule list"),
    ("control.port", "Port", "int32", "CCREP_ACCEPT: the port the game continues on"),
    ("control.reason", "Reason", "string", "CCREP_REJECT: why the connection was refused"),
    ("control.server_address", "Server Address", "string", "CCREP_SERVER_INFO: the server's address and port"),
    ("control.host_name", "Host Name", "string", "CCREP_SERVER_INFO: the server's name"),
    ("control.level_name", "Level Name", "string", "CCREP_SERVER_INFO: the map"),
    ("control.current_players", "Current Players", "uint8", "CCREP_SERVER_INFO: players on the server"),
    ("control.max_players", "Max Players", "uint8", "CCREP_SERVER_INFO: player slots"),
    ("control.name", "Name", "string", "CCREP_PLAYER_INFO: the player's name"),
    ("control.colors", "Colors", "int32", "CCREP_PLAYER_INFO: shirt * 16 + pants", colors_text),
    ("control.colors.shirt", "Shirt", "uint8", "shirt colour, 0-13 (high nibble of colors)"),
    ("control.colors.pants", "Pants", "uint8", "pants colour, 0-13 (low nibble of colors)"),
    ("control.frags", "Frags", "int32", "CCREP_PLAYER_INFO: the player's frags"),
    ("control.connect_time", "Connect Time", "int32", "CCREP_PLAYER_INFO: seconds connected", seconds),
    ("control.address", "Address", "string", "CCREP_PLAYER_INFO: the player's address"),
    ("request_in", "Request in frame", "uint32", "generated: the frame of the request this reply answers"),
    ("response_time", "Response time", "float", "generated: seconds from the request to this reply"),
])

W = FindingTable("netquake", messages=True, entries=[
    ("length_mismatch", "error",
     "the header's two bytes of length are 'the length of the packet inclusive of this header'"),
    ("bad_flags", "warning", "spec: 'for these control packets they will always be 0x80 0x00'"),
    ("unknown_data_flags", "warning", "beyond the spec (control packets only): Quake's data packets carry DATA, "
                                      "DATA|EOM, ACK, NAK or UNRELIABLE"),
    ("unknown_command", "warning", "spec: four requests 0x01-0x04 and five responses 0x81-0x85"),
    ("bad_game_name", "warning", 'spec: string game_name "QUAKE"'),
    ("bad_version", "warning", "spec: NET_PROTOCOL_VERSION is currently 3"),
    ("truncated", "error", "spec: each command's fields follow the command byte in the order listed"),
    ("trailing_bytes", "warning", "spec lists no more fields"),
    ("bad_colors", "warning", "spec: colors is shirt*16 + pants, each one in the range 0-13"),
    ("little_endian_long", "note", "real Quake peers write payload longs little-endian; the spec says big-endian "
                                   "('Quake passes all multi-byte numbers over the wire in big endian format')"),
    ("big_endian_long", "note", "spec: 'Quake passes all multi-byte numbers over the wire in big endian format'; "
                                "real Quake peers write them little-endian"),
    ("walk_out_of_order", "note", 'spec: "thereafter you send the name of the rule from the last response"'),
    ("state_evicted", "note", "conversations tracked at once are limited to keep memory bounded"),
    ("incomplete_walk", "note", "spec: 'when you reach the end of the list you'll get a response that doesn't "
                                "have a rule or value'"),
])


# The entries read per message, looked up once: each F.control.x or W.x is an attribute lookup at its use.
C = F.control
FLAGS, LENGTH, SEQUENCE, DATA, TRAILING, COMMAND, BODY = F.flags, F.length, F.sequence, F.data, F.trailing, \
    C.command, C.body
GAME, VERSION, PLAYER_NUMBER, RULE, VALUE, END_OF_RULES, PORT, REASON = C.game_name, C.net_protocol_version, \
    C.player_number, C.rule, C.value, C.end_of_rules, C.port, C.reason
SERVER_ADDRESS, HOST_NAME, LEVEL_NAME, CURRENT_PLAYERS, MAX_PLAYERS = C.server_address, C.host_name, \
    C.level_name, C.current_players, C.max_players
NAME, COLORS, SHIRT, PANTS, FRAGS, CONNECT_TIME, ADDRESS = C.name, C.colors, C.colors.shirt, \
    C.colors.pants, C.frags, C.connect_time, C.address


class NetQuake(Dissector):
    key = "netquake"
    title = "NetQuake"
    transports = ("udp",)
    ports = (26000,)
    fields = F
    findings = W
    analyzer = "dissect.analysis.netquake:NetQuakeAnalyzer"
    truncated = W.truncated
    # The query requests and their replies, by message name: (role, the request a reply answers). The
    # abuse analysis (dissect/analysis/abuse.py) measures amplification and request rates from these.
    query_kinds = {
        "CCREQ_CONNECT": ("request", "CCREQ_CONNECT"),
        "CCREQ_SERVER_INFO": ("request", "CCREQ_SERVER_INFO"),
        "CCREQ_PLAYER_INFO": ("request", "CCREQ_PLAYER_INFO"),
        "CCREQ_RULE_INFO": ("request", "CCREQ_RULE_INFO"),
        "CCREP_ACCEPT": ("reply", "CCREQ_CONNECT"),
        "CCREP_REJECT": ("reply", "CCREQ_CONNECT"),
        "CCREP_SERVER_INFO": ("reply", "CCREQ_SERVER_INFO"),
        "CCREP_PLAYER_INFO": ("reply", "CCREQ_PLAYER_INFO"),
        "CCREP_RULE_INFO": ("reply", "CCREQ_RULE_INFO"),
    }
    # Valid messages, as the protocol's tests and fuzzers start from (see tests/test_properties.py).
    examples = (
        bytes.fromhex("8000000c025155414b450003"),
        bytes.fromhex("8000000c015155414b450003"),
        bytes.fromhex("800000060303"),
        bytes.fromhex("8000000c046e6f6578697400"),
        bytes.fromhex("800000098191650000"),
        bytes.fromhex("8000000a8266756c6c00"),
        bytes.fromhex("8000002083312e322e332e343a323630303000686f73740065316d3100020803"),
        bytes.fromhex("80000023840152616e676572004d000000fdffffff3c000000312e322e332e343a3500"),
        bytes.fromhex("800000098561006200"),
        bytes.fromhex("8000000585"),
        bytes.fromhex("0009000b0000000578797a"),
    )

    def __init__(self):
        # Conversations where NetQuake was seen, so data packets on other ports are recognized.
        self.conversations = _Seen()

    # -- recognition -----------------------------------------------------------
    def claims(self, payload, packet, on_port):
        return _claims(self, as_bytes(payload), packet, on_port)

    def _known(self, packet):
        return packet is not None and _conversation(packet.src, packet.sport, packet.dst, packet.dport) \
            in self.conversations

    def observe(self, packet, msg):
        if packet is not None:
            _observe(self.conversations, packet, msg)

    # -- decoding ----------------------------------------------------------------
    def decode(self, cur, msg, packet):
        _decode(cur, msg)


def _claims(dissector, payload, packet, on_port):
    """``claims`` of a payload's bytes."""
    size = len(payload)
    if size < 4:
        return False
    length = payload[2] << 8 | payload[3]  # the header's
    if payload[0] & 0x80:
        # Control. Off the port only the exact form counts (80 00, a known command, the right length: the bytes the
        # snap length cut off counted in), in each packet, its conversation known or not: RTP also starts 80 00, and
        # one RTP packet that passed would otherwise make its whole stream NetQuake.
        if on_port:
            return size >= 5
        commands = COMMANDS
        return payload[0] == 0x80 and payload[1] == 0x00 and size >= 5 and payload[4] in commands and \
            (length == size or (packet is not None and length == size + packet.cut))
    if size >= 8 and payload[0] == 0 and payload[1] in KNOWN_DATA_FLAGS:
        return length == size and (on_port or dissector._known(packet))
    return False


def _decode(cur, msg):
    flags = cur.number(U16BE, FLAGS)
    length = cur.number(U16BE, LENGTH)
    msg.values["flags"] = flags
    if length != cur.end + cur.missing:  # the bytes the capture did not keep count too
        cur.flag_last(W.length_mismatch,
                      f"header length {length} differs from the payload length {cur.end + cur.missing}")
    if flags & NETFLAG_CTL:
        _control(cur, msg, flags)
    else:
        _data(cur, msg, flags)


def _data(cur, msg, flags):
    names = [name for bit, name in DATA_FLAG_NAMES if flags & bit]
    msg.name = ("data" if flags & NETFLAG_DATA else "ack" if flags & NETFLAG_ACK else "nak" if flags & NETFLAG_NAK
                else "unreliable" if flags & NETFLAG_UNRELIABLE else "unknown_data")
    if flags not in KNOWN_DATA_FLAGS:  # reached only where NetQuake is forced (-d, --payload): recognition needs them
        cur.finding(W.unknown_data_flags, f"data packet flags are {_flags_text(flags)}", 0, 2)
    sequence = cur.number(U32BE, SEQUENCE)
    msg.values["sequence"] = sequence
    size = cur.remaining()
    if size:
        cur.rest(DATA)
    msg.info = f"{'|'.join(names) or hex16(flags)} seq={sequence}" + (f" len={size}" if size else "")


def _control(cur, msg, flags):
    if flags != NETFLAG_CTL:
        cur.finding(W.bad_flags, f"control packet flags are {hex16(flags)}, not 0x8000", 0, 2)
    command = cur.u8(COMMAND)
    msg.values["command"] = command
    names = COMMANDS
    name = names.get(command)
    if name is None:
        msg.name = f"unknown_0x{command:02x}"
        cur.flag_last(W.unknown_command, f"command byte 0x{command:02x} is not one of the nine defined")
        if cur.remaining():
            cur.rest(BODY)
        msg.info = f"Unknown command 0x{command:02x}"
        return
    msg.name = name
    BODIES[command](cur, msg)
    count = cur.remaining()
    if count:
        cur.rest(TRAILING)
        cur.flag_last(W.trailing_bytes, f"{count} bytes after the last field of {name}")


# -- bodies, in the spec's order ---------------------------------------------------------------
def _game_request(cur, msg):
    game = cur.cstring(GAME, "latin-1")
    msg.values["game_name"] = game
    if game != GAME_NAME:
        cur.flag_last(W.bad_game_name, f'game_name is "{game}", not "QUAKE"')
    version = cur.u8(VERSION)
    msg.values["version"] = version
    _check_version(cur, version)
    msg.info = f'{msg.name} game="{game}" version={version}'


def _check_version(cur, version):
    if version != NET_PROTOCOL_VERSION:
        cur.flag_last(W.bad_version, f"net_protocol_version is {version}, not 3")


def _player_request(cur, msg):
    number = cur.u8(PLAYER_NUMBER)
    msg.values["player_number"] = number
    msg.info = f"CCREQ_PLAYER_INFO player={number}"


def _rule_request(cur, msg):
    rule = cur.cstring(RULE, "latin-1")
    msg.values["rule"] = rule
    msg.info = f'CCREQ_RULE_INFO rule="{rule}"' if rule else 'CCREQ_RULE_INFO rule="" (first rule)'


def _accept(cur, msg):
    order = _long_order(cur, 1, 0xFFFF)
    port = cur.number(order, PORT)
    msg.values["port"] = port
    msg.info = f"CCREP_ACCEPT port={port}"


def _reject(cur, msg):
    reason = cur.cstring(REASON, "latin-1")
    msg.values["reason"] = reason
    msg.info = f'CCREP_REJECT "{reason.rstrip()}"'


def _server_info(cur, msg):
    values = msg.values
    address = cur.cstring(SERVER_ADDRESS, "latin-1")
    host = cur.cstring(HOST_NAME, "latin-1")
    level = cur.cstring(LEVEL_NAME, "latin-1")
    values["server_address"], values["host_name"], values["level_name"] = address, host, level
    current = cur.u8(CURRENT_PLAYERS)
    maximum = cur.u8(MAX_PLAYERS)
    values["current_players"], values["max_players"] = current, maximum
    version = cur.u8(VERSION)
    values["version"] = version
    _check_version(cur, version)
    msg.info = f'CCREP_SERVER_INFO "{host}" map={level} players {current}/{maximum}'


def _player_info(cur, msg):
    values = msg.values
    number = cur.u8(PLAYER_NUMBER)
    name = cur.cstring(NAME, "latin-1")
    values["player_number"], values["name"] = number, name
    order = _long_order(cur, 0, 0xFF, CONNECT_TIME_AFTER_COLORS)
    colors = cur.number(order, COLORS)
    shirt, pants = (colors >> 4) & 0x0F, colors & 0x0F
    if cur.tree:
        color_byte = cur.last_offset + (3 if order is I32BE else 0)
        cur.add_child(SHIRT, color_byte, 1, shirt)
        cur.add_child(PANTS, color_byte, 1, pants)
    values["colors"], values["shirt"], values["pants"] = colors, shirt, pants
    if colors < 0 or colors > 0xFF or shirt > COLOR_MAX or pants > COLOR_MAX:
        cur.flag_last(W.bad_colors, f"colors {colors} gives shirt {shirt} and pants {pants}")
    frags = cur.number(order, FRAGS)
    connect_time = cur.number(order, CONNECT_TIME)
    address = cur.cstring(ADDRESS, "latin-1")
    values["frags"], values["connect_time"], values["address"] = frags, connect_time, address
    msg.info = f'CCREP_PLAYER_INFO player={number} "{name}" frags={frags}'


def _rule_info(cur, msg):
    if cur.at_end() and not cur.missing:  # a reply the capture cut short may hold a rule it did not keep
        msg.values["end_of_rules"] = True
        cur.add(END_OF_RULES, 4, 1, True,
                display="no rule or value: the list has ended (spec: 'the length of the packet will be 5')",
                generated=True)
        msg.info = "CCREP_RULE_INFO end of rules"
        return
    rule = cur.cstring(RULE, "latin-1")
    value = cur.cstring(VALUE, "latin-1")
    values = msg.values
    values["rule"], values["value"], values["end_of_rules"] = rule, value, False
    msg.info = f'CCREP_RULE_INFO {rule}="{value}"'


def _long_order(cur, low, high, settle_at=0):
    """Choose the byte order of this message's longs, noting the departure it implies: a plausible value lies
    in low..high. A long that reads the same both ways (colors 0, every default-coloured player) leaves the
    choice, when ``settle_at`` is given, to the frags after it and the connect time ``settle_at`` bytes on:
    big-endian where more of them are plausible read so (``_plausible_player``)."""
    pos = cur.pos
    if cur.remaining() < 4:
        return I32LE  # the read that follows reports the truncation
    little = unpack(I32LE, cur.data, pos)
    big = unpack(I32BE, cur.data, pos)
    if little == big and settle_at and cur.remaining() >= settle_at + 4:
        data = cur.data
        big_endian = _plausible_player(data, pos, settle_at, I32BE) > _plausible_player(data, pos, settle_at, I32LE)
    else:
        big_endian = not low <= little <= high and low <= big <= high
    add_prepared(cur.msg, BIG_ENDIAN_NOTE if big_endian else LITTLE_ENDIAN_NOTE, pos, 4)
    return I32BE if big_endian else I32LE


# The byte order's notes, their texts made once.
BIG_ENDIAN_NOTE = prepared_finding(W.big_endian_long, "payload longs decoded big-endian as the spec says")
LITTLE_ENDIAN_NOTE = prepared_finding(W.little_endian_long, "payload longs decoded little-endian")


def _plausible_player(data, pos, settle_at, order):
    """How many of a player reply's frags (after the colors at ``pos``) and connect time read plausibly in ``order``."""
    frags = unpack(order, data, pos + 4)
    connected = unpack(order, data, pos + settle_at)
    return (-FRAGS_LIMIT < frags < FRAGS_LIMIT) + (0 <= connected < CONNECT_TIME_LIMIT)


class _Seen:
    """The conversations where NetQuake was seen, at most MAX_CONVERSATIONS: the one seen least recently goes first."""

    __slots__ = ("table", "last")

    def __init__(self):
        self.table = BoundedDict(MAX_CONVERSATIONS)
        self.last = None  # the conversation put last

    def __contains__(self, conversation):
        return conversation in self.table


def _observe(seen, packet, msg):
    """NetQuake.observe's work, its packet's addresses read in C when compiled."""
    values = msg.values
    command = values.get("command")
    if command is None:
        return
    _remember(seen, _conversation(packet.src, packet.sport, packet.dst, packet.dport))
    if command == CCREP_ACCEPT and isinstance(values.get("port"), int):
        # The game runs between the client and the port the server accepted it on.
        _remember(seen, _conversation(packet.src, values["port"], packet.dst, packet.dport))


def _remember(seen, conversation):
    if conversation != seen.last:  # the last one put is at the end already: put would change nothing
        put(seen.table, conversation, True)
        seen.last = conversation


def _conversation(src, sport, dst, dport):
    """One key for both directions: the lower (address, port) first, as tuples compare."""
    if sport <= dport if src == dst else src < dst:
        return src, sport, dst, dport
    return dst, dport, src, sport


BODIES = {
    CCREQ_CONNECT: _game_request,
    CCREQ_SERVER_INFO: _game_request,
    CCREQ_PLAYER_INFO: _player_request,
    CCREQ_RULE_INFO: _rule_request,
    CCREP_ACCEPT: _accept,
    CCREP_REJECT: _reject,
    CCREP_SERVER_INFO: _server_info,
    CCREP_PLAYER_INFO: _player_info,
    CCREP_RULE_INFO: _rule_info,
}
