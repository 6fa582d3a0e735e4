"""NetQuake control packets (spec: netquake-control.txt, John Cash, 8/12/96).

All Quake packets start with a 4-byte big-endian header: two bytes of flags, then
two bytes of length inclusive of the header. Control packets have flags 0x8000
and one command byte; nine commands are defined.

Real peers versus the spec: the spec says every multi-byte number is big-endian,
but Quake, DarkPlaces and qstat write the payload longs (port, colors, frags,
connect_time) little-endian. They are decoded little-endian, with a note finding
saying so; should a peer send them big-endian as the spec says (the little-endian
reading gives an impossible port or colour byte and the big-endian one does not),
the big-endian reading is used and noted instead.

Non-control packets (data, ack, unreliable) carry a header and a big-endian
sequence number; their game messages are not decoded.
"""

from collections import OrderedDict

import struct

from ..core import I32LE, U16BE, U32BE
from ..core.fmt import hex16
from ..registry import Dissector, register

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
MAX_CONVERSATIONS = 4096
I32BE = struct.Struct(">i")

RULE_HEADER = "the header's two bytes of length are 'the length of the packet inclusive of this header'"


def _flags_text(flags):
    if flags == NETFLAG_CTL:
        return "0x8000 (CTL)"
    names = [name for bit, name in DATA_FLAG_NAMES if flags & bit]
    if flags & NETFLAG_CTL:
        names.insert(0, "CTL")
    return f"{hex16(flags)} ({'|'.join(names) or 'none'})"


def _command_text(command):
    return f"{COMMANDS.get(command, 'unknown')} (0x{command:02x})"


@register
class NetQuake(Dissector):
    key = "netquake"
    title = "NetQuake"
    transports = ("udp",)
    ports = (26000,)
    truncated_code = "netquake.truncated"
    truncated_rule = "spec: each command's fields follow the command byte in the order listed"

    def __init__(self):
        # Conversations where NetQuake was seen, so data packets on other ports are recognized.
        self.conversations = OrderedDict()

    # -- recognition -----------------------------------------------------------
    def claims(self, payload, packet, on_port):
        size = len(payload)
        if size < 4:
            return False
        if payload[0] & 0x80:
            # Control. Off the port only the exact form counts: RTP also starts 80 00.
            if on_port:
                return size >= 5
            return (payload[1] == 0x00 and size >= 5 and payload[4] in COMMANDS
                    and (U16BE.unpack_from(payload, 2)[0] == size or self._known(packet)))
        if size >= 8 and payload[0] == 0 and payload[1] in KNOWN_DATA_FLAGS:
            return U16BE.unpack_from(payload, 2)[0] == size and (on_port or self._known(packet))
        return False

    def _known(self, packet):
        return packet is not None and _conversation(packet.src, packet.sport, packet.dst, packet.dport) \
            in self.conversations

    def observe(self, packet, msg):
        if packet is None or msg.data.get("command") is None:
            return
        self._remember(_conversation(packet.src, packet.sport, packet.dst, packet.dport))
        if msg.data["command"] == CCREP_ACCEPT and isinstance(msg.data.get("port"), int):
            # The game runs between the client and the port the server accepted it on.
            self._remember(_conversation(packet.src, msg.data["port"], packet.dst, packet.dport))

    def _remember(self, conversation):
        self.conversations[conversation] = True
        self.conversations.move_to_end(conversation)
        if len(self.conversations) > MAX_CONVERSATIONS:
            self.conversations.popitem(last=False)

    # -- decoding ----------------------------------------------------------------
    def decode(self, cur, msg, packet):
        flags = cur.number(U16BE, "netquake.flags", "Flags", _flags_text)
        length = cur.number(U16BE, "netquake.length", "Length")
        msg.data["flags"] = flags
        if length != cur.end:
            cur.flag_last("netquake.length_mismatch", "error",
                          f"header length {length} differs from the payload length {cur.end} ({RULE_HEADER})")
        if flags & NETFLAG_CTL:
            self._control(cur, msg, flags)
        else:
            self._data(cur, msg, flags)

    def _data(self, cur, msg, flags):
        names = [name for bit, name in DATA_FLAG_NAMES if flags & bit]
        msg.name = "data" if flags & NETFLAG_DATA else ("ack" if flags & NETFLAG_ACK else
                                                         "unreliable" if flags & NETFLAG_UNRELIABLE else "nak")
        sequence = cur.number(U32BE, "netquake.sequence", "Sequence")
        msg.data["sequence"] = sequence
        size = cur.remaining()
        if size:
            cur.rest("netquake.data", "Game data", lambda v: f"{len(v)} bytes")
        msg.info = f"{'|'.join(names)} seq={sequence}" + (f" len={size}" if size else "")

    def _control(self, cur, msg, flags):
        if flags != NETFLAG_CTL:
            cur.finding("netquake.bad_flags", "warning",
                        f"control packet flags are {hex16(flags)}, not 0x8000 "
                        f"(spec: 'for these control packets they will always be 0x80 0x00')", 0, 2)
        command = cur.u8("netquake.control.command", "Command", _command_text)
        msg.data["command"] = command
        name = COMMANDS.get(command)
        if name is None:
            msg.name = f"unknown_0x{command:02x}"
            cur.flag_last("netquake.unknown_command", "warning",
                          f"command byte 0x{command:02x} is not one of the nine defined "
                          f"(spec: four requests 0x01-0x04 and five responses 0x81-0x85)")
            if cur.remaining():
                cur.rest("netquake.control.body", "Body")
            msg.info = f"Unknown command 0x{command:02x}"
            return
        msg.name = name
        BODIES[command](self, cur, msg)
        if cur.remaining():
            count = cur.remaining()
            cur.rest("netquake.trailing", "Trailing bytes")
            cur.flag_last("netquake.trailing_bytes", "warning",
                          f"{count} bytes after the last field of {name} (spec lists no more fields)")

    # -- bodies, in the spec's order ---------------------------------------------------------------
    def _game_request(self, cur, msg):
        game = cur.cstring("netquake.control.game_name", "game_name", "latin-1")
        msg.data["game_name"] = game
        if game != GAME_NAME:
            cur.flag_last("netquake.bad_game_name", "warning",
                          f'game_name is "{game}", not "QUAKE" (spec: string game_name "QUAKE")')
        version = cur.u8("netquake.control.net_protocol_version", "net_protocol_version")
        msg.data["version"] = version
        self._check_version(cur, version)
        msg.info = f'{msg.name} game="{game}" version={version}'

    def _check_version(self, cur, version):
        if version != NET_PROTOCOL_VERSION:
            cur.flag_last("netquake.bad_version", "warning",
                          f"net_protocol_version is {version}, not 3 (spec: NET_PROTOCOL_VERSION is currently 3)")

    def _player_request(self, cur, msg):
        number = cur.u8("netquake.control.player_number", "player_number")
        msg.data["player_number"] = number
        msg.info = f"CCREQ_PLAYER_INFO player={number}"

    def _rule_request(self, cur, msg):
        rule = cur.cstring("netquake.control.rule", "rule", "latin-1")
        msg.data["rule"] = rule
        msg.info = f'CCREQ_RULE_INFO rule="{rule}"' if rule else 'CCREQ_RULE_INFO rule="" (first rule)'

    def _accept(self, cur, msg):
        order = _long_order(cur, _plausible_port)
        port = cur.number(order, "netquake.control.port", "port")
        msg.data["port"] = port
        msg.info = f"CCREP_ACCEPT port={port}"

    def _reject(self, cur, msg):
        reason = cur.cstring("netquake.control.reason", "reason", "latin-1")
        msg.data["reason"] = reason
        msg.info = f'CCREP_REJECT "{reason.rstrip()}"'

    def _server_info(self, cur, msg):
        address = cur.cstring("netquake.control.server_address", "server_address", "latin-1")
        host = cur.cstring("netquake.control.host_name", "host_name", "latin-1")
        level = cur.cstring("netquake.control.level_name", "level_name", "latin-1")
        msg.data.update(server_address=address, host_name=host, level_name=level)
        current = cur.u8("netquake.control.current_players", "current_players")
        maximum = cur.u8("netquake.control.max_players", "max_players")
        msg.data.update(current_players=current, max_players=maximum)
        version = cur.u8("netquake.control.net_protocol_version", "net_protocol_version")
        msg.data["version"] = version
        self._check_version(cur, version)
        msg.info = f'CCREP_SERVER_INFO "{host}" map={level} players {current}/{maximum}'

    def _player_info(self, cur, msg):
        number = cur.u8("netquake.control.player_number", "player_number")
        name = cur.cstring("netquake.control.name", "name", "latin-1")
        msg.data.update(player_number=number, name=name)
        order = _long_order(cur, lambda colors: 0 <= colors <= 0xFF)
        colors = cur.number(order, "netquake.control.colors", "colors", colors_text)
        shirt, pants = (colors >> 4) & 0x0F, colors & 0x0F
        color_byte = cur.last_offset + (3 if order is I32BE else 0)
        cur.add_child("netquake.control.colors.shirt", "shirt", color_byte, 1, shirt)
        cur.add_child("netquake.control.colors.pants", "pants", color_byte, 1, pants)
        msg.data.update(colors=colors, shirt=shirt, pants=pants)
        if colors < 0 or colors > 0xFF or shirt > COLOR_MAX or pants > COLOR_MAX:
            cur.flag_last("netquake.bad_colors", "warning",
                          f"colors {colors} gives shirt {shirt} and pants {pants} (spec: colors is shirt*16 + "
                          f"pants, each one in the range 0-13)")
        frags = cur.number(order, "netquake.control.frags", "frags")
        connect_time = cur.number(order, "netquake.control.connect_time", "connect_time", seconds)
        address = cur.cstring("netquake.control.address", "address", "latin-1")
        msg.data.update(frags=frags, connect_time=connect_time, address=address)
        msg.info = f'CCREP_PLAYER_INFO player={number} "{name}" frags={frags}'

    def _rule_info(self, cur, msg):
        if cur.at_end():
            msg.data["end_of_rules"] = True
            cur.add("netquake.control.end_of_rules", "End of rules", 4, 1, True,
                    display="no rule or value: the list has ended (spec: 'the length of the packet will be 5')",
                    generated=True)
            msg.info = "CCREP_RULE_INFO end of rules"
            return
        rule = cur.cstring("netquake.control.rule", "rule", "latin-1")
        value = cur.cstring("netquake.control.value", "value", "latin-1")
        msg.data.update(rule=rule, value=value, end_of_rules=False)
        msg.info = f'CCREP_RULE_INFO {rule}="{value}"'


def _long_order(cur, plausible):
    """Choose the byte order of this message's longs, noting the departure it implies."""
    pos = cur.pos
    if cur.remaining() < 4:
        return I32LE  # the read that follows reports the truncation
    little = I32LE.unpack_from(cur.data, pos)[0]
    big = I32BE.unpack_from(cur.data, pos)[0]
    if not plausible(little) and plausible(big):
        cur.finding("netquake.big_endian_long", "note",
                    "payload longs decoded big-endian as the spec says ('Quake passes all multi-byte "
                    "numbers over the wire in big endian format'); real Quake peers write them little-endian",
                    pos, 4)
        return I32BE
    cur.finding("netquake.little_endian_long", "note",
                "payload longs decoded little-endian as real Quake peers write them; the spec says big-endian "
                "('Quake passes all multi-byte numbers over the wire in big endian format')", pos, 4)
    return I32LE


def _plausible_port(port):
    return 0 < port <= 0xFFFF


def colors_text(colors):
    return f"{colors} (shirt {(colors >> 4) & 0x0F}, pants {colors & 0x0F})"


def seconds(value):
    minutes, secs = divmod(value, 60)
    return f"{value} s ({minutes}:{secs:02d})" if value >= 0 else f"{value} s"


def _conversation(src, sport, dst, dport):
    a, b = (src, sport), (dst, dport)
    return (a, b) if a <= b else (b, a)


BODIES = {
    CCREQ_CONNECT: NetQuake._game_request,
    CCREQ_SERVER_INFO: NetQuake._game_request,
    CCREQ_PLAYER_INFO: NetQuake._player_request,
    CCREQ_RULE_INFO: NetQuake._rule_request,
    CCREP_ACCEPT: NetQuake._accept,
    CCREP_REJECT: NetQuake._reject,
    CCREP_SERVER_INFO: NetQuake._server_info,
    CCREP_PLAYER_INFO: NetQuake._player_info,
    CCREP_RULE_INFO: NetQuake._rule_info,
}
