"""TeeFrame server-info messages: every field's offset, length and value, and every finding."""

import pickle

import pytest
import teeframe_peer as tf
from helpers import codes, dissect, field, span

from dissect.capture.layers import Packet
from dissect.core import cursor
from dissect.core.model import new_field
from dissect.dissectors.teeframe import F, ClientRecords, utf8_valid
from dissect.registry import Registry

ONE_CLIENT = [("Tëe", "Clan", 276, -9999, 1)]


def small_iext(**overrides):
    info = dict(clients=ONE_CLIENT, version="0.6.4", name="srv", map_name="dm1", map_crc=-1155017543,
                map_size=5805, game_type="DM", flags=0, max_players=16, max_clients=16)
    info.update(overrides)
    return tf.iext(1193002, **info)


def finding(msg, code):
    found = [f for f in msg.findings if f.code == code]
    assert found, f"no {code} in {codes(msg)}"
    return found[0]


def test_gie3_request_fields():
    payload = tf.gie3(0x1234, 0x2A)
    assert payload.hex(" ") == "78 65 12 34 00 00 ff ff ff ff 67 69 65 33 2a"
    msg = dissect("teeframe", payload)
    assert msg.name == "gie3"
    assert span(msg, "teeframe.marker") == (0, 2, b"xe")
    assert span(msg, "teeframe.extra_token") == (2, 2, 0x1234)
    assert span(msg, "teeframe.reserved_bytes") == (4, 2, b"\0\0")
    assert span(msg, "teeframe.padding") == (6, 4, b"\xff" * 4)
    assert span(msg, "teeframe.identifier") == (10, 4, b"gie3")
    assert span(msg, "teeframe.token") == (14, 1, 0x2A)
    token = field(msg, "teeframe.response_token")
    assert (token.value, token.display, token.generated) == (1193002, "1193002 (0x12342a)", True)
    assert msg.findings == []
    assert msg.info == "Server Information Request (extended) token=1193002"


def test_gie3_reserved_nonzero_is_a_warning():
    msg = dissect("teeframe", tf.gie3(0x1234, 0x2A, reserved=b"\xff\xff"))
    f = finding(msg, "teeframe.reserved_nonzero")
    assert (f.severity, f.offset, f.length) == ("warning", 4, 2)
    assert "must be sent as zero" in f.message


def test_gie3_length():
    longer = dissect("teeframe", tf.gie3(1, 2, extra=b"\0\0\0"))
    f = finding(longer, "teeframe.bad_request_length")
    assert f.severity == "note" and "real servers accept" in f.message
    assert span(longer, "teeframe.request_extra") == (15, 3, b"\0\0\0")
    shorter = dissect("teeframe", tf.gie3(1, 2)[:14])
    assert finding(shorter, "teeframe.bad_request_length").severity == "error"
    assert "teeframe.truncated" in codes(shorter)


def test_vanilla_request():
    msg = dissect("teeframe", tf.vanilla_gie3(0x33))
    assert span(msg, "teeframe.header") == (0, 6, b"\xff" * 6)
    assert span(msg, "teeframe.token") == (14, 1, 0x33)
    assert msg.values["response_token"] == 0x33 and msg.findings == []


def test_iext_fields():
    msg = dissect("teeframe", small_iext())
    assert msg.name == "iext" and msg.length == 92
    assert span(msg, "teeframe.header") == (0, 6, b"\xff" * 6)
    assert span(msg, "teeframe.identifier") == (10, 4, b"iext")
    assert span(msg, "teeframe.token") == (14, 8, 1193002)
    assert field(msg, "teeframe.token").display == "1193002 (0x12342a)"
    assert span(msg, "teeframe.version") == (22, 6, "0.6.4")
    assert span(msg, "teeframe.name") == (28, 4, "srv")
    assert span(msg, "teeframe.map") == (32, 4, "dm1")
    assert span(msg, "teeframe.map_crc") == (36, 12, -1155017543)
    assert field(msg, "teeframe.map_crc").display == "-1155017543 (0xbb27d4b9)"
    assert span(msg, "teeframe.map_size") == (48, 5, 5805)
    assert span(msg, "teeframe.game_type") == (53, 3, "DM")
    assert span(msg, "teeframe.flags") == (56, 2, 0)
    assert span(msg, "teeframe.num_players") == (58, 2, 1)
    assert span(msg, "teeframe.max_players") == (60, 3, 16)
    assert span(msg, "teeframe.num_clients") == (63, 2, 1)
    assert span(msg, "teeframe.max_clients") == (65, 3, 16)
    assert span(msg, "teeframe.reserved") == (68, 1, "")
    client = field(msg, "teeframe.client")
    assert (client.offset, client.length, client.name) == (69, 23, 'Client "Tëe"')
    assert [(c.key, c.offset, c.length, c.value) for c in client.children] == [
        ("teeframe.client.name", 69, 5, "Tëe"),
        ("teeframe.client.clan", 74, 5, "Clan"),
        ("teeframe.client.country", 79, 4, 276),
        ("teeframe.client.score", 83, 6, -9999),
        ("teeframe.client.is_player", 89, 2, 1),
        ("teeframe.client.reserved", 91, 1, ""),
    ]
    # The negative map CRC real servers print is a note, nothing more.
    assert codes(msg) == ["teeframe.signed_map_crc"]
    assert msg.findings[0].severity == "note"


def test_utf8_names_at_their_byte_limit():
    name16 = "忍者の影忍" + "a"  # 15 + 1 bytes
    msg = dissect("teeframe", small_iext(clients=[(name16, "Ünicode Üb", 392, 0, 1)], map_crc=5))
    assert field(msg, "teeframe.client.name").value == name16
    assert field(msg, "teeframe.client.name").length == 17
    assert msg.findings == []


def test_iex_plus_fields():
    payload = tf.iex_plus(1193002, 2, [("a", "", -1, 5, 0)])
    msg = dissect("teeframe", payload)
    assert msg.name == "iex+"
    assert span(msg, "teeframe.token") == (14, 8, 1193002)
    assert span(msg, "teeframe.packet_number") == (22, 2, 2)
    assert span(msg, "teeframe.reserved") == (24, 1, "")
    client = field(msg, "teeframe.client")
    assert (client.offset, client.length) == (25, 11)
    assert field(msg, "teeframe.client.is_player").display == "0 (spectator)"
    assert msg.findings == []
    assert msg.values["clients"] == [{"name": "a", "clan": "", "country": -1, "score": 5, "is_player": 0}]


def test_inf3_vanilla_reply():
    msg = dissect("teeframe", tf.inf3(0x33, [("x", "y", 1, 2, 1)]))
    assert msg.name == "inf3"
    assert span(msg, "teeframe.token") == (14, 3, 51)
    assert span(msg, "teeframe.version") == (17, 6, "0.6.4")
    assert msg.get("teeframe.map_crc") is None and msg.get("teeframe.reserved") is None
    client = field(msg, "teeframe.client")
    assert [c.key for c in client.children][-1] == "teeframe.client.is_player"
    assert msg.findings == []
    too_many = dissect("teeframe", tf.inf3(1, tf.sample_clients(17), max_players=64, max_clients=64))
    assert "teeframe.too_many_records" in codes(too_many)


def test_legacy_identifiers_are_decoded_with_a_note():
    for ident in (b"fstd", b"gief", b"gie2"):
        msg = dissect("teeframe", b"\xff" * 10 + ident + b"\x05")
        assert msg.name == ident.decode() and codes(msg) == ["teeframe.legacy_message"]
        assert msg.findings[0].severity == "note" and (msg.findings[0].offset, msg.findings[0].length) == (10, 4)
    assert span(dissect("teeframe", b"\xff" * 10 + b"gief\x05"), "teeframe.request_extra") == (14, 1, b"\x05")
    msg = dissect("teeframe", b"\xff" * 10 + b"dtsf" + b"1\x000.6\x00")
    assert msg.name == "dtsf" and span(msg, "teeframe.token") == (14, 2, 1)
    assert span(msg, "teeframe.version") == (16, 4, "0.6") and "teeframe.unterminated_string" in codes(msg)


def test_unrequested_iext_token_minus_one():
    msg = dissect("teeframe", tf.iext(-1, [], map_crc=1))
    assert field(msg, "teeframe.token").value == -1
    assert codes(msg) == ["teeframe.unrequested_info"]
    assert msg.findings[0].severity == "note"


def test_rate_limited_reply_without_records():
    msg = dissect("teeframe", tf.iext(77, [], map_crc=1, num_clients=5, players=3))
    assert codes(msg) == ["teeframe.no_client_records"]
    assert msg.values["clients_omitted"] is True


def test_bad_header():
    payload = bytearray(small_iext(map_crc=1))
    payload[0] = 0x00
    msg = dissect("teeframe", bytes(payload))
    f = finding(msg, "teeframe.bad_header")
    assert (f.offset, f.length) == (0, 6)


def test_a_map_crc_outside_32_bits_is_flagged():
    for crc, codes_found in ((2 ** 32, ["teeframe.bad_map_crc"]), (-2 ** 31 - 1, ["teeframe.bad_map_crc"]),
                             (2 ** 32 - 1, []), (-2 ** 31, ["teeframe.signed_map_crc"])):
        msg = dissect("teeframe", small_iext(map_crc=crc))
        assert [f.code for f in msg.findings] == codes_found, crc
    msg = dissect("teeframe", small_iext(map_crc=2 ** 32))
    crc = field(msg, "teeframe.map_crc")
    assert (msg.findings[0].offset, msg.findings[0].length) == (crc.offset, crc.length)
    assert msg.findings[0].message.startswith("map CRC 4294967296 (spec: Map CRC is the map's CRC, a 32-bit number")


def test_a_request_header_neither_xe_nor_ff_says_both():
    payload = bytes.fromhex("616212340000ffffffff676965332a")
    msg = dissect("teeframe", payload)
    assert [(f.code, f.offset, f.length) for f in msg.findings] == [("teeframe.bad_header", 0, 6)]
    assert msg.findings[0].message.startswith("request header bytes 0-5 are 61 62 12 34 00 00, neither xe (78 65) "
                                              "nor FF FF FF FF FF FF (spec: a response starts")
    gief = dissect("teeframe", bytes.fromhex("786500000000ffffffff67696566"))  # a legacy request: FF only
    assert [f.message.split(" (spec")[0] for f in gief.findings if f.code == "teeframe.bad_header"] == [
        "request header bytes 0-5 are 78 65 00 00 00 00, not FF FF FF FF FF FF"]


def test_bad_decimal():
    payload = small_iext(map_crc=1).replace(b"5805\0", b"58x5\0")
    msg = dissect("teeframe", payload)
    f = finding(msg, "teeframe.bad_decimal")
    assert (f.severity, f.offset, f.length) == ("error", 38, 5)
    assert field(msg, "teeframe.map_size").value is None
    assert field(msg, "teeframe.game_type").value == "DM"  # decoding goes on


def test_unterminated_string():
    payload = small_iext(map_crc=1)[:30]
    msg = dissect("teeframe", payload)
    f = finding(msg, "teeframe.unterminated_string")
    assert (f.severity, f.offset, f.length) == ("error", 28, 2)
    assert field(msg, "teeframe.version").value == "0.6.4"


def test_string_limits():
    msg = dissect("teeframe", small_iext(name="n" * 257, map_name="m" * 33, game_type="g" * 17, map_crc=1,
                                         clients=[("c" * 17, "k" * 13, 0, 0, 1)]))
    limits = sorted(f.message.split(" is ")[0] for f in msg.findings if f.code == "teeframe.string_too_long")
    assert limits == ["Clan", "Game Type", "Map", "Name", "Name"]
    at_limit = dissect("teeframe", small_iext(name="n" * 256, map_name="m" * 32, game_type="g" * 16, map_crc=1,
                                              clients=[("c" * 16, "k" * 12, 0, 0, 1)]))
    assert at_limit.findings == []


def test_bad_version_and_reserved_nonempty():
    msg = dissect("teeframe", small_iext(version="0.7.5", reserved="x", map_crc=1,
                                         clients=[("a", "b", 1, 1, 1, "r")]))
    assert codes(msg) == ["teeframe.bad_version", "teeframe.reserved_nonempty", "teeframe.reserved_nonempty"]


def test_split_record_keeps_the_fields_that_are_there():
    payload = small_iext(map_crc=1)[:-5]  # cut inside the score
    msg = dissect("teeframe", payload)
    f = finding(msg, "teeframe.split_record")
    assert (f.severity, f.offset, f.length) == ("error", 59, 18)
    client = field(msg, "teeframe.client")
    assert client.name == "Client [split]"
    assert (client.offset, client.length) == (59, 18)  # closed where the packet ends, the record cut inside it
    assert [c.value for c in client.children][:3] == ["Tëe", "Clan", 276]
    assert msg.values["clients"] == []
    # Its one record was there, cut: the counts without records that rate-limited servers send are another thing.
    assert "teeframe.no_client_records" not in codes(msg) and "clients_omitted" not in msg.values


def test_packet_too_large():
    msg = dissect("teeframe", tf.iext(5, tf.sample_clients(40), map_crc=1))
    f = finding(msg, "teeframe.packet_too_large")
    assert f.offset == 1400 and f.length == msg.length - 1400


def test_bad_packet_number():
    for number in (0, 64, -1):
        msg = dissect("teeframe", tf.iex_plus(5, number))
        assert codes(msg) == ["teeframe.bad_packet_number"]
        assert (msg.findings[0].offset, msg.findings[0].length) == (16, 1 + len(str(number)))


def test_flags_is_player_and_counts():
    msg = dissect("teeframe", small_iext(flags=2, map_crc=1, clients=[("a", "", 0, 0, 2)], players=20,
                                         max_players=16, max_clients=0))
    assert {"teeframe.bad_flags", "teeframe.bad_is_player", "teeframe.count_mismatch"} <= set(codes(msg))
    mismatch = finding(msg, "teeframe.count_mismatch").message
    assert "Num Players 20 > Max Players 16" in mismatch and "Num Clients 1 > Max Clients 0" in mismatch
    assert "Num Players 20 > Num Clients 1" in mismatch
    assert "Max Players 16 > Max Clients 0" in mismatch  # spectator slots reduce Max Players: never above


def test_padding_bytes_6_to_9_are_ff():
    payload = bytearray(small_iext(map_crc=1))
    payload[6:10] = b"\xff\x00\xff\xff"
    msg = dissect("teeframe", bytes(payload))
    assert codes(msg) == ["teeframe.bad_header"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (6, 4)
    assert msg.findings[0].message.startswith("header bytes 6-9 are ff 00 ff ff, not FF FF FF FF")
    assert span(msg, "teeframe.padding") == (6, 4, b"\xff\x00\xff\xff")


def test_password_flag_display():
    msg = dissect("teeframe", small_iext(flags=1, map_crc=1))
    assert field(msg, "teeframe.flags").display == "1 (password required)"


def test_game_packets_are_left_alone():
    packet = Packet()
    packet.src, packet.sport, packet.dst, packet.dport, packet.transport = "10.0.0.1", 5000, "10.0.0.2", 8303, "udp"
    teeframe = Registry().get("teeframe")
    for game in (bytes([0x00, 0x01, 0x01]) + b"\x41\x00\x05game", b"\x10\x00\x00" + b"\xff" * 20, b""):
        assert not teeframe.claims(game, packet, on_port=True)
    assert teeframe.claims(tf.gie3(1, 2), packet, on_port=False)
    assert teeframe.claims(small_iext(), packet, on_port=False)
    assert not teeframe.claims(b"xe\0\0\0\0\xff\xff\xff\xffnope\x01", packet, on_port=False)



def test_claims_by_the_identifiers_role():
    # header FF FF FF FF FF FF or a request's "xe" marker, then FF FF FF FF and the identifier; off the ports a
    # response needs the FF header, a request either; on them, the identifier alone decides
    packet = Packet()
    packet.src, packet.sport, packet.dst, packet.dport, packet.transport = "10.0.0.1", 5000, "10.0.0.2", 40000, "udp"
    teeframe = Registry().get("teeframe")
    marked, plain, ff = b"xe\x12\x34\0\0", b"\x01" * 6, b"\xff" * 6
    for ident in (b"gie3", b"gief", b"gie2", b"fstd"):
        assert teeframe.claims(marked + b"\xff" * 4 + ident + b"\x07", packet, on_port=False), ident
        assert teeframe.claims(ff + b"\xff" * 4 + ident + b"\x07", packet, on_port=False), ident
        assert not teeframe.claims(plain + b"\xff" * 4 + ident + b"\x07", packet, on_port=False), ident
        assert teeframe.claims(plain + b"\xff" * 4 + ident + b"\x07", packet, on_port=True), ident
    for ident in (b"iext", b"iex+", b"inf3", b"inf2", b"info", b"dtsf"):
        assert teeframe.claims(ff + b"\xff" * 4 + ident + b"\x07", packet, on_port=False), ident
        assert not teeframe.claims(marked + b"\xff" * 4 + ident + b"\x07", packet, on_port=False), ident
        assert teeframe.claims(marked + b"\xff" * 4 + ident + b"\x07", packet, on_port=True), ident
    assert not teeframe.claims(ff + b"\xff\xfe\xff\xff" + b"gie3\x07", packet, on_port=True)  # padding broken
    assert not teeframe.claims(ff + b"\xff" * 4 + b"gie4\x07", packet, on_port=True)  # no such identifier

def test_summary_path_matches_tree_path():
    payload = tf.response_packets(5, tf.sample_clients(64))[0]
    light, full = dissect("teeframe", payload, tree=False), dissect("teeframe", payload, tree=True)
    assert light.fields == [] and light.values == full.values and codes(light) == codes(full)


def test_invalid_utf8_name():
    payload = small_iext(map_crc=1).replace(b"srv\0", b"s\xffv\0")
    msg = dissect("teeframe", payload)
    f = finding(msg, "teeframe.bad_utf8")
    assert (f.offset, f.length) == (28, 4)
    assert field(msg, "teeframe.name").value == "s\ufffdv"


def test_bad_is_player_reported_beside_a_bad_country():
    msg = dissect("teeframe", small_iext(map_crc=1, clients=[("a", "", "x", 0, 7)]))
    assert {"teeframe.bad_decimal", "teeframe.bad_is_player"} <= set(codes(msg))


# A client record's node: its name and value from the name, its display from the other values; the numbers' texts
# as str() writes them (decimal_text's table, a C long long's digits, or beyond), "None" where there is no number.
@pytest.mark.parametrize(("country", "score", "is_player", "shown"), [
    (276, -9999, 1, "country 276, score -9999, player"),
    (-1, 4095, 0, "country -1, score 4095, spectator"),
    (0, 4096, 2, "country 0, score 4096, spectator"),
    ("x", "-0", "", "country None, score 0, spectator"),
    ("007", "9" * 18, 1, "country 7, score 999999999999999999, player"),
    (-2 ** 63, 2 ** 63 - 1, 1, "country -9223372036854775808, score 9223372036854775807, player"),
    (-2 ** 63 - 1, 2 ** 63, 1, "country -9223372036854775809, score 9223372036854775808, player"),
    (1, "-" + "5" * 30, "1", "country 1, score -" + "5" * 30 + ", player"),
])
def test_client_title_shows_the_records_values(country, score, is_player, shown):
    record = tf.client_record("Tëe", "Clan", country, score, is_player)
    msg = dissect("teeframe", small_iext(map_crc=1, clients=[]) + record + tf.client_record("b", "", 1, 2, 0))
    first, second = msg.fields_with("teeframe.client")
    start = len(small_iext(map_crc=1, clients=[]))
    assert (first.offset, first.length, first.name, first.value) == (start, len(record), 'Client "Tëe"', "Tëe")
    assert first.display == f'clan "Clan", {shown}'
    assert (second.offset, second.name, second.display) == (start + len(record), 'Client "b"',
                                                           'clan "", country 1, score 2, spectator')
    values = [child.value for child in first.children[2:5]]
    assert msg.values["clients"][0] == {"name": "Tëe", "clan": "Clan", "country": values[0], "score": values[1],
                                        "is_player": values[2]}
    assert msg.values["clients"].players == (values[2] == 1)


def test_a_05_record_title_shows_its_score():
    s = tf.s
    body = s(7) + s("0.5.1") + s("old") + s("dm1") + s("DM") + s(0) + s(-1) + s(2) + s(16)
    records = s("tee") + s(5) + s("bob") + s("-" + "9" * 20) + s("x") + s("y")
    msg = dissect("teeframe", b"\xff" * 10 + b"inf2" + body + records)
    clients = msg.fields_with("teeframe.client")
    assert [(c.offset, c.length, c.name, c.value, c.display) for c in clients] == [
        (43, 6, 'Client "tee"', "tee", "score 5"),
        (49, 26, 'Client "bob"', "bob", "score -" + "9" * 20),
        (75, 4, 'Client "x"', "x", "score None")]
    assert msg.values["clients"] == [{"name": "tee", "score": 5}, {"name": "bob", "score": -int("9" * 20)},
                                     {"name": "x", "score": None}]
    assert msg.values["clients"].players == 0


# The shared cursor reads no number longer than its own limit; should that limit be above what int()
# converts (4300 digits), int()'s ValueError must still not cost the rest of the message.
@pytest.fixture(params=["cursor limit", "int() limit"])
def number_limit(request, monkeypatch):
    if request.param == "int() limit":
        monkeypatch.setattr(cursor, "MAX_DECIMAL_DIGITS", 10 ** 9, raising=False)


@pytest.mark.usefixtures("number_limit")
def test_a_decimal_over_the_int_digit_limit_is_bad_decimal_and_decoding_goes_on():
    digits = "9" * 5000  # Python's int() refuses more than 4300 digits
    msg = dissect("teeframe", small_iext(map_crc=1, map_size=digits))
    f = finding(msg, "teeframe.bad_decimal")
    assert (f.severity, f.offset, f.length) == ("error", 38, 5001)
    assert "5000 digits" in f.message
    assert span(msg, "teeframe.map_size")[:2] == (38, 5001) and field(msg, "teeframe.map_size").value is None
    assert span(msg, "teeframe.game_type") == (5039, 3, "DM")  # decoding goes on
    assert field(msg, "teeframe.max_clients").value == 16
    assert field(msg, "teeframe.client.score").value == -9999
    light = dissect("teeframe", small_iext(map_crc=1, map_size=digits), tree=False)
    assert light.values["game_type"] == "DM" and codes(light) == codes(msg)


@pytest.mark.usefixtures("number_limit")
def test_a_long_number_in_a_client_record_keeps_the_record():
    msg = dissect("teeframe", small_iext(map_crc=1, clients=[("a", "b", 1, "7" * 4400, 1), ("c", "", 2, 3, 0)]))
    f = finding(msg, "teeframe.bad_decimal")
    first = msg.fields_with("teeframe.client")[0]
    assert [(c.key, c.value) for c in first.children][:3] == [
        ("teeframe.client.name", "a"), ("teeframe.client.clan", "b"), ("teeframe.client.country", 1)]
    score = first.children[3]
    assert (f.offset, f.length) == (score.offset, score.length) == (score.offset, 4401) and score.value is None
    assert len(first.children) == 6
    assert [c["name"] for c in msg.values["clients"]] == ["a", "c"]
    assert msg.values["clients"][0]["score"] is None and msg.values["clients"][1]["score"] == 3
    assert (first.name, first.display) == ('Client "a"', 'clan "b", country 1, score None, player')


@pytest.mark.parametrize("tree", [True, False])
def test_server_field_findings_come_in_field_order(tree):
    # token "1193002" 14-21, version 22-27, name 28-31, map 32-65 (33 bytes and the terminator),
    # map CRC 66-77, map size 78-82, game type 83-85, flags 86-87
    payload = small_iext(version="0.7.5", map_name="m" * 33, flags=2)
    msg = dissect("teeframe", payload, tree=tree)
    assert [(f.code, f.offset, f.length) for f in msg.findings] == [
        ("teeframe.bad_version", 22, 6), ("teeframe.string_too_long", 32, 34),
        ("teeframe.signed_map_crc", 66, 12), ("teeframe.bad_flags", 86, 2)]
    assert (msg.values["map"], msg.values["map_crc"], msg.values["flags"]) == ("m" * 33, -1155017543, 2)


@pytest.mark.parametrize("tree", [True, False])
def test_server_fields_read_one_by_one_after_a_bad_number(tree):
    # map size "58x5" (78-82) is no number: the fields are read again one by one, with the same order
    payload = small_iext(version="0.7.5", map_name="m" * 33, map_size="58x5", flags=2)
    msg = dissect("teeframe", payload, tree=tree)
    assert [(f.code, f.offset, f.length) for f in msg.findings] == [
        ("teeframe.bad_version", 22, 6), ("teeframe.string_too_long", 32, 34),
        ("teeframe.signed_map_crc", 66, 12), ("teeframe.bad_decimal", 78, 5), ("teeframe.bad_flags", 86, 2)]
    assert (msg.values["map_size"], msg.values["game_type"], msg.values["max_clients"]) == (None, "DM", 16)
    if tree:
        assert [f.key for f in msg.fields].count("teeframe.version") == 1  # the first reading left no fields
        assert span(msg, "teeframe.map_size") == (78, 5, None)


@pytest.mark.parametrize("tree", [True, False])
def test_a_negative_count_is_read_one_by_one_and_has_no_value(tree):
    # map CRC 36-47 may be negative; Num Players "-1" (58-60) may not: bad_decimal, and no value
    msg = dissect("teeframe", small_iext(players=-1), tree=tree)
    assert [(f.code, f.severity, f.offset, f.length) for f in msg.findings] == [
        ("teeframe.signed_map_crc", "note", 36, 12), ("teeframe.bad_decimal", "warning", 58, 3)]
    assert "Num Players is negative (-1)" in msg.findings[1].message
    assert (msg.values["num_players"], msg.values["max_players"]) == (None, 16)
    if tree:
        count = field(msg, "teeframe.num_players")
        assert (count.offset, count.length, count.value, count.display) == (58, 3, None, '"-1" (negative)')


def test_a_server_field_cut_off_leaves_the_fields_before_it_once():
    msg = dissect("teeframe", small_iext(map_crc=1)[:30])  # the name "s" of "srv" at 28-29, no terminator
    assert [(f.key, f.offset, f.length, f.name) for f in msg.fields] == [
        ("teeframe.header", 0, 6, "Header"), ("teeframe.padding", 6, 4, "Padding"),
        ("teeframe.identifier", 10, 4, "Identifier"), ("teeframe.token", 14, 8, "Token"),
        ("teeframe.version", 22, 6, "Version"), ("teeframe.name", 28, 2, "Name [unterminated]")]


@pytest.mark.parametrize("key, value, shown", [
    ("name", "srv", '"srv"'), ("name", "", '""'), ("name", None, ""), ("name", 7, "7"),
    ("token", 0x12342A, "1193002 (0x12342a)"), ("token", -1, "-1 (unrequested)"), ("token", -2, "-2"),
    ("token", None, ""), ("map_crc", -1, "-1 (0xffffffff)"), ("map_crc", 2 ** 32 - 1, "4294967295 (0xffffffff)"),
    ("map_crc", 2 ** 40 + 10, "1099511627786 (not 32 bits)"), ("map_crc", -2 ** 31 - 1, "-2147483649 (not 32 bits)"),
    ("client.is_player", 1, "1 (player)"), ("client.is_player", 0, "0 (spectator)"), ("client.is_player", 5, "5"),
    ("flags", 1, "1 (password required)"), ("flags", 3, "3"),
    ("identifier", b"iext", '"iext" (Server Information)'), ("identifier", bytearray(b"zzzz"), '"zzzz" (unknown)')])
def test_field_displays_of_every_kind_of_value(key, value, shown):
    """What -V and JSON show of a field: its formatter's text, and the plain display of a value it does not take."""
    spec = F.entries[f"teeframe.{key}"]
    assert new_field(spec.key, spec.name, 0, 1, value, spec.fmt).display == shown


# Without a tree (the summary and --stats), a client record with nothing to flag is kept by its offset and made
# into its dict only when read; any other is read with its checks, as the tree path reads every record.
QUICK_CLIENTS = [("Tëe", "Clän", 276, -9999, 1), ("忍者の影忍", "", -1, 0, 0), ("a", "b", 7, "007", "-0"),
                 ("x" * 16, "y" * 12, 840, "9" * 18, 1), ("\ufffd", "", 0, 0, 0)]  # U+FFFD: valid UTF-8


def test_records_without_a_tree_are_kept_by_their_offsets():
    payload = tf.iext(7, QUICK_CLIENTS, map_crc=1)
    head = len(tf.HEADER + b"iext" + tf.iext_fields(7, clients=QUICK_CLIENTS, map_crc=1))
    sizes = [len(tf.client_record(*client)) for client in QUICK_CLIENTS]
    light, full = dissect("teeframe", payload, tree=False), dissect("teeframe", payload, tree=True)
    records = light.values["clients"]
    assert isinstance(records, ClientRecords) and len(records) == 5 and records.players == 2
    assert records.items == [head, head + sizes[0], head + sum(sizes[:2]), head + sum(sizes[:3]),
                             head + sum(sizes[:4])]
    assert [child.offset for child in full.fields_with("teeframe.client")] == records.items
    assert (records.base, records.stop, records.data) == (head, len(payload), payload[head:])  # only their bytes
    assert records[2] == {"name": "a", "clan": "b", "country": 7, "score": 7, "is_player": 0}
    assert records.items[2] == records[2] and type(records.items[3]) is int  # made when read, and kept
    assert records == full.values["clients"] and list(records) == list(full.values["clients"])
    assert records[3] == {"name": "x" * 16, "clan": "y" * 12, "country": 840, "score": 10 ** 18 - 1,
                          "is_player": 1}
    assert records[-5]["name"] == "Tëe" and records[4]["name"] == "\ufffd"
    assert records[1:3] == full.values["clients"][1:3]
    assert records[::-2] == full.values["clients"][::-2] and records[7:] == full.values["clients"][7:]
    assert pickle.loads(pickle.dumps(records)) == full.values["clients"]
    assert light.findings == full.findings == [] and light.info == full.info


@pytest.mark.parametrize("client", [
    ("x" * 17, "", 0, 0, 1),           # name over 16 bytes
    ("a", "y" * 13, 0, 0, 1),          # clan over 12 bytes
    (b"\xff", "", 0, 0, 1),            # not UTF-8
    (b"\xed\xa0\x80", "", 0, 0, 1),    # a surrogate's bytes: not UTF-8 either
    ("a", "", "x", 0, 1),              # country not a number
    ("a", "", 0, "-", 1),              # a lone minus sign
    ("a", "", 0, "9" * 19, 1),         # more digits than a record read without its values takes
    ("a", "", 0, 0, 2),                # Is Player beyond 1
    ("a", "", 0, 0, -1),
    ("a", "", 0, 0, ""),
])
def test_records_with_something_to_check_are_read_with_their_checks(client):
    clients = [("ok", "", 1, 2, 1), client, ("ok", "", 3, 4, 0)]
    payload = tf.iext(7, clients, map_crc=1)
    light, full = dissect("teeframe", payload, tree=False), dissect("teeframe", payload, tree=True)
    assert [f.as_dict() for f in light.findings] == [f.as_dict() for f in full.findings]
    records = light.values["clients"]
    assert records == full.values["clients"] and light.info == full.info
    # A packet that holds a record read with its checks keeps dicts only, not the bytes around that record.
    assert [type(item) for item in records.items] == [dict, dict, dict] and records.data == b"" and records.base == -1


def test_a_long_reserved_string_between_records_is_not_kept():
    clients = [("a", "", 0, 0, 1), ("r", "", 0, 0, 1, "R" * 60000), ("b", "", 0, 0, 0)]
    payload = tf.iext(7, clients, map_crc=1)
    light, full = dissect("teeframe", payload, tree=False), dissect("teeframe", payload, tree=True)
    kept = full.values["clients"].items  # with a tree, each record's values until it is read: the String not among them
    assert [type(item) for item in kept] == [list, list, list] and not any("R" * 60000 in item for item in kept)
    records = light.values["clients"]
    assert records.data == b"" and [type(item) for item in records.items] == [dict, dict, dict]
    assert records == full.values["clients"] and records.players == 2
    assert codes(light) == codes(full) == ["teeframe.packet_too_large", "teeframe.reserved_nonempty"]


def test_a_packet_without_records_kept_by_their_offsets_keeps_none_of_its_bytes():
    payload = tf.iext(7, [("x" * 17, "", 0, 0, 1)], map_crc=1, name="n" * 1000)  # a long name: read with checks
    records = dissect("teeframe", payload, tree=False).values["clients"]
    assert [type(item) for item in records.items] == [list] and records.data == b"" and records.base == -1


def test_a_reserved_string_and_a_cut_record_are_read_with_their_checks():
    clients = [("ok", "", 1, 2, 1), ("r", "", 0, 0, 1, "not empty")]
    payload = tf.iext(7, clients, map_crc=1) + tf.client_record("cut", "", 0, 0, 1)[:-3]
    light, full = dissect("teeframe", payload, tree=False), dissect("teeframe", payload, tree=True)
    assert codes(full) == ["teeframe.reserved_nonempty", "teeframe.split_record"]
    assert [f.as_dict() for f in light.findings] == [f.as_dict() for f in full.findings]
    assert [type(item) for item in light.values["clients"].items] == [dict, dict]
    assert light.values["clients"] == full.values["clients"] and light.values["split_record"] is True


@pytest.mark.parametrize("tree", [False, True])
def test_client_records_give_their_dicts_at_once(tree):
    """dicts(): every record's dict, in order, in a list of their own, whether kept by its offset (no tree) or as its
    values (a tree); the records stay made."""
    clients = [("a", "A", 276, -5, 1), ("b", "", 0, 7, 0), ("c", "C", -1, 4096, 1)]
    records = dissect("teeframe", tf.iext(7, clients, map_crc=1), tree=tree).values["clients"]
    assert [type(item) for item in records.items] == [list if tree else int] * 3
    dicts = records.dicts()
    assert dicts == [{"name": n, "clan": c, "country": k, "score": s, "is_player": p} for n, c, k, s, p in clients]
    assert dicts is not records.items and records.items == dicts and [type(i) for i in records.items] == [dict] * 3
    assert records.dicts() == dicts and records.players == 2


def test_client_records_take_indexes_as_a_list_does():
    """A record by index, negative too; an index out of range of any size raises IndexError and one that is not an
    int TypeError, the same in the compiled build (its index a C integer) as in the pure one."""
    clients = [("a", "A", 276, -5, 1), ("b", "", 0, 7, 0)]
    records = dissect("teeframe", tf.iext(7, clients, map_crc=1), tree=False).values["clients"]
    assert records[-1] == records[1] == {"name": "b", "clan": "", "country": 0, "score": 7, "is_player": 0}
    assert records[True] == records[1] and records[0:1] == [records[0]]
    for index in (2, -3, 2 ** 70, -2 ** 70):
        with pytest.raises(IndexError, match="list index out of range"):
            records[index]
    for index in (1.0, "1", None):
        with pytest.raises(TypeError):
            records[index]


def test_utf8_valid_agrees_with_pythons_decoder():
    def decodes(data):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    samples = [bytes([a, b]) for a in range(256) for b in range(256)]
    samples += [bytes([a, b, c, d]) for a in range(0xE0, 0xF6) for b in range(0x70, 0xD0, 3)
                for c in (0x7F, 0x80, 0xBF, 0xC0) for d in (0x41, 0x80, 0xBF, 0xC0)]
    samples += [bytes([a, b, c]) for a in range(0xE0, 0xF0) for b in range(0x70, 0xD0) for c in (0x7F, 0x80, 0xBF)]
    for data in samples:
        assert utf8_valid(b"<" + data + b">", 1, len(data) + 1) == decodes(data), data
    assert utf8_valid("Tëe 忍者 🎮".encode(), 0, len("Tëe 忍者 🎮".encode()))
    assert not utf8_valid(b"\xe5\xbf", 0, 2)  # a character cut off at the end of its field
