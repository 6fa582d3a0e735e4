"""Soldat lobby lines: fields and offsets in both separator encodings, and every finding."""

import soldat_peer as sp
from helpers import codes, dissect, field, span
from dissect.dissectors import soldat as soldat_module
from dissect.dissectors.soldat import Soldat

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
    over = [f for f in msg.findings if "PLAYERS 20 exceeds MAXPLAYERS 12" in f.message]
    assert len(over) == 1 and (over[0].offset, over[0].length) == span(msg, "soldat.server.players")[:2]
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


def test_a_line_cut_before_its_fields_shows_a_question_mark_for_each_in_its_info():
    """A FIN or the capture's end may cut a line before its fields: the info says "?" for those, not None."""
    server = dissect("soldat", sp.server_entry(sp.SERVERS[0])[:25])  # up to the players: no max, map or name
    assert server.info == 'Server 192.0.2.10:23073 "?" map=? players 5/?'
    assert dissect("soldat", b"e\xa9").info == "Request List version=? gametype=?"
    assert dissect("soldat", b"f\xa9").info == "List begin: ? servers"


def test_an_empty_line_is_terminated_and_has_no_type_byte():
    """A line that is only its \\n: the \\n is no type byte, and the line is not unterminated."""
    msg = dissect("soldat", b"\n")
    assert msg.name == "empty_line" and codes(msg) == ["soldat.unknown_type"]
    assert span(msg, "soldat.eol") == (0, 1, b"\n")
    assert [(f.offset, f.length) for f in msg.findings] == [(0, 0)]
    assert not msg.fields_with("soldat.type")


def _crlf(line):
    assert line.endswith(b"\n") and not line.endswith(b"\r\n")
    return line[:-1] + b"\r\n"


def test_a_line_ending_in_crlf_reads_its_fields_as_with_lf_and_is_flagged_once():
    """A \\r before the \\n belongs to no field: the last field (COUNTRY) reads "PL", not "PL\\r"."""
    lf = sp.server_entry(sp.SERVERS[1], UTF8)
    msg = dissect("soldat", _crlf(lf))
    plain = dissect("soldat", lf)
    assert msg.values == plain.values and msg.info == plain.info
    assert span(msg, "soldat.server.country") == span(plain, "soldat.server.country") == (len(lf) - 3, 2, "PL")
    assert span(msg, "soldat.eol") == (len(lf) - 1, 2, b"\r\n")
    assert field(msg, "soldat.eol").display == "\\r\\n"
    assert codes(msg) == ["soldat.crlf"]
    assert [(f.offset, f.length, f.severity) for f in msg.findings] == [(len(lf) - 1, 1, "warning")]
    assert msg.length == len(lf) + 1


def test_a_crlf_list_begin_counts_its_servers_and_its_end_line_carries_no_data():
    begin = dissect("soldat", _crlf(sp.list_begin(12)))
    assert span(begin, "soldat.list.servercount") == (2, 2, 12) and codes(begin) == ["soldat.crlf"]
    assert begin.info == "List begin: 12 servers"
    end = dissect("soldat", _crlf(sp.list_end()))
    assert codes(end) == ["soldat.crlf"] and span(end, "soldat.eol") == (6, 2, b"\r\n")
    request = dissect("soldat", _crlf(sp.request()))
    assert span(request, "soldat.filter.be") == (28, 1, "0") and codes(request) == ["soldat.crlf"]


def test_an_empty_crlf_line_is_an_empty_line():
    msg = dissect("soldat", b"\r\n")
    assert msg.name == "empty_line" and codes(msg) == ["soldat.crlf", "soldat.unknown_type"]
    assert span(msg, "soldat.eol") == (0, 2, b"\r\n")
    assert [(f.offset, f.length) for f in msg.findings] == [(0, 1), (0, 0)]


def test_a_cr_inside_a_line_is_still_part_of_its_field():
    entry = list(sp.SERVERS[0])
    entry[6] = "ctf\rAsh"  # the map: only a CR right before the LF is part of the line's end
    msg = dissect("soldat", sp.server_entry(entry))
    assert msg.values["map"] == "ctf\rAsh" and "soldat.crlf" not in codes(msg)


# -- tables ---------------------------------------------------------------------------------------------

def test_every_key_and_code_emitted_is_declared():
    from dissect.dissectors.soldat import F, W
    bad = list(sp.SERVERS[0])
    bad[2], bad[3], bad[8] = "9" * 30, 0, " 2"
    lines = [sp.request(), sp.request(encoding=UTF8), sp.list_begin(4), sp.server_entry(bad), sp.list_end(),
             b"h\xa9x\n", b"z\xa91\n", b"e|1\n", b"g" + b"\xa9" * 40 + b"\n", b"g\xa9", b""]
    for payload in lines:
        msg = dissect("soldat", payload)
        assert {f.key for f in msg.walk()} <= set(F.by_key), payload
        assert {f.code for f in msg.findings} <= set(W.by_code), payload
    assert {"soldat.server.port", "soldat.filter.gametype", "soldat.list.servercount", "soldat.more_fields",
            "soldat.eol"} <= set(F.by_key)
    for code in ("bad_field_count", "bad_value", "count_mismatch", "missing_end", "separator", "mixed_separators",
                 "line_too_long", "state_evicted", "unterminated_line", "bad_end_line", "whitespace", "crlf"):
        assert f"soldat.{code}" in W


def test_summary_path_builds_no_tree_but_same_values_and_findings():
    payload = sp.server_entry(sp.SERVERS[2], UTF8)
    full, cheap = dissect("soldat", payload), dissect("soldat", payload, tree=False)
    assert cheap.fields == [] and cheap.values == full.values and cheap.info == full.info
    assert codes(cheap) == codes(full)


# -- hostile lines ----------------------------------------------------------------------------------------

def test_a_16_mib_line_is_cut_at_64_kib_before_it_is_dissected():
    from dissect.capture.reassembly import Chunk
    from dissect.dissectors.soldat import MAX_FIELDS, MAX_LINE
    from dissect.registry import Registry
    soldat = Registry().get("soldat")
    parser = soldat.stream_parser()
    line = b"g" + b"\xa9" * (16 * 1024 * 1024) + b"\n"
    stream = line + sp.list_begin(4)
    messages, held = [], []
    for start in range(0, len(stream), 65536):
        messages += parser.feed(Chunk(stream[start:start + 65536], 7, 54), True, None)
        held.append(parser.size)
    assert max(held) < MAX_LINE and soldat.held == 0
    cut, begin = messages
    assert cut.length == MAX_LINE and cut.frames == [7]
    assert "soldat.line_too_long" in codes(cut) and "soldat.unterminated_line" not in codes(cut)
    assert len(list(cut.walk())) == 1 + 19 + 1           # type, the layout's 19 fields, the count of the rest
    assert span(cut, "soldat.more_fields") == (33, MAX_LINE - 33, MAX_LINE - 1 - MAX_FIELDS)
    assert cut.values["field_count"] == MAX_LINE - 1
    assert begin.name == "list_begin" and begin.values["servercount"] == 4 and begin.findings == []


def test_a_16_mib_payload_handed_to_the_api_costs_one_line():
    from dissect.dissectors.soldat import MAX_LINE
    msg = dissect("soldat", b"z" + b"\xa9x" * (8 * 1024 * 1024) + b"\n")
    assert len(msg.fields_with("soldat.field")) == 32 and msg.length == 16 * 1024 * 1024 + 2
    (too_long,) = [f for f in msg.findings if f.code == "soldat.line_too_long"]
    assert (too_long.offset, too_long.length) == (MAX_LINE, 16 * 1024 * 1024 + 2 - MAX_LINE)
    assert "16777218-byte line" in too_long.message
    assert field(msg, "soldat.more_fields").value == MAX_LINE // 2 - 32


def test_unfinished_lines_of_all_streams_share_one_budget(monkeypatch):
    import dissect.dissectors.soldat as soldat_module
    from dissect.capture.reassembly import Chunk
    from dissect.registry import Registry
    budget = 2 * (100 + soldat_module.PIECE_COST) + 50  # two lines' first 100 bytes, in one piece each, fit
    monkeypatch.setattr(soldat_module, "MAX_HELD", budget)
    soldat = Registry().get("soldat")
    parsers = [soldat.stream_parser() for _ in range(3)]
    entry = list(sp.SERVERS[0])
    entry[7] = "a long server name " * 10
    line = sp.server_entry(entry)
    out = [parser.feed(Chunk(line[:100], i + 1, 54), True, None) for i, parser in enumerate(parsers)]
    assert out[:2] == [[], []] and soldat.held == 2 * (100 + soldat_module.PIECE_COST)
    (cut,) = out[2]
    assert cut.length == 100 and cut.frames == [3]
    assert codes(cut).count("soldat.line_too_long") == 1 and f"{budget} bytes" in cut.findings[-1].message
    rest = line[100:] + sp.list_end()
    finished = [parser.feed(Chunk(rest, 9, 54), True, None) for parser in parsers]
    assert [[m.name for m in msgs] for msgs in finished] == [["server", "list_end"]] * 2 + [["list_end"]]
    assert finished[0][0].frames == [1, 9] and soldat.held == 0


def test_a_line_sent_a_byte_a_segment_costs_its_pieces_in_the_budget():
    from dissect.capture.reassembly import Chunk
    from dissect.dissectors.soldat import PIECE_COST
    from dissect.registry import Registry
    soldat = Registry().get("soldat")
    parser = soldat.stream_parser()
    line = sp.server_entry(sp.SERVERS[0])
    for n in range(len(line) - 1):
        assert parser.feed(Chunk(line[n:n + 1], n + 1, 54), True, None) == []
    assert parser.size == len(line) - 1 and soldat.held == (len(line) - 1) * (1 + PIECE_COST)
    (msg,) = parser.feed(Chunk(line[-1:], len(line), 54), True, None)
    assert msg.name == "server" and msg.frames == list(range(1, len(line) + 1)) and soldat.held == 0


def test_a_number_of_5000_digits_is_a_bad_value_and_decoding_goes_on():
    entry = list(sp.SERVERS[0])
    entry[2], entry[9] = "7" * 5000, "8" * 21
    msg = dissect("soldat", sp.server_entry(entry))
    assert codes(msg) == ["soldat.bad_value", "soldat.bad_value"]
    port, bonus = msg.findings
    assert port.message.startswith("PORT: a number of 5000 digits") and port.severity == "warning"
    assert (port.offset, port.length) == (16, 5000)
    assert "a number of 21 digits" in bonus.message
    assert field(msg, "soldat.server.port").value is None
    assert field(msg, "soldat.server.port").display == "a number of 5000 digits (not decoded)"
    assert msg.values["country"] == "DE" and msg.values["bonusfreq"] is None and msg.values["respawn"] == 5
    assert dissect("soldat", sp.server_entry(["9" * 20] + list(entry[1:]))).values["version"] == 10 ** 20 - 1


# -- list accounting within a budget ------------------------------------------------------------------------

def _lines(stream, *payloads):
    from dissect.core import Message
    from dissect.registry import Registry
    soldat = Registry().get("soldat")
    out = []
    for payload in payloads:
        msg = soldat.dissect(payload, False)
        msg.frames.append(stream + 1)
        msg.values.update(stream=stream, client=f"10.0.0.9:{40000 + stream}", server="10.0.0.5:13073")
        out.append(msg)
    return out


class _Frame:
    def __init__(self, number):
        self.number, self.ts = number, 1700000000.0 + number


def test_open_lists_are_budgeted_in_all_and_the_oldest_is_evicted(monkeypatch):
    import dissect.analysis.soldat as analysis
    monkeypatch.setattr(analysis, "MAX_HELD_ENTRIES", 250)
    monkeypatch.setattr(analysis, "MAX_SERVERS_PER_LIST", 100)
    analyzer = analysis.SoldatAnalyzer()
    minimal = b"g" + b"\xa9" * 19 + b"\n"
    records, held = [], []
    for stream in range(5):
        (begin, server) = _lines(stream, sp.list_begin(120), minimal)
        records += analyzer.feed(_Frame(1), begin, False)
        for _ in range(120):
            records += analyzer.feed(_Frame(2), server, False)
            held.append(analyzer.held_entries)
    assert max(held) == 250 and analyzer.held_entries == sum(len(e.servers) for e in analyzer.exchanges.values())
    evicted = [r for r in records if [f.code for f in r.findings] == ["soldat.state_evicted"]]
    assert [r.result["stream"] for r in evicted] == [0, 1, 2]
    assert [(r.result["received"], len(r.result["servers"]), r.result["omitted"]) for r in evicted] == \
        [(120, 100, 20), (120, 100, 20), (120, 100, 20)]
    rest = analyzer.finish()
    assert [(r.result["stream"], r.result["received"], len(r.result["servers"]), r.result["omitted"])
            for r in rest] == [(3, 120, 100, 20), (4, 120, 100, 20)]
    assert [f.code for r in rest for f in r.findings] == ["soldat.missing_end"] * 2
    assert analyzer.held_entries == 0 and analyzer.held_bytes == 0


def test_the_list_that_fills_the_budget_is_not_the_one_evicted_when_it_is_the_oldest(monkeypatch):
    """Stream 0's list opened first and goes on growing: past the budget, the oldest list other than its own (stream
    1's) is concluded early, and stream 0's becomes the newest (evicted after stream 2's, which opened later)."""
    import dissect.analysis.soldat as analysis
    monkeypatch.setattr(analysis, "MAX_HELD_ENTRIES", 250)
    analyzer = analysis.SoldatAnalyzer()
    minimal = b"g" + b"\xa9" * 19 + b"\n"
    lines = {stream: _lines(stream, sp.list_begin(400), minimal) for stream in range(3)}
    records = []
    for stream, count in ((0, 100), (1, 100), (2, 10), (0, 100)):
        begin, server = lines[stream]
        if stream not in analyzer.exchanges:
            records += analyzer.feed(_Frame(1), begin, False)
        for _ in range(count):
            records += analyzer.feed(_Frame(2), server, False)
    evicted = [(r.result["stream"], r.result["received"]) for r in records]
    assert evicted == [(1, 100)] and [f.code for r in records for f in r.findings] == ["soldat.state_evicted"]
    assert list(analyzer.exchanges.keys()) == [2, 0] and analyzer.held_entries == 210
    for _ in range(41):  # 251 entries: stream 2's list is the oldest now
        records += analyzer.feed(_Frame(3), lines[0][1], False)
    assert [(r.result["stream"], r.result["received"]) for r in records] == [(1, 100), (2, 10)]
    assert list(analyzer.exchanges.keys()) == [0] and analyzer.held_entries == 241


def test_a_list_record_keeps_its_first_frames_and_its_last_however_many_frames_a_line_came_in():
    """A server line sent a byte a segment comes in as many frames as it has bytes: the list's record keeps
    MAX_FRAMES (64) frame numbers, as it does for a list of many lines (each frame was looked for in a list that grew
    with them, and a line of 65,536 one-byte segments took 15 s): the first 63, and in the last place the latest,
    so that the record spans the list to the frame of its List End line (it stopped at the 64th)."""
    import dissect.analysis.soldat as analysis
    analyzer = analysis.SoldatAnalyzer()
    begin, server, end = _lines(0, sp.list_begin(1), b"g" + b"\xa9" * 19 + b"\n", sp.list_end())
    server.frames[:] = range(2, 5002)
    end.frames[:] = [5001, 5002]
    assert analyzer.feed(_Frame(1), begin, False) + analyzer.feed(_Frame(5001), server, False) == []
    assert record_frames(analyzer) == list(range(1, 64)) + [5001]
    (record,) = analyzer.feed(_Frame(5002), end, False)
    assert record.frames == list(range(1, 64)) + [5002] and record.result["received"] == 1


def record_frames(analyzer):
    (exchange,) = analyzer.exchanges.values()
    return exchange.frames


def test_a_server_line_seen_again_gives_the_same_row_and_the_rows_kept_are_bounded(monkeypatch):
    import dissect.analysis.soldat as analysis
    from dissect.dissectors.soldat import server_values
    monkeypatch.setattr(analysis, "MAX_ROWS", 3)
    analyzer = analysis.SoldatAnalyzer()
    payloads = [sp.server_entry(server) for server in sp.SERVERS[:3]]
    for stream in range(2):
        for msg in _lines(stream, *payloads):
            analyzer.feed(_Frame(stream + 1), msg, False)
    assert list(analyzer.rows) == payloads
    first, second = [analyzer.exchanges[stream].servers for stream in range(2)]
    assert first == second == [server_values(msg.values) for msg in _lines(0, *payloads)]
    assert second[2] is first[2] and analyzer.servers.get("198.51.100.7:23073")["responses"] == 2
    (fourth,) = _lines(1, sp.server_entry(sp.SERVERS[3]))
    analyzer.feed(_Frame(3), fourth, False)
    assert list(analyzer.rows) == [fourth.payload]  # begun anew past MAX_ROWS
    analyzer.finish()
    assert analyzer.rows == {}


def test_long_names_count_against_the_byte_budget(monkeypatch):
    import dissect.analysis.soldat as analysis
    monkeypatch.setattr(analysis, "MAX_HELD_BYTES", 200_000)
    analyzer = analysis.SoldatAnalyzer()
    entry = list(sp.SERVERS[0])
    entry[7] = "N" * 60000
    records = []
    for stream in range(3):
        (server,) = _lines(stream, sp.server_entry(entry))
        for _ in range(2):
            records += analyzer.feed(_Frame(1), server, False)
    assert analyzer.held_bytes <= 200_000
    assert [r.result["stream"] for r in records] == [0, 1]
    assert [f.code for r in records for f in r.findings] == ["soldat.state_evicted"] * 2
    seen = analyzer.stats()["servers"][0]
    assert len(seen["name"]) < 300 and seen["responses"] == 6
    # one list alone past the budget keeps what fits and counts the rest
    alone = analysis.SoldatAnalyzer()
    (server,) = _lines(9, sp.server_entry(entry))
    assert [r for _ in range(5) for r in alone.feed(_Frame(1), server, False)] == []
    (record,) = alone.finish()
    assert (record.result["received"], len(record.result["servers"]), record.result["omitted"]) == (5, 3, 2)

def test_a_line_decoded_again_without_a_tree_is_the_same_message_with_values_of_its_own():
    soldat = Soldat()
    payload = sp.server_entry(sp.SERVERS[2], UTF8)
    first = soldat.dissect(payload, tree=False)
    first.values["stream"] = 7  # as the pipeline adds its keys to a message's values
    again, full = soldat.dissect(payload, tree=False), soldat.dissect(payload)
    assert payload in soldat.remembered and again.values is not first.values
    assert list(again.values.items()) == list(full.values.items())  # the same keys, in the same order
    assert (again.name, again.info, codes(again), again.fields) == (full.name, full.info, codes(full), [])


def test_a_line_a_stream_parser_finds_remembered_is_the_message_its_decoding_makes():
    from dissect.capture.reassembly import Chunk
    from dissect.registry import Registry, dissect_message
    soldat = Registry().get("soldat")
    parser = soldat.stream_parser()
    line = sp.server_entry(sp.SERVERS[1], UTF8)
    first, again = parser.feed(Chunk(line + line, 7, 54), False, None)
    assert line in soldat.remembered and again.values is not first.values
    fresh = dissect_message(Soldat(), line, False, None, 54 + len(line))
    assert again.frames == [7] and codes(again) == codes(fresh) == []
    assert (again.protocol, again.name, again.info, again.offset, again.length, again.payload, again.fields) == \
        (fresh.protocol, fresh.name, fresh.info, fresh.offset, fresh.length, fresh.payload, fresh.fields)
    assert list(again.values.items()) == list(fresh.values.items())


def test_lines_with_a_finding_are_not_remembered_and_the_table_begins_anew_past_its_limit(monkeypatch):
    soldat = Soldat()
    soldat.dissect(sp.server_entry(sp.SERVERS[2][:-1]), tree=False)  # a field short: soldat.bad_field_count
    long_name = sp.SERVERS[2][:7] + ("n" * soldat_module.MAX_REMEMBERED_LINE,) + sp.SERVERS[2][8:]
    assert codes(soldat.dissect(sp.server_entry(long_name), tree=False)) == []  # too long to be kept
    assert soldat.remembered == {}
    monkeypatch.setattr(soldat_module, "MAX_REMEMBERED", 3)
    lines = [sp.list_begin(count) for count in range(4)]
    assert [soldat.dissect(line, tree=False).values["servercount"] for line in lines + lines] == [0, 1, 2, 3] * 2
    assert list(soldat.remembered) == [lines[2], lines[3]]  # begun anew at lines[3], and again at lines[2]
