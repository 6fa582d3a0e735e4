"""NetQuake control packets: every message, every field's offset, length and value, every finding."""

import json
import struct

import pytest

import netquake_peer as nq
from conftest import run_cli
from helpers import codes, dissect, field, span


def test_ccreq_server_info_fields():
    payload = nq.ccreq_server_info()
    assert payload == bytes.fromhex("8000000c02") + b"QUAKE\0\x03"
    msg = dissect("netquake", payload)
    assert msg.name == "CCREQ_SERVER_INFO"
    assert span(msg, "netquake.flags") == (0, 2, 0x8000)
    assert span(msg, "netquake.length") == (2, 2, 12)
    assert span(msg, "netquake.control.command") == (4, 1, 0x02)
    assert span(msg, "netquake.control.game_name") == (5, 6, "QUAKE")
    assert span(msg, "netquake.control.net_protocol_version") == (11, 1, 3)
    assert field(msg, "netquake.control.command").display == "CCREQ_SERVER_INFO (0x02)"
    assert field(msg, "netquake.flags").display == "0x8000 (CTL)"
    assert msg.findings == []
    assert msg.info == 'CCREQ_SERVER_INFO game="QUAKE" version=3'


def test_ccreq_connect_fields():
    msg = dissect("netquake", nq.ccreq_connect())
    assert msg.name == "CCREQ_CONNECT"
    assert span(msg, "netquake.control.game_name") == (5, 6, "QUAKE")
    assert span(msg, "netquake.control.net_protocol_version") == (11, 1, 3)
    assert msg.findings == []


def test_ccreq_player_info_fields():
    msg = dissect("netquake", nq.ccreq_player_info(2))
    assert msg.name == "CCREQ_PLAYER_INFO"
    assert span(msg, "netquake.length") == (2, 2, 6)
    assert span(msg, "netquake.control.player_number") == (5, 1, 2)
    assert msg.findings == []


def test_ccreq_rule_info_first_and_next():
    first = dissect("netquake", nq.ccreq_rule_info(""))
    assert span(first, "netquake.control.rule") == (5, 1, "")
    nxt = dissect("netquake", nq.ccreq_rule_info("fraglimit"))
    assert span(nxt, "netquake.control.rule") == (5, 10, "fraglimit")
    assert first.findings == [] and nxt.findings == []


def test_ccrep_accept_port_little_endian_with_note():
    payload = nq.ccrep_accept(26100)
    assert payload[5:9] == struct.pack("<i", 26100)
    msg = dissect("netquake", payload)
    assert msg.name == "CCREP_ACCEPT"
    assert span(msg, "netquake.control.port") == (5, 4, 26100)
    assert codes(msg) == ["netquake.little_endian_long"]
    assert msg.findings[0].severity == "note"


def test_ccrep_accept_big_endian_peer_is_read_big_endian():
    payload = nq.control(0x81, struct.pack(">i", 26100))
    msg = dissect("netquake", payload)
    assert span(msg, "netquake.control.port") == (5, 4, 26100)
    assert codes(msg) == ["netquake.big_endian_long"]


def test_big_endian_player_with_colors_0_is_settled_by_frags_and_connect_time():
    """Colors 0 reads alike both ways: a big-endian peer's connect_time (754) would be negative read
    little-endian, so the message is read big-endian; a little-endian peer's stays little-endian."""
    body = bytes([2]) + b"Ranger\0"
    big = dissect("netquake", nq.control(0x84, body + struct.pack(">iii", 0, 12, 754) + b"x\0"))
    assert span(big, "netquake.control.colors") == (13, 4, 0)
    assert span(big, "netquake.control.colors.shirt") == (16, 1, 0)
    assert span(big, "netquake.control.frags") == (17, 4, 12)
    assert span(big, "netquake.control.connect_time") == (21, 4, 754)
    assert codes(big) == ["netquake.big_endian_long"]
    assert (big.findings[0].offset, big.findings[0].length) == (13, 4)
    little = dissect("netquake", nq.ccrep_player_info(2, "Ranger", 0, 12, 754, "x"))
    assert span(little, "netquake.control.frags") == (17, 4, 12)
    assert span(little, "netquake.control.connect_time") == (21, 4, 754)
    assert codes(little) == ["netquake.little_endian_long"]
    # A connect_time of 0 reads alike both ways too: the frags tell (12 big-endian is 201,326,592 little-endian).
    zero = dissect("netquake", nq.control(0x84, body + struct.pack(">iii", 0, 12, 0) + b"x\0"))
    assert span(zero, "netquake.control.frags") == (17, 4, 12)
    assert codes(zero) == ["netquake.big_endian_long"]
    # The spec's own byte order with a connect time whose little-endian reading is positive (60: 1,006,632,960).
    minute = dissect("netquake", nq.control(0x84, body + struct.pack(">iii", 0, 5, 60) + b"x\0"))
    assert (span(minute, "netquake.control.frags"), span(minute, "netquake.control.connect_time")) == \
        ((17, 4, 5), (21, 4, 60))
    assert codes(minute) == ["netquake.big_endian_long"]
    # Nothing tells (frags and connect time 0): the little-endian reading of real peers stays.
    nothing = dissect("netquake", nq.control(0x84, body + struct.pack(">iii", 0, 0, 0) + b"x\0"))
    assert codes(nothing) == ["netquake.little_endian_long"]


def test_ccrep_reject_reason():
    msg = dissect("netquake", nq.ccrep_reject("Server is full.\n"))
    assert msg.name == "CCREP_REJECT"
    assert span(msg, "netquake.control.reason") == (5, 17, "Server is full.\n")
    assert msg.findings == []


def test_ccrep_server_info_fields():
    payload = nq.ccrep_server_info("10.0.0.1:26000", "My Server", "e1m1", 3, 8)
    msg = dissect("netquake", payload)
    assert msg.name == "CCREP_SERVER_INFO"
    assert span(msg, "netquake.length") == (2, 2, 38)
    assert span(msg, "netquake.control.server_address") == (5, 15, "10.0.0.1:26000")
    assert span(msg, "netquake.control.host_name") == (20, 10, "My Server")
    assert span(msg, "netquake.control.level_name") == (30, 5, "e1m1")
    assert span(msg, "netquake.control.current_players") == (35, 1, 3)
    assert span(msg, "netquake.control.max_players") == (36, 1, 8)
    assert span(msg, "netquake.control.net_protocol_version") == (37, 1, 3)
    assert msg.findings == []
    assert msg.values["current_players"] == 3


def test_ccrep_player_info_fields_and_colors():
    payload = nq.ccrep_player_info(1, "Ranger", 4 * 16 + 13, 12, 754, "192.0.2.11:26000")
    msg = dissect("netquake", payload)
    assert msg.name == "CCREP_PLAYER_INFO"
    assert span(msg, "netquake.control.player_number") == (5, 1, 1)
    assert span(msg, "netquake.control.name") == (6, 7, "Ranger")
    assert span(msg, "netquake.control.colors") == (13, 4, 77)
    assert span(msg, "netquake.control.colors.shirt") == (13, 1, 4)
    assert span(msg, "netquake.control.colors.pants") == (13, 1, 13)
    assert span(msg, "netquake.control.frags") == (17, 4, 12)
    assert span(msg, "netquake.control.connect_time") == (21, 4, 754)
    assert span(msg, "netquake.control.address") == (25, 17, "192.0.2.11:26000")
    assert msg.length == 42
    assert codes(msg) == ["netquake.little_endian_long"]


def test_negative_frags():
    msg = dissect("netquake", nq.ccrep_player_info(0, "Grunt", 0, -1, 31, "x"))
    assert field(msg, "netquake.control.frags").value == -1


def test_colors_out_of_range():
    msg = dissect("netquake", nq.ccrep_player_info(0, "Rainbow", 0xEF, 1, 2, "x"))
    assert "netquake.bad_colors" in codes(msg)
    bad = [f for f in msg.findings if f.code == "netquake.bad_colors"][0]
    assert (bad.offset, bad.length, bad.severity) == (14, 4, "warning")
    assert "0-13" in bad.message


def test_ccrep_rule_info_and_end_of_rules():
    msg = dissect("netquake", nq.ccrep_rule_info("fraglimit", "20"))
    assert span(msg, "netquake.control.rule") == (5, 10, "fraglimit")
    assert span(msg, "netquake.control.value") == (15, 3, "20")
    end = dissect("netquake", nq.ccrep_rule_info())
    assert end.length == 5
    assert end.values["end_of_rules"] is True
    assert field(end, "netquake.control.end_of_rules").value is True
    assert end.findings == []
    assert end.info == "CCREP_RULE_INFO end of rules"


def test_data_and_ack_packets():
    msg = dissect("netquake", nq.data_packet(0x0009, 7, b"\x04abc"))
    assert msg.name == "data"
    assert span(msg, "netquake.flags") == (0, 2, 0x0009)
    assert span(msg, "netquake.sequence") == (4, 4, 7)
    assert span(msg, "netquake.data") == (8, 4, b"\x04abc")
    assert field(msg, "netquake.flags").display == "0x0009 (DATA|EOM)"
    ack = dissect("netquake", nq.data_packet(0x0002, 7))
    assert ack.name == "ack" and ack.info == "ACK seq=7" and ack.findings == []
    nak = dissect("netquake", nq.data_packet(0x0004, 7))
    assert nak.name == "nak" and nak.info == "NAK seq=7" and nak.findings == []


@pytest.mark.parametrize("flags, name, info, shown", [
    (0x0000, "unknown_data", "0x0000 seq=7 len=1", "0x0000 (none)"),
    (0x0008, "unknown_data", "EOM seq=7 len=1", "0x0008 (EOM)"),          # EOM without DATA
    (0x0003, "data", "DATA|ACK seq=7 len=1", "0x0003 (DATA|ACK)"),
    (0x0014, "nak", "NAK|UNRELIABLE seq=7 len=1", "0x0014 (NAK|UNRELIABLE)"),
])
def test_data_flags_no_real_peer_sends_are_named_as_read_and_flagged(flags, name, info, shown):
    """Forced (-d, --payload), a data packet whose flags are none of DATA, DATA|EOM, ACK, NAK and UNRELIABLE is named
    by the first of DATA, ACK, NAK, UNRELIABLE it carries (it was "nak" for any without DATA, ACK or UNRELIABLE)."""
    msg = dissect("netquake", nq.data_packet(flags, 7, b"x"))
    assert (msg.name, msg.info) == (name, info)
    assert [(f.code, f.severity, f.offset, f.length) for f in msg.findings] == [
        ("netquake.unknown_data_flags", "warning", 0, 2)]
    assert msg.findings[0].message.startswith(f"data packet flags are {shown} (beyond the spec")


def test_length_mismatch():
    payload = bytearray(nq.ccreq_server_info())
    payload[3] = 40
    msg = dissect("netquake", bytes(payload))
    assert codes(msg) == ["netquake.length_mismatch"]
    finding = msg.findings[0]
    assert (finding.offset, finding.length, finding.severity) == (2, 2, "error")
    assert "inclusive of this header" in finding.message
    assert field(msg, "netquake.control.game_name").value == "QUAKE"  # still decoded


def test_bad_flags():
    payload = bytearray(nq.ccreq_server_info())
    payload[1] = 0x01
    msg = dissect("netquake", bytes(payload))
    assert codes(msg) == ["netquake.bad_flags"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (0, 2)


def test_unknown_command():
    msg = dissect("netquake", nq.control(0x07, b"\x01\x02"))
    assert codes(msg) == ["netquake.unknown_command"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (4, 1)
    assert span(msg, "netquake.control.body") == (5, 2, b"\x01\x02")


def test_bad_game_name_and_version():
    msg = dissect("netquake", nq.ccreq_server_info(game="QUAKE2", version=2))
    assert codes(msg) == ["netquake.bad_game_name", "netquake.bad_version"]
    by_code = {f.code: f for f in msg.findings}
    assert (by_code["netquake.bad_game_name"].offset, by_code["netquake.bad_game_name"].length) == (5, 7)
    assert (by_code["netquake.bad_version"].offset, by_code["netquake.bad_version"].length) == (12, 1)


def test_truncated_keeps_fields_before_the_cut():
    full = nq.ccrep_server_info("10.0.0.1:26000", "My Server", "e1m1", 3, 8)
    for cut in range(5, len(full)):
        msg = dissect("netquake", full[:cut])
        assert "netquake.truncated" in codes(msg), cut
        assert field(msg, "netquake.control.command").value == 0x83
    msg = dissect("netquake", full[:25])  # inside host_name
    assert field(msg, "netquake.control.server_address").value == "10.0.0.1:26000"
    trunc = [f for f in msg.findings if f.code == "netquake.truncated"][0]
    assert (trunc.offset, trunc.length) == (20, 5)
    assert msg.info == "CCREP_SERVER_INFO [Malformed]"


def test_trailing_bytes():
    msg = dissect("netquake", nq.control(0x81, bytes([0x74, 0x65, 0, 0, 0xDE, 0xAD])))
    assert "netquake.trailing_bytes" in codes(msg)
    trailing = [f for f in msg.findings if f.code == "netquake.trailing_bytes"][0]
    assert (trailing.offset, trailing.length) == (9, 2)


def test_summary_path_builds_no_tree_but_same_findings():
    payload = nq.ccrep_player_info(0, "Rainbow", 0xEF, 1, 2, "x")
    light = dissect("netquake", payload, tree=False)
    full = dissect("netquake", payload, tree=True)
    assert light.fields == []
    assert codes(light) == codes(full)
    assert light.info == full.info
    assert light.values == full.values


def test_heuristic_claims_only_netquake():
    from dissect.capture.layers import Packet
    from dissect.registry import Registry
    packet = Packet()
    packet.src, packet.sport, packet.dst, packet.dport, packet.transport = "10.0.0.1", 5004, "10.0.0.2", 5006, "udp"
    netquake = Registry().get("netquake")
    assert netquake.claims(nq.ccreq_server_info(), packet, on_port=False)
    # An RTP header (version 2, payload type 0) also starts 80 00: not ours off the port.
    rtp = bytes.fromhex("80000001") + bytes.fromhex("02345678") + b"\x00" * 20
    assert not netquake.claims(rtp, packet, on_port=False)
    assert not netquake.claims(b"hello world", packet, on_port=False)
    assert not netquake.claims(nq.data_packet(0x0009, 1, b"x"), packet, on_port=False)
    assert netquake.claims(nq.data_packet(0x0009, 1, b"x"), packet, on_port=True)


def test_random_bytes_never_raise():
    import random
    rng = random.Random(7)
    base = nq.ccrep_player_info(1, "Ranger", 77, 12, 754, "192.0.2.11:26000")
    for _ in range(2000):
        data = bytearray(base[:rng.randrange(len(base) + 1)])
        for _ in range(rng.randrange(4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        msg = dissect("netquake", bytes(data))
        for f in msg.walk():
            assert 0 <= f.offset and f.offset + f.length <= len(data)
        assert not any(f.code.endswith("dissector_error") for f in msg.findings)


def test_stats_say_how_many_servers_the_servers_seen_table_forgot(tmp_path):
    """Past its 10,000 servers the table forgets the least recently seen: --stats says how many, in its text and its
    JSON (it listed 10,000 as if they were all)."""
    import capkit
    client = ("192.168.0.1", 5000)
    frames = []
    for number in range(10_003):
        server = (f"10.{number // 256 // 256}.{number // 256 % 256}.{number % 256}", 26000)
        reply = nq.ccrep_server_info(f"{server[0]}:26000", f"s{number}", "e1m1", 1, 8)
        frames += [capkit.ethernet(capkit.udp_packet(*client, *server, nq.ccreq_server_info())),
                   capkit.ethernet(capkit.udp_packet(*server, *client, reply))]
    path = tmp_path / "many.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 1e-4, frame) for n, frame in enumerate(frames)])
    code, out, _ = run_cli("--stats", path)
    assert code == 0
    assert "NetQuake servers seen: 10000 (and 3 forgotten past the table's limit, the least recently seen first)" in out
    assert '"s3"' in out and '"s2"' not in out
    code, out, _ = run_cli("--stats", "-T", "json", path)
    report = json.loads(out)[-1]["transactions"]["netquake"]
    assert report["servers_forgotten"] == 3 and len(report["servers"]) == 10_000


# -- player walks ------------------------------------------------------------------------------------

def _session_pcap(tmp_path, packets):
    """``packets``: (from_client, payload) in order, 10 ms apart, between one client and one server."""
    import capkit
    client, server = ("10.0.0.7", 40000), ("10.0.0.1", 26000)
    path = tmp_path / "walk.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i * 0.01, capkit.ethernet(
        capkit.udp_packet(*(client + server if from_client else server + client), payload)))
        for i, (from_client, payload) in enumerate(packets)])
    return path


def _walk_packets(players, asked, answered):
    packets = [(True, nq.ccreq_server_info()), (False, nq.ccrep_server_info("10.0.0.1:26000", "h", "e1m1",
                                                                            len(players), 8))]
    for number in asked:
        packets.append((True, nq.ccreq_player_info(number)))
        if number in answered:
            packets.append((False, nq.ccrep_player_info(number, players[number], 0, 1, 2, "x")))
    return packets


def _walks(path, kind="player_walk"):
    from conftest import jsonl, run_cli
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    walks = [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == kind]
    code, out, _ = run_cli(path)
    summaries = [line.split("] ", 1)[1] for line in out.splitlines() if f"[netquake {kind}]" in line]
    return walks, summaries


def test_a_request_past_the_last_player_ends_the_walk(tmp_path):
    """A client asks for player 3 of 3 to find the end: no reply comes (spec), and no second walk starts."""
    path = _session_pcap(tmp_path, _walk_packets(["A", "B", "C"], [0, 1, 2, 3], {0, 1, 2}))
    walks, summaries = _walks(path)
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 3 players of 3 (frames 3,4,5,6,7,8)"]
    result = walks[0]["result"]
    assert result["complete"] is True and result["requested"] == [0, 1, 2] and result["unanswered"] == []
    assert walks[0]["frames"] == [3, 4, 5, 6, 7, 8] and walks[0]["findings"] == []


def test_a_request_past_the_last_player_inside_an_open_walk_is_not_unanswered(tmp_path):
    packets = _walk_packets(["A", "B"], [], set())
    packets += [(True, nq.ccreq_player_info(n)) for n in (0, 1, 2)]  # all asked before any reply
    packets += [(False, nq.ccrep_player_info(n, "AB"[n], 0, 1, 2, "x")) for n in (0, 1)]
    walks, summaries = _walks(_session_pcap(tmp_path, packets))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 2 players of 2 (frames 3,4,5,6,7)"]
    result = walks[0]["result"]
    assert result["requested"] == [0, 1, 2] and result["unanswered"] == [] and result["complete"] is True


def test_one_player_is_singular_and_a_missing_reply_is_still_incomplete(tmp_path):
    walks, summaries = _walks(_session_pcap(tmp_path, _walk_packets(["Solo"], [0, 1], {0})))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 1 player of 1 (frames 3,4)"]
    walks, summaries = _walks(_session_pcap(tmp_path, _walk_packets(["A", "B"], [0, 1, 2], {0})))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 1 player of 2 (incomplete) (frames 3,4,5,6)"]
    assert walks[0]["result"]["unanswered"] == [1] and walks[0]["result"]["complete"] is False


def test_a_walk_every_player_of_the_last_server_info_answered_is_complete(tmp_path):
    """The spec's end of a walk is every number below the current_players of the server's last CCREP_SERVER_INFO:
    a server info that comes after the replies (first), or that says a player left (second), completes the walk
    the replies already made, which the capture's end concludes."""
    packets = [(True, nq.ccreq_player_info(n)) for n in (0, 1)]
    packets += [(False, nq.ccrep_player_info(n, "AB"[n], 0, 1, 2, "x")) for n in (0, 1)]
    packets += _walk_packets(["A", "B"], [], set())
    walks, summaries = _walks(_session_pcap(tmp_path, packets))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 2 players of 2 (frames 1,2,3,4)"]
    assert walks[0]["result"]["unanswered"] == [] and walks[0]["result"]["complete"] is True
    packets = _walk_packets(["A", "B", "C"], [0, 1, 2], {0, 1}) + _walk_packets(["A", "B"], [], set())
    walks, summaries = _walks(_session_pcap(tmp_path, packets))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 2 players of 2 (frames 3,4,5,6,7)"]
    assert walks[0]["result"]["unanswered"] == [] and walks[0]["result"]["complete"] is True


def test_a_reply_no_request_asked_for_is_no_player_of_the_walk(tmp_path):
    """Player 0 asked; the server answers for player 2, then answers 0 twice: one player, not three."""
    packets = _walk_packets(["A", "B", "C"], [0], set())
    packets += [(False, nq.ccrep_player_info(number, name, 0, 1, 2, "x")) for number, name in ((2, "C"), (0, "A"),
                                                                                              (0, "A"))]
    walks, summaries = _walks(_session_pcap(tmp_path, packets))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 1 player of 3 (incomplete) (frames 3,4,5,6)"]
    result = walks[0]["result"]
    assert [(p["player_number"], p["name"]) for p in result["players"]] == [(0, "A")]
    assert result["requested"] == [0] and result["unanswered"] == []


def test_a_player_request_cut_before_its_number_asks_for_no_player(tmp_path):
    """A CCREQ_PLAYER_INFO without its player byte is truncated: it starts no walk and joins none as a null."""
    cut = nq.ccreq_player_info(0)[:-1]
    walks, summaries = _walks(_session_pcap(tmp_path, [(True, cut)]))
    assert walks == [] and summaries == []
    packets = _walk_packets(["A"], [0], {0})
    packets.insert(2, (True, cut))
    walks, summaries = _walks(_session_pcap(tmp_path, packets))
    assert summaries == ["player walk 10.0.0.7:40000 → 10.0.0.1:26000: 1 player of 1 (frames 4,5)"]
    assert walks[0]["result"]["requested"] == [0] and walks[0]["result"]["unanswered"] == []


def test_one_rule_is_singular(tmp_path):
    packets = [(True, nq.ccreq_rule_info("")), (False, nq.ccrep_rule_info("fraglimit", "20")),
               (True, nq.ccreq_rule_info("fraglimit")), (False, nq.ccrep_rule_info())]
    walks, summaries = _walks(_session_pcap(tmp_path, packets), "rule_walk")
    assert summaries == ["rule walk 10.0.0.7:40000 → 10.0.0.1:26000: 1 rule (frames 1,2,3,4)"]
    assert walks[0]["result"]["rules"] == [{"rule": "fraglimit", "value": "20"}]
