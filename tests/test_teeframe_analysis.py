"""TeeFrame response assembly, request matching and the server browser, on real captures."""

import json

import capkit
import teeframe_peer as tf
from conftest import capture, jsonl, run_cli
from helpers import codes, dissect

from dissect.analysis import teeframe as teeframe_analysis
from dissect.analysis.teeframe import MAX_PENDING, TeeFrameAnalyzer
from dissect.capture.files import Frame as CapturedFrame
from dissect.capture.layers import Packet
from dissect.pipeline import FrameRecord

SESSION = capture("teeframe-session.pcap")
DAMAGED = capture("teeframe-damaged.pcap")


def analyses(records, name="server_info"):
    return [r for r in records if r["kind"] == "analysis" and r["name"] == name]


def all_findings(records):
    out = []
    for r in records:
        out += r["findings"]
        for m in r.get("messages", ()):
            out += m["findings"]
    return out


def test_real_session_64_clients_in_3_packets_is_clean():
    code, out, _ = run_cli("-T", "jsonl", "--fail-on", "warning", SESSION)
    assert code == 0
    records = jsonl(out)
    assert not [f for f in all_findings(records) if f["severity"] in ("warning", "error")]
    big = [a for a in analyses(records) if a["result"]["token"] == 0x12342A][0]
    result = big["result"]
    assert result["complete"] is True and result["packets"] == [0, 1, 2] and big["frames"] == [2, 3, 4]
    assert result["num_clients"] == 64 and result["records"] == 64 and len(result["clients"]) == 64
    expected = tf.sample_clients(64)
    assert [c["name"] for c in result["clients"]] == [c[0] for c in expected]
    assert result["clients"][1] == {"name": "Tëe Brawler", "clan": "DDNet-Elite", "country": -1, "score": -9999,
                                    "is_player": 1}
    assert result["info"]["map_crc"] == -1155017543 and result["info"]["num_players"] == 61
    assert result["request_frame"] == 1 and 0 <= result["response_time"] < 1
    # The vanilla exchange is matched too, and game packets on the port stay plain UDP.
    vanilla = [a for a in analyses(records) if a["result"]["info"]["identifier"] == "inf3"][0]
    assert vanilla["result"]["complete"] and vanilla["result"]["request_frame"] == 7
    assert [r["protocol"] for r in records if r["kind"] == "frame"][-3:] == ["udp", "udp", "udp"]


def test_each_iex_plus_names_its_request_and_response_time():
    _, out, _ = run_cli("-T", "jsonl", "-Y", "teeframe.packet_number", SESSION)
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert [r["frame"] for r in frames] == [3, 4]
    for frame in frames:
        keys = {f["key"]: f["value"] for f in frame["messages"][0]["fields"]}
        assert keys["teeframe.request_in"] == 1


def _by_client_port(records):
    return {a["result"]["client"].rsplit(":", 1)[1]: a for a in analyses(records)}


def test_damaged_assembly_cases():
    _, out, _ = run_cli("-T", "jsonl", DAMAGED)
    records = jsonl(out)
    by_port = _by_client_port(records)
    assert by_port["50001"]["result"]["complete"] and by_port["50001"]["findings"] == []
    lost = by_port["50002"]
    assert lost["result"]["complete"] is False and lost["result"]["packets"] == [0, 2]
    assert [f["code"] for f in lost["findings"]] == ["teeframe.incomplete_response"]
    assert "31 of 64" in lost["findings"][0]["message"]
    dup = by_port["50003"]
    assert dup["result"]["complete"] and dup["result"]["records"] == 64
    dup_frame = [r for r in records if r["kind"] == "frame" and r["frame"] == 11][0]
    assert [f["code"] for f in dup_frame["messages"][0]["findings"]] == ["teeframe.duplicate_packet"]
    reordered = by_port["50004"]
    assert reordered["result"]["complete"] and reordered["frames"] == [14, 15, 16]
    assert [c["name"] for c in reordered["result"]["clients"]][:2] == ["nameless tee", "Tëe Brawler"]
    request = [r for r in records if r["kind"] == "frame" and r["frame"] == 17][0]
    assert [f["code"] for f in request["messages"][0]["findings"]] == ["teeframe.reserved_nonzero"]
    split = by_port["50006"]
    assert split["result"]["records"] == 63 and not split["result"]["complete"]
    split_frame = [r for r in records if r["kind"] == "frame" and r["frame"] == 23][0]
    assert "teeframe.split_record" in [f["code"] for f in split_frame["messages"][0]["findings"]]


def _write(tmp_path, name, exchanges):
    frames, ts = [], capkit.DEFAULT_TS
    for src, dst, payload in exchanges:
        ts += 0.001
        frames.append((ts, capkit.ethernet(capkit.udp_packet(*src, *dst, payload))))
    path = tmp_path / name
    capkit.write_pcap(path, frames)
    return path


def test_unmatched_token_superseded_and_count_mismatch(tmp_path):
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    clients = tf.sample_clients(3)
    wrong_players = tf.iext(0x0202, clients, map_crc=1, players=3)  # only 2 records say Is Player 1... of 3
    path = _write(tmp_path, "misc.pcap", [
        (server, client, tf.iext(999, clients, map_crc=1)),                    # no request seen
        (client, server, tf.gie3(0x01, 0x01)),
        (server, client, tf.response_packets(0x0101, tf.sample_clients(64))[0]),
        (client, server, tf.gie3(0x02, 0x02)),                                 # supersedes token 0x0101
        (server, client, wrong_players),
    ])
    _, out, _ = run_cli("-T", "jsonl", path)
    by_token = {a["result"]["token"]: a for a in analyses(jsonl(out))}
    assert [f["code"] for f in by_token[999]["findings"]] == ["teeframe.unmatched_token"]
    superseded = by_token[0x0101]
    assert [f["code"] for f in superseded["findings"]] == ["teeframe.incomplete_response"]
    assert "superseded" in superseded["findings"][0]["message"]
    mismatch = by_token[0x0202]
    assert [f["code"] for f in mismatch["findings"]] == ["teeframe.count_mismatch"]
    assert "Num Players is 3" in mismatch["findings"][0]["message"]


def test_rate_limited_reply_is_complete_without_clients(tmp_path):
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    path = _write(tmp_path, "limited.pcap", [
        (client, server, tf.gie3(0, 9)),
        (server, client, tf.iext(9, [], map_crc=1, num_clients=12, players=10))])
    _, out, _ = run_cli("-T", "jsonl", path)
    (record,) = analyses(jsonl(out))
    assert record["result"]["complete"] is True and record["result"]["clients_omitted"] is True
    assert record["findings"] == []


def test_flood_of_incomplete_tokens_stays_bounded(tmp_path):
    server = ("10.0.0.2", 8303)
    flood = MAX_PENDING + 500
    packet_for = [tf.iext(token, [("x", "", 0, 0, 1)], map_crc=1, num_clients=10, players=1)
                  for token in range(flood)]
    path = _write(tmp_path, "flood.pcap", [(server, ("10.0.0.9", 50000), p) for p in packet_for])
    _, out, _ = run_cli("-T", "jsonl", path)
    records = analyses(jsonl(out))
    assert len(records) == flood
    evicted = [r for r in records if any(f["code"] == "teeframe.state_evicted" for f in r["findings"])]
    assert len(evicted) == 500
    assert [r["result"]["token"] for r in evicted] == list(range(500))  # oldest first


def test_server_browser_in_stats():
    code, out, _ = run_cli("--stats", SESSION)
    assert code == 0
    assert "TeeFrame servers seen: 2" in out
    line = [ln for ln in out.splitlines() if "127.0.0.1:8303" in ln][0]
    for text in ('"dissect test server', "map dm1_remake_2026", '"DM"', 'version 0.6.4, 16.3', "players 61/64",
                 "clients 64/64", "no password", "responses 1", "rtt "):
        assert text in line, text
    _, out, _ = run_cli("--stats", "-T", "json", SESSION)
    records = json.loads(out)
    servers = [r for r in records if r["kind"] == "server" and r["protocol"] == "teeframe"]
    big = [s for s in servers if s["server"] == "127.0.0.1:8303"][0]
    assert (big["players"], big["max_players"], big["clients"], big["max_clients"]) == (61, 64, 64, 64)
    assert big["password"] is False and big["game_type"] == "DM" and big["responses"] == 1


def test_a_new_request_may_reuse_a_token(tmp_path):
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    exchange = [(client, server, tf.gie3(0, 9)), (server, client, tf.iext(9, tf.sample_clients(2), map_crc=1))]
    path = _write(tmp_path, "reuse.pcap", exchange * 3)
    _, out, _ = run_cli("-T", "jsonl", path)
    records = analyses(jsonl(out))
    assert [r["result"]["request_frame"] for r in records] == [1, 3, 5]
    assert all(r["findings"] == [] for r in records)


def test_records_beyond_the_limit_are_counted_not_kept(tmp_path):
    from dissect.analysis.teeframe import MAX_RECORDS
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    half = MAX_RECORDS // 2 + 300
    tiny = [("a", "", 0, 0, 1)] * half
    path = _write(tmp_path, "many.pcap", [
        (client, server, tf.gie3(0, 7)),
        (server, client, tf.iext(7, tiny, map_crc=1, num_clients=2 * half, players=2 * half, max_players=9999,
                                 max_clients=9999)),
        (server, client, tf.iex_plus(7, 1, tiny))])
    _, out, _ = run_cli("-T", "jsonl", path)
    (record,) = analyses(jsonl(out))
    assert record["result"]["complete"] is True and record["result"]["records"] == 2 * half
    assert len(record["result"]["clients"]) == MAX_RECORDS
    assert [f["code"] for f in record["findings"]] == ["teeframe.state_evicted"]
    assert f"{2 * half - MAX_RECORDS} client records beyond {MAX_RECORDS}" in record["findings"][0]["message"]


# -- the analyzer fed directly: state size, budgets, vanilla lists ------------------------------------
SERVER, CLIENT = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
SERVER_EP, CLIENT_EP = "10.0.0.2:8303", "10.0.0.9:50000"


def Frame(number, src, dst):
    """A frame's record from ``src`` to ``dst``, (address, port) each: what the analyzer reads of a frame."""
    packet = Packet()
    (packet.src, packet.sport), (packet.dst, packet.dport) = src, dst
    return FrameRecord(CapturedFrame(number, 1700000000.0 + number / 1000, 60, 60, 1, b""), packet)


def feed(analyzer, number, payload, src=SERVER, dst=CLIENT):
    msg = dissect("teeframe", payload, tree=False)
    return msg, analyzer.feed(Frame(number, src, dst), msg, False)


class CountingList(list):
    """A message's client list that counts how often anything measures it."""

    calls = 0

    def __len__(self):
        CountingList.calls += 1
        return super().__len__()


def test_iex_plus_numbers_outside_1_to_63_are_not_stored_and_counts_are_not_resummed():
    analyzer = TeeFrameAnalyzer()
    huge = dict(map_crc=1, num_clients=10 ** 6, players=1, max_players=10 ** 6, max_clients=10 ** 6)
    feed(analyzer, 1, tf.iext(7, [("a", "", 0, 0, 1)], **huge))
    packets = 2000
    CountingList.calls = 0
    for number in range(1, packets + 1):
        msg = dissect("teeframe", tf.iex_plus(7, number, [("b", "", 0, 0, 1)]), tree=False)
        assert ("teeframe.bad_packet_number" in codes(msg)) == (number > 63)
        msg.values["clients"] = CountingList(msg.values["clients"])
        analyzer.feed(Frame(number + 1, SERVER, CLIENT), msg, False)
    # Re-summing the stored lists for each packet would measure them packets**2 / 2 times.
    assert CountingList.calls <= 10 * packets
    response = analyzer.pending[(SERVER_EP, CLIENT_EP, 7)]
    assert sorted(response.records) == list(range(64))   # 0 (iext) and 1..63, nothing beyond
    assert response.collected() == 64 and analyzer.held == 64
    assert len(response.frames) <= 128


def test_iex_plus_before_any_iext_is_bounded_too():
    analyzer = TeeFrameAnalyzer()
    for number in range(1, 1001):
        feed(analyzer, number, tf.iex_plus(9, number, [("x", "", 0, 0, 1)]))
    response = analyzer.pending[(SERVER_EP, CLIENT_EP, 9)]
    assert len(response.records) == 63 and response.collected() == 63 and analyzer.held == 63
    (record,) = analyzer.finish()
    assert [f.code for f in record.findings] == ["teeframe.unmatched_token", "teeframe.incomplete_response"]
    assert analyzer.held == 0 and not analyzer.holders


def test_records_held_across_pending_responses_have_a_total_budget(monkeypatch):
    monkeypatch.setattr(teeframe_analysis, "MAX_HELD_RECORDS", 10)
    analyzer = TeeFrameAnalyzer()
    four = [("a", "", 0, 0, 1)] * 4
    info = dict(map_crc=1, num_clients=100, players=100, max_players=100, max_clients=100)
    for token in (1, 2):
        _, out = feed(analyzer, token, tf.iext(token, four, **info))
        assert out == []
    _, out = feed(analyzer, 3, tf.iext(3, four, **info))   # 12 records would pass the budget of 10
    (evicted,) = out
    assert evicted.result["token"] == 1 and evicted.result["records"] == 4
    assert [f.code for f in evicted.findings] == ["teeframe.unmatched_token", "teeframe.incomplete_response",
                                                  "teeframe.state_evicted"]
    assert "10 client records in all" in evicted.findings[-1].message
    assert analyzer.held == 8 and [key[2] for key in analyzer.holders] == [2, 3]
    # A packet the budget cannot hold even alone: the others go first, then its excess is only counted.
    _, out = feed(analyzer, 4, tf.iex_plus(3, 1, [("b", "", 0, 0, 1)] * 8))
    assert [r.result["token"] for r in out] == [2]
    response = analyzer.pending[(SERVER_EP, CLIENT_EP, 3)]
    assert (response.held, response.dropped_records, response.collected()) == (10, 2, 12)
    assert analyzer.held == 10
    (last,) = analyzer.finish()
    assert last.result["records"] == 12 and len(last.result["clients"]) == 10
    assert "2 client records beyond" in [f for f in last.findings if f.code == "teeframe.state_evicted"][0].message
    assert analyzer.held == 0


def inf3_bytes(token, clients, players, num_clients, max_players=16, max_clients=16):
    """A vanilla reply with the counts given, not the ones the records imply."""
    s = tf.s
    return (tf.HEADER + b"inf3" + s(token) + s("0.6.4, 16.3") + s("vanilla") + s("ctf5") + s("CTF") + s(0)
            + s(players) + s(max_players) + s(num_clients) + s(max_clients)
            + b"".join(tf.vanilla_record(*c) for c in clients))


def vanilla_exchange(payload, token):
    analyzer = TeeFrameAnalyzer()
    feed(analyzer, 1, tf.vanilla_gie3(token), src=CLIENT, dst=SERVER)
    msg, out = feed(analyzer, 2, payload)
    return msg, out


def test_vanilla_inf3_of_a_server_with_more_than_16_clients_is_not_a_count_mismatch():
    # DDNet with 20 of 64 clients: the first 16 records (14 of them players), counts capped to 15.
    clients = [(f"t{i}", "", 0, i, 0 if i in (3, 9) else 1) for i in range(16)]
    msg, out = vanilla_exchange(inf3_bytes(5, clients, players=15, num_clients=15), 5)
    assert msg.findings == []
    (record,) = out
    assert record.result["complete"] is True and record.result["records"] == 16
    assert [f.code for f in record.findings] == ["teeframe.truncated_list"]
    note = record.findings[0]
    assert note.severity == "note" and "not compared" in note.message


def test_vanilla_inf3_with_counts_beyond_its_records_is_truncated_not_incomplete():
    clients = [(f"t{i}", "", 0, i, 1) for i in range(5)]
    _, out = vanilla_exchange(inf3_bytes(6, clients, players=20, num_clients=20, max_players=64, max_clients=64), 6)
    (record,) = out
    assert record.result["complete"] is True
    assert [f.code for f in record.findings] == ["teeframe.truncated_list"]


def test_vanilla_inf3_with_its_whole_list_is_still_checked():
    clients = [("a", "", 0, 0, 1), ("b", "", 0, 0, 1), ("c", "", 0, 0, 0)]
    _, out = vanilla_exchange(inf3_bytes(7, clients, players=3, num_clients=3), 7)
    (record,) = out
    assert [f.code for f in record.findings] == ["teeframe.count_mismatch"]
    assert record.findings[0].message.startswith("2 records have Is Player 1 but Num Players is 3")
    _, out = vanilla_exchange(inf3_bytes(8, clients, players=2, num_clients=2), 8)
    assert [f.message.split(" (")[0] for f in out[0].findings] == ["3 client records collected but Num Clients is 2"]


def test_a_response_keeps_its_first_packets_values_unless_records_were_dropped(monkeypatch):
    analyzer = TeeFrameAnalyzer()
    info = dict(map_crc=1, num_clients=100, players=100, max_players=100, max_clients=100)
    msg, _ = feed(analyzer, 1, tf.iext(1, [("a", "", 0, 0, 1)] * 5, **info))
    assert analyzer.pending[(SERVER_EP, CLIENT_EP, 1)].info is msg.values  # no copy made
    # Past the budget, the records _keep drops must not stay held through the values of packet 0.
    monkeypatch.setattr(teeframe_analysis, "MAX_HELD_RECORDS", 3)
    analyzer = TeeFrameAnalyzer()
    msg, _ = feed(analyzer, 2, tf.iext(2, [("b", "", 0, 0, 1)] * 5, **info))
    response = analyzer.pending[(SERVER_EP, CLIENT_EP, 2)]
    assert (response.held, response.dropped_records) == (3, 2)
    assert "clients" not in response.info and response.info["num_clients"] == 100
    assert list(response.info) == ["version", "name", "map", "map_crc", "map_size", "game_type", "flags", "num_players",
                                   "max_players", "num_clients", "max_clients", "identifier"]


def test_unrequested_packets_are_each_complete_with_their_counts(tmp_path):
    """Real servers send an iext with token -1, its counts and no client records (a note, teeframe.unrequested_info):
    each is a response of its own, complete as it arrives, and the next one is no duplicate of it."""
    server, browser = ("10.1.0.1", 8303), ("10.0.0.1", 40000)
    packets = [tf.iext(-1, num_clients=5, players=3, max_players=16, max_clients=16, map_crc=1),
               tf.iext(-1, num_clients=6, players=4, max_players=16, max_clients=16, map_crc=1)]
    path = tmp_path / "unrequested.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n, capkit.ethernet(capkit.udp_packet(*server, *browser, packet)))
                             for n, packet in enumerate(packets)])
    code, out, _ = run_cli("-T", "jsonl", "--fail-on", "warning", path)
    records = jsonl(out)
    assert code == 0
    assert [f["code"] for f in all_findings(records)] == ["teeframe.unrequested_info"] * 2
    results = [a["result"] for a in analyses(records)]
    assert [(r["complete"], r["clients_omitted"], r["info"]["num_clients"]) for r in results] == \
        [(True, True, 5), (True, True, 6)]


def test_a_packet_after_the_response_is_complete_is_a_count_mismatch(tmp_path):
    """'The list is complete when the number of collected records equals Num Clients': an iex+ that comes after is
    not counted, and says so (a copy of a packet already counted is a duplicate instead)."""
    server, browser = ("10.1.0.1", 8303), ("10.0.0.1", 40000)
    clients = tf.sample_clients(2, spectators=0)
    packets = [tf.iext(77, clients[:1], num_clients=1, map_crc=1), tf.iex_plus(77, 1, clients[1:]),
               tf.iext(77, clients[:1], num_clients=1, map_crc=1)]
    path = tmp_path / "late.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n, capkit.ethernet(capkit.udp_packet(*server, *browser, packet)))
                             for n, packet in enumerate(packets)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    late, again = frames[1]["messages"][0]["findings"], frames[2]["messages"][0]["findings"]
    assert [(f["code"], f["severity"]) for f in late] == [("teeframe.count_mismatch", "warning")]
    assert late[0]["message"].startswith("packet 1 of response token 77 arrived after the response had its Num "
                                         "Clients records")
    assert [f["code"] for f in again] == ["teeframe.duplicate_packet"]
    assert [a["result"]["records"] for a in analyses(jsonl(out))] == [1]


def test_late_packets_of_a_superseded_response_are_told_as_its_own_not_a_new_unrequested_one(tmp_path):
    """A new request concludes the response before it (incomplete); its packets that still come are that response's:
    each says so, and none begins a second response that would call the token unrequested and its iext missing."""
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    first, second, third = tf.response_packets(0x0101, tf.sample_clients(64))
    path = _write(tmp_path, "late.pcap", [
        (client, server, tf.gie3(0x01, 0x01)), (server, client, first),
        (client, server, tf.gie3(0x02, 0x02)),                                 # supersedes token 0x0101
        (server, client, second), (server, client, third), (server, client, second)])
    _, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    (response,) = analyses(records)
    assert (response["frames"], response["result"]["token"], response["result"]["packets"]) == ([2], 0x0101, [0])
    assert [f["code"] for f in response["findings"]] == ["teeframe.incomplete_response"]
    frames = [r for r in records if r["kind"] == "frame"]
    late = [[(f["code"], f["severity"], f["message"]) for f in frame["messages"][0]["findings"]]
            for frame in frames[3:]]
    told = "of response token 257 arrived after the response was concluded incomplete (a new request (frame 3) " \
           "superseded it), and is not counted"
    assert [[(c, v, m[:m.index(" (spec: ")]) for c, v, m in found] for found in late] == [
        [("teeframe.incomplete_response", "warning", f"packet 1 {told}")],
        [("teeframe.incomplete_response", "warning", f"packet 2 {told}")],
        [("teeframe.incomplete_response", "warning", f"packet 1 {told}")]]  # again: still not counted
    assert "teeframe.unmatched_token" not in {f["code"] for f in all_findings(records)}


def test_iex_plus_records_before_a_rate_limited_iext_are_a_count_mismatch_in_either_order(tmp_path):
    """An iext that gives counts but no records (rate limited) ends the response; records that came in iex+ packets
    are neither the whole list nor an omitted one, whichever came first."""
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    limited = tf.iext(9, [], map_crc=1, num_clients=64, players=10)
    plus = tf.iex_plus(9, 1, tf.sample_clients(3))
    for order in ((limited, plus), (plus, limited)):
        path = _write(tmp_path, "limited.pcap", [(client, server, tf.gie3(0, 9))] + [(server, client, packet)
                                                                                      for packet in order])
        _, out, _ = run_cli("-T", "jsonl", path)
        found = all_findings(jsonl(out))
        assert sorted(f["code"] for f in found) == ["teeframe.count_mismatch", "teeframe.no_client_records"], order


def test_values_a_reply_lacks_read_as_unknown(tmp_path):
    """What a reply lacks reads "?" (it read "None"): a token that is no Decimal String on the info line, an iex+'s
    packet number likewise, and the Num Clients of an iext cut before it in the response's summary and in its
    incomplete_response finding."""
    browser, server = ("10.0.0.2", 50000), ("10.0.0.1", 8303)
    clients = [("a", "", -1, 1, 1)]
    bad_token = (tf.HEADER + b"iext" + tf.iext_fields("x", name="srv", map_name="dm1", clients=clients)
                 + tf.client_record(*clients[0]))
    plus = tf.iex_plus(1193002, "x")
    whole = tf.iext(1193002, name="srv", map_name="dm1")
    cut = whole[:whole.index(b"dm1\0") + 4]  # ends after the map: no Num Clients
    path = _write(tmp_path, "cut.pcap", [(server, browser, bad_token), (server, browser, plus),
                                         (browser, server, tf.gie3(0x1234, 0x2A)), (server, browser, cut)])
    code, out, _ = run_cli(path)
    lines = out.splitlines()
    assert lines[0].endswith('Server Information token=? "srv" map=dm1 clients 1/64  [error]')
    assert lines[1].endswith("More Server Information token=1193002 packet=? clients +0  [error]")
    assert lines[4].strip() == ("[teeframe server_info] server info 10.0.0.1:8303 token=1193002: 0/? clients in "
                                "packets 0 INCOMPLETE (frames 4)")
    assert lines[5].strip().startswith("warning: teeframe.incomplete_response: response token 1193002 from "
                                       "10.0.0.1:8303 is incomplete: 0 of ? client records arrived before the "
                                       "capture ended (spec: ")
