"""TeeFrame connectionless server info (spec: teeframe-connectionless.txt).

Connectionless packets: a six-byte header, FF FF FF FF, a four-byte message
identifier, then the message data. The extended request ``gie3`` carries the
``xe`` marker, an extra token and two reserved bytes in its header; the
responses ``iext`` and ``iex+`` carry a header of six FF bytes and their fields
as null-terminated Strings and Decimal Strings.

Real peers versus the spec (docs/teeframe.md), each a note, never an error:
servers print the map CRC as a signed 32-bit number; they send an unrequested
``iext`` with token -1 and no client records; a rate-limited reply carries the
counts but no records; requests may be longer than 15 bytes. The vanilla
request (six FF bytes instead of the ``xe`` header) and its ``inf3`` reply
(no map CRC, map size or reserved fields; at most 16 records) are decoded too.
Older peers' messages, outside the spec, are decoded by their own layouts with
a ``teeframe.legacy_message`` note: the Teeworlds 0.5 requests ``gief`` (no
token) and ``gie2`` (a token byte) and their replies ``info`` and ``inf2``
(a progression field, records of name and score only); DDNet's 64-client
legacy request ``fstd`` and its reply ``dtsf`` (the ``inf3`` fields, a packed
integer offset, up to 24 records); and qstat's 13-byte probe, ten FF bytes and
``gie``, a ``gief`` cut one byte short that servers ignore.
"""

import sys
from operator import index as _as_index

from ..core import U16BE, Truncated
from ..core.cursor import as_bytes, cut
from ..core.fmt import ValueTexts, dec_hex, decimal_text, hex_text, or_unknown
from ..core.tables import FieldTable, FindingTable
from ..registry import Dissector

FF4 = b"\xff\xff\xff\xff"
FF6 = b"\xff" * 6
XE = b"xe"
RESERVED_ZEROS = b"\0\0"  # an extended request's reserved bytes, as they are sent
EMPTY_STRING = b"\0"       # a String without bytes: its terminator alone
QSTAT_PROBE = b"\xff" * 10 + b"gie"

REQUEST_LENGTH = 15
PACKET_LIMIT = 1400
INF3_MAX_RECORDS = 16
DTSF_MAX_RECORDS = 24
PACKED_INT_MAX_BYTES = 5

IDENTIFIERS = {
    b"gie3": "Server Information Request",
    b"iext": "Server Information",
    b"iex+": "More Server Information",
    b"inf3": "Server Information (vanilla)",
    b"gief": "Server Information Request (0.5, no token)",
    b"info": "Server Information (0.5, no token)",
    b"gie2": "Server Information Request (0.5)",
    b"inf2": "Server Information (0.5)",
    b"fstd": "Server Information Request (64-client legacy)",
    b"dtsf": "Server Information (64-client legacy)",
    b"gie": "qstat probe (gief cut short)",
}
# A known identifier's message name, interned: the analyses compare it with their literals and hash it.
NAMES = {ident: sys.intern(ident.decode("latin-1")) for ident in IDENTIFIERS}
IEXT, GIE3 = NAMES[b"iext"], NAMES[b"gie3"]  # the names _name gives the spec's reply and request without a look-up
REQUESTS = {b"gie3", b"gief", b"gie2", b"fstd"}
RESPONSES = {b"iext", b"iex+", b"inf3", b"inf2", b"info", b"dtsf"}
REQUEST, RESPONSE = "request", "response"
ROLES = {**dict.fromkeys(REQUESTS, REQUEST), **dict.fromkeys(RESPONSES, RESPONSE)}  # identifier -> its role
LEGACY = {b"gief", b"gie2", b"fstd", b"info", b"inf2", b"dtsf", b"gie"}

NAME_LIMIT, CLAN_LIMIT = 16, 12
QUICK_DIGITS = 18  # the most digits of a number a record read without its values may have: a C long long's


IS_PLAYER_TEXTS = {0: "0 (spectator)", 1: "1 (player)"}
FLAGS_TEXTS = {0: "0 (no password)", 1: "1 (password required)"}


def _is_player_text(value):
    texts = IS_PLAYER_TEXTS
    text = texts.get(value)
    return str(value) if text is None else text


def _token_text(value):
    if value >= 0:
        return dec_hex(value)
    return "-1 (unrequested)" if value == -1 else str(value)  # -1 alone says unrequested (others: bad_decimal)


def _crc_text(value):
    if not _a_crc(value):
        return f"{value} (not 32 bits)"
    return f"{value} ({hex_text(value & 0xFFFFFFFF, 8)})"


def _a_crc(value):
    """Whether ``value`` is a 32-bit CRC, printed unsigned or signed (as real servers print it)."""
    return -(1 << 31) <= value < 1 << 32


def _flags_text(value):
    texts = FLAGS_TEXTS
    text = texts.get(value)
    return str(value) if text is None else text


def _identifier_display(value):
    ident = value if type(value) is bytes else bytes(value)
    names = IDENTIFIERS
    return f'"{ident.decode("latin-1")}" ({names.get(ident, "unknown")})'


def _marker_text(value):
    return '"xe" (extended request)' if value == XE else value.hex(" ")


F = FieldTable("teeframe", messages=True, title="TeeFrame", entries=[
    ("marker", "Marker", "bytes", 'extended request bytes 0-1: "xe"', ValueTexts(_marker_text, (XE,))),
    ("extra_token", "Extra Token", "uint16", "extended request bytes 2-3: the client's extra token, big-endian",
     dec_hex),
    ("reserved_bytes", "Reserved", "bytes", "extended request bytes 4-5: sent as zero"),
    ("header", "Header", "bytes", "bytes 0-5 of a reply, a vanilla or a legacy request: FF x6"),
    ("padding", "Padding", "bytes", "bytes 6-9: FF FF FF FF"),
    ("identifier", "Identifier", "bytes", "bytes 10-13: the message identifier, four ASCII letters (gie3, iext, "
                                          "iex+ ...)", ValueTexts(_identifier_display, IDENTIFIERS)),
    ("token", "Token", "int", "requests: the token byte after the identifier; replies: the token they answer, as a "
                              "Decimal String (-1: unrequested)", _token_text),
    ("response_token", "Response Token", "uint32", "generated: extra_token << 8 | token, the token the reply carries",
     dec_hex),
    ("request_extra", "Extra bytes", "bytes", "request bytes past the ones its layout defines"),
    ("body", "Body", "bytes", "the bytes after the identifier of a message that is not decoded"),
    ("version", "Version", "string", "the server's version (0.6 ... for the spec's replies)"),
    ("name", "Name", "string", "the server's name"),
    ("map", "Map", "string", "the map's name"),
    ("map_crc", "Map CRC", "int", "iext: the map's CRC (real servers print it signed)", _crc_text),
    ("map_size", "Map Size", "int", "iext: the map file's size in bytes"),
    ("game_type", "Game Type", "string", "the game type (DM, TDM, CTF ...)"),
    ("flags", "Flags", "int", "server flags: 1 when a password is required",
     ValueTexts(_flags_text, FLAGS_TEXTS)),
    ("progression", "Progression", "int", "0.5 replies (info, inf2): the game's progress in percent, -1 unknown"),
    ("num_players", "Num Players", "int", "non-spectator clients (0.5 replies: all clients)"),
    ("max_players", "Max Players", "int", "non-spectator slots"),
    ("num_clients", "Num Clients", "int", "clients, spectators and connecting ones included"),
    ("max_clients", "Max Clients", "int", "the server's connection capacity"),
    ("offset", "Offset", "int", "dtsf: the index of this packet's first client record, a packed integer"),
    ("reserved", "Reserved", "string", "iext / iex+: a reserved String, empty"),
    ("packet_number", "Packet Number", "int", "iex+: 1 to 63 (iext is packet 0)"),
    ("client", "Client", "string", "a client record: the client's name, with the record's fields below it"),
    ("client.name", "Name", "string", "the client's name"),
    ("client.clan", "Clan", "string", "the client's clan"),
    ("client.country", "Country", "int", "the client's country code (-1: none)"),
    ("client.score", "Score", "int", "the client's score"),
    ("client.is_player", "Is Player", "int", "1 for a player, 0 for a spectator",
     ValueTexts(_is_player_text, IS_PLAYER_TEXTS)),
    ("client.reserved", "Reserved", "string", "iext / iex+: the record's reserved String, empty"),
    ("request_in", "Request in frame", "uint32", "generated: the frame of the request this reply answers"),
    ("response_time", "Response time", "float", "generated: seconds from the request to this reply"),
])

W = FindingTable("teeframe", messages=True, entries=[
    ("truncated", "error", "spec: a message holds every field of its layout, in order"),
    ("unterminated_string", "error", "spec: Strings and Decimal Strings end with a null terminator (00)"),
    ("packet_too_large", "warning", "spec: 'the 1400-byte packet size limit includes the six-byte header, the message "
                                    "identifier and padding, and all encoded fields'"),
    ("bad_header", "warning", "spec: a response starts 'byte[0-5] // FF FF FF FF FF FF' and a request 'byte[0-1] // "
                              "78 65: ASCII \"xe\"' (a vanilla one as a response does), then "
                              "'byte[6-9] // FF FF FF FF'"),
    ("reserved_nonzero", "warning", "spec: 'Reserved bytes must be sent as zero and ignored by the receiver'"),
    ("bad_request_length", "error", "spec: 'the complete request is 15 bytes'"),
    ("unknown_identifier", "warning", "spec: the messages are gie3, iext and iex+ (older peers add inf3, gief, info, "
                                      "gie2, inf2, fstd and dtsf)"),
    ("legacy_message", "note", "outside the spec, which defines gie3, iext and iex+: an older peer's message "
                               "(Teeworlds 0.5, DDNet's 64-client legacy browser, qstat), decoded by its own layout"),
    ("unrequested_info", "note", "spec: a reply carries the combined token of a request; real servers also send "
                                 "unrequested server information with token -1"),
    ("bad_decimal", "error", "spec: a Decimal String is 'the number written as decimal ASCII text, followed by a null "
                             "terminator'"),
    ("bad_version", "warning", "spec: the version 'must begin with 0.6 for protocol compatibility'"),
    ("bad_map_crc", "warning", "spec: Map CRC is the map's CRC, a 32-bit number (real servers print it signed: "
                               "-2147483648 to 4294967295 in all)"),
    ("signed_map_crc", "note", "spec: Map CRC is the CRC as a Decimal String; real servers print it as a signed "
                               "32-bit number"),
    ("bad_flags", "warning", "spec: 'flag value 1 means a password is required; 0 means no password is required'"),
    ("reserved_nonempty", "warning", "spec: a Reserved String 'must be empty; receivers must ignore its contents'"),
    ("count_mismatch", "warning", "spec: Num Players counts the non-spectators among Num Clients, each within its "
                                  "maximum, Max Players the non-spectator slots among Max Clients, and 'the list is "
                                  "complete when the number of collected records equals Num Clients'"),
    ("no_client_records", "note", "spec: the client list follows in this packet and in iex+; real servers send the "
                                  "counts without records when rate-limited"),
    ("too_many_records", "warning", "an inf3 reply carries at most 16 client records, a dtsf reply at most 24"),
    ("split_record", "error", "spec: 'a client record must never be split across packets'"),
    ("bad_is_player", "warning", "spec: Is Player is '1 for a non-spectator client; 0 for a spectator'"),
    ("string_too_long", "warning", "spec: name up to 256 bytes, map 32, game type 16, client name 16, clan 12, "
                                   "before the null terminator"),
    ("bad_utf8", "warning", "spec: a String is UTF-8 bytes"),
    ("bad_packet_number", "error", "spec: the iex+ packet number is 'a number from 1 to 63, increasing for each "
                                   "additional packet'"),
    ("duplicate_packet", "note", "spec: 'ignore duplicate packet numbers, so their client records are not counted "
                                 "twice'"),
    ("incomplete_response", "warning", "spec: 'the list is complete when the number of collected records equals "
                                       "Num Clients'"),
    ("unmatched_token", "note", "spec: the client uses the token 'to match replies to its request'"),
    ("truncated_list", "note", "a vanilla inf3 carries at most 16 client records and DDNet caps the counts it "
                               "reports, so its records are not counted against Num Clients and Num Players"),
    ("state_evicted", "warning", "responses pending at once, and the client records they hold in all, are limited "
                                 "to keep memory bounded"),
    ("token_reuse", "warning", "real browsers choose a different token for each server they ask; one token in a "
                               "source's requests to several servers (3 or more), at least rate x window times "
                               "(--abuse-rate, --abuse-window), is a sign of a spoofing tool"),
])

CLIENT = F.client
_CLIENT = CLIENT.children  # F.client.name would be the entry's own display name, not the field
# Looked up once, as module constants: F.<name> is an attribute read on the table at every use.
TOKEN, VERSION, NAME, MAP, MAP_CRC, MAP_SIZE, GAME_TYPE, FLAGS, RESERVED = (
    F.token, F.version, F.name, F.map, F.map_crc, F.map_size, F.game_type, F.flags, F.reserved)
MARKER, EXTRA_TOKEN, RESERVED_BYTES, HEADER, PADDING, IDENTIFIER, RESPONSE_TOKEN, REQUEST_EXTRA, BODY = (
    F.marker, F.extra_token, F.reserved_bytes, F.header, F.padding, F.identifier, F.response_token,
    F.request_extra, F.body)
PACKET_NUMBER, PROGRESSION, OFFSET = F.packet_number, F.progression, F.offset
SIGNED_MAP_CRC = W.signed_map_crc  # a note on most replies of real servers
# The byte limits of Strings, by field entry (a dictionary of entries: no key to read at each check).
LIMITS = {NAME: 256, MAP: 32, GAME_TYPE: 16, _CLIENT["name"]: NAME_LIMIT, _CLIENT["clan"]: CLAN_LIMIT}
CLIENT_FIELDS = ((_CLIENT["name"], "text"), (_CLIENT["clan"], "text"), (_CLIENT["country"], "decimal"),
                 (_CLIENT["score"], "decimal"), (_CLIENT["is_player"], "decimal"), (_CLIENT["reserved"], "text"))
VANILLA_CLIENT_FIELDS = CLIENT_FIELDS[:5]
LEGACY_CLIENT_FIELDS = ((_CLIENT["name"], "text"), (_CLIENT["score"], "decimal"))
COUNTS = (("num_players", F.num_players, "decimal"), ("max_players", F.max_players, "decimal"),
          ("num_clients", F.num_clients, "decimal"), ("max_clients", F.max_clients, "decimal"))
# The server fields of each reply, in order: (msg.values key, field entry, kind).
_HEAD = (("version", VERSION, "text"), ("name", NAME, "text"), ("map", MAP, "text"))
_TAIL = (("game_type", GAME_TYPE, "text"), ("flags", FLAGS, "decimal"))
_INF3_FIELDS = _HEAD + _TAIL + COUNTS
CHECKED = (VERSION, MAP_CRC, FLAGS)  # the numbers and strings _check_server_field checks
SERVER_FIELDS = {
    b"iext": _HEAD + (("map_crc", MAP_CRC, "decimal"), ("map_size", MAP_SIZE, "decimal")) + _TAIL + COUNTS,
    b"inf3": _INF3_FIELDS,
    b"dtsf": _INF3_FIELDS,
    b"info": _HEAD + _TAIL + (("progression", PROGRESSION, "decimal"),) + COUNTS[:2],
}
SERVER_FIELDS[b"inf2"] = SERVER_FIELDS[b"info"]


class ServerField:
    """A reply's server field as ``_server_fields`` and ``_server_fields_quickly`` read it: its ``msg.values`` key,
    its field entry, whether it is a number (a Decimal String) and whether that may be negative, the byte limit of a
    String (-1: none), and whether _check_server_field checks it."""

    __slots__ = ("key", "spec", "number", "signed", "limit", "own")

    def __init__(self, key, spec, kind):
        self.key = key
        self.spec = spec
        self.number = kind == "decimal"
        self.signed = spec is MAP_CRC  # real servers print it signed; any other negative number is read one by one
        limit = LIMITS.get(spec)
        self.limit = -1 if limit is None else limit
        self.own = spec in CHECKED


def _layout(fields):
    """(cstrings's specs, the values' keys, the fields as ServerFields) of a reply's server fields."""
    return (tuple((spec, kind) for _, spec, kind in fields), tuple(key for key, _, _ in fields),
            tuple(ServerField(key, spec, kind) for key, spec, kind in fields))


# Read in one cstrings call; the 0.5 replies, rare, are read field by field.
SERVER_LAYOUTS = {ident: _layout(SERVER_FIELDS[ident]) for ident in (b"iext", b"inf3", b"dtsf")}


class TeeFrame(Dissector):
    key = "teeframe"
    title = "TeeFrame"
    transports = ("udp",)
    ports = (8303,)
    fields = F
    findings = W
    analyzer = "dissect.analysis.teeframe:TeeFrameAnalyzer"
    truncated = W.truncated
    unterminated = W.unterminated_string
    cut_findings = (W.split_record, W.no_client_records)
    # The query requests and their replies, by message name: (role, the request a reply answers); the
    # largest reply the spec allows; the msg.values key of a request's token (W.token_reuse). The abuse
    # analysis (dissect/analysis/abuse.py) measures amplification and request rates from these.
    query_kinds = {
        "gie3": ("request", "gie3"), "iext": ("reply", "gie3"), "iex+": ("reply", "gie3"), "inf3": ("reply", "gie3"),
        "gief": ("request", "gief"), "info": ("reply", "gief"),
        "gie2": ("request", "gie2"), "inf2": ("reply", "gie2"),
        "fstd": ("request", "fstd"), "dtsf": ("reply", "fstd"),
        "gie": ("request", "gie"),
    }
    reply_limit = PACKET_LIMIT
    request_token = "response_token"
    # Valid messages, as the protocol's tests and fuzzers start from (see tests/test_properties.py).
    examples = (
        bytes.fromhex("786512340000ffffffff676965332a"),
        bytes.fromhex("ffffffffffffffffffff6769653303"),
        bytes.fromhex("ffffffffffffffffffff69657874373700302e362e342c2031362e330064697373656374207465737420736572766572"
                      "207c20363420736c6f7473207c20444d207c207465656672616d652e6578616d706c65207c204672616e6b667572742c"
                      "204765726d616e79207c206265206e6963652c206e6f20626c6f636b696e67207c20646973636f72643a207465656672"
                      "616d652d6578616d706c6500646d315f72656d616b655f32303236002d31313535303137353433003538303500444d00"
                      "300033003634003500363400006e616d656c6573732074656500436c616e205465656565656500323736003130303030"
                      "0031000054c3ab6520427261776c65720044444e65742d456c697465002d31002d3939393900310000e5bf8de88085e3"
                      "81aee5bdb1e5bf8d006b656b77206b656b77206b6b0033393200323538333800310000627261696e6c65737320746565"
                      "00c39c6e69636f646520c39c003834300033333735370030000028636f6e6e656374696e672900003237360030003000"
                      "00"),
        bytes.fromhex("ffffffffffffffffffff6965782b3737003100006e616d656c6573732074656500436c616e2054656565656565003237"
                      "360031303030300031000054c3ab6520427261776c65720044444e65742d456c697465002d31002d3939393900300000"
                      "e5bf8de88085e381aee5bdb1e5bf8d006b656b77206b656b77206b6b0033393200323538333800300000"),
        bytes.fromhex("ffffffffffffffffffff696e66333400302e362e340076616e696c6c6120736572766572006374663500435446003100"
                      "310031360033003136006e616d656c6573732074656500436c616e205465656565656500323736003130303030003100"
                      "54c3ab6520427261776c65720044444e65742d456c697465002d31002d39393939003000e5bf8de88085e381aee5bdb1"
                      "e5bf8d006b656b77206b656b77206b6b00333932003235383338003000"),
    )

    # -- recognition -------------------------------------------------------------------
    def claims(self, payload, packet, on_port):
        return _claims(as_bytes(payload), on_port)

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, cur, msg, packet):
        _decode(cur, msg)


def _claims(payload, on_port):
    """``claims`` of a payload's bytes: its fixed bytes compared in place (compiled, in C), its identifier too where
    it is the spec's request or reply, any other looked up once."""
    if len(payload) < 14 or not payload.startswith(FF4, 6):
        return payload == QSTAT_PROBE
    if payload.startswith(b"iext", 10):
        role = RESPONSE
    elif payload.startswith(b"gie3", 10):
        role = REQUEST
    else:
        role = ROLES.get(cut(payload, 10, 14))
        if role is None:
            return False
    return payload.startswith(FF6) or on_port or (role is REQUEST and payload.startswith(XE))


def _decode(cur, msg):
    data = cur.data
    ident = cut(data, 10, 14)
    msg.name = _name(ident)
    msg.values["identifier"] = msg.name
    size = len(data) + cur.missing  # the bytes the capture did not keep count too
    if size > PACKET_LIMIT:
        cur.finding(W.packet_too_large, f"packet is {size} bytes", PACKET_LIMIT, size - PACKET_LIMIT)
    if ident == b"iext":  # the spec's reply, 14 bytes or more: not the short request below
        _response_header(cur)
        _iext(cur, msg)
    elif ident == b"gie3" or (len(data) < 14 and cut(data, 0, 2) == XE):
        _gie3(cur, msg)
    elif ident in LEGACY:
        LEGACY_DECODERS[ident](cur, msg, ident)
    elif ident in RESPONSES:
        _response_header(cur)
        if ident == b"iex+":
            _iex_plus(cur, msg)
        else:
            _inf3(cur, msg)
    else:
        _unknown(cur, msg, ident)


def _name(ident):
    """A message's name: its identifier as text, the interned one of NAMES where it is known. The spec's request
    and reply, most messages, are compared in place (compiled, in C) rather than hashed and looked up."""
    if ident == b"iext":
        return IEXT
    if ident == b"gie3":
        return GIE3
    name = NAMES.get(ident)
    return ident.decode("latin-1") if name is None else name


# gie3 ----------------------------------------------------------------------------------------
def _gie3(cur, msg):
    values = msg.values
    extended = cut(cur.data, 0, 2) == XE
    values["extended"] = extended
    if extended:
        if not _skipped(cur, XE, 2):
            cur.raw(MARKER, 2)
        extra = cur.number(U16BE, EXTRA_TOKEN)
        if not _skipped(cur, RESERVED_ZEROS, 2):
            reserved = cur.raw(RESERVED_BYTES, 2)
            if reserved != RESERVED_ZEROS:
                cur.flag_last(W.reserved_nonzero, f"reserved bytes 4-5 are {reserved.hex(' ')}")
    else:
        extra = 0
        _header_ff6(cur, "gie3")
    msg.name = "gie3"
    _padding_and_identifier(cur, 4)
    if cur.end < REQUEST_LENGTH:
        cur.finding(W.bad_request_length, f"request is {cur.end} bytes", 0, cur.end)
    token = cur.u8(TOKEN)
    response_token = (extra << 8) | token
    values["token"] = token
    values["extra_token"] = extra
    values["response_token"] = response_token
    cur.add(RESPONSE_TOKEN, 2 if extended else 14, 13 if extended else 1, response_token, display=None,
            generated=True)
    _check_request_length(cur, msg)
    kind = "extended" if extended else "vanilla"
    msg.info = f"Server Information Request ({kind}) token={decimal_text(response_token)}"


def _check_request_length(cur, msg):
    size = cur.end
    if size > REQUEST_LENGTH:
        cur.rest(REQUEST_EXTRA)
        msg.findings.append(W.bad_request_length.at(
            f"request is {size} bytes; real servers accept longer requests and ignore the rest",
            cur.last_offset, cur.last_length, severity="note"))


def _header_ff6(cur, what):
    if _skipped(cur, FF6, 6):
        return
    header = cur.raw(HEADER, 6)
    if header != FF6:
        if what == "gie3":  # its own layout starts xe; a vanilla one, as a response does
            what, wanted = "request", "neither xe (78 65) nor FF FF FF FF FF FF"
        else:
            wanted = "not FF FF FF FF FF FF"
        cur.flag_last(W.bad_header, f"{what} header bytes 0-5 are {header.hex(' ')}, {wanted}")


def _padding_and_identifier(cur, size):
    if _skipped(cur, FF4, 4 + size):  # the identifier too: _decode has read it
        return
    padding = cur.raw(PADDING, 4)
    if padding != FF4:
        cur.flag_last(W.bad_header, f"header bytes 6-9 are {padding.hex(' ')}, not FF FF FF FF")
    cur.raw(IDENTIFIER, size)


def _skipped(cur, expected, size):
    """Whether the ``size`` bytes at the cursor, starting with ``expected`` as the spec has them, were skipped: without
    a tree they have no field to build and nothing to flag. The cursor's last item stays as it was: no finding is
    placed on it before the next read sets it."""
    pos = cur.pos
    if cur.tree or pos + size > cur.end or not cur.data.startswith(expected, pos):
        return False
    cur.pos = pos + size
    return True


def _response_header(cur):
    _header_ff6(cur, "response")
    _padding_and_identifier(cur, 4)


def _unknown(cur, msg, ident):
    msg.name = "unknown"
    cur.raw(HEADER, min(6, cur.remaining()))
    cur.raw(PADDING, min(4, cur.remaining()))
    cur.raw(IDENTIFIER, min(4, cur.remaining()))
    shown = _identifier_text(ident)
    cur.flag_last(W.unknown_identifier, f"message identifier {shown} is not a known one")
    if cur.remaining():
        cur.rest(BODY)
    msg.info = f"Unknown connectionless message {shown}"


# legacy messages (outside the spec) --------------------------------------------------------
def _legacy_note(cur, ident, what):
    cur.finding(W.legacy_message, f"{ident.decode('latin-1')}: {what}", 10, len(ident))


def _qstat_probe(cur, msg, ident):
    _header_ff6(cur, "request")
    _padding_and_identifier(cur, 3)
    _legacy_note(cur, ident, "qstat's first probe, the 0.5 request gief cut to 13 bytes (no token); "
                             "servers ignore it")
    msg.info = "qstat probe gie (gief cut short)"


def _legacy_request(cur, msg, ident):
    _header_ff6(cur, "request")
    _padding_and_identifier(cur, 4)
    if ident == b"gief":
        _legacy_note(cur, ident, "the Teeworlds 0.5 request without a token, answered by info")
        msg.info = IDENTIFIERS[ident]
    else:
        what = ("the Teeworlds 0.5 request, answered by inf2" if ident == b"gie2" else
                "DDNet's 64-client legacy request, answered by dtsf")
        _legacy_note(cur, ident, what)
        token = cur.u8(TOKEN)
        msg.values.update(token=token, response_token=token)
        msg.info = f"{IDENTIFIERS[ident]} token={token}"
    if cur.remaining():
        cur.rest(REQUEST_EXTRA)


def _legacy_05_reply(cur, msg, ident):
    """info and inf2: version, name, map, game type, flags, progression, Num Players, Max Players, then
    (name, score) for each client; inf2 starts with the token."""
    _response_header(cur)
    with_token = ident == b"inf2"
    _legacy_note(cur, ident, "a Teeworlds 0.5 reply" + ("" if with_token else " without a token"))
    token = _token(cur, msg) if with_token else None
    _server_fields(cur, msg, ident)
    records = _client_records(cur, msg, LEGACY_CLIENT_FIELDS)
    info = msg.values
    token_text = f" token={or_unknown(token)}" if with_token else ""
    msg.info = (f'{IDENTIFIERS[ident]}{token_text} "{or_unknown(info.get("name"))}" '
                f'map={or_unknown(info.get("map"))} players {or_unknown(info.get("num_players"))}/'
                f'{or_unknown(info.get("max_players"))} ({records} listed)')


def _dtsf(cur, msg, ident):
    """DDNet's 64-client legacy reply: the inf3 fields, a packed-integer offset, up to 24 records."""
    _response_header(cur)
    _legacy_note(cur, ident, "DDNet's 64-client legacy reply")
    token = _token(cur, msg)
    _server_fields(cur, msg, ident)
    offset = _packed_int(cur, OFFSET)
    msg.values["offset"] = offset
    records = _client_records(cur, msg, VANILLA_CLIENT_FIELDS)
    if records > DTSF_MAX_RECORDS:
        cur.finding(W.too_many_records, f"{records} client records in a dtsf reply")
    info = msg.values
    head = f'{IDENTIFIERS[ident]} token={or_unknown(token)} "{or_unknown(info.get("name"))}"'
    msg.info = (f'{head} clients {or_unknown(info.get("num_clients"))}/{or_unknown(info.get("max_clients"))} '
                f'records {offset}-{offset + records - 1}' if records else f'{head} offset={offset}, no records')


def _packed_int(cur, spec):
    """A packed integer: bit 7 of a byte says another byte follows; the first byte holds the sign in bit 6
    and the low 6 bits of the number, each next byte 7 more bits; at most 5 bytes."""
    data, pos = cur.data, cur.pos
    size = 1
    while pos + size <= cur.end and data[pos + size - 1] & 0x80 and size < PACKED_INT_MAX_BYTES:
        size += 1
    raw = cur.raw(spec, size)  # raises Truncated when the number runs off the end
    value = raw[0] & 0x3F
    for index in range(1, size):
        value |= (raw[index] & 0x7F) << (6 + 7 * (index - 1))
    if raw[0] & 0x40:
        value = ~value
    cur.set_last(value)
    return value


# iext / iex+ / inf3 ------------------------------------------------------------------------
def _iext(cur, msg):
    token = _token(cur, msg)
    _server_fields(cur, msg, b"iext")
    _reserved(cur)
    records = _client_records(cur, msg, CLIENT_FIELDS)
    _check_counts(cur, msg, records, token)
    info = msg.values
    clients = info.get("num_clients")
    msg.info = (f'Server Information token={or_unknown(token)} "{or_unknown(info.get("name"))}" '
                f'map={or_unknown(info.get("map"))} clients {or_unknown(clients)}/{or_unknown(info.get("max_clients"))}'
                f'{"" if records == clients else f" ({decimal_text(records)} in this packet)"}')


def _iex_plus(cur, msg):
    token = _token(cur, msg)
    number = _decimal(cur, PACKET_NUMBER, allow_negative=True)  # a negative one is out of range below
    msg.values["packet_number"] = number
    if number is not None and not 1 <= number <= 63:
        cur.flag_last(W.bad_packet_number, f"packet number {number}")
    _reserved(cur)
    records = _client_records(cur, msg, CLIENT_FIELDS)
    msg.info = f"More Server Information token={or_unknown(token)} packet={or_unknown(number)} clients +{records}"


def _inf3(cur, msg):
    token = _token(cur, msg)
    _server_fields(cur, msg, b"inf3")
    records = _client_records(cur, msg, VANILLA_CLIENT_FIELDS)
    if records > INF3_MAX_RECORDS:
        cur.finding(W.too_many_records, f"{records} client records in an inf3 reply")
    _check_counts(cur, msg, records, token)
    info = msg.values
    msg.info = (f'Server Information (vanilla) token={or_unknown(token)} "{or_unknown(info.get("name"))}" '
                f'map={or_unknown(info.get("map"))} clients {or_unknown(info.get("num_clients"))}/'
                f'{or_unknown(info.get("max_clients"))}')


# replies' fields ------------------------------------------------------------------------------
def _token(cur, msg):
    token = _decimal(cur, TOKEN, allow_negative=True)
    msg.values["token"] = token
    if token is not None and token < 0:
        if token == -1:
            cur.flag_last(W.unrequested_info, "token -1: an unrequested server information packet, as real "
                                              "servers send")
        else:
            msg.findings.append(W.bad_decimal.at(f"token {token} is negative", cur.last_offset, cur.last_length,
                                                 severity="warning"))
    return token


def _server_fields(cur, msg, ident):
    """The server's fields, from the version to the counts, into ``msg.values``. Read in one ``cstrings`` call
    and checked after; where one is cut off, not a number or negative where it may not be, they are read again
    one by one, each checked as it is read, as the findings and the field tree of such a packet need. Without a
    tree, most are read by ``_server_fields_quickly``."""
    layout = SERVER_LAYOUTS.get(ident)
    if layout is not None and not cur.tree and _server_fields_quickly(cur, msg, ident, layout[2]):
        return
    read = _server_values(cur, msg, layout) if layout is not None else None
    if read is None:
        _server_fields_slowly(cur, msg, ident)
        return
    values = msg.values
    keys = layout[1]
    for index in range(len(read)):
        values[keys[index]] = read[index]
    for index, field in enumerate(layout[2]):  # in the fields' order: so are their findings
        if field.own or not field.number:
            value = read[index]
            offset = cur.start(index)
            length = cur.start(index + 1) - offset
            if not field.number and _text_worth_checking(field, value, length - 1):
                _check_text(cur, field.spec, value, offset, length)
            if field.own:
                _check_server_field(cur, ident, field.spec, value, offset, length)


def _server_fields_quickly(cur, msg, ident, fields):
    """The server fields without a tree, each stored in ``msg.values`` and checked as it is read: no list of their
    values, nor their offsets in the cursor. False, with the cursor and the findings as they were, where one is cut
    off, is a number of more than QUICK_DIGITS digits or not a number, or is negative where it may not be: the
    fields are then read again the other way, which stores every value again, in the same order. The cursor's last
    item stays as it was, as ``_skipped`` leaves it."""
    data, pos = cur.data, cur.pos
    end = min(cur.end, len(data))
    values, findings = msg.values, msg.findings
    kept = len(findings)
    for field in fields:
        if field.number:
            nul = _decimal_end(data, pos, end)
            if nul < 0:
                break
            number = _small_decimal(data, pos, nul)
            if number < 0 and not field.signed:
                break
            value = number
        else:
            nul = _null_at(data, pos, end)
            if nul < 0:
                break
            text = data[pos:nul].decode("utf-8", "replace")
            if _text_worth_checking(field, text, nul - pos):
                _check_text(cur, field.spec, text, pos, nul + 1 - pos)
            value = text
        values[field.key] = value
        if field.own:
            _check_server_field(cur, ident, field.spec, value, pos, nul + 1 - pos)
        pos = nul + 1
    else:
        cur.pos = pos
        return True
    del findings[kept:]
    return False


def _text_worth_checking(field, text, size):
    """Whether _check_text has something to flag in a String field's text of ``size`` bytes: it is over its limit,
    or it may not be UTF-8."""
    return 0 <= field.limit < size or "\ufffd" in text


def _null_at(data, pos, end):
    """The offset of the first null byte in data[pos:end], ``pos`` not negative, ``end`` within data; else -1."""
    raw = data  # compiled, a C pointer to the bytes, as in _text_end
    while pos < end:
        if raw[pos] == 0:
            return pos
        pos += 1
    return -1


def _server_values(cur, msg, layout):
    """The values of the server fields of ``layout`` in one call; None, with nothing read, where that cannot
    stand for reading them one by one."""
    start, kept = cur.pos, len(msg.fields)
    try:
        read = cur.cstrings(layout[0])
    except (Truncated, ValueError):  # cut off; a number too long for int()
        read = None
    if read is not None:
        for index, field in enumerate(layout[2]):
            value = read[index]
            if field.number and (value is None or value < 0 and not field.signed):
                read = None
                break
    if read is None:
        cur.pos = start
        if cur.tree:
            del msg.fields[kept:]  # the server fields are the message's own, not a subtree's
    return read


def _server_fields_slowly(cur, msg, ident):
    values = msg.values
    for key, spec, kind in SERVER_FIELDS[ident]:
        if kind == "text":
            value = _string(cur, spec)
        else:
            value = _decimal(cur, spec, allow_negative=spec is MAP_CRC or spec is PROGRESSION)
        values[key] = value
        _check_server_field(cur, ident, spec, value, cur.last_offset, cur.last_length)


def _check_server_field(cur, ident, spec, value, offset, length):
    """A server field's own checks (a String's size and UTF-8 are _check_text's)."""
    if spec is VERSION:
        text = value  # a str: the version is a String
        if ident not in (b"info", b"inf2") and not text.startswith("0.6"):
            cur.finding(W.bad_version, f'version "{value}" does not begin with 0.6', offset, length)
    elif spec is MAP_CRC:
        if value is not None and not _a_crc(value):
            cur.finding(W.bad_map_crc, f"map CRC {decimal_text(value)}", offset, length)
        elif value is not None and value < 0:
            cur.finding(SIGNED_MAP_CRC, f"map CRC printed as a signed number ({decimal_text(value)} = "
                                          f"{hex_text(value & 0xFFFFFFFF, 8)}), as real servers do", offset, length)
    elif spec is FLAGS:
        if value is not None and value not in (0, 1):
            cur.finding(W.bad_flags, f"server flags {value}", offset, length)


def _reserved(cur):
    """A reply's reserved String, which must be empty: without a tree, an empty one (its terminator) is skipped."""
    if not _skipped(cur, EMPTY_STRING, 1):
        _check_reserved(cur, _string(cur, RESERVED))


def _check_reserved(cur, value):
    if value:
        _reserved_nonempty(cur, value, cur.last_offset, cur.last_length)


def _check_counts(cur, msg, records, token):
    data = msg.values
    players, max_players = data.get("num_players"), data.get("max_players")
    clients, max_clients = data.get("num_clients"), data.get("max_clients")
    problems = []
    if players is not None and max_players is not None and players > max_players:
        problems.append(f"Num Players {players} > Max Players {max_players}")
    if players is not None and clients is not None and players > clients:
        problems.append(f"Num Players {players} > Num Clients {clients}")
    if clients is not None and max_clients is not None and clients > max_clients:
        problems.append(f"Num Clients {clients} > Max Clients {max_clients}")
    if max_players is not None and max_clients is not None and max_players > max_clients:
        problems.append(f"Max Players {max_players} > Max Clients {max_clients}")
    if problems:
        cur.finding(W.count_mismatch, "; ".join(problems))
    # A record cut off at the end of the packet, or bytes the capture did not keep, is no list left out.
    if clients and records == 0 and cur.at_end() and not data.get("split_record") and not cur.missing:
        data["clients_omitted"] = True
        if token != -1:  # an unrequested packet carries its counts alone, and teeframe.unrequested_info says so
            cur.finding(W.no_client_records, f"Num Clients is {clients} but the packet carries no client records")


def _string(cur, spec):
    value = cur.cstring(spec, "utf-8")
    _check_text(cur, spec, value, cur.last_offset, cur.last_length)
    return value


def _decimal(cur, spec, allow_negative=False):
    """A Decimal String: the field's value is the integer, or None where the text is not a number."""
    try:
        value = cur.cdecimal(spec)
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits()
        value = _long_number(cur, spec)
    if value is None:
        _not_decimal(cur, spec, cur.last_offset, cur.last_length, cur.last_raw)
    elif value < 0 and not allow_negative:
        cur.set_last(None, f'"{value}" (negative)')
        cur.msg.findings.append(W.bad_decimal.at(
            f"{spec.name} is negative ({value}); the spec allows that only for the score", cur.last_offset,
            cur.last_length, severity="warning"))
        return None
    return value


# client records --------------------------------------------------------------------------------
def _client_records(cur, msg, fields):
    """The client records from here to the end of the packet: how many. A record cut off at the end is flagged
    and not counted. Without a tree, a record with nothing to flag is kept by its place (``_quick_record``)."""
    records = ClientRecords(cur.data)
    msg.values["clients"] = records
    legacy = fields is LEGACY_CLIENT_FIELDS
    quick = not cur.tree and not legacy
    count = len(fields)
    try:
        while not cur.at_end():
            if quick and _quick_record(cur, count, records):
                continue
            if cur.tree:
                node = cur.open_subtree(CLIENT, None, "Client")
                try:
                    values = _read_record(cur, msg, fields, legacy, node)
                    if values is not None:
                        _title(node, values)
                finally:
                    cur.close_subtree(node)
            else:  # the summary path: no subtree to open and close
                values = _read_record(cur, msg, fields, legacy, None)
            if values is None:
                break
            records.add(values)
    finally:
        records.keep_bytes()
    return len(records)


def _read_record(cur, msg, fields, legacy, node):
    """The values of one client record (``_record_values``), or None where the packet ends inside it: that is
    flagged and the rest skipped."""
    start = cur.pos
    try:
        return _legacy_record(cur, fields, node) if legacy else _client_record(cur, fields, node)
    except Truncated:
        if node is not None:
            node.name = "Client [split]"
        cur.finding(W.split_record, f"client record cut off at the end of the packet after "
                                    f"{cur.end - start} bytes", start, cur.end - start)
        cur.pos = cur.end
        msg.values["split_record"] = True
        return None


def _client_record(cur, fields, node):
    values = _record_values(cur, fields, node)
    name, clan, country, score, is_player = values[0], values[1], values[2], values[3], values[4]
    # the name's and the clan's sizes, each with its terminator
    name_size, clan_size = cur.start(1) - cur.start(0), cur.start(2) - cur.start(1)
    if name_size > NAME_LIMIT + 1 or clan_size > CLAN_LIMIT + 1 or "\ufffd" in name or "\ufffd" in clan:
        for index in (0, 1):
            offset, length, _ = cur.span(index)
            _check_text(cur, fields[index][0], values[index], offset, length)
    if country is None or score is None or is_player is None:
        for index in (2, 3, 4):
            if values[index] is None:
                _not_decimal(cur, fields[index][0], *cur.span(index))
    if is_player is not None and (is_player > 1 or is_player < 0):
        cur.finding(W.bad_is_player, f"Is Player is {is_player}", cur.start(4), cur.start(5) - cur.start(4))
    if len(fields) > 5 and values[5]:
        _reserved_nonempty(cur, values[5], cur.start(5), cur.start(6) - cur.start(5))
    return values


def _legacy_record(cur, fields, node):
    values = _record_values(cur, fields, node)
    offset, length, _ = cur.span(0)
    _check_text(cur, fields[0][0], values[0], offset, length)
    if values[1] is None:
        _not_decimal(cur, fields[1][0], *cur.span(1))
    return values


def _record_values(cur, fields, node):
    """The values of a record's fields; ``cur.start`` and ``cur.span`` say where each one is."""
    start = cur.pos
    try:
        return cur.cstrings(fields)
    except ValueError:  # a number too long for int()
        return _record_slowly(cur, fields, node, start)


def _record_slowly(cur, fields, node, start):
    """A record read again field by field, a number too long for int() read as text: the values, and the
    fields' offsets in ``cur.starts`` as cstrings leaves them (``cur.start`` reads them)."""
    cur.pos = start
    if cur.tree:
        node.children.clear()  # the fields read before the long number
    values, starts = [], [start]
    for spec, kind in fields:
        if kind == "text":
            values.append(cur.cstring(spec))
        else:
            try:
                values.append(cur.cdecimal(spec))
            except ValueError:
                values.append(_long_number(cur, spec))
        starts.append(cur.pos)
    cur.starts = starts
    return values


# client records kept by their place -------------------------------------------------------------------
class ClientRecords:
    """A reply's client records as the analysis reads them: a sequence of dicts (``{"name", "clan", "country",
    "score", "is_player"}``; the 0.5 replies' ``{"name", "score"}``). A record read with its values is kept as
    their list, and a record read without them (the views that show no fields) by its offset in the message;
    either is made into its dict when read (-V reads none);
    ``players`` counts the records with Is Player 1 without making them. Once the packet is read, only the bytes
    of the records kept by their offsets are kept (``keep_bytes``), at most 91 a record, fewer than a dict holds."""

    __slots__ = ("data", "origin", "base", "stop", "items", "players", "checked")

    def __init__(self, data):
        self.data = data  # the message's bytes while it is read, then only those of the records kept by offset
        self.origin = 0   # the offset in the message of data's first byte
        self.base = -1    # the offset of the first record kept by its offset; -1 while there is none
        self.stop = 0     # the end of the last one
        self.items = []   # a record's dict; or its values or its offset, not yet made one
        self.players = 0
        self.checked = False  # whether a record was read with its values (``add``)

    def keep_bytes(self):
        """The packet is read: keep the bytes from the first record kept by its offset to the end of the last. Where
        the packet also holds a record read with its values (it had something to flag, and may be long), the records
        are all made into their dicts instead, and no bytes are kept."""
        if self.base >= 0 and self.checked:
            self._make_all()
            self.base = -1
        if self.base < 0:
            self.data, self.origin = b"", 0
        else:
            self.data, self.origin = cut(self.data, self.base, self.stop), self.base

    def add(self, values):
        """A record read with its values (their list: ``_record_values``), kept without the reserved String, which
        its dict does not hold and which may be long."""
        if len(values) > 5:
            values.pop()  # the sixth and last
        self.items.append(values)
        self.checked = True
        if len(values) > 4 and values[4] == 1:
            self.players += 1

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._made(position) for position in range(*index.indices(len(self.items)))]  # in range
        position = _as_index(index)  # what a list takes as an index, else TypeError
        if not -len(self.items) <= position < len(self.items):  # then an index of any size raises as a list's does
            raise IndexError("list index out of range")
        return self._made(position)

    def __iter__(self):
        for index in range(len(self.items)):
            yield self._made(index)

    def dicts(self):
        """The records' dicts, in a list of their own (made at once, where a view reads them all)."""
        self._make_all()
        return list(self.items)

    def _make_all(self):
        for index in range(len(self.items)):
            self._made(index)

    def _made(self, index):
        """The dict of the record at ``index``, made from its values or its offset where it is not one yet."""
        item = self.items[index]
        if type(item) is list:
            item = self.items[index] = _values_dict(item)
        elif type(item) is int:
            item = self.items[index] = _record_dict(self.data, item - self.origin)
        return item

    def __eq__(self, other):
        if isinstance(other, ClientRecords):
            other = list(other)
        return list(self) == other

    def __repr__(self):
        return f"ClientRecords({list(self)!r})"

    def __reduce__(self):  # pickled as the list it stands for
        return list, (list(self),)


def _quick_record(cur, count, records):
    """Read the record at the cursor without making its values where it has nothing to flag: each of its ``count``
    fields terminated, the name and the clan within their limits and valid UTF-8, country, score and Is Player
    numbers of at most QUICK_DIGITS digits, Is Player 0 or 1, the reserved String (a sixth field) empty. Such a
    record is kept in ``records`` by its offset; any other is left unread (False), for _read_record's checks."""
    data, pos = cur.data, cur.pos
    end = min(cur.end, len(data))
    start = pos
    player = 0
    for index in range(count):
        if index < 2:
            stop = _text_end(data, pos, end, NAME_LIMIT if index == 0 else CLAN_LIMIT)
        elif index < 5:
            stop = _decimal_end(data, pos, end)
            if index == 4 and stop >= 0:
                player = _small_decimal(data, pos, stop)
                if player < 0 or player > 1:
                    return False
        else:
            stop = pos if pos < end and data[pos] == 0 else -1
        if stop < 0:
            return False
        pos = stop + 1
    cur.pos = pos
    if records.base < 0:
        records.base = start
    records.stop = pos
    records.items.append(start)
    records.players += player
    return True


def _text_end(data, pos, end, limit):
    """The terminator's offset of the String at ``pos`` where it holds at most ``limit`` bytes of valid UTF-8;
    else -1."""
    raw = data  # compiled, a C pointer to the bytes (teeframe.pxd): read without bounds checks, each below end
    stop, high = pos, 0
    while stop < end:
        byte = raw[stop]
        if byte == 0:
            break
        high |= byte
        stop += 1
    if stop >= end or stop - pos > limit:
        return -1
    if high & 0x80 and not utf8_valid(data, pos, stop):
        return -1
    return stop


def utf8_valid(data, start, stop):
    """Whether data[start:stop] is well-formed UTF-8 (The Unicode Standard, table 3-7), as Python's strict decoder
    takes it, without decoding it."""
    if start < 0 or stop > len(data):
        raise IndexError(f"bytes {start} to {stop} are not all within the {len(data)} bytes of data")
    raw = data  # compiled, a C pointer to the bytes, as in _text_end: each index is below stop
    pos = start
    while pos < stop:
        lead = raw[pos]
        if lead < 0x80:
            pos += 1
            continue
        if 0xC2 <= lead <= 0xDF:
            size, low, high = 2, 0x80, 0xBF
        elif 0xE0 <= lead <= 0xEF:
            size = 3
            low, high = (0xA0, 0xBF) if lead == 0xE0 else (0x80, 0x9F) if lead == 0xED else (0x80, 0xBF)
        elif 0xF0 <= lead <= 0xF4:
            size = 4
            low, high = (0x90, 0xBF) if lead == 0xF0 else (0x80, 0x8F) if lead == 0xF4 else (0x80, 0xBF)
        else:
            return False
        if pos + size > stop or not low <= raw[pos + 1] <= high:
            return False
        for index in range(pos + 2, pos + size):
            if not 0x80 <= raw[index] <= 0xBF:
                return False
        pos += size
    return True


def _decimal_end(data, pos, end):
    """The terminator's offset of the Decimal String at ``pos`` where it is a number of 1 to QUICK_DIGITS
    digits, a minus sign first where negative; else -1."""
    raw = data  # compiled, a C pointer to the bytes, as in _text_end
    first = pos + 1 if pos + 1 < end and raw[pos] == 0x2D else pos  # 0x2D: "-"
    stop = first
    while stop < end and 0x30 <= raw[stop] <= 0x39:
        stop += 1
    if stop == first or stop - first > QUICK_DIGITS or stop >= end or raw[stop] != 0:
        return -1
    return stop


def _small_decimal(data, start, stop):
    """The number of a Decimal String that _decimal_end found to be one."""
    raw = data  # compiled, a C pointer to the bytes, as in _text_end
    first = start + 1 if raw[start] == 0x2D else start
    value = 0
    for index in range(first, stop):
        value = value * 10 + raw[index] - 0x30
    return -value if first > start else value


def _record_dict(data, start):
    """The dict of a record that _quick_record kept by its offset: the one _client_record makes."""
    values = []
    pos = start
    for index in range(5):
        stop = data.index(b"\0", pos)
        values.append(data[pos:stop].decode("utf-8") if index < 2 else _small_decimal(data, pos, stop))
        pos = stop + 1
    return _values_dict(values)


def _values_dict(values):
    """The dict of a record's values: a client record's five (``add`` drops the reserved String), a 0.5 record's
    two."""
    if len(values) == 2:
        return {"name": values[0], "score": values[1]}
    return {"name": values[0], "clan": values[1], "country": values[2], "score": values[3], "is_player": values[4]}


# checks ----------------------------------------------------------------------------------------------
def _check_text(cur, spec, value, offset, length):
    """A terminated String's size and UTF-8 (``length`` counts its terminator). Its bytes are read only where a
    replacement character in the text may stand for invalid UTF-8."""
    limits = LIMITS
    limit = limits.get(spec)
    size = length - 1
    if limit is not None and size > limit:
        cur.finding(W.string_too_long, f"{spec.name} is {size} bytes, over its limit of {limit}", offset, length)
    if "\ufffd" in value and b"\xef\xbf\xbd" not in cur.data[offset:offset + size]:
        cur.finding(W.bad_utf8, f"{spec.name} is not valid UTF-8", offset, length)


def _not_decimal(cur, spec, offset, length, raw):
    digits = raw[1:] if raw[:1] == b"-" else raw
    if digits.isdigit():
        detail = f"{spec.name} has {len(digits)} digits, too many to read as a number"
    else:
        text = raw.decode("latin-1")
        detail = f'{spec.name} is "{text if len(text) <= 40 else text[:40] + "..."}", not a decimal number'
    cur.finding(W.bad_decimal, detail, offset, length)


def _reserved_nonempty(cur, value, offset, length):
    cur.finding(W.reserved_nonempty, f'reserved string is "{value}"', offset, length)


def _long_number(cur, spec):
    """A Decimal String too long to convert: the field shows its size and has no value."""
    pos = cur.pos
    nul = cur.data.find(b"\0", pos, cur.end)
    raw = cur.data[pos:nul]
    cur.pos = nul + 1
    cur.last_offset, cur.last_length, cur.last_raw = pos, nul + 1 - pos, raw
    cur.add(spec, pos, nul + 1 - pos, None, display=f"a number of {len(raw)} characters (not read)")
    return None


def _title(node, values):
    """A record's node named by its values (``_record_values``'s list)."""
    name = values[0]
    node.name = f'Client "{name}"'
    node.value = name
    if len(values) > 2:
        node.display = (f'clan "{values[1]}", country {decimal_text(values[2])}, score {decimal_text(values[3])}, '
                        f'{"player" if values[4] == 1 else "spectator"}')
    else:
        node.display = f"score {decimal_text(values[1])}"


LEGACY_DECODERS = {
    b"gie": _qstat_probe,
    b"gief": _legacy_request,
    b"gie2": _legacy_request,
    b"fstd": _legacy_request,
    b"info": _legacy_05_reply,
    b"inf2": _legacy_05_reply,
    b"dtsf": _dtsf,
}


def _identifier_text(ident):
    """An identifier as people read it: its text in quotes, bytes that are not text in hex."""
    if not ident:
        return "(none: the packet ends before it)"
    if all(0x20 <= byte < 0x7F for byte in ident):
        return f'"{ident.decode("ascii")}"'
    return ident.hex(" ")
