"""Older peers' TeeFrame messages, outside the spec: decoded by their own layouts, with a note."""

from helpers import codes, dissect, field, span

from dissect.capture.layers import Packet
from dissect.registry import Registry

FF10 = b"\xff" * 10


def s(text):
    return str(text).encode("utf-8") + b"\0"


def legacy_note(msg):
    (note,) = [f for f in msg.findings if f.code == "teeframe.legacy_message"]
    assert note.severity == "note"
    return note


def test_qstat_probe_is_ten_ff_and_gie():
    payload = FF10 + b"gie"
    assert len(payload) == 13
    msg = dissect("teeframe", payload)
    assert msg.name == "gie" and msg.info == "qstat probe gie (gief cut short)"
    assert span(msg, "teeframe.header") == (0, 6, b"\xff" * 6)
    assert span(msg, "teeframe.padding") == (6, 4, b"\xff" * 4)
    assert span(msg, "teeframe.identifier") == (10, 3, b"gie")
    note = legacy_note(msg)
    assert (note.offset, note.length) == (10, 3) and "qstat" in note.message
    assert codes(msg) == ["teeframe.legacy_message"]


def test_legacy_requests_are_claimed_on_any_port_and_probes_that_differ_are_not():
    packet = Packet()
    packet.src, packet.sport, packet.dst, packet.dport, packet.transport = "10.0.0.1", 5000, "10.0.0.2", 9999, "udp"
    teeframe = Registry().get("teeframe")
    for payload in (FF10 + b"gie", FF10 + b"gief", FF10 + b"gie2\x07", FF10 + b"fstd\x2a"):
        assert teeframe.claims(payload, packet, on_port=False), payload
    for payload in (FF10 + b"gix", b"\0" * 10 + b"gie", FF10 + b"gi"):
        assert not teeframe.claims(payload, packet, on_port=False), payload


def test_gief_has_no_token():
    msg = dissect("teeframe", FF10 + b"gief")
    assert msg.name == "gief" and msg.get("teeframe.token") is None
    assert span(msg, "teeframe.identifier") == (10, 4, b"gief")
    assert "token" not in msg.values and codes(msg) == ["teeframe.legacy_message"]


def test_gie2_and_fstd_carry_a_token_byte():
    for ident in (b"gie2", b"fstd"):
        msg = dissect("teeframe", FF10 + ident + b"\x2a")
        assert span(msg, "teeframe.token") == (14, 1, 42)
        assert msg.values["response_token"] == 42 and msg.info.endswith("token=42")
        assert codes(msg) == ["teeframe.legacy_message"]
    cut = dissect("teeframe", FF10 + b"gie2")
    assert codes(cut) == ["teeframe.legacy_message", "teeframe.truncated"]


def inf2_body(with_token=True):
    return ((s(7) if with_token else b"") + s("0.5.1") + s("old server") + s("dm1") + s("DM") + s(0) + s(-1)
            + s(2) + s(16) + s("tee") + s(5) + s("bob") + s(-3))


def test_inf2_layout():
    msg = dissect("teeframe", FF10 + b"inf2" + inf2_body())
    assert msg.name == "inf2"
    assert span(msg, "teeframe.token") == (14, 2, 7)
    assert span(msg, "teeframe.version") == (16, 6, "0.5.1")  # no bad_version: 0.5 is what these peers send
    assert span(msg, "teeframe.name") == (22, 11, "old server")
    assert span(msg, "teeframe.map") == (33, 4, "dm1")
    assert span(msg, "teeframe.game_type") == (37, 3, "DM")
    assert span(msg, "teeframe.flags") == (40, 2, 0)
    assert span(msg, "teeframe.progression") == (42, 3, -1)
    assert span(msg, "teeframe.num_players") == (45, 2, 2)
    assert span(msg, "teeframe.max_players") == (47, 3, 16)
    assert msg.get("teeframe.num_clients") is None
    clients = msg.fields_with("teeframe.client")
    assert [(c.offset, c.length, c.name) for c in clients] == [(50, 6, 'Client "tee"'), (56, 7, 'Client "bob"')]
    assert [(c.key, c.offset, c.length, c.value) for c in clients[1].children] == [
        ("teeframe.client.name", 56, 4, "bob"), ("teeframe.client.score", 60, 3, -3)]
    assert msg.values["clients"] == [{"name": "tee", "score": 5}, {"name": "bob", "score": -3}]
    assert codes(msg) == ["teeframe.legacy_message"]
    assert msg.info == 'Server Information (0.5) token=7 "old server" map=dm1 players 2/16 (2 listed)'


def test_info_is_inf2_without_the_token():
    msg = dissect("teeframe", FF10 + b"info" + inf2_body(with_token=False))
    assert msg.name == "info" and msg.get("teeframe.token") is None
    assert span(msg, "teeframe.version") == (14, 6, "0.5.1")
    assert span(msg, "teeframe.progression") == (40, 3, -1)
    assert len(msg.values["clients"]) == 2 and codes(msg) == ["teeframe.legacy_message"]
    light = dissect("teeframe", FF10 + b"info" + inf2_body(with_token=False), tree=False)
    assert light.values == msg.values


def dtsf(offset_bytes, records, token=42):
    head = (FF10 + b"dtsf" + s(token) + s("0.6.4, 16.3") + s("ddnet") + s("ctf5") + s("CTF") + s(0) + s(30)
            + s(64) + s(30) + s(64))
    return head + offset_bytes + b"".join(s(n) + s(c) + s(k) + s(sc) + s(p) for n, c, k, sc, p in records)


def test_dtsf_layout_with_a_packed_offset():
    payload = dtsf(b"\x18", [("a", "k", 276, 9, 1), ("b", "", -1, 0, 0)])
    msg = dissect("teeframe", payload)
    assert span(msg, "teeframe.token") == (14, 3, 42)
    assert span(msg, "teeframe.num_clients") == (52, 3, 30)
    assert span(msg, "teeframe.max_clients") == (55, 3, 64)
    assert span(msg, "teeframe.offset") == (58, 1, 24)
    first = msg.fields_with("teeframe.client")[0]
    assert (first.offset, first.length) == (59, 12)
    assert [c.key for c in first.children][-1] == "teeframe.client.is_player"
    assert msg.values["offset"] == 24 and len(msg.values["clients"]) == 2
    assert codes(msg) == ["teeframe.legacy_message"]
    assert msg.info.endswith("records 24-25")


def test_packed_integers_of_several_bytes_and_negative():
    # 100 = 0b1_100100: the low six bits 0x24 with bit 7 set, then 1; -1 is the sign bit alone.
    assert field(dissect("teeframe", dtsf(b"\xa4\x01", [])), "teeframe.offset").value == 100
    assert span(dissect("teeframe", dtsf(b"\xa4\x01", [])), "teeframe.offset")[:2] == (58, 2)
    assert field(dissect("teeframe", dtsf(b"\x40", [])), "teeframe.offset").value == -1
    cut = dissect("teeframe", dtsf(b"\x80", []))
    assert "teeframe.truncated" in codes(cut)


def test_dtsf_holds_at_most_24_records():
    msg = dissect("teeframe", dtsf(b"\x00", [("x", "", 0, 0, 1)] * 25))
    assert codes(msg) == ["teeframe.legacy_message", "teeframe.too_many_records"]
