"""TeeFrame connectionless server info (spec: teeframe-connectionless.txt).

Connectionless packets: a six-byte header, FF FF FF FF, a four-byte message
identifier, then the message data. The extended request ``gie3`` carries the
``xe`` marker, an extra token and two reserved bytes in its header; the
responses ``iext`` and ``iex+`` carry a header of six FF bytes and their fields
as null-terminated Strings and Decimal Strings.

Real peers versus the spec (shared/DESIGN.md), each a note, never an error:
servers print the map CRC as a signed 32-bit number; they send an unrequested
``iext`` with token -1 and no client records; a rate-limited reply carries the
counts but no records; requests may be longer than 15 bytes. The vanilla
request (six FF bytes instead of the ``xe`` header) and its ``inf3`` reply
(no map CRC, map size or reserved fields; at most 16 records) are decoded too,
and the older identifiers are recognized by name.
"""


from ..core import U16BE, Truncated
from ..core.fmt import dec_hex
from ..registry import Dissector, register

FF4 = b"\xff\xff\xff\xff"
FF6 = b"\xff" * 6
XE = b"xe"

REQUEST_LENGTH = 15
PACKET_LIMIT = 1400
INF3_MAX_RECORDS = 16

# Identifier -> (message name, body decoded?)
IDENTIFIERS = {
    b"gie3": "Server Information Request",
    b"iext": "Server Information",
    b"iex+": "More Server Information",
    b"inf3": "Server Information (vanilla)",
    b"gief": "Server Information Request (0.5)",
    b"gie2": "Server Information Request (legacy)",
    b"inf2": "Server Information (0.5)",
    b"fstd": "Server Information Request (64-client legacy)",
    b"dtsf": "Server Information (64-client legacy)",
}
REQUESTS = {b"gie3", b"gief", b"gie2", b"fstd"}
RESPONSES = {b"iext", b"iex+", b"inf3", b"inf2", b"dtsf"}

NAME_LIMIT, CLAN_LIMIT = 16, 12
LIMITS = {"teeframe.name": 256, "teeframe.map": 32, "teeframe.game_type": 16,
          "teeframe.client.name": NAME_LIMIT, "teeframe.client.clan": CLAN_LIMIT}


def _quoted(value):
    return '"' + value + '"'


def _is_player_text(value):
    return {0: "0 (spectator)", 1: "1 (player)"}.get(value, str(value))


CLIENT_FIELDS = (("teeframe.client.name", "Name", "text", _quoted),
                 ("teeframe.client.clan", "Clan", "text", _quoted),
                 ("teeframe.client.country", "Country", "decimal", None),
                 ("teeframe.client.score", "Score", "decimal", None),
                 ("teeframe.client.is_player", "Is Player", "decimal", _is_player_text),
                 ("teeframe.client.reserved", "Reserved", "text", _quoted))
VANILLA_CLIENT_FIELDS = CLIENT_FIELDS[:5]


def decimal_text(value):
    return str(value)


@register
class TeeFrame(Dissector):
    key = "teeframe"
    title = "TeeFrame"
    transports = ("udp",)
    ports = (8303,)
    truncated_code = "teeframe.truncated"
    unterminated_code = "teeframe.unterminated_string"
    truncated_rule = "spec: Strings and Decimal Strings end with a null terminator (00)"

    # -- recognition -------------------------------------------------------------------
    def claims(self, payload, packet, on_port):
        if len(payload) < 14 or payload[6:10] != FF4:
            return False
        ident = payload[10:14]
        if ident in REQUESTS:
            return payload[0:2] == XE or payload[0:6] == FF6 or on_port
        if ident in RESPONSES:
            return payload[0:6] == FF6 or on_port
        return False

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, cur, msg, packet):
        data = cur.data
        ident = bytes(data[10:14])
        msg.name = ident.decode("latin-1")
        msg.values["identifier"] = msg.name
        if len(data) > PACKET_LIMIT:
            cur.finding("teeframe.packet_too_large", "warning",
                        f"packet is {len(data)} bytes (spec: 'the 1400-byte packet size limit includes the six-byte "
                        f"header, the message identifier and padding, and all encoded fields')", PACKET_LIMIT,
                        len(data) - PACKET_LIMIT)
        if ident in REQUESTS or (len(data) < 14 and data[0:2] == XE):
            self._request(cur, msg, ident)
        elif ident not in RESPONSES:
            self._unknown(cur, msg, ident)
        else:
            self._response_header(cur, msg, ident)
            if ident == b"iext":
                self._iext(cur, msg)
            elif ident == b"iex+":
                self._iex_plus(cur, msg)
            elif ident == b"inf3":
                self._inf3(cur, msg)
            else:
                self._legacy_body(cur, msg, ident)

    # gie3 ----------------------------------------------------------------------------------------
    def _request(self, cur, msg, ident):
        extended = cur.data[0:2] == XE
        msg.values["extended"] = extended
        if extended:
            cur.raw("teeframe.marker", "Marker", 2, lambda v: '"xe" (extended request)')
            extra = cur.number(U16BE, "teeframe.extra_token", "Extra Token", dec_hex)
            reserved = cur.raw("teeframe.reserved_bytes", "Reserved", 2)
            if reserved != b"\0\0":
                cur.flag_last("teeframe.reserved_nonzero", "warning",
                              f"reserved bytes 4-5 are {reserved.hex(' ')} (spec: 'Reserved bytes must be sent as "
                              f"zero and ignored by the receiver')")
        else:
            extra = 0
            self._header_ff6(cur, msg, "request")
        msg.name = ident.decode("latin-1") if ident in REQUESTS else "gie3"
        self._padding_and_identifier(cur)
        if ident != b"gie3":
            self._legacy_body(cur, msg, ident)
            return
        if cur.end < REQUEST_LENGTH:
            cur.finding("teeframe.bad_request_length", "error",
                        f"request is {cur.end} bytes (spec: 'the complete request is 15 bytes')", 0, cur.end)
        token = cur.u8("teeframe.token", "Token", dec_hex)
        response_token = (extra << 8) | token
        msg.values.update(token=token, extra_token=extra, response_token=response_token)
        cur.add("teeframe.response_token", "Response Token", 2 if extended else 14, 13 if extended else 1,
                response_token, dec_hex, generated=True)
        self._check_request_length(cur, extended)
        kind = "extended" if extended else "vanilla"
        msg.info = f"Server Information Request ({kind}) token={response_token}"

    def _check_request_length(self, cur, extended):
        size = cur.end
        if size > REQUEST_LENGTH:
            cur.rest("teeframe.request_extra", "Extra bytes")
            cur.flag_last("teeframe.bad_request_length", "note",
                          f"request is {size} bytes (spec: 'the complete request is 15 bytes'); real servers accept "
                          f"longer requests and ignore the rest")

    def _header_ff6(self, cur, msg, what):
        header = cur.raw("teeframe.header", "Header", 6)
        if header != FF6:
            cur.flag_last("teeframe.bad_header", "warning",
                          f"{what} header bytes 0-5 are {header.hex(' ')}, not FF FF FF FF FF FF (spec: "
                          f"'byte[0-5] // FF FF FF FF FF FF')")

    def _padding_and_identifier(self, cur):
        cur.raw("teeframe.padding", "Padding", 4)
        cur.raw("teeframe.identifier", "Identifier", 4,
                lambda v: f'"{v.decode("latin-1")}" ({IDENTIFIERS.get(v, "unknown")})')

    def _response_header(self, cur, msg, ident):
        self._header_ff6(cur, msg, "response")
        self._padding_and_identifier(cur)

    def _unknown(self, cur, msg, ident):
        msg.name = "unknown"
        cur.raw("teeframe.header", "Header", min(6, cur.remaining()))
        cur.raw("teeframe.padding", "Padding", min(4, cur.remaining()))
        cur.raw("teeframe.identifier", "Identifier", min(4, cur.remaining()))
        cur.flag_last("teeframe.unknown_identifier", "warning",
                      f"message identifier {ident!r} is not one of gie3, iext, iex+ (nor a known older one)")
        if cur.remaining():
            cur.rest("teeframe.body", "Body")
        msg.info = f"Unknown connectionless message {ident!r}"

    def _legacy_body(self, cur, msg, ident):
        msg.info = f"{IDENTIFIERS[ident]} ({ident.decode('latin-1')}, body not decoded)"
        if cur.remaining():
            cur.rest("teeframe.body", "Body")

    # iext / iex+ / inf3 ------------------------------------------------------------------------
    def _iext(self, cur, msg):
        token = self._token(cur, msg)
        self._server_fields(cur, msg, extended=True)
        reserved = self._string(cur, "teeframe.reserved", "Reserved")
        self._check_reserved(cur, reserved)
        records = self._client_records(cur, msg, with_reserved=True)
        self._check_counts(cur, msg, records, token)
        info = msg.values
        msg.info = (f'Server Information token={token} "{info.get("name")}" map={info.get("map")} '
                    f'clients {info.get("num_clients")}/{info.get("max_clients")}'
                    f'{"" if records == info.get("num_clients") else f" ({records} in this packet)"}')

    def _iex_plus(self, cur, msg):
        token = self._token(cur, msg)
        number = self._decimal(cur, "teeframe.packet_number", "Packet Number")
        msg.values["packet_number"] = number
        if number is not None and not 1 <= number <= 63:
            cur.flag_last("teeframe.bad_packet_number", "error",
                          f"packet number {number} (spec: 'a number from 1 to 63, increasing for each additional "
                          f"packet')")
        reserved = self._string(cur, "teeframe.reserved", "Reserved")
        self._check_reserved(cur, reserved)
        records = self._client_records(cur, msg, with_reserved=True)
        msg.info = f"More Server Information token={token} packet={number} clients +{records}"

    def _inf3(self, cur, msg):
        token = self._token(cur, msg)
        self._server_fields(cur, msg, extended=False)
        records = self._client_records(cur, msg, with_reserved=False)
        if records > INF3_MAX_RECORDS:
            cur.finding("teeframe.too_many_records", "warning",
                        f"{records} client records in an inf3 reply, which holds at most {INF3_MAX_RECORDS}")
        self._check_counts(cur, msg, records, token)
        info = msg.values
        msg.info = (f'Server Information (vanilla) token={token} "{info.get("name")}" map={info.get("map")} '
                    f'clients {info.get("num_clients")}/{info.get("max_clients")}')

    def _token(self, cur, msg):
        token = self._decimal(cur, "teeframe.token", "Token", allow_negative=True, fmt=_token_text)
        msg.values["token"] = token
        if token is not None and token < 0:
            if token == -1:
                cur.flag_last("teeframe.unrequested_info", "note",
                              "token -1: an unrequested server information packet, as real servers send; the spec "
                              "expects the combined token of a request")
            else:
                cur.flag_last("teeframe.bad_decimal", "warning",
                              f"token {token} is negative (spec: the combined token of the request)")
        return token

    def _server_fields(self, cur, msg, extended):
        version = self._string(cur, "teeframe.version", "Version")
        msg.values["version"] = version
        if not version.startswith("0.6"):
            cur.flag_last("teeframe.bad_version", "warning",
                          f'version "{version}" does not begin with 0.6 (spec: \'it must begin with 0.6 for '
                          f'protocol compatibility\')')
        msg.values["name"] = self._string(cur, "teeframe.name", "Name")
        msg.values["map"] = self._string(cur, "teeframe.map", "Map")
        if extended:
            crc = self._decimal(cur, "teeframe.map_crc", "Map CRC", allow_negative=True, fmt=_crc_text)
            msg.values["map_crc"] = crc
            if crc is not None and crc < 0:
                cur.flag_last("teeframe.signed_map_crc", "note",
                              f"map CRC printed as a signed number ({crc} = 0x{crc & 0xFFFFFFFF:08x}), as real "
                              f"servers do; the spec's Decimal String holds the CRC itself")
            msg.values["map_size"] = self._decimal(cur, "teeframe.map_size", "Map Size")
        msg.values["game_type"] = self._string(cur, "teeframe.game_type", "Game Type")
        flags = self._decimal(cur, "teeframe.flags", "Flags", fmt=_flags_text)
        msg.values["flags"] = flags
        if flags is not None and flags not in (0, 1):
            cur.flag_last("teeframe.bad_flags", "warning",
                          f"server flags {flags} (spec: 'flag value 1 means a password is required; 0 means no "
                          f"password is required')")
        for key, name in (("num_players", "Num Players"), ("max_players", "Max Players"),
                          ("num_clients", "Num Clients"), ("max_clients", "Max Clients")):
            msg.values[key] = self._decimal(cur, f"teeframe.{key}", name)

    def _check_reserved(self, cur, value):
        if value:
            self._reserved_nonempty(cur, value, cur.last_offset, cur.last_length)

    @staticmethod
    def _reserved_nonempty(cur, value, offset, length):
        cur.finding("teeframe.reserved_nonempty", "warning",
                    f'reserved string is "{value}" (spec: \'must be empty; receivers must ignore its contents\')',
                    offset, length)

    def _check_counts(self, cur, msg, records, token):
        data = msg.values
        players, max_players = data.get("num_players"), data.get("max_players")
        clients, max_clients = data.get("num_clients"), data.get("max_clients")
        problems = []
        if None not in (players, max_players) and players > max_players:
            problems.append(f"Num Players {players} > Max Players {max_players}")
        if None not in (players, clients) and players > clients:
            problems.append(f"Num Players {players} > Num Clients {clients}")
        if None not in (clients, max_clients) and clients > max_clients:
            problems.append(f"Num Clients {clients} > Max Clients {max_clients}")
        if problems:
            cur.finding("teeframe.count_mismatch", "warning",
                        "; ".join(problems) + " (spec: Num Players counts non-spectators among Num Clients, each "
                        "within its maximum)")
        if clients and records == 0 and token != -1 and cur.at_end():
            data["clients_omitted"] = True
            cur.finding("teeframe.no_client_records", "note",
                        f"Num Clients is {clients} but the packet carries no client records: real servers send "
                        f"such replies when rate-limited (spec: the client list follows in this packet and iex+)")

    # client records ----------------------------------------------------------------------------
    def _client_records(self, cur, msg, with_reserved):
        records = []
        msg.values["clients"] = records
        while not cur.at_end():
            start = cur.pos
            with cur.subtree("teeframe.client", "Client") as node:
                try:
                    record = self._client_record(cur, with_reserved)
                except Truncated:
                    node.name = "Client [split]"
                    cur.finding("teeframe.split_record", "error",
                                f"client record cut off at the end of the packet after {cur.end - start} bytes "
                                f"(spec: 'a client record must never be split across packets')",
                                start, cur.end - start)
                    cur.pos = cur.end
                    msg.values["split_record"] = True
                    break
                if cur.tree:
                    node.name = f'Client "{record["name"]}"'
                    node.value = record["name"]
                    node.display = (f'clan "{record["clan"]}", country {record["country"]}, score '
                                    f'{record["score"]}, {"player" if record["is_player"] == 1 else "spectator"}')
            records.append(record)
        return len(records)

    def _client_record(self, cur, with_reserved):
        values = cur.cstrings(CLIENT_FIELDS if with_reserved else VANILLA_CLIENT_FIELDS)
        name, clan, country, score, is_player = values[:5]
        spans = cur.spans
        if len(spans[0][2]) > NAME_LIMIT or len(spans[1][2]) > CLAN_LIMIT or "\ufffd" in name or "\ufffd" in clan:
            for index in (0, 1):
                self._check_text(cur, CLIENT_FIELDS[index][0], CLIENT_FIELDS[index][1], values[index], *spans[index])
        if country is None or score is None or is_player is None:
            for index in (2, 3, 4):
                if values[index] is None:
                    self._not_decimal(cur, CLIENT_FIELDS[index][1], *spans[index])
        if is_player is not None and (is_player > 1 or is_player < 0):
            cur.finding("teeframe.bad_is_player", "warning",
                        f"Is Player is {is_player} (spec: '1 for a non-spectator client; 0 for a spectator')",
                        spans[4][0], spans[4][1])
        if with_reserved and values[5]:
            self._reserved_nonempty(cur, values[5], spans[5][0], spans[5][1])
        return {"name": name, "clan": clan, "country": country, "score": score, "is_player": is_player}

    # field types -----------------------------------------------------------------------------------
    def _string(self, cur, key, name):
        value = cur.cstring(key, name, "utf-8", _quoted)
        self._check_text(cur, key, name, value, cur.last_offset, cur.last_length, cur.last_raw)
        return value

    @staticmethod
    def _check_text(cur, key, name, value, offset, length, raw):
        limit = LIMITS.get(key)
        if limit is not None and len(raw) > limit:
            cur.finding("teeframe.string_too_long", "warning",
                        f"{name} is {len(raw)} bytes (spec: up to {limit} bytes before the null terminator)",
                        offset, length)
        if "\ufffd" in value and b"\xef\xbf\xbd" not in raw:
            cur.finding("teeframe.bad_utf8", "warning", f"{name} is not valid UTF-8 (spec: String is UTF-8 bytes)",
                        offset, length)

    def _decimal(self, cur, key, name, allow_negative=False, fmt=None):
        """A Decimal String: the field's value is the integer, or None where the text is not a number."""
        value = cur.cdecimal(key, name, fmt or decimal_text)
        if value is None:
            self._not_decimal(cur, name, cur.last_offset, cur.last_length, cur.last_raw)
        elif value < 0 and not allow_negative:
            cur.set_last(None, f'"{value}" (negative)')
            cur.flag_last("teeframe.bad_decimal", "warning",
                          f"{name} is negative ({value}); the spec allows that only for the score")
            return None
        return value

    @staticmethod
    def _not_decimal(cur, name, offset, length, raw):
        cur.finding("teeframe.bad_decimal", "error",
                    f'{name} is "{raw.decode("latin-1")}", not a decimal number (spec: \'the number written as '
                    f'decimal ASCII text, followed by a null terminator\')', offset, length)


def _token_text(value):
    return dec_hex(value) if value >= 0 else f"{value} (unrequested)"


def _crc_text(value):
    return f"{value} (0x{value & 0xFFFFFFFF:08x})"


def _flags_text(value):
    return {0: "0 (no password)", 1: "1 (password required)"}.get(value, str(value))



