"""Odamex launcher protocol: every message and layout, offsets and values, every finding.

Server-info replies are built here field by field, as Odamex's own server writes them (the real layout)
and as the spec's table reads (the spec layout), so the offsets below can be checked by hand.
"""

import json
import pickle
import struct

import capkit
import pytest
import odamex_peer as od
from conftest import capture, jsonl, run_cli

import dissect as dissect_api
from helpers import codes, dissect, field, span

from dissect.dissectors.odamex import (CANDIDATES, ECHO_FIRST, ECHO_LAST, EXTENSION_BOOLS, NO_ECHO, F, W, MasterEntries,
                                       _choose_layout, echo_order, entry_text, full_values,
                                       trials_choice)


def u8(value):
    return bytes([value])


def i16(value):
    return struct.pack("<h", value)


def i32(value):
    return struct.pack("<i", value)


def z(text):
    return text.encode("latin-1") + b"\0"


HASH = "0123456789abcdef0123456789abcdef"
WEBSITE = "https://odamex.example"  # 22 characters


def head(players, key=b""):
    """Tag 0-3, token 4-7, [key], name 8-26, players 27, max 28, map 29-34, PWAD count 35, PWAD 36-47."""
    return (i32(5560020) + i32(7) + key + z("Odamex test server") + u8(players) + u8(8) + z("MAP01") + u8(1)
            + z("ukraine.wad"))


def real_reply(deathmatch, teamplay, ctf, teams, block=b"", key=b""):
    """Two players (Doomguy 52-66, Marine 67-80), hash 81-113, website 114-136, then ``block``."""
    doomguy, marine = teams
    return (head(2, key) + u8(deathmatch) + u8(3) + u8(teamplay) + u8(ctf)
            + z("Doomguy") + i16(12) + i32(48) + u8(doomguy)
            + z("Marine") + i16(-2) + i32(112) + u8(marine)
            + z(HASH) + z(WEBSITE) + block)


def real_block(limit, scores, build_teams):
    """Score limit, then per team of the build a bool and, when set, its score."""
    out = i32(limit)
    for index in range(build_teams):
        out += u8(1) + i32(scores[index]) if index < len(scores) else u8(0)
    return out


def spec_reply(teamplay, ctf, teams, tail):
    """Game type 48, skill 49, teamplay 50; Doomguy 51-65, Marine 66-79, hash 80-112, CTF 113, website 114-136."""
    doomguy, marine = teams
    return (head(2) + u8(1) + u8(3) + u8(teamplay)
            + z("Doomguy") + i16(12) + i32(48) + u8(doomguy)
            + z("Marine") + i16(-2) + i32(112) + u8(marine)
            + z(HASH) + u8(ctf) + z(WEBSITE) + tail)


def players_of(msg):
    return [(c.key, c.offset, c.length, c.value) for p in msg.fields_with("odamex.player") for c in p.children]


def teams_of(msg):
    return [(t.value, t.offset, t.length, [(c.key, c.offset, c.length, c.value) for c in t.children])
            for t in msg.fields_with("odamex.team")]


def severe(msg):
    return [f for f in msg.findings if f.severity in ("warning", "error")]


def same_without_tree(payload):
    """The summary path decodes to the same values, findings and info as the tree path."""
    full, light = dissect("odamex", payload), dissect("odamex", payload, tree=False)
    assert light.info == full.info
    assert [(f.code, f.offset) for f in light.findings] == [(f.code, f.offset) for f in full.findings]
    assert full_values(light) is light.values and light.values == full.values and "unread" not in light.values
    return full


# -- requests and master lists --------------------------------------------------------------------------------
def test_launcher_request_alone_and_with_key():
    msg = dissect("odamex", od.request())
    assert msg.name == "launcher_request" and span(msg, "odamex.tag") == (0, 4, 777123)
    assert msg.findings == [] and msg.info == "Launcher request"
    keyed = dissect("odamex", od.request(b"\x11\x22\x33\x44"))
    assert span(keyed, "odamex.key") == (4, 4, b"\x11\x22\x33\x44")
    assert keyed.info == "Launcher request key=11223344"


def test_master_list():
    msg = dissect("odamex", od.master_list([("10.0.0.1", 10666), ("192.0.2.7", 10667)]))
    assert msg.name == "master_list"
    assert span(msg, "odamex.server_count") == (4, 2, 2)
    servers = msg.fields_with("odamex.server")
    assert [(s.offset, s.length, s.value) for s in servers] == [(6, 6, "10.0.0.1:10666"), (12, 6, "192.0.2.7:10667")]
    assert [(c.key, c.offset, c.length, c.value) for c in servers[1].children] == [
        ("odamex.server.ip", 12, 4, "192.0.2.7"), ("odamex.server.port", 16, 2, 10667)]
    assert servers[1].children[0].display == "192.0.2.7"
    # every entry's subtree, made at once, is the one reading it field by field makes (an entry cut short's)
    for server, (address, port) in zip(servers, [("10.0.0.1", 10666), ("192.0.2.7", 10667)]):
        assert (server.name, server.display, server.generated) == ("Server", f"{address}:{port}", False)
        assert [(c.name, c.display, c.generated, list(c.children)) for c in server.children] == [
            ("Server IP", address, False, []), ("Server Port", str(port), False, [])]
    assert msg.findings == []


def test_master_update():
    """sv_master.cpp: SV_UpdateMasterServer writes MSG_WriteLong(5560020) then MSG_WriteShort(port): 6 bytes, every
    25 s, from every server to every master. It was read as a server-info reply cut short (truncated, bad_layout,
    an error) with an analysis record of no values."""
    payload = struct.pack("<iH", 5560020, 10666)
    msg = dissect("odamex", payload)
    assert msg.name == "master_update" and msg.findings == []
    assert span(msg, "odamex.tag") == (0, 4, 5560020) and span(msg, "odamex.port") == (4, 2, 10666)
    assert msg.info == "Master update: server port 10666"


def test_a_master_update_is_no_server_info_but_six_bytes_the_capture_cut_are(tmp_path):
    server, master = ("198.51.100.4", 10666), ("203.0.113.7", 15000)
    update = struct.pack("<iH", 5560020, 10667)  # behind NAT: sv_natport
    reply = od.server_info(layout="real", mode="dm", players=od.REAL_PLAYERS)
    path = tmp_path / "update.pcap"
    capkit.write_pcap(path, [
        (capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet(*server, *master, update))),
        (capkit.DEFAULT_TS + 1, capkit.ethernet(capkit.udp_packet(*server, *master, reply))[:48], 42 + len(reply))])
    code, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    assert code == 0 and [r.get("info") for r in records if r["kind"] == "frame"][0] == \
        "Master update: server port 10667"
    assert [m["message"] for r in records if r["kind"] == "frame" for m in r["messages"]] == [
        "master_update", "server_info"]
    assert [r["name"] for r in records if r["kind"] == "analysis"] == ["server_info"]  # the cut reply's alone


def test_master_list_entry_texts_at_every_digit_count():
    """Octets and ports of one to five digits, with inner zeros: each entry's texts as inet_ntoa and str write them,
    with a tree (the fields' values) and without (the entries' texts)."""
    entries = [("0.9.10.99", 0), ("100.109.200.255", 9), ("1.20.101.250", 10), ("8.80.190.205", 100),
               ("255.0.0.1", 1000), ("10.100.0.3", 10000), ("99.1.1.1", 65535)]
    data = od.master_list(entries)
    expected = [f"{address}:{port}" for address, port in entries]
    servers = dissect("odamex", data).fields_with("odamex.server")
    assert [s.value for s in servers] == expected
    assert [(s.children[0].offset, s.children[0].value) for s in servers] == [
        (6 + 6 * index, address) for index, (address, _) in enumerate(entries)]
    assert list(dissect("odamex", data, tree=False).values["servers"]) == expected


def test_master_list_count_mismatch_and_partial_entry():
    msg = dissect("odamex", od.master_list([("10.0.0.1", 10666)], count=3))
    assert codes(msg) == ["odamex.count_mismatch"]
    assert (msg.findings[0].offset, msg.findings[0].length) == (4, 2)
    assert msg.findings[0].message.startswith("server count says 3 but 1 entry is present (spec: ")
    cut = dissect("odamex", od.master_list([("10.0.0.1", 10666), ("10.0.0.2", 1)])[:-3])
    assert codes(cut) == ["odamex.count_mismatch", "odamex.truncated"]
    partial = cut.fields_with("odamex.server.ip")[1]
    assert (partial.offset, partial.length, partial.value, partial.name) == (12, 3, bytes([10, 0, 0]),
                                                                             "Server IP [truncated]")
    assert partial.display == "0a 00 00 (3 of 4 bytes)"
    # the entry cut short is closed as the others: its node spans the bytes it read, its value never set, and the
    # tree shows what it held ("?" where its address ends, "address:?" where its port does)
    assert [(s.offset, s.length, s.value, s.display) for s in cut.fields_with("odamex.server")] == [
        (6, 6, "10.0.0.1:10666", "10.0.0.1:10666"), (12, 3, None, "?")]
    no_port = dissect("odamex", od.master_list([("10.0.0.1", 10666), ("10.0.0.2", 1)])[:-1])
    assert [(s.offset, s.length, s.value, s.display) for s in no_port.fields_with("odamex.server")][1:] == [
        (12, 5, None, "10.0.0.2:?")]


# Entries 6-11, 12-17 and 18-23, then 2 bytes of a fourth.
MASTER_BYTES = (i32(777123) + i16(4) + bytes([10, 0, 0, 1]) + struct.pack("<H", 10666)
                + bytes([192, 0, 2, 255]) + struct.pack("<H", 1) + bytes([0, 255, 10, 7]) + struct.pack("<H", 65535)
                + b"\x01\x02")
MASTER_TEXTS = ["10.0.0.1:10666", "192.0.2.255:1", "0.255.10.7:65535"]


def test_master_entries_without_a_tree_are_kept_as_their_bytes():
    light, full = dissect("odamex", MASTER_BYTES, tree=False), dissect("odamex", MASTER_BYTES)
    servers = light.values["servers"]
    assert type(servers) is MasterEntries and servers.texts is None  # no text made while decoding
    assert servers.data == MASTER_BYTES[6:24] and len(servers.data) == 3 * 6  # the entries' bytes alone, trimmed
    assert servers.keys() == [10666 << 32 | 0x0A000001, 1 << 32 | 0xC00002FF, 65535 << 32 | 0x00FF0A07]
    assert [entry_text(key) for key in servers.keys()] == MASTER_TEXTS and servers.texts is None
    assert len(servers) == 3 and servers  # read without making the texts
    assert servers[1] == "192.0.2.255:1" and servers[-1] == "0.255.10.7:65535"
    assert servers[1:] == MASTER_TEXTS[1:] and type(servers[1:]) is list and servers[::-2] == MASTER_TEXTS[::-2]
    with pytest.raises(IndexError):
        servers[3]
    assert list(servers) == MASTER_TEXTS and servers.texts == MASTER_TEXTS
    assert servers == MASTER_TEXTS and MASTER_TEXTS == servers and not servers != MASTER_TEXTS
    assert servers != MASTER_TEXTS[:2] and servers != tuple(MASTER_TEXTS) and "10.0.0.1:10666" in servers
    assert repr(servers) == f"MasterEntries({MASTER_TEXTS!r})"
    # the tree path makes the texts with the fields: the same entries, the same values and findings
    assert full.values["servers"].texts == MASTER_TEXTS and full.values["servers"] == servers
    assert light.values == full.values and light.info == full.info == "Master server list: 3 servers (count says 4)"
    assert [f.as_dict() for f in light.findings] == [f.as_dict() for f in full.findings]
    assert [(f.code, f.offset, f.length) for f in light.findings] == [("odamex.truncated", 24, 2),
                                                                      ("odamex.count_mismatch", 4, 2)]


def test_master_entries_pickle_as_the_list_they_stand_for():
    for tree in (False, True):
        servers = dissect("odamex", MASTER_BYTES, tree=tree).values["servers"]
        copied = pickle.loads(pickle.dumps(servers))
        assert type(copied) is list and copied == MASTER_TEXTS
    empty = dissect("odamex", od.master_list([]), tree=False).values["servers"]
    assert empty.data == b"" and len(empty) == 0 and not empty and empty == [] and empty.keys() == []
    assert pickle.loads(pickle.dumps(empty)) == []
    assert MasterEntries(MASTER_BYTES[6:24]) == MasterEntries(MASTER_BYTES[6:24], list(MASTER_TEXTS))
    assert MasterEntries(MASTER_BYTES[6:24]) != MasterEntries(MASTER_BYTES[6:18])


def test_unknown_tag_when_forced():
    msg = dissect("odamex", i32(1234) + b"rest")
    assert msg.name == "unknown" and codes(msg) == ["odamex.bad_tag"]
    assert (msg.findings[0].offset, msg.findings[0].length, msg.findings[0].severity) == (0, 4, "warning")


# -- the real servers' layout -------------------------------------------------------------------------------------
def test_real_deathmatch_two_team_build():
    """Free-for-all, the most common reply: a team byte TEAM_NONE (3 with two teams) ends every player."""
    payload = real_reply(1, 0, 0, (3, 3))
    assert len(payload) == 137
    msg = same_without_tree(payload)
    assert msg.values["layout"] == "real" and msg.values["teams_in_build"] == 2
    assert codes(msg) == ["odamex.real_layout"] and msg.findings[0].severity == "note"
    assert span(msg, "odamex.name") == (8, 19, "Odamex test server")
    assert span(msg, "odamex.players") == (27, 1, 2)
    assert span(msg, "odamex.pwad_count") == (35, 1, 1)
    assert span(msg, "odamex.pwad") == (36, 12, "ukraine.wad")
    assert span(msg, "odamex.deathmatch") == (48, 1, True) and field(msg, "odamex.deathmatch").display == "true"
    assert msg.get("odamex.game_type") is None
    assert span(msg, "odamex.skill") == (49, 1, 3) and field(msg, "odamex.skill").display == "HMP (3)"  # sv_skill
    assert span(msg, "odamex.teamplay") == (50, 1, False)
    assert span(msg, "odamex.ctf") == (51, 1, False)
    mode = field(msg, "odamex.game_mode")
    assert (mode.offset, mode.length, mode.value, mode.generated) == (48, 4, "Deathmatch", True)
    assert players_of(msg) == [
        ("odamex.player.name", 52, 8, "Doomguy"), ("odamex.player.frags", 60, 2, 12),
        ("odamex.player.ping", 62, 4, 48), ("odamex.player.team", 66, 1, 3),
        ("odamex.player.name", 67, 7, "Marine"), ("odamex.player.frags", 74, 2, -2),
        ("odamex.player.ping", 76, 4, 112), ("odamex.player.team", 80, 1, 3)]
    first = msg.fields_with("odamex.player")[0]
    assert (first.offset, first.length, first.name) == (52, 15, 'Player "Doomguy"')
    assert first.display == "frags 12, ping 48 ms, team None (TEAM_NONE)"
    assert field(msg, "odamex.player.team").display == "None (TEAM_NONE) (3)"
    assert span(msg, "odamex.pwad_hash") == (81, 33, HASH)
    assert span(msg, "odamex.website") == (114, 23, WEBSITE)
    assert msg.get("odamex.score_limit") is None and msg.get("odamex.team") is None
    layout = field(msg, "odamex.layout")
    assert (layout.offset, layout.length, layout.value, layout.generated) == (4, 133, "real", True)
    assert layout.display == "real servers (CTF bool right after the teamplay bool), 2-team build"
    assert msg.values["player_list"] == [{"name": "Doomguy", "frags": 12, "ping": 48, "team": 3},
                                         {"name": "Marine", "frags": -2, "ping": 112, "team": 3}]
    assert msg.values["mode"] == "Deathmatch"
    assert msg.info == 'Server info "Odamex test server" map=MAP01 players 2/8 Deathmatch'


def test_real_deathmatch_three_team_build():
    """Builds with three teams (blue, red, green) write TEAM_NONE as 4."""
    msg = same_without_tree(real_reply(1, 0, 0, (4, 4)))
    assert msg.values["layout"] == "real" and msg.values["teams_in_build"] == 3
    assert codes(msg) == ["odamex.real_layout"]
    assert [t.value for t in msg.fields_with("odamex.player.team")] == [4, 4]
    assert field(msg, "odamex.player.team").display == "None (TEAM_NONE) (4)"
    assert field(msg, "odamex.layout").display.endswith(", 3-team build")


def test_real_deathmatch_numteams_read_as_no_team():
    """The value right after the last team (NUMTEAMS, 2 with two teams) is read as no team as well."""
    msg = same_without_tree(real_reply(1, 0, 0, (2, 2)))
    assert codes(msg) == ["odamex.real_layout"] and msg.values["teams_in_build"] == 2
    assert span(msg, "odamex.player.name") == (52, 8, "Doomguy")
    assert msg.fields_with("odamex.player.name")[1].value == "Marine"
    assert field(msg, "odamex.player.team").display == "None (NUMTEAMS) (2)"


def test_real_coop():
    msg = same_without_tree(real_reply(0, 0, 0, (3, 3)))
    assert codes(msg) == ["odamex.real_layout"]
    assert span(msg, "odamex.deathmatch") == (48, 1, False)
    assert field(msg, "odamex.game_mode").value == "Cooperative"
    assert [t.value for t in msg.fields_with("odamex.player.team")] == [3, 3]
    assert span(msg, "odamex.website") == (114, 23, WEBSITE) and msg.get("odamex.team") is None


def test_real_team_deathmatch_two_team_build():
    block = real_block(50, (7, 4), 2)  # 137-140 limit, 141 blue, 142-145 score, 146 red, 147-150 score
    msg = same_without_tree(real_reply(1, 1, 0, (0, 1), block))
    assert codes(msg) == ["odamex.real_layout"] and msg.values["teams_in_build"] == 2
    assert field(msg, "odamex.game_mode").value == "Team deathmatch"
    assert span(msg, "odamex.teamplay") == (50, 1, True)
    teams = msg.fields_with("odamex.player.team")
    assert [(t.offset, t.value, t.display) for t in teams] == [(66, 0, "Blue (0)"), (80, 1, "Red (1)")]
    assert span(msg, "odamex.score_limit") == (137, 4, 50)
    assert teams_of(msg) == [
        ("Blue", 141, 5, [("odamex.team.in_play", 141, 1, True), ("odamex.team.score", 142, 4, 7)]),
        ("Red", 146, 5, [("odamex.team.in_play", 146, 1, True), ("odamex.team.score", 147, 4, 4)])]
    assert field(msg, "odamex.team").name == "Blue team" and field(msg, "odamex.team").display == "score 7"
    assert msg.values["team_scores"] == {"blue": 7, "red": 4}


def test_real_team_deathmatch_three_team_build():
    """Three teams in the build, three in play: a green player (2) and a green score."""
    block = real_block(50, (7, 4, 9), 3)  # limit 137, blue 141-145, red 146-150, green 151-155
    msg = same_without_tree(real_reply(1, 1, 0, (2, 1), block))
    assert codes(msg) == ["odamex.real_layout"] and msg.values["teams_in_build"] == 3
    assert field(msg, "odamex.player.team").display == "Green (2)"
    assert [t[0] for t in teams_of(msg)] == ["Blue", "Red", "Green"]
    assert teams_of(msg)[2] == ("Green", 151, 5, [("odamex.team.in_play", 151, 1, True),
                                                  ("odamex.team.score", 152, 4, 9)])
    assert msg.values["team_scores"] == {"blue": 7, "red": 4, "green": 9}
    assert msg.length == 156


def test_real_ctf_two_and_three_team_builds():
    """CTF: deathmatch false, teamplay false, CTF true; blue and red in play, a third team's bool false."""
    two = same_without_tree(real_reply(0, 0, 1, (0, 1), real_block(3, (2, 1), 2)))
    assert codes(two) == ["odamex.real_layout"] and two.values["teams_in_build"] == 2
    assert (span(two, "odamex.deathmatch"), span(two, "odamex.ctf")) == ((48, 1, False), (51, 1, True))
    assert field(two, "odamex.game_mode").value == "CTF"
    assert span(two, "odamex.score_limit") == (137, 4, 3)
    assert [t[0] for t in teams_of(two)] == ["Blue", "Red"] and two.values["team_scores"] == {"blue": 2, "red": 1}
    three = same_without_tree(real_reply(0, 0, 1, (0, 1), real_block(3, (2, 1), 3)))
    assert codes(three) == ["odamex.real_layout"] and three.values["teams_in_build"] == 3
    assert teams_of(three)[2] == ("Green", 151, 1, [("odamex.team.in_play", 151, 1, False)])
    assert field(three, "odamex.team.in_play").display == "true"
    assert three.fields_with("odamex.team")[2].display == "not in play"


def test_extension_flags_read_at_once_are_the_flags_read_one_by_one():
    """Without a tree the 14 flags are read in one step: the same values, in order, as the tree's field by field,
    and a flag that is not 0 or 1 is reported at its own byte either way (same_without_tree compares them)."""
    flags = (1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1)
    msg = same_without_tree(real_reply(1, 0, 0, (3, 3), od.extension_block(2, flags=flags), key=b"\x11\x22\x33\x44"))
    assert list(msg.values["ext"]["flags"].items()) == [(name, flag == 1) for name, flag in zip(EXTENSION_BOOLS, flags)]
    first = 141 + 2 + 21 + 6  # the extension's start, then its version, e-mail and three limits
    assert [span(msg, f"odamex.ext.{name}") for name in EXTENSION_BOOLS] == [
        (first + i, 1, flag == 1) for i, flag in enumerate(flags)]
    bad = same_without_tree(real_reply(1, 0, 0, (3, 3), od.extension_block(2, flags=flags[:13] + (2,)),
                                       key=b"\x11\x22\x33\x44"))
    # read on past the bad flag, the real layout reads the reply to its end: shown in it, no bad_layout
    assert [(f.code, f.offset, f.length) for f in bad.findings] == [("odamex.bad_value", first + 13, 1),
                                                                   ("odamex.real_layout", 0, 0),
                                                                   ("odamex.extension", 141, 0)]
    assert bad.findings[0].message.startswith("fragexitswitch is 2, not 0 or 1")


def test_real_reply_with_key_and_extension():
    """Real servers echo a request's 4-byte key after the token and always append the extension."""
    extension = od.extension_block(2, spectators=[0, 1])
    payload = real_reply(1, 0, 0, (3, 3), extension, key=b"\x11\x22\x33\x44")
    msg = same_without_tree(payload)
    assert codes(msg) == ["odamex.extension", "odamex.real_layout"]
    assert span(msg, "odamex.echoed_key") == (8, 4, b"\x11\x22\x33\x44")
    assert span(msg, "odamex.name") == (12, 19, "Odamex test server")
    assert span(msg, "odamex.website") == (118, 23, WEBSITE)
    ext = field(msg, "odamex.ext")
    assert (ext.offset, ext.offset + ext.length) == (141, len(payload))
    assert span(msg, "odamex.ext.version") == (141, 2, 65)
    assert span(msg, "odamex.ext.email") == (143, 21, "admin@odamex.example")
    assert [f.value for f in msg.fields_with("odamex.ext.marker")] == [0x01020304, 0x01020305]
    assert field(msg, "odamex.ext.game_version").display == "2620 (10.6.0)"
    assert msg.values["ext"]["spectators"] == [False, True]
    assert [(f.code, f.offset) for f in msg.findings] == [("odamex.real_layout", 0), ("odamex.extension", 141)]


def test_game_version_shows_major_minor_patch():
    """MAKEVER is major * 256 + minor * 10 + patch: the patch is the low byte's last digit, not the number's."""
    for version, shown in ((4 * 256 + 3 * 10 + 6, "1060 (4.3.6)"), (259, "259 (1.0.3)"), (65541, "65541 (256.0.5)")):
        extension = od.extension_block(2, game_version=version)
        msg = same_without_tree(real_reply(1, 0, 0, (3, 3), extension, key=b"\x11\x22\x33\x44"))
        assert span(msg, "odamex.ext.game_version") == (len(extension) + 141 - 5, 4, version)
        assert field(msg, "odamex.ext.game_version").display == shown


def test_real_layout_replaces_the_old_misreadings():
    """What the decoder made of a free-for-all reply before: "\\x02marine", a false bad_hash, a bad CTF bool."""
    for teams in ((2, 2), (3, 3), (4, 4)):
        msg = dissect("odamex", real_reply(1, 0, 0, teams))
        assert [f.value for f in msg.fields_with("odamex.player.name")] == ["Doomguy", "Marine"]
        assert span(msg, "odamex.pwad_hash") == (81, 33, HASH)
        assert severe(msg) == []


def test_real_peer_writes_what_the_real_server_writes():
    players = [("Doomguy", 12, 48, 0), ("Marine", -2, 112, 1)]
    pwads = (("ukraine.wad", HASH),)
    built = od.server_info(players=players, pwads=pwads, website=WEBSITE, layout="real", mode="dm", teams=2,
                           extension=False)
    assert built == real_reply(1, 0, 0, (3, 3))
    ctf = od.server_info(players=players, pwads=pwads, website=WEBSITE, layout="real", mode="ctf", teams=3,
                         score_limit=3, team_scores={"blue": 2, "red": 1}, extension=False)
    assert ctf == real_reply(0, 0, 1, (0, 1), real_block(3, (2, 1), 3))
    tdm = od.real_server_info(players=players, pwads=pwads, website=WEBSITE, mode="tdm", teams=2, score_limit=50,
                              team_scores={"blue": 7, "red": 4})
    assert tdm == real_reply(1, 1, 0, (0, 1), real_block(50, (7, 4), 2))
    always = od.server_info(players=players, pwads=pwads, website=WEBSITE, layout="real", teams=2)
    assert always == real_reply(1, 0, 0, (3, 3), od.extension_block(2))


# -- the spec's layout -------------------------------------------------------------------------------------------
def test_spec_layout_teamplay_on():
    tail = i32(5) + u8(1) + i32(3) + u8(1) + i32(1) + u8(0)  # limit 137, blue 141, red 146, gold 151
    msg = same_without_tree(spec_reply(1, 0, (1, 2), tail))
    assert msg.values["layout"] == "spec" and msg.findings == []
    assert span(msg, "odamex.tag") == (0, 4, 5560020)
    assert span(msg, "odamex.token") == (4, 4, 7)
    assert span(msg, "odamex.map") == (29, 6, "MAP01")
    assert span(msg, "odamex.game_type") == (48, 1, 1) and field(msg, "odamex.game_type").display == "Deathmatch (1)"
    assert msg.get("odamex.deathmatch") is None and msg.get("odamex.game_mode") is None
    assert span(msg, "odamex.skill") == (49, 1, 3)
    assert span(msg, "odamex.teamplay") == (50, 1, True)
    assert players_of(msg) == [
        ("odamex.player.name", 51, 8, "Doomguy"), ("odamex.player.frags", 59, 2, 12),
        ("odamex.player.ping", 61, 4, 48), ("odamex.player.team", 65, 1, 1),
        ("odamex.player.name", 66, 7, "Marine"), ("odamex.player.frags", 73, 2, -2),
        ("odamex.player.ping", 75, 4, 112), ("odamex.player.team", 79, 1, 2)]
    assert [t.display for t in msg.fields_with("odamex.player.team")] == ["Blue (1)", "Red (2)"]
    assert span(msg, "odamex.pwad_hash") == (80, 33, HASH)
    assert span(msg, "odamex.ctf") == (113, 1, False)
    assert span(msg, "odamex.website") == (114, 23, WEBSITE)
    assert span(msg, "odamex.score_limit") == (137, 4, 5)
    assert teams_of(msg) == [
        ("Blue", 141, 5, [("odamex.team.in_play", 141, 1, True), ("odamex.team.score", 142, 4, 3)]),
        ("Red", 146, 5, [("odamex.team.in_play", 146, 1, True), ("odamex.team.score", 147, 4, 1)]),
        ("Gold", 151, 1, [("odamex.team.in_play", 151, 1, False)])]
    assert msg.values["team_scores"] == {"blue": 3, "red": 1}
    layout = field(msg, "odamex.layout")
    assert (layout.value, layout.display) == ("spec", "spec (CTF bool after the PWAD hashes)")
    assert msg.info == 'Server info "Odamex test server" map=MAP01 players 2/8 Deathmatch teamplay'


def test_spec_layout_teamplay_off():
    """Teamplay off: every player's team byte is 0, the three team bools follow the website, no score limit."""
    payload = spec_reply(0, 0, (0, 0), u8(0) * 3)
    assert len(payload) == 140
    msg = same_without_tree(payload)
    assert msg.values["layout"] == "spec" and msg.findings == []
    assert [(t.offset, t.value, t.display) for t in msg.fields_with("odamex.player.team")] == [
        (65, 0, "None (0)"), (79, 0, "None (0)")]
    assert span(msg, "odamex.ctf") == (113, 1, False)
    assert msg.get("odamex.score_limit") is None
    assert teams_of(msg) == [(name, offset, 1, [("odamex.team.in_play", offset, 1, False)])
                             for name, offset in (("Blue", 137), ("Red", 138), ("Gold", 139))]
    assert msg.values["team_scores"] == {}
    assert msg.values["player_list"][1] == {"name": "Marine", "frags": -2, "ping": 112, "team": 0}


def test_spec_layout_ctf():
    tail = i32(3) + u8(1) + i32(2) + u8(1) + i32(0) + u8(1) + i32(1)
    msg = same_without_tree(spec_reply(1, 1, (1, 3), tail))
    assert msg.values["layout"] == "spec" and msg.findings == []
    assert span(msg, "odamex.ctf") == (113, 1, True)
    assert msg.fields_with("odamex.player.team")[1].display == "Gold (3)"
    assert msg.values["team_scores"] == {"blue": 2, "red": 0, "gold": 1}
    assert msg.values["mode"] == "Deathmatch CTF"


def test_spec_peer_writes_the_table_as_read_here():
    players = [("Doomguy", 12, 48, 1), ("Marine", -2, 112, 2)]
    kwargs = dict(players=players, pwads=(("ukraine.wad", HASH),), website=WEBSITE)
    assert od.server_info(**kwargs) == spec_reply(0, 0, (0, 0), u8(0) * 3)
    assert od.server_info(teamplay=True, team_scores={"blue": 3, "red": 1}, **kwargs) == \
        spec_reply(1, 0, (1, 2), i32(5) + u8(1) + i32(3) + u8(1) + i32(1) + u8(0))


def test_spec_without_team_fields_is_a_fallback():
    """The spec read without team bytes and team bools while teams are off: a last resort, with a note."""
    payload = head(2) + u8(1) + u8(3) + u8(0) + z("Doomguy") + i16(12) + i32(48) + z("Marine") + i16(-2) + \
        i32(112) + z(HASH) + u8(0) + z(WEBSITE)
    msg = same_without_tree(payload)
    assert msg.values["layout"] == "spec_compact" and codes(msg) == ["odamex.compact_layout"]
    assert msg.findings[0].severity == "note"
    assert msg.get("odamex.player.team") is None and msg.get("odamex.team") is None
    assert span(msg, "odamex.player.ping") == (61, 4, 48)
    assert msg.fields_with("odamex.player.name")[1].offset == 65
    assert span(msg, "odamex.pwad_hash") == (78, 33, HASH)
    assert span(msg, "odamex.ctf") == (111, 1, False)
    assert field(msg, "odamex.layout").display == "spec, without team bytes or team bools while teams are off"
    assert od.server_info(players=[("Doomguy", 12, 48, 1), ("Marine", -2, 112, 2)], pwads=(("ukraine.wad", HASH),),
                          website=WEBSITE, layout="compact") == payload


def test_empty_servers():
    """Without players a reply may fit more than one layout: real servers' is chosen, as they send it."""
    ffa = od.server_info(layout="real", pwads=())
    msg = same_without_tree(ffa)
    assert msg.values["layout"] == "real" and msg.values.get("teams_in_build") is None
    assert field(msg, "odamex.layout").display.endswith("team count not shown")
    assert severe(msg) == []
    spec = same_without_tree(od.server_info(pwads=()))
    assert spec.values["layout"] == "spec" and spec.findings == []


# -- findings ----------------------------------------------------------------------------------------------------
def spec_team_reply():
    return spec_reply(1, 0, (1, 2), i32(5) + u8(1) + i32(3) + u8(1) + i32(1) + u8(0))


def test_a_bad_value_is_flagged_in_the_layout_that_reads_past_it():
    """One value out of range breaks every layout; read on past it, the reply's own layout reads it to its end, and
    it is shown there with the value flagged, no bad_layout (the one that read furthest before a complaint was shown,
    often another layout's garbage). A teamplay of 2 changes what follows: no layout reads past it."""
    good = spec_team_reply()
    for offset, value in ((48, 7), (49, 9), (50, 2), (65, 4), (113, 2), (151, 5)):
        data = bytearray(good)
        data[offset] = value
        msg = dissect("odamex", bytes(data))
        bad = [f for f in msg.findings if f.code == "odamex.bad_value"]
        assert bad and bad[0].severity == "error", (offset, codes(msg))
        if offset == 50:
            assert "odamex.bad_layout" in codes(msg)
        else:
            assert (msg.values["layout"], codes(msg)) == ("spec", ["odamex.bad_value"]), offset
            assert (bad[0].offset, bad[0].length) == (offset, 1)
        assert field(msg, "odamex.map").value == "MAP01"  # every field before the break is still there
    # a real reply's CTF bool (byte 51) at 2: the older spec reading also reaches the end, with a bad hash and a bad
    # value further on; the fewest complaints win, so the real layout shows it (with the extension after it too)
    for block in (b"", od.extension_block(2)):
        real = bytearray(real_reply(1, 0, 0, (3, 3), block))
        real[51] = 2
        msg = dissect("odamex", bytes(real))
        assert msg.values["layout"] == "real" and [(f.code, f.offset) for f in msg.findings if f.severity != "note"] \
            == [("odamex.bad_value", 51)]
    msg = dissect("odamex", bytes(data))
    assert (msg.findings[0].offset, msg.findings[0].length) == (151, 1)
    assert msg.findings[0].message.startswith("Team in play? is 5, not 0 or 1 (spec: a bool is 'byte (1 or 0)'")


def test_real_team_out_of_range():
    """A team byte no real server writes: a player's team in a game without teams, or past TEAM_NONE."""
    for teams, bad in (((0, 3), [66]), ((5, 5), [66, 80])):  # Doomguy's team byte at 66, Marine's at 80
        msg = dissect("odamex", real_reply(1, 0, 0, teams))
        assert msg.values["layout"] == "real" and "odamex.bad_layout" not in codes(msg), teams
        assert [f.offset for f in msg.findings if f.code == "odamex.bad_value"] == bad


def test_spec_team_while_teamplay_is_off():
    msg = dissect("odamex", spec_reply(0, 0, (1, 0), u8(0) * 3))
    assert [(f.code, f.offset, f.length) for f in msg.findings] == [("odamex.bad_value", 65, 1)]
    assert msg.findings[0].message.startswith("player team 1 is not one of 0 = None while teamplay is off (spec: ")


def test_spec_modes_the_notes_rule_out():
    """The spec's notes: CTF comes with teamplay and deathmatch, teamplay with deathmatch (game type 1 or 2)."""
    scored = i32(3) + u8(1) + i32(2) + u8(1) + i32(0) + u8(0)  # limit 137, blue 141, red 146, gold 151
    ctf_alone = same_without_tree(spec_reply(0, 1, (0, 0), scored))
    assert msg_findings(ctf_alone) == [("odamex.mode_conflict", 113, 1, "CTF is on but teamplay is off")]
    assert ctf_alone.values["layout"] == "spec" and ctf_alone.values["team_scores"] == {"blue": 2, "red": 0}
    coop = bytearray(spec_reply(1, 1, (1, 2), scored))
    coop[48] = 0  # game type COOP
    coop = same_without_tree(bytes(coop))
    assert msg_findings(coop) == [("odamex.mode_conflict", 50, 1, "teamplay is on in a COOP game"),
                                  ("odamex.mode_conflict", 113, 1, "CTF is on in a COOP game")]
    assert coop.findings[0].severity == "warning" and "'If Teamplay is enabled, then deathmatch" in \
        coop.findings[0].message
    for game_type in (1, 2):
        valid = bytearray(spec_reply(1, 1, (1, 2), scored))
        valid[48] = game_type
        assert same_without_tree(bytes(valid)).findings == []


def msg_findings(msg):
    return [(f.code, f.offset, f.length, f.message.split(" (spec: ")[0]) for f in msg.findings]


def test_bad_hash_and_too_many_players():
    msg = dissect("odamex", spec_team_reply().replace(HASH.encode(), b"x" * 32))
    assert codes(msg) == ["odamex.bad_hash"] and msg.values["layout"] == "spec"
    assert (msg.findings[0].offset, msg.findings[0].length) == (80, 33)
    real = dissect("odamex", real_reply(1, 0, 0, (3, 3)).replace(HASH.encode(), b"not-a-hash"))
    assert codes(real) == ["odamex.bad_hash", "odamex.real_layout"]
    crowded = dissect("odamex", od.server_info(players=od.PLAYERS, max_players=2))
    assert codes(crowded) == ["odamex.too_many_players"]
    assert (crowded.findings[0].offset, crowded.findings[0].length) == (28, 1)


def test_truncated_and_count_mismatch():
    msg = dissect("odamex", spec_team_reply()[:75])
    assert codes(msg) == ["odamex.bad_layout", "odamex.count_mismatch", "odamex.truncated"]
    assert len(msg.values["player_list"]) == 1 and msg.values["layout"] == "spec"
    assert field(msg, "odamex.player.name").value == "Doomguy"
    cut = [f for f in msg.findings if f.code == "odamex.truncated"][0]
    assert (cut.offset, cut.length) == (75, 0)


def test_trailing_bytes():
    msg = dissect("odamex", spec_team_reply() + b"\x99\x98")
    assert codes(msg) == ["odamex.bad_layout", "odamex.trailing_bytes"]
    assert span(msg, "odamex.trailing") == (152, 2, b"\x99\x98")


# -- the layout walk ----------------------------------------------------------------------------------------------
def chosen(choice):
    """What a layout choice decides: the candidate, and where the shown layout broke (None when it fits)."""
    candidate, broken, _ = choice
    return candidate.layout, candidate.teams, candidate.echo, candidate.extension, broken


def tried(data, keyed):
    """The trials' choice among the candidates tried for a request with a key (True), without one (False), or not
    seen (None: an echoed key first where the name would start with control bytes, which a name of up to three
    letters and its terminator does not)."""
    if keyed is None:
        short_name = any(byte == 0 and all(b >= 0x20 for b in data[8:index])
                         for index, byte in enumerate(data[8:12], 8))
        order = ECHO_FIRST if any(byte < 0x20 for byte in data[8:12]) and not short_name else ECHO_LAST
    else:
        order = ECHO_FIRST if keyed else NO_ECHO
    return trials_choice(data, CANDIDATES[order], keyed)


def test_the_walk_decides_clean_replies_alone():
    """A reply that one candidate reads cleanly is placed by the walk over its bytes, with no trial decoded (no
    trial message comes back); the layout is the one the trials choose."""
    crowded = od.server_info(players=od.PLAYERS, max_players=2)
    cases = [(real_reply(1, 0, 0, (3, 3)), False, ("real", 2, False, False)),
             (real_reply(1, 0, 0, (4, 4)), False, ("real", 3, False, False)),
             (real_reply(1, 1, 0, (0, 1), real_block(30, (17, 9), 3)), False, ("real", 3, False, False)),
             (real_reply(1, 0, 0, (3, 3), od.extension_block(2), key=b"abcd"), True, ("real", 2, True, True)),
             (spec_team_reply(), False, ("spec", 3, False, False)),
             (od.server_info(layout="compact", players=[("Doomguy", 12, 48, 0)]), False,
              ("spec_compact", 3, False, False))]
    for data, keyed, expected in cases:
        walked = _choose_layout(data, keyed)
        trial = tried(data, keyed)
        assert chosen(walked) == chosen(trial) == (*expected, None), expected
        assert walked[2] is None and trial[2] is not None, expected
    # A warning weighs in the choice, or nothing fits: the trials decide.
    for data in (spec_team_reply().replace(HASH.encode(), b"x" * 32), crowded, spec_team_reply()[:75],
                 spec_team_reply() + b"\x99"):
        walked = _choose_layout(data, None)
        assert chosen(walked) == chosen(tried(data, None))
        assert walked[2] is not None or walked[1] is not None


def test_the_walk_and_the_trials_choose_alike_on_damaged_replies():
    """Every byte after the tag set to values that flip bools, enums and team bytes in and out of range, every
    truncation, a byte more: the walk and the trials choose the same candidate and break at the same byte."""
    replies = [real_reply(1, 0, 0, (3, 3), od.extension_block(2)),
               real_reply(0, 1, 0, (0, 1), real_block(30, (17, 9), 2), key=b"abcd"),
               od.server_info(layout="spec", players=od.PLAYERS, teamplay=True, team_scores={"blue": 3, "red": 1}),
               od.server_info(layout="compact", players=od.PLAYERS[:1], ctf=True, team_scores={"blue": 3})]
    walked = 0
    for good in replies:
        variants = [good[:cut] for cut in range(4, len(good))] + [good + b"\0"]
        for offset in range(4, len(good)):
            for value in (0, 1, 2, 3, 4, 5, 0xFF):
                if good[offset] != value:
                    variants.append(good[:offset] + bytes([value]) + good[offset + 1:])
        for data in variants:
            for keyed in (None, False, True):
                choice = _choose_layout(data, keyed)
                assert chosen(choice) == chosen(tried(data, keyed)), (data.hex(), keyed)
                walked += choice[2] is None and choice[1] is None
    assert walked > 1500  # changed names, scores and counts that still fit: placed by the walk


def test_tables_declare_every_key_and_code():
    replies = [real_reply(1, 0, 0, (3, 3), od.extension_block(2), key=b"abcd"),
               real_reply(0, 0, 1, (0, 1), real_block(3, (2, 1), 3)), spec_team_reply(),
               spec_team_reply()[:90], spec_team_reply() + b"xx", od.request(b"abcd"),
               od.master_list([("1.2.3.4", 5)], count=2), i32(99)]
    for payload in replies:
        msg = dissect("odamex", payload)
        assert all(f.key in F for f in msg.walk()), [f.key for f in msg.walk() if f.key not in F]
        assert all(f.code in W for f in msg.findings)


# -- captures and analysis --------------------------------------------------------------------------------------
def test_session_capture_reads_clean_in_every_layout():
    code, out, _ = run_cli("-T", "jsonl", "--fail-on", "warning", capture("odamex-session.pcap"))
    assert code == 0
    records = jsonl(out)
    infos = {r["result"]["server"]: r["result"] for r in records
             if r["kind"] == "analysis" and r["name"] == "server_info"}
    assert {server: (result["info"]["layout"], result["info"]["mode"]) for server, result in infos.items()} == {
        "127.0.0.1:10666": ("real", "Deathmatch"), "127.0.0.1:10667": ("real", "Team deathmatch"),
        "127.0.0.1:10668": ("spec", "Deathmatch CTF"), "127.0.0.1:10669": ("spec", "Deathmatch")}
    assert all(r["request_was"] == "server info request" and 0 <= r["response_time"] < 1 for r in infos.values())
    ffa = infos["127.0.0.1:10666"]["info"]
    assert ffa["teams_in_build"] == 2 and ffa["extension"]["version"] == 65
    assert [(p["name"], p["team"], p["team_name"]) for p in ffa["player_list"]] == [
        ("Doomguy", 3, "None (TEAM_NONE)"), ("Marine", 3, "None (TEAM_NONE)")]
    tdm = infos["127.0.0.1:10667"]["info"]
    assert tdm["teams_in_build"] == 3 and tdm["team_scores"] == {"blue": 17, "red": 9}
    assert [p["team_name"] for p in tdm["player_list"]] == ["Blue", "Red", "Blue"]
    ctf = infos["127.0.0.1:10668"]["info"]
    assert [p["team_name"] for p in ctf["player_list"]] == ["Blue", "Red", "Blue"]
    keyed = [r for r in records if r["kind"] == "frame" and r["frame"] == 6][0]["messages"][0]
    assert [f["key"] for f in keyed["fields"]][:3] == ["odamex.tag", "odamex.token", "odamex.echoed_key"]
    master = [r for r in records if r["kind"] == "analysis" and r["name"] == "master_list"][0]
    assert master["result"]["servers"] == [f"127.0.0.1:{port}" for port in range(10666, 10670)]
    assert master["result"]["request_was"] == "master list request" and master["frames"] == [1, 2]


def test_damaged_capture_findings():
    _, out, _ = run_cli("-T", "jsonl", capture("odamex-damaged.pcap"))
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    per_frame = [sorted({f["code"] for f in r["messages"][0]["findings"]}) for r in frames]
    assert per_frame == [[], ["odamex.count_mismatch"], ["odamex.count_mismatch", "odamex.truncated"],
                         ["odamex.bad_value"], ["odamex.bad_hash"],
                         ["odamex.too_many_players"],
                         ["odamex.bad_layout", "odamex.truncated"],
                         ["odamex.bad_layout", "odamex.trailing_bytes"],
                         ["odamex.bad_value", "odamex.extension", "odamex.real_layout"]]


def test_the_master_listings_a_limit_forgot_are_counted_also_in_a_merge(monkeypatch):
    """Past MAX_LISTED the least recently listed servers are forgotten: stats() counts them (listings_forgotten), as
    the servers-seen table counts its own; a merge adds the other's count and the listings it leaves out."""
    import struct as st
    import dissect.analysis.odamex as analysis
    monkeypatch.setattr(analysis, "MAX_LISTED", 3)

    def listed(*hosts):
        analyzer = analysis.OdamexAnalyzer()
        data = b"".join(bytes([10, 0, 0, host]) + st.pack("<H", 10666) for host in hosts)
        analyzer._list("10.9.9.9:15000", MasterEntries(data), 5)
        return analyzer

    mine, theirs = listed(1, 2), listed(3, 4, 5, 6)
    assert "listings_forgotten" not in mine.stats() and theirs.stats()["listings_forgotten"] == 1
    mine.merge(theirs)
    assert mine.stats()["listings_forgotten"] == 1 + 2
    assert [s["server"] for s in mine.stats()["servers"]] == ["10.0.0.4:10666", "10.0.0.5:10666", "10.0.0.6:10666"]


def test_stats_list_servers_from_master_and_replies(tmp_path):
    code, out, _ = run_cli("--stats", capture("odamex-session.pcap"))
    assert "Odamex servers seen: 4" in out and '"CTF server"' in out and "Team deathmatch" in out
    # A server only a master named is listed too.
    path = tmp_path / "listed.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet(
        "10.0.0.4", 15000, "10.0.0.9", 40000, od.master_list([("198.51.100.1", 10666)]))))])
    _, out, _ = run_cli("--stats", path)
    assert "  198.51.100.1:10666      responses 0  listed by 10.0.0.4:15000" in out.splitlines()
    _, out, _ = run_cli("--stats", "-T", "json", path)
    servers = [r for r in json.loads(out) if r["kind"] == "server"]
    assert servers == [{"kind": "server", "protocol": "odamex", "server": "198.51.100.1:10666",
                        "listed_by": ["10.0.0.4:15000"], "responses": 0, "last_frame": 1}]


def test_a_reply_cut_short_shows_what_it_lacks_as_unknown(tmp_path):
    """A reply cut before its name, or before its maximum players: "?" on the info line, in the analysis record's
    summary and in --stats' servers seen, where those values would be (they read "None")."""
    path = tmp_path / "cut.pcap"
    launcher, server = ("10.0.0.9", 40001), ("10.0.0.3", 10666)
    reply = real_reply(1, 0, 0, (3, 3))
    frames = []
    for index, cut in enumerate((8, 28)):  # tag and token only; then the name and the player count (head())
        ts = capkit.DEFAULT_TS + index
        frames += [(ts, capkit.ethernet(capkit.udp_packet(*launcher, *server, od.request()))),
                   (ts + 0.01, capkit.ethernet(capkit.udp_packet(*server, *launcher, reply[:cut])))]
    capkit.write_pcap(path, frames)
    code, out, _ = run_cli(path)
    lines = out.splitlines()
    assert lines[1].endswith('Server info "?" map=? players ?/? ?  [error]')
    assert lines[2].endswith('server info from 10.0.0.3:10666: "?" ?/? (frames 1,2)')
    assert lines[4].endswith('Server info "Odamex test server" map=? players 2/? ?  [error]')
    assert lines[5].endswith('server info from 10.0.0.3:10666: "Odamex test server" 2/? (frames 3,4)')
    _, out, _ = run_cli("--stats", path)
    assert '  10.0.0.3:10666          "Odamex test server"  players 2/?  responses 2  rtt 10.000 ms' in out.splitlines()


def test_a_password_flag_not_0_or_1_is_a_bad_value():
    extension = od.extension_block(2, spectators=[0, 1])
    payload = bytearray(real_reply(1, 0, 0, (3, 3), extension))
    at = field(dissect("odamex", bytes(payload)), "odamex.ext.password").offset
    payload[at:at + 2] = i16(2)
    msg = same_without_tree(bytes(payload))
    assert span(msg, "odamex.ext.password") == (at, 2, 2)
    assert [(f.code, f.offset, f.length) for f in msg.findings if f.code == "odamex.bad_value"] == [
        ("odamex.bad_value", at, 2)]
    assert msg.values["layout"] == "real"  # flagged, not a reason to read another layout
    assert [f.message for f in msg.findings if f.code == "odamex.bad_value"][0].startswith(
        "Password required is 2, not 0 or 1 (spec: ")


def test_request_and_reply_are_paired(tmp_path):
    path = tmp_path / "pair.pcap"
    launcher, server = ("10.0.0.9", 40001), ("10.0.0.3", 10666)
    frames = [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet(*launcher, *server, od.request()))),
              (capkit.DEFAULT_TS + 0.004, capkit.ethernet(capkit.udp_packet(*server, *launcher,
                                                                            real_reply(1, 0, 0, (3, 3)))))]
    capkit.write_pcap(path, frames)
    _, out, _ = run_cli("-T", "jsonl", path)
    reply = [r for r in jsonl(out) if r["kind"] == "frame"][1]["messages"][0]
    generated = {f["key"]: f for f in reply["fields"] if f["key"] in ("odamex.request_in", "odamex.response_time")}
    assert generated["odamex.request_in"]["value"] == 1
    assert abs(generated["odamex.response_time"]["value"] - 0.004) < 1e-6


def test_a_reply_to_a_request_seen_without_a_key_has_no_echoed_key(tmp_path):
    """A two-letter name puts its terminator among bytes 8-11, where an echoed key would be, and the skill byte (33)
    is out of range, so no layout fits: with the launcher's request seen without a key, no reading with an echoed
    key is tried (one read "ab\\0\\x02" as a key and the rest as a garbled name, players 1 of 117)."""
    reply = (i32(5560020) + i32(7) + z("ab") + u8(2) + u8(8) + z("MAP01") + u8(1) + z("ukraine.wad")
             + u8(1) + u8(9) + u8(0) + u8(0)  # deathmatch 32, skill 33 (9: not 0 to 7), teamplay 34, CTF 35
             + z("Doomguy") + i16(12) + i32(48) + u8(3) + z("Marine") + i16(-2) + i32(112) + u8(3)
             + z(HASH) + z(WEBSITE))
    path = tmp_path / "unkeyed.pcap"
    launcher, server = ("10.0.0.9", 40001), ("10.0.0.3", 10666)
    capkit.write_pcap(path, [
        (capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet(*launcher, *server, od.request()))),
        (capkit.DEFAULT_TS + 0.004, capkit.ethernet(capkit.udp_packet(*server, *launcher, reply)))])
    _, out, _ = run_cli("-T", "jsonl", path)
    msg = [r for r in jsonl(out) if r["kind"] == "frame"][1]["messages"][0]
    fields = {f["key"]: f for f in msg["fields"]}
    assert "odamex.echoed_key" not in fields
    assert (fields["odamex.name"]["offset"], fields["odamex.name"]["length"], fields["odamex.name"]["value"]) == \
        (8, 3, "ab")
    assert (fields["odamex.players"]["value"], fields["odamex.max_players"]["value"]) == (2, 8)
    bad = [f for f in msg["findings"] if f["code"] == "odamex.bad_value"]
    assert [(f["offset"], f["length"]) for f in bad] == [(33, 1)]
    # Without the request, the key's place is a guess: the reply alone is still read, whatever the layout shown.
    assert _choose_layout(reply, False)[0].echo is False


@pytest.mark.parametrize("layout, name, bad", [("spec", "Srv", 21), ("real", "ab", 21)], ids=["spec", "real"])
def test_a_short_named_reply_with_one_value_out_of_range_is_read_in_its_layout(layout, name, bad):
    """No request seen, a name of two or three letters (its terminator among bytes 8-11, where an echoed key would
    be) and one value out of range: the spec's game type 3 at byte 21, or real servers' skill 9 at byte 21. Read on
    past the bad value, the reply's own layout reads it to its end; a reading with an echoed key ran off the end
    after a long way and was shown before ("Echoed key: 53 72 76 00", players 0 of 3, 65 PWADs)."""
    player = [("Doomguy", 12, 48, 0 if layout == "spec" else 4)]  # real servers: TEAM_NONE is 4 in a 3-team build
    if layout == "spec":
        payload = od.server_info(layout="spec", name=name, pwads=(), players=player, game_type=3)
    else:
        payload = od.server_info(layout="real", name=name, pwads=(), players=player, mode="dm", skill=9)
    msg = dissect("odamex", payload)
    end = 8 + len(name) + 1
    assert span(msg, "odamex.name") == (8, end - 8, name)
    assert span(msg, "odamex.players")[2] == 1 and span(msg, "odamex.max_players") == (end + 1, 1, 8)
    assert not msg.fields_with("odamex.echoed_key")
    assert msg.values["layout"] == layout
    assert [(f.code, f.offset, f.length) for f in msg.findings if f.severity != "note"] == \
        [("odamex.bad_value", bad, 1)]
    assert "odamex.bad_layout" not in codes(msg)
    assert [p["name"] for p in msg.values["player_list"]] == ["Doomguy"]
    # no request seen: a short name's terminator among bytes 8-11 is no sign of a key (any other control byte is)
    assert echo_order(payload, None) == ECHO_LAST
    assert echo_order(payload[:8] + b"\x11\x22\x33\x44" + payload[8:], None) == ECHO_FIRST


@pytest.mark.parametrize("skill, text", [(0, "no things (0)"), (1, "ITYTD (1)"), (3, "HMP (3)"), (4, "UV (4)"),
                                         (5, "NM (5)"), (7, "custom 7 (7)")])
@pytest.mark.parametrize("mode", ["coop", "dm", "tdm", "ctf"])
def test_real_servers_skill_is_sv_skill_numbered_from_1(skill, text, mode):
    """sv_sqpold.cpp:SV_SendServerInfo writes MSG_WriteByte(sv_skill.asInt()): skill_t numbers sk_ntm 0, sk_baby 1 ...
    sk_nightmare 5, and sv_skill's range is 0 to 7 (c_cvarlist.cpp). The "dm" preset sets sv_skill 5: a Nightmare
    server's reply was read with odamex.bad_value ("Skill level 5 is not one of 0 = ITYTD ... 4 = NM"), and a UV one
    (4) shown as NM."""
    payload = od.server_info(layout="real", mode=mode, skill=skill, players=od.REAL_PLAYERS)
    msg = same_without_tree(payload)
    assert msg.values["layout"] == "real" and msg.values["skill"] == skill
    assert [f.code for f in msg.findings if f.severity != "note"] == []
    assert "odamex.bad_layout" not in codes(msg)
    assert field(msg, "odamex.skill").display == text


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


def test_a_server_ip_given_as_bytes_shows_as_a_dotted_quad():
    """The master list's address field takes its text from the entry's bytes when it is read; a value of 4 raw
    bytes (a plugin's or an API user's Field) is shown as inet_ntoa writes it, other bytes as hex."""
    from dissect.core.model import Field, display_of
    spec = F.server.ip
    shown = [display_of(Field(spec.key, spec.name, 0, 4, value, spec.fmt))
             for value in (bytes([192, 0, 2, 1]), bytes([0, 255, 10, 7]), b"\x01\x02\x03", "198.51.100.9")]
    assert shown == ["192.0.2.1", "0.255.10.7", "01 02 03", "198.51.100.9"]


# Without a tree (the summary and --stats), a reply the layout walk finds to fit cleanly is read for its head and
# game mode only; full_values reads the rest when something asks for it (an analysis record's result).
SUMMARY_PLAYERS = (("alice", 12, 40, 1), ("bob", -3, 120, 0))
HEAD_VALUES = {"tag": 5560020, "token": 9, "name": "summary", "players": 2, "max_players": 8, "map": "MAP07",
               "pwads": ["ukraine.wad", "extra.wad"]}
TWO_PWADS = (("ukraine.wad", od.HASH), ("extra.wad", od.HASH))


@pytest.mark.parametrize("layout, mode, modes, unread", [
    ("real", "ctf", {"deathmatch": False, "skill": 3, "teamplay": False, "ctf": True, "mode": "CTF"},
     ("real", 3, False, True)),
    ("spec", None, {"game_type": 1, "skill": 3, "teamplay": True, "ctf": True, "mode": "Deathmatch CTF"},
     ("spec", 3, False, False)),
    ("compact", None, {"game_type": 1, "skill": 3, "teamplay": False, "ctf": True, "mode": "Deathmatch CTF"},
     ("spec_compact", 3, False, False)),
])
def test_a_clean_reply_without_a_tree_reads_its_head_and_mode(layout, mode, modes, unread):
    teamplay = layout == "spec"
    payload = od.server_info(token=9, name="summary", map_name="MAP07", players=SUMMARY_PLAYERS, pwads=TWO_PWADS,
                             layout=layout, mode=mode, teamplay=teamplay, ctf=True,
                             team_scores={"blue": 1, "red": 2})
    light, full = dissect("odamex", payload, tree=False), dissect("odamex", payload)
    assert [f.as_dict() for f in light.findings] == [f.as_dict() for f in full.findings]
    expected = dict(HEAD_VALUES, **modes, unread=unread, layout=unread[0], echoed_key=False, extension=unread[3])
    if unread[3]:  # the extension's note points at its first byte
        expected["extension_offset"] = len(payload) - len(od.extension_block(len(SUMMARY_PLAYERS)))
    assert light.values == expected and light.info == full.info
    assert "player_list" in full.values and "website" in full.values
    assert full_values(light) == full.values and "unread" not in light.values
    assert [p["name"] for p in light.values["player_list"]] == ["alice", "bob"]


def test_a_reply_without_a_clean_fit_is_read_whole_without_a_tree():
    payload = od.server_info(players=(("alice", 1, 2, 0),), max_players=0, layout="real")  # more players than slots
    light, full = dissect("odamex", payload, tree=False), dissect("odamex", payload)
    assert "odamex.too_many_players" in codes(light) and "unread" not in light.values
    assert light.values == full.values


def _results_both_ways(path, peer, *replies):
    """The analysis records' results of a launcher's request to ``peer`` and ``peer``'s replies, read with and
    without a tree: asserted equal, and given once."""
    launcher = ("10.0.0.9", 40000)
    frames = [(1.0, capkit.ethernet(capkit.udp_packet(*launcher, *peer, od.request())))]
    frames += [(1.5 + i, capkit.ethernet(capkit.udp_packet(*peer, *launcher, reply)))
               for i, reply in enumerate(replies)]
    capkit.write_pcap(path, frames)
    results = {}
    for tree in (False, True):
        with dissect_api.open(str(path), tree=tree) as cap:
            results[tree] = [r.result for r in cap if r.kind == "analysis"]
    assert results[False] == results[True]
    return results[False]


def test_analysis_results_without_a_tree_read_the_whole_reply(tmp_path):
    reply = od.server_info(players=SUMMARY_PLAYERS, layout="real", mode="dm")
    results = _results_both_ways(tmp_path / "odamex.pcap", ("10.0.0.2", 10666), reply)
    assert len(results) == 1
    info = results[0]["info"]
    assert [p["name"] for p in info["player_list"]] == ["alice", "bob"] and info["website"] == "https://odamex.example"


def _listings(tmp_path, lists, monkeypatch, limit):
    """Master lists (master, [servers]) in one capture, read with ``limit`` servers listed at most: the stats' servers
    of one pipeline, and of two that each read one master's lists, merged."""
    import dissect.analysis.odamex as analysis
    from dissect.capture.sources import open_capture
    from dissect.pipeline import Pipeline
    from dissect.registry import Registry
    monkeypatch.setattr(analysis, "MAX_LISTED", limit)
    frames = [capkit.ethernet(capkit.udp_packet(master, 15000, "10.0.0.9", 40000, od.master_list(servers)))
              for master, servers in lists]
    path = tmp_path / "masters.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.001, frame) for n, frame in enumerate(frames)])
    one, workers = Pipeline(Registry()), [Pipeline(Registry()), Pipeline(Registry())]
    for frame, (master, _) in zip(open_capture(path), lists):
        one.frame(frame)
        owner = 0 if master == lists[0][0] else 1
        workers[owner].frame(frame)
        workers[1 - owner].skip(frame)
    merged = workers[0].analyzers["odamex"]
    merged.merge(workers[1].analyzers["odamex"])
    analyzer = one.analyzers["odamex"]
    assert len(analyzer.listed) == len(merged.listed) <= limit
    return analyzer, [(s["server"], s["listed_by"], s["last_frame"]) for s in analyzer.stats()["servers"]], [
        (s["server"], s["listed_by"], s["last_frame"]) for s in merged.stats()["servers"]]


def test_listed_servers_evict_the_least_recently_listed(tmp_path, monkeypatch):
    a, b = "10.0.0.4", "10.0.0.5"
    s1, s2, s3, s4, s5 = (("198.51.100.1", 10666), ("198.51.100.2", 10666), ("198.51.100.3", 10667),
                          ("198.51.100.4", 1), ("203.0.113.255", 65535))
    analyzer, stats, merged = _listings(tmp_path, [(a, [s1, s2, s3, s4]), (b, [s2, s5]), (a, [s4])], monkeypatch, 3)
    # after a's first list: s2 s3 s4 (s1 evicted); after b's: s4 s2 s5 (s3 evicted); a's second: s2 s5 s4
    assert stats == [("198.51.100.2:10666", ["10.0.0.4:15000", "10.0.0.5:15000"], 2),
                     ("203.0.113.255:65535", ["10.0.0.5:15000"], 2), ("198.51.100.4:1", ["10.0.0.4:15000"], 3)]
    assert [entry_text(key) for key in analyzer.listed.keys()] == [server for server, _, _ in stats]
    assert merged == stats  # the workers' tables merged: the same servers, order and masters
    _, unbounded, _ = _listings(tmp_path, [(a, [s1, s2, s3, s4]), (b, [s2, s5]), (a, [s4])], monkeypatch, 10)
    assert [server for server, _, _ in unbounded] == ["198.51.100.1:10666", "198.51.100.3:10667",
                                                      "198.51.100.2:10666", "203.0.113.255:65535", "198.51.100.4:1"]


def test_masters_list_a_server_in_the_order_they_first_listed_it_in_one_process_and_merged(tmp_path, monkeypatch):
    """Master a lists the server, then b, then a again: listed by a, then b, in one process and in two workers (each
    read one master's lists) merged, where a's listing is the newer."""
    a, b, server = "10.0.0.4", "10.0.0.5", ("198.51.100.1", 10666)
    for lists, masters in (([(a, [server]), (b, [server]), (a, [server])], ["10.0.0.4:15000", "10.0.0.5:15000"]),
                           ([(a, [server]), (b, [server]), (b, [server]), (a, [server])],
                            ["10.0.0.4:15000", "10.0.0.5:15000"]),
                           ([(b, [server]), (a, [server]), (a, [server])], ["10.0.0.5:15000", "10.0.0.4:15000"])):
        _, stats, merged = _listings(tmp_path, lists, monkeypatch, 10)
        assert stats == merged == [("198.51.100.1:10666", masters, len(lists))]


def test_master_list_results_are_lists_of_texts_with_and_without_a_tree(tmp_path):
    results = _results_both_ways(tmp_path / "master.pcap", ("10.0.0.4", 15000), MASTER_BYTES)
    assert len(results) == 1
    result = results[0]
    assert type(result["servers"]) is list and result["servers"] == MASTER_TEXTS
    assert list(result) == ["launcher", "master", "request_frame", "response_time", "request_was", "server_count",
                            "servers"]
    assert (result["server_count"], result["request_was"]) == (4, "master list request")


@pytest.mark.parametrize("tree", [False, True])
def test_a_master_list_cut_before_its_count_is_reported_with_the_others(tmp_path, tree):
    """The reply ends inside its server count: its frame is malformed, its record lists no server, and the frames
    around it are dissected as ever."""
    path = tmp_path / "cut.pcap"
    launcher, master = ("10.0.0.9", 40000), ("10.0.0.4", 15000)
    capkit.write_pcap(path, [(1.0, capkit.ethernet(capkit.udp_packet(*launcher, *master, od.request()))),
                             (1.5, capkit.ethernet(capkit.udp_packet(*master, *launcher, MASTER_BYTES[:5]))),
                             (2.0, capkit.ethernet(capkit.udp_packet(*master, *launcher, MASTER_BYTES)))])
    with dissect_api.open(str(path), tree=tree) as cap:
        records = list(cap)
    analyses = [r for r in records if r.kind == "analysis"]
    assert [r.result["servers"] for r in analyses] == [[], MASTER_TEXTS]
    assert [r.summary for r in analyses] == ["master list from 10.0.0.4:15000: 0 servers",
                                             "master list from 10.0.0.4:15000: 3 servers"]
    cut = [r for r in records if r.kind == "frame"][1]
    assert cut.info == "master_list [Malformed]" and "servers" not in cut.messages[0].values
