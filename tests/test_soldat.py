"""Soldat lobby lines: fields and offsets in both separator encodings, and every finding."""

import soldat_peer as sp
from helpers import codes, dissect, field, span

UTF8, LATIN1 = sp.UTF8, sp.LATIN1


def test_request_line_fields_latin1():
    payload = sp.request()
    assert payload == b"e\xa942\xa91\xa90\xa9!\xa90\xa90\xa91\xa90\xa90\xa91\xa90\xa9-1\xa90\n"
    msg = dissect("soldat", payload)
    assert msg.name == "request_list" and msg.findings == []
    assert span(msg, "soldat.type") == (0, 1, 0x65)
    assert span(msg, "soldat.filter.version") == (2, 2, 42)
    assert span(msg, "soldat.filter.dedicated") == (5, 1, "1")
    assert field(msg, "soldat.filter.dedicated").display == '"1" (dedicated only)'
    assert field(msg, "soldat.filter.bots").display == '"!" (with bots)'
    assert field(msg, "soldat.filter.bonuses").display == '"1" (no bonuses)'
    assert span(msg, "soldat.filter.gametype") == (25, 2, -1)
    assert field(msg, "soldat.filter.gametype").display == "do not care (-1)"
    assert span(msg, "soldat.filter.be") == (28, 1, "0")
    assert span(msg, "soldat.eol") == (29, 1, b"\n")


def test_request_line_fields_utf8():
    msg = dissect("soldat", sp.request(encoding=UTF8))
    assert msg.values["encoding"] == "utf-8" and msg.findings == []
    assert span(msg, "soldat.filter.version") == (3, 2, 42)
    assert span(msg, "soldat.filter.dedicated") == (7, 1, "1")
    assert span(msg, "soldat.filter.be") == (41, 1, "0")


def test_list_begin_and_end():
    begin = dissect("soldat", sp.list_begin(4))
    assert begin.name == "list_begin" and span(begin, "soldat.list.servercount") == (2, 1, 4)
    end = dissect("soldat", sp.list_end())
    assert end.name == "list_end" and end.findings == [] and end.length == 7
    end8 = dissect("soldat", sp.list_end(UTF8))
    assert end8.findings == [] and end8.length == 12


def test_server_entry_all_19_fields():
    entry = sp.SERVERS[1]
    msg = dissect("soldat", sp.server_entry(entry, UTF8))
    assert msg.name == "server" and msg.findings == []
    values = [(f.key.rsplit(".", 1)[1], f.value) for f in msg.fields[1:-1]]
    assert values == [("version", 42), ("ip", "192.0.2.11"), ("port", 23074), ("gamestyle", 1), ("players", 0),
                      ("maxplayers", 16), ("map", "Blox"), ("name", "Pointmatch Ünited"), ("bots", 0),
                      ("bonusfreq", 3), ("respawn", 4), ("connection", 3), ("survival", 0), ("realistic", 1),
                      ("dedicated", 1), ("os", 0), ("passworded", 1), ("be", 0), ("country", "PL")]
    assert span(msg, "soldat.server.ip") == (7, 10, "192.0.2.11")
    assert span(msg, "soldat.server.name") == (42, 18, "Pointmatch Ünited")
    assert field(msg, "soldat.server.connection").display == "T1 (3)"
    assert field(msg, "soldat.server.os").display == "Windows (0)"
    assert field(msg, "soldat.server.gamestyle").display == "PM (1)"


def test_name_decoded_in_the_lines_encoding():
    latin = dissect("soldat", sp.server_entry(sp.SERVERS[1], LATIN1))
    assert field(latin, "soldat.server.name").value == "Pointmatch Ünited"
    assert span(latin, "soldat.server.name") == (34, 17, "Pointmatch Ünited")


def test_bad_field_count():
    msg = dissect("soldat", sp.line("g", sp.SERVERS[0][:18]))
    assert codes(msg) == ["soldat.bad_field_count"]
    assert "18 fields" in msg.findings[0].message and "19" in msg.findings[0].message
    assert field(msg, "soldat.server.be").value == 0  # the fields that are there are shown


def test_bad_values():
    bad = list(sp.SERVERS[0])
    bad[1], bad[2], bad[11], bad[15], bad[18] = "300.1.2.3", 70000, 7, 2, "Germany"
    msg = dissect("soldat", sp.server_entry(bad))
    findings = [f for f in msg.findings if f.code == "soldat.bad_value"]
    messages = " | ".join(f.message for f in findings)
    assert len(findings) == 5, messages
    for name in ("IP:", "PORT:", "CONNECTION:", "OS:", "COUNTRY:"):
        assert name in messages
    req = dissect("soldat", sp.request(filters=(42, "2", "0", "!", "0", "0", "!", "0", "0", "1", "0", 9, "0")))
    assert sorted(f.message.split(":")[0] for f in req.findings) == ["BONUSES", "DEDICATED", "GAMETYPE"]


def test_players_over_max_and_not_a_number():
    bad = list(sp.SERVERS[0])
    bad[4], bad[5], bad[9] = 20, 12, "lots"
    msg = dissect("soldat", sp.server_entry(bad))
    messages = [f.message for f in msg.findings]
    assert any("PLAYERS 20 exceeds MAXPLAYERS 12" in m for m in messages)
    nan = [f for f in msg.findings if "not a number" in f.message][0]
    assert nan.severity == "error" and field(msg, "soldat.server.bonusfreq").value is None


def test_whitespace_around_numbers_is_noted_and_trimmed():
    entry = list(sp.SERVERS[0])
    entry[8] = "2 "  # as the spec's own format line shows: 'BOTS ©'
    msg = dissect("soldat", sp.server_entry(entry))
    assert codes(msg) == ["soldat.whitespace"]
    assert field(msg, "soldat.server.bots").value == 2 and field(msg, "soldat.server.bots").length == 2


def test_gamestyle_zero_is_a_note():
    entry = list(sp.SERVERS[0])
    entry[3] = 0
    msg = dissect("soldat", sp.server_entry(entry))
    assert [(f.code, f.severity) for f in msg.findings] == [("soldat.bad_value", "note")]


def test_end_line_must_be_five_empty_fields():
    msg = dissect("soldat", b"h\xa9\xa9\xa9\n")
    assert codes(msg) == ["soldat.bad_end_line"]
    data = dissect("soldat", b"h\xa9x\xa9\xa9\xa9\xa9\n")
    assert codes(data) == ["soldat.bad_end_line"]


def test_unknown_type_bad_separator_unterminated():
    unknown = dissect("soldat", b"z\xa91\xa92\n")
    assert codes(unknown) == ["soldat.unknown_type"]
    assert [f.value for f in unknown.fields_with("soldat.field")] == ["1", "2"]
    no_sep = dissect("soldat", b"e|42|1\n")
    assert codes(no_sep) == ["soldat.bad_separator"]
    cut = dissect("soldat", sp.list_begin(3)[:-1])
    assert codes(cut) == ["soldat.unterminated_line"]
    assert span(cut, "soldat.list.servercount") == (2, 1, 3)
