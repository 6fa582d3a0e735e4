"""Odamex launcher protocol: every message and layout, offsets and values, every finding."""

import struct

import capkit
import odamex_peer as od
from conftest import capture, jsonl, run_cli
from helpers import codes, dissect, field, span

TEAM_SCORES = {"blue": 3, "red": 1}


def spec_team_reply():
    return od.server_info(players=od.PLAYERS, teamplay=True, team_scores=TEAM_SCORES)


def test_launcher_request_alone_and_with_key():
    msg = dissect("odamex", od.request())
    assert msg.name == "launcher_request" and span(msg, "odamex.tag") == (0, 4, 777123)
    assert msg.findings == [] and msg.info == "Launcher request"
    keyed = dissect("odamex", od.request(b"\x11\x22\x33\x44"))
    assert span(keyed, "odamex.key") == (4, 4, b"\x11\x22\x33\x44")


def test_master_list():
    msg = dissect("odamex", od.master_list([("10.0.0.1", 10666), ("192.0.2.7", 10667)]))
    assert msg.name == "master_list"
    assert span(msg, "odamex.server_count") == (4, 2, 2)
    servers = msg.fields_with("odamex.server")
    assert [(s.offset, s.length, s.value) for s in servers] == [(6, 6, "10.0.0.1:10666"), (12, 6, "192.0.2.7:10667")]
    assert [(c.key, c.offset, c.length) for c in servers[1].children] == [("odamex.server.ip", 12, 4),
                                                                         ("odamex.server.port", 16, 2)]
    assert servers[1].children[1].value == 10667
    assert msg.findings == []


def test_master_list_count_mismatch_and_partial_entry():
    msg = dissect("odamex", od.master_list([("10.0.0.1", 10666)], count=3))
    assert codes(msg) == ["odamex.count_mismatch"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (4, 2)
    cut = dissect("odamex", od.master_list([("10.0.0.1", 10666), ("10.0.0.2", 1)])[:-3])
    assert codes(cut) == ["odamex.count_mismatch", "odamex.truncated"]
    partial = cut.fields_with("odamex.server.ip")[1]
    assert (partial.offset, partial.length, partial.value, partial.name) == (12, 3, bytes([10, 0, 0]),
                                                                             "Server IP [truncated]")


def test_server_info_spec_layout_teamplay_on():
    msg = dissect("odamex", spec_team_reply())
    assert msg.name == "server_info" and msg.values["layout"] == "spec"
    assert msg.findings == []
    assert span(msg, "odamex.tag") == (0, 4, 5560020)
    assert span(msg, "odamex.token") == (4, 4, 7)
    assert span(msg, "odamex.name") == (8, 19, "Odamex test server")
    assert span(msg, "odamex.players") == (27, 1, 3)
    assert span(msg, "odamex.max_players") == (28, 1, 8)
    assert span(msg, "odamex.map") == (29, 6, "MAP01")
    assert span(msg, "odamex.pwad_count") == (35, 1, 1)
    assert span(msg, "odamex.pwad") == (36, 12, "ukraine.wad")
    assert span(msg, "odamex.game_type") == (48, 1, 1)
    assert field(msg, "odamex.game_type").display == "Deathmatch (1)"
    assert span(msg, "odamex.skill") == (49, 1, 3)
    assert field(msg, "odamex.skill").display == "UV (3)"
    assert span(msg, "odamex.teamplay") == (50, 1, 1)
    first = msg.fields_with("odamex.player")[0]
    assert (first.offset, first.length, first.name) == (51, 15, 'Player "Doomguy"')
    assert [(c.key, c.offset, c.length, c.value) for c in first.children] == [
        ("odamex.player.name", 51, 8, "Doomguy"), ("odamex.player.frags", 59, 2, 12),
        ("odamex.player.ping", 61, 4, 48), ("odamex.player.team", 65, 1, 1)]
    assert field(msg, "odamex.player.team").display == "Blue (1)"
    assert msg.fields_with("odamex.player.frags")[1].value == -2
    assert span(msg, "odamex.pwad_hash") == (99, 33, od.HASH)
    assert span(msg, "odamex.ctf") == (132, 1, 0)
    assert span(msg, "odamex.website") == (133, 23, "https://odamex.example")
    assert span(msg, "odamex.score_limit") == (156, 4, 5)
    assert span(msg, "odamex.blue_team") == (160, 1, 1)
    assert span(msg, "odamex.blue_score") == (161, 4, 3)
    assert span(msg, "odamex.red_team") == (165, 1, 1)
    assert span(msg, "odamex.red_score") == (166, 4, 1)
    assert span(msg, "odamex.gold_team") == (170, 1, 0)
    assert msg.get("odamex.gold_score") is None
    assert field(msg, "odamex.layout").value == "spec"


def test_server_info_teamplay_off_has_no_teams_or_team_block():
    msg = dissect("odamex", od.server_info(players=[("A", 1, 2, 0)]))
    assert msg.findings == [] and msg.values["layout"] == "spec"
    assert msg.get("odamex.player.team") is None and msg.get("odamex.score_limit") is None
    assert msg.values["player_list"] == [{"name": "A", "frags": 1, "ping": 2}]


def test_server_info_real_layout_ctf():
    msg = dissect("odamex", od.server_info(players=od.PLAYERS, ctf=True, layout="real", team_scores=TEAM_SCORES))
    assert msg.values["layout"] == "real"
    assert codes(msg) == ["odamex.real_layout"] and msg.findings[0].severity == "note"
    assert span(msg, "odamex.teamplay") == (50, 1, 0)
    assert span(msg, "odamex.ctf") == (51, 1, 1)
    assert span(msg, "odamex.player.name") == (52, 8, "Doomguy")
    assert span(msg, "odamex.player.team") == (66, 1, 1)
    assert span(msg, "odamex.website") == (133, 23, "https://odamex.example")
    assert msg.values["team_scores"] == TEAM_SCORES


def test_both_layouts_of_the_same_state_decode_to_the_same_values():
    spec = dissect("odamex", od.server_info(players=od.PLAYERS, teamplay=True, ctf=True, team_scores=TEAM_SCORES))
    real = dissect("odamex", od.server_info(players=od.PLAYERS, teamplay=True, ctf=True, team_scores=TEAM_SCORES,
                                            layout="real"))
    assert (spec.values["layout"], real.values["layout"]) == ("spec", "real")
    for key in ("name", "players", "player_list", "hashes", "ctf", "teamplay", "website", "team_scores"):
        assert spec.values[key] == real.values[key], key


def test_extension():
    ext = dict(email="ops@example", patches=("fix.deh",), spectators=[0, 1, 0], password=1)
    msg = dissect("odamex", od.server_info(players=od.PLAYERS, teamplay=True, layout="real", extension=ext))
    assert codes(msg) == ["odamex.extension", "odamex.real_layout"]
    ext_node = field(msg, "odamex.ext")
    assert ext_node.offset == 163 and ext_node.offset + ext_node.length == msg.length
    assert span(msg, "odamex.ext.version") == (163, 2, 5)
    assert span(msg, "odamex.ext.email") == (165, 12, "ops@example")
    assert [f.value for f in msg.fields_with("odamex.ext.marker")] == [0x01020304, 0x01020305]
    data = msg.values["ext"]
    assert data["spectators"] == [False, True, False] and data["password"] == 1
    assert data["patches"] == ["fix.deh"] and data["flags"]["allowjump"] is True
    assert data["player_stats"][2] == {"kills": 12, "deaths": 2, "minutes": 5}
    assert data["game_version"] == 0x000A00


def test_echoed_key_after_token():
    msg = dissect("odamex", od.server_info(players=od.PLAYERS, key=b"\x11\x22\x33\x44"))
    assert span(msg, "odamex.echoed_key") == (8, 4, b"\x11\x22\x33\x44")
    assert span(msg, "odamex.name") == (12, 19, "Odamex test server")
    assert msg.findings == []


def test_bad_value_enums_and_bools():
    good = spec_team_reply()
    for offset, value in ((48, 7), (49, 9), (50, 2), (65, 4)):
        data = bytearray(good)
        data[offset] = value
        msg = dissect("odamex", bytes(data))
        bad = [f for f in msg.findings if f.code == "odamex.bad_value"]
        assert bad and bad[0].severity == "error", (offset, codes(msg))
        assert "odamex.bad_layout" in codes(msg)
        # every field before the break is still there
        assert field(msg, "odamex.map").value == "MAP01"


def test_bad_hash_and_too_many_players():
    msg = dissect("odamex", spec_team_reply().replace(od.HASH.encode(), b"x" * 32))
    assert codes(msg) == ["odamex.bad_hash"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (99, 33)
    crowded = dissect("odamex", od.server_info(players=od.PLAYERS, max_players=2))
    assert codes(crowded) == ["odamex.too_many_players"]


def test_truncated_and_count_mismatch():
    msg = dissect("odamex", spec_team_reply()[:75])
    assert codes(msg) == ["odamex.bad_layout", "odamex.count_mismatch", "odamex.truncated"]
    assert len(msg.values["player_list"]) == 1
    assert field(msg, "odamex.player.name").value == "Doomguy"


def test_trailing_bytes():
    msg = dissect("odamex", spec_team_reply() + b"\x99\x98")
    assert "odamex.trailing_bytes" in codes(msg)
    assert span(msg, "odamex.trailing") == (171, 2, b"\x99\x98")


def test_session_capture_reads_clean_in_both_layouts():
    code, out, _ = run_cli("-T", "jsonl", "--fail-on", "warning", capture("odamex-session.pcap"))
    assert code == 0
    records = jsonl(out)
    infos = [r for r in records if r["kind"] == "analysis" and r["name"] == "server_info"]
    layouts = {r["result"]["server"]: r["result"]["info"]["layout"] for r in infos}
    assert layouts == {"127.0.0.1:10666": "spec", "127.0.0.1:10667": "real", "127.0.0.1:10668": "spec"}
    assert all(r["result"]["request_was"] == "server info request" for r in infos)
    assert all(0 <= r["result"]["response_time"] < 1 for r in infos)
    keyed = [r for r in infos if r["result"]["server"] == "127.0.0.1:10667"][0]
    assert keyed["result"]["info"]["extension"]["max_players"] == 8
    master = [r for r in records if r["kind"] == "analysis" and r["name"] == "master_list"][0]
    assert master["result"]["servers"] == ["127.0.0.1:10666", "127.0.0.1:10667", "127.0.0.1:10668"]
    assert master["result"]["request_was"] == "master list request" and master["frames"] == [1, 2]


def test_damaged_capture_findings():
    _, out, _ = run_cli("-T", "jsonl", capture("odamex-damaged.pcap"))
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    per_frame = [sorted({f["code"] for f in r["messages"][0]["findings"]}) for r in frames]
    assert per_frame == [[], ["odamex.count_mismatch"], ["odamex.count_mismatch", "odamex.truncated"],
                         ["odamex.bad_layout", "odamex.bad_value"], ["odamex.bad_hash"],
                         ["odamex.too_many_players"],
                         ["odamex.bad_layout", "odamex.truncated"],
                         ["odamex.bad_layout", "odamex.trailing_bytes"]]


def test_stats_list_servers_from_master_and_replies(tmp_path):
    code, out, _ = run_cli("--stats", capture("odamex-session.pcap"))
    assert "Odamex servers seen: 3" in out and '"CTF server"' in out
    # A server only a master named is listed too.
    path = tmp_path / "listed.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet(
        "10.0.0.4", 15000, "10.0.0.9", 40000, od.master_list([("198.51.100.1", 10666)]))))])
    _, out, _ = run_cli("--stats", "-T", "json", path)
    import json
    servers = [r for r in json.loads(out) if r["kind"] == "server"]
    assert servers == [{"kind": "server", "protocol": "odamex", "server": "198.51.100.1:10666",
                        "listed_by": ["10.0.0.4:15000"], "responses": 0, "last_frame": 1}]


def test_heuristic():
    from dissect.capture.layers import Packet
    from dissect.registry import Registry
    packet = Packet()
    packet.src, packet.sport, packet.dst, packet.dport = "10.0.0.1", 40000, "10.0.0.2", 20000
    odamex = Registry().get("odamex")
    assert odamex.claims(od.request(), packet, False)
    assert odamex.claims(od.master_list([("1.2.3.4", 5)]), packet, False)
    assert odamex.claims(spec_team_reply(), packet, False)
    assert not odamex.claims(struct.pack("<i", 777123) + b"\0\0\0", packet, False)
    assert not odamex.claims(b"\x01\x02\x03\x04", packet, False)
