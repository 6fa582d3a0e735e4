"""TeeFrame response assembly, request matching and the server browser, on real captures."""

import json

import capkit
import teeframe_peer as tf
from conftest import capture, jsonl, run_cli

from dissect.analysis.teeframe import MAX_PENDING

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
