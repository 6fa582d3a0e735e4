"""Hostile captures: state stays bounded, each eviction is reported, well-formed traffic still decodes."""

import json
import os
import subprocess
import sys

import capkit
import hostile
from conftest import ROOT, jsonl, run_cli

from dissect.analysis.teeframe import MAX_PENDING
from dissect.capture.reassembly import MAX_PENDING_SEGMENTS, MAX_STREAMS


def codes(records):
    out = []
    for r in records:
        out += [f["code"] for f in r["findings"]]
        out += [f["code"] for m in r.get("messages", ()) for f in m["findings"]]
    return out


# A process made by fork (or vfork) counts its parent's resident size at the fork in its peak, so a command started by
# this test process would count the tests' memory: a small launcher forks it and reads its peak, -j's workers' included.
LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.executable, [sys.executable, "-m", "dissect", *sys.argv[1:]])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss_mb(path, *args):
    """The peak RSS of ``dissect ARGS PATH`` (``--stats`` without ``args``) and of its -j workers, the largest."""
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *(args or ["--stats"]), str(path)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=300).stdout
    code, kilobytes = out.split()
    assert code == "0"
    return int(kilobytes) / 1024


def test_large_frames_cross_j_in_chunks_bounded_in_bytes(tmp_path):
    """Frames of 256 KiB make about 540 KB of JSON each: -j's chunks of 128 frames held some 70 MB in each worker and
    the parent at once (130 to 146 MB at the peak); chunks end at 1 MiB of frames too, in every process alike, and the
    output is still one process's."""
    few, many = tmp_path / "few.pcap", tmp_path / "many.pcap"
    hostile.write_big(few, 12)
    hostile.write_big(many, 200)
    for view in (["-T", "jsonl"], ["-V"]):
        one, split = run_cli(*view, few), run_cli("-j", "2", *view, few)
        assert split == one and one[0] == 0 and one[1].count("CCREP_SERVER_INFO") >= 12
    assert peak_rss_mb(many, "-j", "2", "-T", "jsonl") < 100


def test_the_html_reports_large_rows_are_written_in_chunks_bounded_in_bytes(tmp_path):
    """A thousand rows' trees and bytes were held before a chunk was written: about 400 MB for 200 frames of 256 KiB."""
    path = tmp_path / "big.pcap"
    hostile.write_big(path, 200)
    assert peak_rss_mb(path, "-q", "--html", str(tmp_path / "big.html")) < 150


def test_token_flood_is_evicted_and_memory_stays_flat(tmp_path):
    small, large = tmp_path / "small.pcap", tmp_path / "large.pcap"
    hostile.write_tokens(small, MAX_PENDING + 1000)
    hostile.write_tokens(large, 6 * MAX_PENDING)
    _, out, _ = run_cli("-T", "jsonl", small)
    records = jsonl(out)
    found = codes(records)
    assert found.count("teeframe.state_evicted") == 1000
    assert found.count("teeframe.incomplete_response") == MAX_PENDING + 1000
    assert peak_rss_mb(large) - peak_rss_mb(small) < 12


def test_streams_that_never_close_are_evicted(tmp_path):
    path = tmp_path / "streams.pcap"
    hostile.write_streams(path, MAX_STREAMS + 500)
    _, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    assert codes(records).count("tcp.stream_evicted") == 500
    lists = [r for r in records if r["kind"] == "analysis" and r["name"] == "server_list"]
    assert len(lists) == MAX_STREAMS + 500
    assert all(f["code"] == "soldat.missing_end" for r in lists for f in r["findings"])


def test_endless_out_of_order_window_is_cut_and_later_traffic_decodes(tmp_path):
    path = tmp_path / "window.pcap"
    hostile.write_window(path, MAX_PENDING_SEGMENTS + 100)
    _, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    found = codes(records)
    assert "tcp.buffer_limit" in found and "tcp.lost_segment" in found
    assert records[-1]["kind"] == "analysis" or records[-1]["protocol"] == "netquake"
    netquake = [r for r in records if r["kind"] == "frame" and r["protocol"] == "netquake"]
    assert len(netquake) == 1 and netquake[0]["messages"][0]["findings"] == []


def test_gaps_still_open_at_the_capture_end_are_summed_up_per_stream(tmp_path):
    path = tmp_path / "held.pcap"
    hostile.write_held(path, 4 * 10, streams=4)   # 4 streams: 10 one-byte segments, each after a gap
    _, out, _ = run_cli("-T", "jsonl", path)
    ends = [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == "capture_end"]
    assert [r["result"]["stream"] for r in ends] == [0, 1, 2, 3]
    for r in ends:  # the first gap is 2 bytes (offsets 0 and 1), the nine between the segments 1 byte each
        assert [(f["code"], f["message"].split(";")[0]) for f in r["findings"]] == [
            ("tcp.lost_segment", "11 bytes of the stream in 10 gaps never arrived (lost segments)")]


def test_overlapping_fragment_flood(tmp_path):
    path = tmp_path / "fragments.pcap"
    hostile.write_fragments(path, 8000)
    code, out, _ = run_cli("--stats", "-T", "json", path)
    stats = json.loads(out)[-1]
    counts = {f["code"]: f["count"] for f in stats["findings"]}
    assert counts["ip.fragment_overlap"] == 6000   # every piece after the first of each datagram overlaps
    assert counts["ip.fragments_evicted"] == 2000 - 1024


def test_more_address_pairs_than_jobs_can_place(tmp_path):
    """-j places 16,384 address pairs by load and the rest by hash: what one process concludes, -j concludes."""
    from dissect import parallel
    import netquake_peer as nq
    path = tmp_path / "pairs.pcap"
    frames = []
    for n in range(parallel.MAX_PAIRS + 4000):
        client = f"10.{64 + n // 65536}.{n // 256 % 256}.{n % 256}"
        frames.append((1700000000 + n * 1e-4, capkit.ethernet(capkit.udp_packet(
            client, 40000, "10.0.0.1", 26000, nq.ccreq_server_info()))))
    frames.append((1700000010.0, capkit.ethernet(capkit.udp_packet(  # to the last client: its pair went by hash
        "10.0.0.1", 26000, client, 40000, nq.ccrep_server_info("10.0.0.1:26000", "h", "e1m1", 1, 8)))))
    capkit.write_pcap(path, frames)
    single = run_cli("--stats", "-T", "json", path)
    assert run_cli("-j", "2", "--stats", "-T", "json", path) == single
    stats = json.loads(single[1])[-1]
    assert stats["transactions"]["netquake"]["answered"] == 1  # the reply met its request in the same worker
    assert stats["protocols"] == {"netquake": parallel.MAX_PAIRS + 4001}


def test_oversized_pcapng_blocks_are_skipped_in_flat_memory(tmp_path):
    """A packet block of nearly 16 MiB is over the 256 KiB record limit: a corrupt record, never read whole."""
    from dissect.capture.files import MAX_PACKET_BLOCK
    small, large = tmp_path / "small.pcapng", tmp_path / "large.pcapng"
    hostile.write_blocks(small, 1, block_bytes=MAX_PACKET_BLOCK + 4)
    hostile.write_blocks(large, 1)
    assert large.stat().st_size > 16_000_000
    code, out, err = run_cli("-T", "jsonl", large)
    assert code == 0, err
    records = jsonl(out)
    assert [r["frame"] for r in records] == [1, 2]
    assert records[0]["info"] == "[corrupt record]" and records[0]["length"] == hostile.BLOCK_BYTES - 32
    assert codes(records[:1]) == ["capture.corrupt"]
    assert "is 16776192 bytes long" in records[0]["findings"][0]["message"]
    assert records[1]["protocol"] == "netquake" and codes(records[1:]) == []
    assert peak_rss_mb(large) - peak_rss_mb(small) < 6


def test_long_blocks_other_than_packets_are_read_past_in_flat_memory(tmp_path):
    """An interface description with nearly 16 MiB of options and three other blocks as long were each read whole
    (72 MB at the peak, 3 s parsing the options): now read past in chunks, the interface keeping the options of its
    first 64 KiB of them, which its first packet says."""
    from dissect.capture.files import MAX_OPTIONS
    small, large = tmp_path / "small.pcapng", tmp_path / "large.pcapng"
    hostile.write_sidelong(small, 3, block_bytes=1024)
    hostile.write_sidelong(large, 3)
    assert large.stat().st_size > 4 * 16_000_000
    code, out, err = run_cli("-T", "jsonl", large)
    assert code == 0, err
    records = jsonl(out)
    assert [(r["frame"], r["protocol"]) for r in records] == [(1, "netquake"), (2, "netquake"), (3, "netquake")]
    times = [r["time"] - capkit.DEFAULT_TS for r in records]  # counted in nanoseconds: the resolution was kept
    assert [round(t, 6) for t in times] == [0.0, 1e-5, 2e-5]
    (note,) = records[0]["findings"]
    assert (note["code"], note["severity"]) == ("capture.corrupt", "warning")
    assert note["message"].startswith(f"interface 0's description block at byte 28 is {hostile.BLOCK_BYTES} bytes "
                                      f"long, more than {MAX_OPTIONS} bytes of options: the options past them were "
                                      f"not read (")
    assert codes(records[1:]) == [] and records[0]["messages"][0]["message"] == "CCREQ_SERVER_INFO"
    assert peak_rss_mb(large) - peak_rss_mb(small) < 6


def test_a_capture_that_inflates_ten_thousandfold_is_read_in_flat_memory(tmp_path):
    """512 MiB of records of zeros in some 20 KB of zstd: one step of decompression, a 16 KiB chunk, made hundreds of
    MB at once; each step makes at most 8 MiB now."""
    small, large = tmp_path / "small.pcap.zst", tmp_path / "large.pcap.zst"
    hostile.write_inflating(small, 8)
    hostile.write_inflating(large, 2048)
    assert large.stat().st_size < 100_000
    code, out, err = run_cli("--stats", "-T", "json", large)
    assert code == 0, err
    assert json.loads(out)[-1]["frames"] == 2048
    assert peak_rss_mb(large) - peak_rss_mb(small) < 12


def test_5000_digit_decimals_are_not_numbers_and_4000_digit_ones_are(tmp_path):
    """int() refuses over 4300 digits: 5000 digits must read as text that is not a number, not fail."""
    path = tmp_path / "digits.pcap"
    hostile.write_digits(path, 2)
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert len(frames) == 2
    for frame in frames:
        msg = frame["messages"][0]
        bad = [(f["offset"], f["length"]) for f in msg["findings"] if f["code"] == "teeframe.bad_decimal"]
        assert bad == [(184, 5001)] + [(5206 + 9010 * i, 5001) for i in range(6)]  # map size, 6 countries
        clients = [f for f in msg["fields"] if f["key"] == "teeframe.client"]
        scores = [c for client in clients for c in client["children"] if c["key"] == "teeframe.client.score"]
        assert [(s["offset"], s["length"], s["value"]) for s in scores] == \
            [(10207 + 9010 * i, 4001, "9" * 4000) for i in range(6)]  # a number, written as a string in JSON
        assert not any(code.endswith(("internal_error", "dissector_error")) for code in codes([frame]))


def test_what_the_capture_end_frees_from_behind_gaps_is_dissected_within_a_budget(tmp_path, monkeypatch):
    import soldat_peer as sp

    import dissect
    import dissect.pipeline
    monkeypatch.setattr(dissect.pipeline, "MAX_END_MESSAGES", 5)
    line, request = sp.server_entry(sp.SERVERS[0]), sp.request()
    path = tmp_path / "held-lines.pcap"
    # 3 streams: a request (sent twice), the first server line lost, then 4 held behind it until the end
    hostile._interleaved(path, 3, 3 * 6,
                         lambda i: (0, request) if i < 2 else (len(request) + (i - 1) * len(line), line))
    with dissect.open(path) as capture:
        records = [r.to_dict() for r in capture]
    held = [r for r in records if r["kind"] == "analysis" and r["name"] == "stream_end"]
    shown = sorted((r["result"]["stream"], r["result"]["message"]) for r in held)
    assert shown == [(0, "server")] * 4 + [(1, "server")]
    assert [r["frames"][0] for r in held] == sorted(r["frames"][0] for r in held)  # shown in their frames' order
    ends = {r["result"]["stream"]: [f["message"].split(";")[0].split(" (")[0] for f in r["findings"]]
            for r in records if r["kind"] == "analysis" and r["name"] == "capture_end"}
    skipped = "bytes held behind gaps are not shown: more than 5 messages of all streams waited behind gaps when " \
              "the capture ended"
    assert ends == {0: [f"{len(line)} bytes of the stream never arrived"],
                    1: [f"{len(line)} bytes of the stream never arrived", f"{3 * len(line)} {skipped}"],
                    2: [f"{len(line)} bytes of the stream never arrived", f"{4 * len(line)} {skipped}"]}


def test_the_capture_end_budget_holds_within_one_held_segment_of_many_lines(tmp_path, monkeypatch):
    import soldat_peer as sp

    import dissect
    import dissect.pipeline
    monkeypatch.setattr(dissect.pipeline, "MAX_END_MESSAGES", 5)
    request, end = sp.request(), sp.list_end()
    path = tmp_path / "one-held-segment.pcap"
    # one stream: a request, a lost line, then one segment of 40 list ends held behind it until the capture ends
    hostile._interleaved(path, 1, 3, lambda i: (0, request) if i < 2 else (len(request) + len(end), end * 40))
    with dissect.open(path) as capture:
        records = [r.to_dict() for r in capture]
    held = [r for r in records if r["kind"] == "analysis" and r["name"] == "stream_end"]
    assert [r["result"]["message"] for r in held] == ["list_end"] * 5
    (ending,) = [r for r in records if r["kind"] == "analysis" and r["name"] == "capture_end"]
    (skipped,) = [f["message"] for f in ending["findings"] if f["code"] == "tcp.buffer_limit"]
    assert skipped.startswith(f"{35 * len(end)} bytes held behind gaps are not shown")
