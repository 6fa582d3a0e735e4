"""Reflection and flood analysis: amplification against the bytes written, the rules on the reflection
capture and on crafted traffic, silence on the ordinary captures, -j, thresholds, bounded state."""

import glob
import json
import os

import capkit
import make_reflection as mr
import pytest
import teeframe_peer as tf
import netquake_peer as nq
from conftest import CAPTURES, jsonl, run_cli

from dissect.analysis import abuse
from dissect.capture.sources import open_capture
from dissect.core.bounded import BoundedDict
from dissect.parallel import address_pair
from dissect.pipeline import Pipeline
from dissect.registry import Registry, UsageError
from dissect.session import Session

REFLECTION = os.path.join(CAPTURES, "reflection.pcap")
ORDINARY = sorted(set(glob.glob(os.path.join(CAPTURES, "*.pcap"))) - {REFLECTION})
CLIENT, SERVER = ("192.0.2.1", 50000), ("203.0.113.5", 8303)


class _Kept:
    def __init__(self):
        self.analyses = []

    def frame(self, record):
        pass

    def analysis(self, record):
        self.analyses.append(record)


def run(path, **options):
    """(the --stats dict, the analysis records) of a capture, in this process."""
    sink = _Kept()
    session = Session(sink, stats=True, **options)
    for frame in open_capture(str(path)):
        session.frame(frame)
    session.finish()
    return session.stats_dict(), sink.analyses


def finding_counts(stats):
    return {row["code"]: row["count"] for row in stats["findings"]}


def udp(src, dst, payload):
    return capkit.ethernet(capkit.udp_packet(*src, *dst, payload))


@pytest.fixture(scope="module")
def reflection():
    return run(REFLECTION)


# -- the reflection capture --------------------------------------------------------------------------
def test_the_bundled_capture_is_what_the_generator_writes(tmp_path):
    frames, _ = mr.build()
    capkit.write_pcap(tmp_path / "reflection.pcap", frames)
    assert (tmp_path / "reflection.pcap").read_bytes() == open(REFLECTION, "rb").read()
    assert os.path.getsize(REFLECTION) < 300_000


def test_amplification_per_protocol_is_the_byte_ratio_written(reflection):
    stats, _ = reflection
    _, ledger = mr.build()
    rows = {row["protocol"]: row for row in stats["abuse"]["protocols"]}
    assert sorted(rows) == ["netquake", "odamex", "soldat", "teeframe"]
    for protocol, written in ledger.items():
        row = rows[protocol]
        true_ratio = written["reply_bytes"] / written["request_bytes"]
        assert abs(row["amplification"] - true_ratio) <= 0.01 * true_ratio
        assert (row["requests"], row["request_bytes"], row["reply_bytes"], row["unsolicited_bytes"]) == (
            written["requests"], written["request_bytes"], written["reply_bytes"], written["unrequested_bytes"])
        if protocol != "soldat":  # UDP: whole frames on the wire
            assert (row["request_wire_bytes"], row["reply_wire_bytes"]) == (written["request_wire"],
                                                                          written["reply_wire"])
    assert rows["teeframe"]["amplification"] > 50 and rows["netquake"]["unsolicited_replies"] == 105


def test_the_rules_name_the_victims_and_nothing_else(reflection):
    stats, records = reflection
    assert finding_counts(stats) == {"abuse.reflection": 2, "abuse.request_flood": 1, "odamex.real_layout": 42,
                                     "soldat.separator": 16, "teeframe.signed_map_crc": 117,
                                     "teeframe.token_reuse": 1}
    found = {(s["rule"], s.get("address") or s.get("source")) for s in stats["abuse"]["suspicions"]}
    assert found == {("reflection", mr.VICTIM), ("reflection", mr.BLIND_VICTIM), ("request_flood", mr.VICTIM),
                     ("token_reuse", mr.VICTIM)}
    flood = next(s for s in stats["abuse"]["suspicions"] if s["rule"] == "request_flood")
    assert (flood["server"], flood["protocol"], flood["requests"], flood["peak_requests"], flood["peak_rate"]) == (
        "203.0.113.20:26000", "netquake", 125, 125, 25.0)
    views = {s["address"]: (s["view"], s["servers"], s["replies"]) for s in stats["abuse"]["suspicions"]
             if s["rule"] == "reflection"}
    assert views == {mr.VICTIM: ("sender", 9, 315), mr.BLIND_VICTIM: ("victim", 3, 105)}
    token = next(s for s in stats["abuse"]["suspicions"] if s["rule"] == "token_reuse")
    assert (token["token"], token["requests"], token["protocol"]) == (0x133742, 105, "teeframe")
    assert [(r.protocol, r.name) for r in records[-4:]] == [("abuse", "reflection"), ("abuse", "request_flood"),
                                                            ("teeframe", "token_reuse"), ("abuse", "reflection")]
    assert all(f.severity == "warning" for r in records[-4:] for f in r.findings)


def test_top_talkers_and_servers(reflection):
    stats, _ = reflection
    talkers = stats["abuse"]["top_talkers"]
    assert len(talkers) == 10 and talkers[0]["address"] == mr.VICTIM
    assert (talkers[0]["requests"], talkers[0]["servers"], talkers[0]["answered_share"],
            talkers[0]["peak_rate"], talkers[0]["mean_rate"]) == (280, 9, 1.0, 56.0, 56.0)
    assert [t["address"] for t in talkers[1:3]] == list(mr.BROWSERS)
    servers = {row["server"]: row for row in stats["abuse"]["top_servers"]}
    assert servers["203.0.113.21:26000"]["requesters"] == 203  # 200 one-off sources, the victim, two browsers
    assert servers["203.0.113.10:8303"]["bytes_out"] == max(row["bytes_out"] for row in servers.values())


def test_stats_text_names_the_victim():
    code, out, _ = run_cli("--stats", REFLECTION)
    assert code == 0
    abuse_part = out[out.index("Abuse analysis"):out.index("\nFindings")]
    assert f"reflection           {mr.VICTIM}, victim (its address sent the requests): 9 servers" in abuse_part
    assert f"reflection           {mr.BLIND_VICTIM}, victim (sent no request): 3 servers" in abuse_part
    assert "TeeFrame   gie3" in abuse_part and "Top talkers" in abuse_part and "Top servers" in abuse_part


@pytest.mark.parametrize("view", [["--stats"], ["--stats", "-T", "json"], [], ["-T", "jsonl"],
                                  ["--fail-on", "warning"], ["-Y", "abuse"]], ids=" ".join)
def test_two_workers_give_one_process_output(view):
    single = run_cli(*view, REFLECTION)
    assert single[0] in (0, 1) and single[1]
    assert run_cli("-j", "2", *view, REFLECTION) == single


def test_abuse_filter_shows_every_suspicion_the_stats_list():
    """-Y abuse shows the records of every rule --stats lists under Suspicions, token_reuse (a TeeFrame record)
    included; abuse.analysis names the rule."""
    _, out, _ = run_cli("--stats", "-T", "json", REFLECTION)
    rules = [s["rule"] for s in json.loads(out)[-1]["abuse"]["suspicions"]]
    code, out, err = run_cli("-Y", "abuse", "-T", "jsonl", REFLECTION)
    assert code == 0, err
    records = jsonl(out)
    assert [r["name"] for r in records] == rules == ["reflection", "request_flood", "token_reuse", "reflection"]
    assert [r["protocol"] for r in records] == ["abuse", "abuse", "teeframe", "abuse"]
    _, out, _ = run_cli("-Y", 'abuse.analysis == "token_reuse"', "-T", "jsonl", REFLECTION)
    assert [(r["protocol"], r["name"]) for r in jsonl(out)] == [("teeframe", "token_reuse")]


def test_fail_on_counts_the_abuse_findings_with_two_workers():
    assert run_cli("--fail-on", "warning", REFLECTION)[0] == 1
    assert run_cli("-j", "2", "--fail-on", "warning", REFLECTION)[0] == 1


def test_the_json_stats_record_and_the_api_agree():
    _, out, _ = run_cli("--stats", "-T", "json", REFLECTION)
    record = json.loads(out)[-1]
    assert record["abuse"]["thresholds"] == {"rate": 20.0, "window": 5, "min_servers": 3}
    assert "abuse" not in record["transactions"]
    import dissect
    with dissect.open(REFLECTION) as capture:
        assert json.loads(json.dumps(capture.stats()["abuse"])) == record["abuse"]


# -- ordinary traffic --------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ORDINARY, ids=os.path.basename)
def test_no_abuse_finding_on_the_ordinary_captures(path):
    stats, _ = run(path)
    assert not [code for code in finding_counts(stats) if code.startswith("abuse.") or code.endswith("token_reuse")]
    assert stats["abuse"]["suspicions"] == []


def test_a_browser_refreshing_many_servers_twice_is_not_reflection(tmp_path):
    """150 servers asked once each within a second, twice: fast in all, but no server is asked again soon."""
    frames = []
    for refresh in (0, 30):
        for n in range(150):
            server = (f"203.0.113.{n + 1}", 26000)
            ts = capkit.DEFAULT_TS + refresh + n * 0.005
            frames.append((ts, udp((CLIENT[0], 50000), server, nq.ccreq_server_info())))
            frames.append((ts + 0.02, udp(server, (CLIENT[0], 50000), nq.ccrep_server_info(
                f"{server[0]}:26000", "host", "e1m1", 1, 8))))
    capkit.write_pcap(tmp_path / "browser.pcap", sorted(frames, key=lambda f: f[0]))
    stats, _ = run(tmp_path / "browser.pcap")
    assert stats["abuse"]["suspicions"] == []
    assert stats["abuse"]["top_talkers"][0]["peak_rate"] == 30.0  # 150 within 5 s


# -- exact figures ----------------------------------------------------------------------------------------
def test_one_query_with_a_two_packet_reply(tmp_path):
    request = tf.gie3(0x0102, 3)
    replies = tf.response_packets(0x010203, tf.sample_clients(40))
    frames = [udp(CLIENT, SERVER, request)] + [udp(SERVER, CLIENT, reply) for reply in replies]
    capkit.write_pcap(tmp_path / "one.pcap", [(capkit.DEFAULT_TS + n * 0.01, f) for n, f in enumerate(frames)])
    stats, _ = run(tmp_path / "one.pcap")
    reply_bytes = sum(map(len, replies))
    micro = reply_bytes * 1_000_000 // 15
    assert len(replies) == 2 and stats["abuse"]["amplification"] == [{
        "protocol": "teeframe", "request": "gie3", "requests": 1, "answered": 1, "replies": 2,
        "replies_per_request": 2.0, "request_bytes": 15, "reply_bytes": reply_bytes,
        "request_wire_bytes": 57, "reply_wire_bytes": reply_bytes + 2 * 42,
        "amplification": reply_bytes / 15, "wire_amplification": (reply_bytes + 84) / 57,
        "per_query": {"mean": micro / 1e6, "median": float(f"{micro / 1e6:.3g}"), "max": micro / 1e6},
        "worst": {"amplification": micro / 1e6, "request_frame": 1, "reply_frames": [2, 3],
                  "client": "192.0.2.1:50000", "server": "203.0.113.5:8303"}}]
    assert stats["abuse"]["top_servers"] == [{
        "server": "203.0.113.5:8303", "protocol": "teeframe", "requests": 1, "replies": 2,
        "bytes_out": reply_bytes, "wire_bytes_out": reply_bytes + 84, "requesters": 1, "unsolicited_replies": 0,
        "oversize_replies": 0}]


def test_a_query_is_the_request_and_the_replies_before_the_next(tmp_path):
    """Two requests on one endpoint pair: the first reply goes to the first, the next two to the second."""
    request, reply = nq.ccreq_server_info(), nq.ccrep_server_info("203.0.113.5:26000", "h", "e1m1", 1, 8)
    client, server = CLIENT, ("203.0.113.5", 26000)
    frames = [udp(client, server, request), udp(server, client, reply), udp(client, server, request),
              udp(server, client, reply), udp(server, client, reply)]
    capkit.write_pcap(tmp_path / "two.pcap", [(capkit.DEFAULT_TS + n * 0.01, f) for n, f in enumerate(frames)])
    stats, _ = run(tmp_path / "two.pcap")
    row = stats["abuse"]["amplification"][0]
    factor = len(reply) / len(request)
    assert (row["requests"], row["answered"], row["replies"]) == (2, 2, 3)
    assert row["per_query"] == {"mean": (factor + 2 * factor) / 2, "median": float(f"{factor:.3g}"),
                                "max": 2 * factor}
    assert (row["worst"]["request_frame"], row["worst"]["reply_frames"]) == (3, [4, 5])


# -- the other rules ----------------------------------------------------------------------------------
def test_unsolicited_oversize_replies_from_one_server(tmp_path):
    """105 unrequested replies of more than 1400 bytes from one server within 5 s: not reflection (one
    server), but unsolicited replies."""
    target = ("198.51.100.1", 40000)
    big = tf.iext(-1, tf.sample_clients(40))
    assert len(big) > 1400
    frames = [(capkit.DEFAULT_TS + n * 0.045, udp(SERVER, target, big)) for n in range(105)]
    capkit.write_pcap(tmp_path / "unsolicited.pcap", frames)
    stats, records = run(tmp_path / "unsolicited.pcap")
    assert [(s["rule"], s["address"], s["unsolicited"], s["oversize"]) for s in stats["abuse"]["suspicions"]] == [
        ("unsolicited_replies", "198.51.100.1", 105, 105)]
    assert finding_counts(stats)["abuse.unsolicited_replies"] == 1
    row = stats["abuse"]["protocols"][0]
    assert (row["unsolicited_replies"], row["unsolicited_bytes"], row["oversize_replies"]) == (105, 105 * len(big),
                                                                                               105)
    assert records[-1].frames == [1] and records[-1].findings[0].code == "abuse.unsolicited_replies"


def test_thresholds_are_parameters():
    stats, _ = run(REFLECTION, abuse_rate=30)
    assert {s["rule"] for s in stats["abuse"]["suspicions"]} == {"reflection"}  # 56/s from the victim in all
    assert stats["abuse"]["thresholds"] == {"rate": 30.0, "window": 5, "min_servers": 3}
    stats, _ = run(REFLECTION, abuse_window=7)  # 140 within 7 s: the flood's 125 and the token's 105 fall short
    assert [(s["rule"], s["address"]) for s in stats["abuse"]["suspicions"]] == [("reflection", mr.VICTIM)]
    for bad in ({"abuse_rate": 0}, {"abuse_rate": -1}, {"abuse_window": 0}, {"abuse_window": 2.5}):
        with pytest.raises(UsageError):
            Session(_Kept(), **bad)


def test_state_is_bounded_and_evictions_are_a_note(tmp_path, monkeypatch):
    for name in ("MAX_HOSTS", "MAX_PAIRS", "MAX_OPEN"):
        monkeypatch.setattr(abuse, name, 50)
    mr.write_spoofed(str(tmp_path / "spoofed.pcap"), 300)
    sink = _Kept()
    session = Session(sink, stats=True)
    for frame in open_capture(str(tmp_path / "spoofed.pcap")):
        session.frame(frame)
    session.finish()
    traffic = session.pipeline.traffic
    assert len(traffic.hosts) == 50
    assert session.stats_dict()["abuse"]["evicted"] == {"hosts": 250, "pairs": 250, "queries": 250}
    note = sink.analyses[-1]
    assert (note.protocol, note.name, note.result) == ("abuse", "state_evicted",
                                                       {"hosts": 250, "pairs": 250, "queries": 250})
    assert [(f.code, f.severity) for f in note.findings] == [("abuse.state_evicted", "note")]
    assert session.stats_dict()["abuse"]["amplification"][0]["requests"] == 300


def test_the_peers_counted_in_all_are_bounded(tmp_path, monkeypatch):
    """20 browsers each ask the same 10 servers: 200 peers held by the browsers and 200 by the servers. With
    room for 100 in all, the least recently used addresses and servers go, and the note says so."""
    monkeypatch.setattr(abuse, "MAX_PEER_ENTRIES", 100)
    frames = []
    for browser in range(20):
        for n in range(10):
            ts = capkit.DEFAULT_TS + browser * 0.1 + n * 0.005
            frames.append((ts, udp((f"198.51.100.{browser + 1}", 50000), (f"203.0.113.{n + 1}", 26000),
                                   nq.ccreq_server_info())))
    capkit.write_pcap(tmp_path / "browsers.pcap", frames)
    sink = _Kept()
    session = Session(sink, stats=True)
    held = []
    for frame in open_capture(str(tmp_path / "browsers.pcap")):
        session.frame(frame)
        traffic = session.pipeline.traffic
        held.append(traffic.host_peers + traffic.server_peers)
    session.finish()
    traffic = session.pipeline.traffic
    counted = sum(abuse._peer_count(h.queried) + abuse._peer_count(h.repliers) for h in traffic.hosts.values()) \
        + sum(abuse._peer_count(s.requesters) for s in traffic.servers.values())
    assert max(held) <= 100 and counted == held[-1]
    evicted = session.stats_dict()["abuse"]["evicted"]
    kept = list(traffic.hosts)
    assert kept == [f"198.51.100.{n}" for n in range(21 - len(kept), 21)]  # the latest browsers, oldest first
    assert evicted["hosts"] == 20 - len(kept) and evicted["servers"] >= 1 and set(evicted) == {"hosts", "servers"}
    note = sink.analyses[-1]
    assert note.name == "state_evicted" and "100 peers counted by them in all" in note.findings[0].message
    assert session.stats_dict()["abuse"]["amplification"][0]["requests"] == 200


def _steady_clients(path, seconds, burst_at):
    """40 addresses each ask one server once a second for ``seconds`` seconds, the first 10 times more in second
    ``burst_at``; the server answers the second address every second."""
    server = ("203.0.113.7", 26000)
    frames = []
    for second in range(seconds):
        for client in range(40):
            times = 11 if (client, second) == (0, burst_at) else 1
            for n in range(times):
                ts = capkit.DEFAULT_TS + second + client * 0.01 + n * 0.0005
                frames.append((ts, udp((f"198.51.100.{client + 1}", 50000), server, nq.ccreq_server_info())))
        reply = nq.ccrep_server_info("203.0.113.7:26000", "steady", "e1m1", 1, 8)
        frames.append((capkit.DEFAULT_TS + second + 0.9, udp(server, ("198.51.100.2", 50000), reply)))
    capkit.write_pcap(path, frames)


def _run_counting_bins(path, **options):
    """(the --stats dict, the analysis records, the rate seconds held after each frame) of a capture."""
    sink = _Kept()
    session = Session(sink, stats=True, **options)
    held = []
    for frame in open_capture(str(path)):
        session.frame(frame)
        held.append(session.pipeline.traffic.rate_bins)
    session.finish()
    traffic = session.pipeline.traffic
    counted = sum(host.bins() for host in traffic.hosts.values())
    assert counted == held[-1]  # the running count is the seconds the rates hold
    return session.stats_dict(), sink.analyses, held


def test_the_seconds_the_rates_hold_in_all_are_bounded_and_the_peaks_stay_exact(tmp_path, monkeypatch):
    """40 addresses active every second of 30 hold 1,230 seconds of rate history (41 rates). With room for 300,
    the history before each rate's last window is folded into its peak: nothing is evicted and every figure, peaks
    and rules included, is the one the whole history gives."""
    path = tmp_path / "steady.pcap"
    _steady_clients(path, 30, burst_at=20)
    whole, whole_records, whole_held = _run_counting_bins(path)
    assert max(whole_held) == 40 * 30 + 30  # the requests' rates, and the replies of one address
    monkeypatch.setattr(abuse, "MAX_RATE_BINS", 300)
    bounded, records, held = _run_counting_bins(path)
    assert max(held) <= 300 and held[-1] < 300
    assert bounded["abuse"]["evicted"] == {} and bounded["abuse"] == whole["abuse"]
    assert [(r.name, r.result) for r in records] == [(r.name, r.result) for r in whole_records]
    burst = next(row for row in bounded["abuse"]["top_talkers"] if row["address"] == "198.51.100.1")
    assert burst["peak_rate"] == (11 + 4) / 5  # the burst's second and four more, folded before the end


def test_a_window_too_long_for_the_rates_budget_evicts_the_oldest_addresses(tmp_path, monkeypatch):
    """A 20-second window over 40 addresses active every second: their last windows alone (800 seconds) exceed the
    room for 300, so after folding the least recently used addresses go until a quarter of it is free."""
    path = tmp_path / "steady.pcap"
    _steady_clients(path, 30, burst_at=20)
    monkeypatch.setattr(abuse, "MAX_RATE_BINS", 300)
    stats, records, held = _run_counting_bins(path, abuse_window=20)
    assert max(held) <= 300
    assert stats["abuse"]["evicted"]["hosts"] > 0
    assert records[-1].name == "state_evicted"


def test_merged_workers_evict_as_one_process(tmp_path, monkeypatch):
    """Past the limits, two workers' tables merged keep what one process's LRU keeps, and count the same
    evictions, when each evicted entry lived in one worker (here: spoofed sources, one server each)."""
    for name in ("MAX_HOSTS", "MAX_PAIRS", "MAX_OPEN"):
        monkeypatch.setattr(abuse, name, 50)
    path = tmp_path / "spoofed.pcap"
    mr.write_spoofed(str(path), 300)
    one, workers = Pipeline(Registry()), [Pipeline(Registry()), Pipeline(Registry())]
    owners = set()
    for frame in open_capture(str(path)):
        one.frame(frame)
        owner = sum(address_pair(frame)[0]) % 2
        owners.add(owner)
        workers[owner].frame(frame)
        workers[1 - owner].skip(frame)
    for pipeline in (one, *workers):
        pipeline.finish()
    merged = workers[0].traffic
    merged.merge(workers[1].traffic)
    assert owners == {0, 1} and merged.stats() == one.traffic.stats()
    assert merged.stats()["evicted"] == {"hosts": 250, "pairs": 250, "queries": 250}
    assert [(r.name, r.result) for r in merged.conclude()] == [(r.name, r.result) for r in one.traffic.conclude()]


def _query_analyzer():
    """An abuse analyzer of one made-up protocol whose "req" is answered by "rep"."""
    return abuse.TrafficAnalyzer([("proto", {"req": ("request", "req"), "rep": ("reply", "req")}, None, None, None)])


def test_a_later_files_analyzer_is_folded_in_as_the_newer_whatever_its_frame_numbers():
    """Frame numbers start at 1 in each file. Followed by the second file's analyzer, the first's keeps: an address's
    first frame (the first file's) and its last (the second's); the worst query of a tie (the first file's); and at
    the table's limit the second file's addresses, the newest, where the frame numbers alone would keep the first's."""
    one, other, late = ("192.0.2.1", 1001), ("192.0.2.7", 1007), ("192.0.2.9", 1009)
    second_server = ("203.0.113.6", 8303)
    first, second = _query_analyzer(), _query_analyzer()
    first.hosts, second.hosts = BoundedDict(2), BoundedDict(2)
    first.count(5, 10.0, "proto", "req", one, SERVER, None, 10, 52)
    first.count(6, 10.1, "proto", "rep", SERVER, one, None, 100, 142)
    first.count(7, 10.2, "proto", "req", other, SERVER, None, 10, 52)
    second.count(1, 20.0, "proto", "req", one, second_server, None, 10, 52)
    second.count(2, 20.1, "proto", "rep", second_server, one, None, 100, 142)
    second.count(3, 20.2, "proto", "req", late, second_server, None, 10, 52)
    first.finish()
    second.finish()
    first.follow(second)
    assert list(first.hosts.keys()) == [one[0], late[0]] and first.evicted["hosts"] == 1
    host = first.hosts[one[0]]
    assert (host.first_frame, host.last_frame, host.requests) == (5, 2, 2)
    worst = first.stats()["amplification"][0]["worst"]
    assert (worst["request_frame"], worst["server"]) == (5, "203.0.113.5:8303")
    assert [server for server in first.servers.keys()] == [SERVER, second_server]


def test_a_pair_flooding_in_two_files_is_one_fast_server_and_one_flood_of_both_files_requests():
    """A source asks one server 120 times in 5 seconds in each of two files: one server asked fast (not two, which
    would count toward the reflection rule's three), and one flood of 240 requests with the first file's frames."""
    files = []
    for start in (10.0, 20.0):
        analyzer = _query_analyzer()
        for n in range(120):
            analyzer.count(n + 1, start + n / 30, "proto", "req", CLIENT, SERVER, None, 10, 52)
        analyzer.finish()
        files.append(analyzer)
    first, second = files
    assert first.hosts[CLIENT[0]].servers_asked_fast == 1
    first.follow(second)
    assert first.hosts[CLIENT[0]].servers_asked_fast == 1
    (flood,) = [s for s in first.stats()["suspicions"] if s["rule"] == "request_flood"]
    assert (flood["requests"], flood["frames"]) == (240, [1, 100])


def test_a_reply_finds_its_query_whichever_port_of_the_address_asked_last():
    # a server keeps its last pair, and the pair its last query: a reply to another port of the same address, or to
    # a port that never asked, is matched by its own key, not by the last query's
    analyzer = _query_analyzer()
    server, one, two, never = ("203.0.113.5", 8303), ("192.0.2.1", 1001), ("192.0.2.1", 1002), ("192.0.2.1", 1003)
    analyzer.count(1, 10.0, "proto", "req", one, server, None, 10, 52)
    analyzer.count(2, 10.1, "proto", "req", two, server, None, 10, 52)
    analyzer.count(3, 10.2, "proto", "rep", server, one, None, 100, 142)   # answers port 1001's query
    analyzer.count(4, 10.3, "proto", "rep", server, never, None, 100, 142)  # answers nothing
    analyzer.count(5, 10.4, "proto", "rep", server, two, None, 100, 142)
    analyzer.finish()
    row, = analyzer.stats()["protocols"]
    assert (row["requests"], row["replies"], row["unsolicited_replies"]) == (2, 2, 1)
    kind, = analyzer.stats()["amplification"]
    assert (kind["answered"], kind["replies"]) == (2, 2)


def test_a_pair_evicted_from_its_table_is_not_reached_through_its_server():
    # the pairs table holds two; the third pair evicts the first, which its server still names: that server's next
    # reply to the same address makes the pair anew (the eviction counted once), as a look-up by key would
    analyzer = _query_analyzer()
    analyzer.pairs = BoundedDict(2)
    servers = [("203.0.113.5", 8303), ("203.0.113.6", 8303), ("203.0.113.7", 8303)]
    client = ("192.0.2.1", 1001)
    for frame, server in enumerate(servers, 1):
        analyzer.count(frame, 10.0, "proto", "req", client, server, None, 10, 52)
    assert analyzer.evicted == {"pairs": 1} and ("192.0.2.1", servers[0]) not in analyzer.pairs
    analyzer.count(4, 10.5, "proto", "rep", servers[0], client, None, 100, 142)
    assert ("192.0.2.1", servers[0]) in analyzer.pairs and analyzer.evicted == {"pairs": 2}
    assert analyzer.pairs.keys() == [("192.0.2.1", servers[2]), ("192.0.2.1", servers[0])]
    row, = analyzer.stats()["protocols"]
    assert (row["replies"], row["unsolicited_replies"]) == (1, 0)  # its query was still open


def test_what_the_rules_found_at_conclude_is_listed_until_the_next_message():
    # conclude() runs the rules and stats() lists what they found; a message counted after it is in the next listing,
    # and a listing's frames are lists of its own
    analyzer = abuse.TrafficAnalyzer([("proto", {"req": ("request", "req")}, None, None, None)], rate=2, window=1)
    server, other, client, second = ("203.0.113.5", 8303), ("203.0.113.6", 8303), ("192.0.2.1", 1001), ("192.0.2.2", 9)
    analyzer.count(1, 10.0, "proto", "req", client, server, None, 10, 52)
    analyzer.count(2, 10.1, "proto", "req", client, server, None, 10, 52)
    analyzer.finish()
    record, = analyzer.conclude()
    listed = analyzer.stats()["suspicions"]
    assert [(s["rule"], s["frames"]) for s in listed] == [("request_flood", [1, 2])] and record.frames == [1, 2]
    listed[0]["frames"].append(99)
    assert analyzer.stats()["suspicions"][0]["frames"] == [1, 2]
    analyzer.count(3, 11.0, "proto", "req", second, other, None, 10, 52)
    analyzer.count(4, 11.1, "proto", "req", second, other, None, 10, 52)
    assert [(s["rule"], s["frames"]) for s in analyzer.stats()["suspicions"]] == [
        ("request_flood", [1, 2]), ("request_flood", [3, 4])]
