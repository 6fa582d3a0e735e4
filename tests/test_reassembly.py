"""TCP reassembly and IPv4 defragmentation: every case, on real captures and on segments built here."""

import json
import socket
import struct
import tracemalloc

import capkit
import dpkt
import pytest
import soldat_peer as sp
import teeframe_peer as tf
from conftest import capture, jsonl, run_cli

from dissect.capture.layers import Packet
from dissect.dissectors.soldat import Soldat
from dissect.capture.reassembly import (HISTORY, MAX_PENDING_PER_STREAM, MAX_STREAMS, PIECE_COST, SEGMENT_COST, Chunk,
                                        Gap, IPv4Defragmenter, TcpReassembler)

CLIENT, LOBBY = ("10.0.0.9", 40000), ("10.0.0.5", 13073)


def segment(seq, data=b"", flags=0x18, src=CLIENT, dst=LOBBY):
    packet = Packet()
    packet.src, packet.sport = src
    packet.dst, packet.dport = dst
    packet.transport, packet.tcp_seq, packet.tcp_flags = "tcp", seq & 0xFFFFFFFF, flags
    packet.payload, packet.payload_offset = data, 54
    return packet


def delivered(deliveries):
    out = []
    for delivery in deliveries:
        for _, piece in delivery.pieces:
            out.append(piece.data if isinstance(piece, Chunk) else ("gap", piece.size))
    return out


def codes_of(deliveries):
    return [f.code for d in deliveries for f in d.findings]


def run(packets):
    tcp = TcpReassembler()
    return tcp, [tcp.segment(p, i + 1) for i, p in enumerate(packets)]


def test_in_order_with_syn():
    _, out = run([segment(100, flags=0x02), segment(101, b"abc"), segment(104, b"def")])
    assert delivered(out) == [b"abc", b"def"] and codes_of(out) == []
    piece = out[1].pieces[0][1]
    assert (piece.frame, piece.frame_offset) == (2, 54)


def test_retransmission_is_ignored():
    _, out = run([segment(1, b"abc"), segment(4, b"def"), segment(4, b"def")])
    assert delivered(out) == [b"abc", b"def"]
    assert codes_of(out) == ["tcp.retransmission"]


def test_a_retransmitted_syn_after_data_leaves_the_stream_where_it_is():
    """A SYN repeating the side's initial sequence number moves nothing back: the data sent again after it is a
    retransmission, not new bytes."""
    tcp, out = run([segment(100, flags=0x02), segment(101, b"abc"), segment(100, flags=0x02), segment(101, b"abc"),
                    segment(104, b"def")])
    assert delivered(out) == [b"abc", b"def"]
    assert codes_of(out) == ["tcp.retransmission"] and out[3].findings[0].code == "tcp.retransmission"
    assert len(tcp.streams) == 1 and not out[2].evicted


def test_a_syn_of_another_initial_number_ends_the_stream_and_starts_a_new_one():
    """A reused port whose old connection's FIN was not captured: the old stream ends at the new SYN, what it held
    behind a gap is dropped (not spliced into the new stream), and the new stream starts at the new number."""
    tcp, out = run([segment(100, flags=0x02), segment(101, b"abc"), segment(110, b"held"),
                    segment(5000, flags=0x02), segment(5001, b"new"), segment(5004, b"er")])
    old = out[0].stream
    assert out[3].stream is not old and out[3].stream.index == old.index + 1
    assert out[3].evicted == [old] and [f.code for f in out[3].findings] == ["tcp.port_reused"]
    assert "the bytes it held behind a gap are dropped" in out[3].findings[0].message
    assert delivered(out) == [b"abc", b"new", b"er"]
    assert tcp.total_pending == 0 and list(tcp.streams.values()) == [out[3].stream]


def test_the_first_syn_of_the_other_side_opens_it_and_a_syn_after_its_bytes_is_a_new_connection():
    lobby = {"src": LOBBY, "dst": CLIENT}
    tcp, out = run([segment(100, flags=0x02), segment(900, flags=0x12, **lobby), segment(101, b"req"),
                    segment(901, b"reply", **lobby), segment(5000, flags=0x12, **lobby)])
    assert [d.evicted for d in out[:4]] == [[], [], [], []] and out[1].stream is out[0].stream
    assert delivered(out[:4]) == [b"req", b"reply"]
    assert out[4].evicted == [out[0].stream] and codes_of(out) == ["tcp.port_reused"]
    assert "dropped" not in out[4].findings[0].message


def test_a_syn_captured_after_its_sides_first_bytes_joins_their_stream():
    """Captures merged from several queues reorder: the SYN right before the side's first byte is its own."""
    tcp, out = run([segment(1001, b"req"), segment(1000, flags=0x02), segment(1004, b"uest")])
    assert delivered(out) == [b"req", b"uest"] and codes_of(out) == [] and len(tcp.streams) == 1


def test_a_syn_after_bytes_sent_without_one_elsewhere_is_a_new_connection():
    tcp, out = run([segment(1001, b"old"), segment(7000, flags=0x02), segment(7001, b"new")])
    assert out[1].evicted == [out[0].stream] and codes_of(out) == ["tcp.port_reused"]
    assert delivered(out) == [b"old", b"new"] and out[2].stream is not out[0].stream


def test_a_silent_sides_opening_syn_after_the_other_sides_bytes_is_a_new_connection_at_once():
    """The capture began mid-stream with only the lobby talking; the client's SYN (no ACK) can only open another
    connection, so the old stream ends at it, not one frame later at the lobby's SYN-ACK."""
    lobby = {"src": LOBBY, "dst": CLIENT}
    _, out = run([segment(901, b"tail of a list", **lobby), segment(5000, flags=0x02),
                  segment(7000, flags=0x12, **lobby), segment(5001, b"req")])
    assert out[1].evicted == [out[0].stream] and codes_of(out) == ["tcp.port_reused"]
    assert out[1].stream is not out[0].stream and out[2].stream is out[1].stream is out[3].stream
    assert out[1].stream.client == CLIENT and delivered(out) == [b"tail of a list", b"req"]


def test_a_syn_ack_of_a_silent_side_after_the_other_sides_bytes_still_joins_their_stream():
    """A SYN-ACK answers its stream's SYN: reordered behind the client's first bytes, it is the stream's own."""
    lobby = {"src": LOBBY, "dst": CLIENT}
    tcp, out = run([segment(101, b"req"), segment(900, flags=0x12, **lobby), segment(901, b"reply", **lobby)])
    assert [d.evicted for d in out] == [[], [], []] and codes_of(out) == [] and len(tcp.streams) == 1
    assert delivered(out) == [b"req", b"reply"]


def test_a_retransmitted_syn_wraps_around_with_its_number():
    """An initial number of 0xFFFFFFFF puts the first byte at 0: the SYN sent again is still the stream's own."""
    _, out = run([segment(0xFFFFFFFF, flags=0x02), segment(0, b"abc"), segment(0xFFFFFFFF, flags=0x02),
                  segment(3, b"def")])
    assert delivered(out) == [b"abc", b"def"] and codes_of(out) == []


def test_a_retransmitted_syn_with_data_is_a_retransmission():
    _, out = run([segment(100, b"fast", flags=0x02), segment(100, b"fast", flags=0x02), segment(105, b"open")])
    assert delivered(out) == [b"fast", b"open"] and codes_of(out) == ["tcp.retransmission"]


def test_a_stream_opened_by_a_syn_ack_has_its_receiver_as_client():
    tcp, out = run([segment(900, flags=0x12, src=LOBBY, dst=CLIENT), segment(101, b"req")])
    stream = out[0].stream
    assert stream.client == CLIENT and out[1].direction == 0 and out[0].direction == 1


def test_partial_overlap_delivers_only_the_new_bytes():
    _, out = run([segment(1, b"abcd"), segment(3, b"cdef")])
    assert delivered(out) == [b"abcd", b"ef"]
    assert out[1].pieces[0][1].frame_offset == 56
    assert codes_of(out) == []


def test_overlap_with_different_bytes_is_a_finding():
    _, out = run([segment(1, b"abcd"), segment(3, b"XYef")])
    assert delivered(out) == [b"abcd", b"ef"]
    assert codes_of(out) == ["tcp.overlap_conflict"]


def test_a_held_segment_that_the_stream_covers_with_other_bytes_is_a_conflict():
    """Held ahead, then covered whole by a segment with other bytes: the delivered bytes stand and the conflict is
    told, as when the two come the other way round; two held copies at one place that differ are told too."""
    _, out = run([segment(1, b"ab"), segment(5, b"XY"), segment(3, b"cdef")])
    assert delivered(out) == [b"ab", b"cdef"]
    assert codes_of(out) == ["tcp.out_of_order", "tcp.overlap_conflict"]
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(3, b"cdef")])
    assert codes_of(out) == ["tcp.out_of_order"]  # the same bytes: no conflict
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(5, b"eX"), segment(5, b"efgh")])
    assert codes_of(out) == ["tcp.out_of_order", "tcp.overlap_conflict", "tcp.out_of_order"]


def test_out_of_order_held_until_the_gap_fills():
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(3, b"cd")])
    assert delivered(out) == [b"ab", b"cd", b"ef"]
    assert codes_of(out) == ["tcp.out_of_order"]
    assert [p.frame for _, p in out[2].pieces] == [3, 2]


def test_lost_segment_reported_when_both_sides_finish():
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(7, flags=0x11),
                  segment(900, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert delivered(out) == [b"ab", ("gap", 2), b"ef"]
    assert "tcp.lost_segment" in codes_of(out) and out[-1].closed


def test_buffer_limit_declares_the_gap_lost():
    tcp = TcpReassembler(max_pending=100)
    out = [tcp.segment(segment(1, b"a"), 1)]
    out += [tcp.segment(segment(10 + i * 10, b"x" * 10), i + 2) for i in range(12)]
    assert ("gap", 8) in delivered(out)
    assert "tcp.buffer_limit" in codes_of(out)
    assert tcp.total_pending < 100


def test_sequence_wraparound():
    start = 0xFFFFFFFE
    _, out = run([segment(start, b"abc"), segment(start + 5, b"fg"), segment(start + 3, b"de")])
    assert delivered(out) == [b"abc", b"de", b"fg"]


def test_bytes_from_before_a_mid_stream_capture_began_are_not_called_delivered():
    """No SYN: the stream starts at the first segment seen; one that comes later with earlier bytes was never
    delivered (tshark's follow-tcp leaves them out too), and says so; a true retransmission still says delivered."""
    _, out = run([segment(1083, b"x" * 229), segment(1000, b"y" * 83), segment(1083, b"x" * 229)])
    assert delivered(out) == [b"x" * 229]
    assert [f.message.split(" (bytes of a stream")[0] for d in out for f in d.findings] == [
        "83 bytes from before the first byte the capture saw of this side (it began mid-stream): ignored",
        "retransmission of 229 bytes already delivered (ignored)"]


def test_late_retransmission_after_close_stays_quiet():
    tcp, out = run([segment(1, b"ab"), segment(3, flags=0x11), segment(50, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert out[-1].closed
    assert tcp.segment(segment(1, b"ab"), 4) is None


def test_a_connection_on_a_closed_connections_ports_and_numbers_is_a_new_stream():
    """Stacks and generators that start every connection at the same number reuse a closed connection's ports and
    numbers: its SYN opens a new stream, whose bytes are delivered again. (Taking such a SYN for a late copy of the
    closed connection's own would lose whole connections; reflection.pcap has them.)"""
    tcp, out = run([segment(0, flags=0x02), segment(1, b"req"), segment(4, flags=0x11),
                    segment(0, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert out[-1].closed and len(tcp.streams) == 0
    again = [tcp.segment(segment(0, flags=0x02), 5), tcp.segment(segment(1, b"req"), 6)]
    assert again[0].stream.index == 1 and again[0].findings == [] and again[1].stream is again[0].stream
    assert delivered(again) == [b"req"] and codes_of(again) == []


def test_endless_out_of_order_window_stays_bounded():
    tcp = TcpReassembler()
    tcp.segment(segment(1, b"a"), 1)
    for i in range(20000):   # one-byte segments, each ahead of a gap that never fills
        tcp.segment(segment(10 + 2 * i, b"z"), i + 2)
    stream = next(iter(tcp.streams.values()))
    pending = stream.directions[0].pending
    # each held byte costs SEGMENT_COST more for its bookkeeping, so one-byte segments stop far short of 4096
    assert 0 < len(pending) <= MAX_PENDING_PER_STREAM // (1 + SEGMENT_COST)
    assert tcp.total_pending == sum(len(data) + SEGMENT_COST for data, _, _ in pending.values())


def test_held_segments_of_many_streams_cost_their_bookkeeping_against_the_total():
    # 200 streams each holding one-byte segments behind a gap: the data alone is 120,000 bytes, far under the
    # limit, but the dicts, tuples and heaps that hold them are not, and they are what the limit counts
    limit = 2 * 1024 * 1024
    tcp = TcpReassembler(max_total=limit)
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    declared = 0
    for i in range(600):
        for s in range(200):
            delivery = tcp.segment(segment(10 + 2 * i, b"z", src=("10.0.1.%d" % s, 40000)), i * 200 + s + 1)
            declared += "tcp.buffer_limit" in codes_of([delivery])
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    held = sum(len(side.pending) for stream in tcp.streams.values() for side in stream.directions)
    assert tcp.total_pending <= limit and held <= limit // (1 + SEGMENT_COST)
    assert declared > 0
    assert after - before < limit + 200 * 4096, after - before   # the held segments, and the streams themselves


def test_an_ignored_stream_holds_nothing_and_gives_back_what_it_held():
    tcp = TcpReassembler()
    first = tcp.segment(segment(1, b"x" * 10), 1)
    tcp.segment(segment(21, b"y" * 10), 2)       # held behind a 10-byte gap
    assert tcp.total_pending == 10 + SEGMENT_COST
    tcp.ignore(first.stream)                     # what the pipeline does when no parser takes the stream
    assert tcp.total_pending == 0 and first.stream.directions[0].pending == {}
    held = TcpReassembler()
    other = held.segment(segment(1, b"x" * 10), 1)
    held.segment(segment(21, b"y" * 10), 2)
    other.stream.ignored = True                  # ignored with its bytes still held: closing gives them back
    assert held.segment(segment(31, b"", flags=0x04), 3).closed
    assert held.total_pending == 0 and not held.streams


def test_the_capture_end_sums_up_a_streams_gaps_and_hands_streams_out_one_at_a_time():
    tcp = TcpReassembler()
    for s in range(3):
        tcp.segment(segment(1, b"a", src=("10.0.2.%d" % s, 40000)), 1)
        for i in range(50):                          # 50 one-byte segments, each after a one-byte gap
            tcp.segment(segment(3 + 2 * i, b"z", src=("10.0.2.%d" % s, 40000)), i + 2)
    ends = tcp.finish()
    first = next(ends)
    assert len(tcp.streams) == 2 and tcp.total_pending == 2 * 50 * (1 + SEGMENT_COST)
    assert delivered([first]) == [("gap", 1), b"z"] * 50
    assert [(f.code, f.message.split(";")[0]) for f in first.findings] == [
        ("tcp.lost_segment", "50 bytes of the stream in 50 gaps never arrived (lost segments)")]
    assert len(list(ends)) == 2 and tcp.total_pending == 0 and not tcp.streams


def test_overlap_is_checked_against_exactly_the_last_4_kib_delivered():
    tcp = TcpReassembler()
    stream = bytes(range(256)) * 40                  # 10,240 bytes in segments of 1,024
    for i in range(10):
        tcp.segment(segment(1 + 1024 * i, stream[1024 * i:1024 * (i + 1)]), i + 1)
    side = next(iter(tcp.streams.values())).directions[0]
    assert side.history == stream[-HISTORY:] and type(side.history) is bytes
    same = tcp.segment(segment(1 + len(stream) - HISTORY, stream[-HISTORY:]), 11)
    changed = tcp.segment(segment(1 + len(stream) - HISTORY, b"x" + stream[-HISTORY + 1:]), 12)
    too_old = tcp.segment(segment(1 + len(stream) - HISTORY - 1, b"x" * 2), 13)
    assert codes_of([same]) == ["tcp.retransmission"]
    assert codes_of([changed]) == ["tcp.overlap_conflict", "tcp.retransmission"]
    assert codes_of([too_old]) == ["tcp.retransmission"]   # its first byte is older than what is kept


def test_100000_connections_that_never_close_stay_bounded():
    tcp = TcpReassembler()
    tracemalloc.start()
    evicted = 0
    for i in range(100000):
        src = (f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}", 40000 + i % 20000)
        delivery = tcp.segment(segment(1000, b"e\xa942", src=src), i + 1)
        evicted += len(delivery.evicted)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(tcp.streams) == MAX_STREAMS
    assert evicted == 100000 - MAX_STREAMS
    assert peak < 40 * 1024 * 1024, peak


# -- on captures --------------------------------------------------------------------------------------

def server_lists(out):
    return [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == "server_list"]


def test_clean_session_both_encodings():
    code, out, _ = run_cli("-T", "jsonl", "--fail-on", "warning", capture("soldat-session.pcap"))
    assert code == 0
    records = jsonl(out)
    lists = server_lists(out)
    assert [(x["result"]["announced"], x["result"]["received"], x["result"]["complete"]) for x in lists] == \
        [(4, 4, True), (4, 4, True)]
    first = lists[0]["result"]
    assert first["filters"]["dedicated"] == "1" and first["filters"]["gametype"] == -1
    assert [s["name"] for s in first["servers"]] == [s[7] for s in sp.SERVERS]
    assert 0 < first["time"] < 1
    notes = [f["message"] for r in records if r["kind"] == "frame" for m in r["messages"] for f in m["findings"]
             if f["code"] == "soldat.separator"]
    assert len(notes) == 4 and sum("Latin-1" in n for n in notes) == 2 and sum("UTF-8" in n for n in notes) == 2


def test_line_spanning_segments_lists_every_frame():
    _, out, _ = run_cli("-T", "jsonl", capture("soldat-session.pcap"))
    frames = {r["frame"]: r for r in jsonl(out) if r["kind"] == "frame"}
    first_server = frames[14]["messages"][0]
    assert first_server["message"] == "server"
    assert first_server["frames"] == [8, 10, 12, 14] and first_server["offset"] is None
    request = frames[6]["messages"][0]
    assert request["frames"] == [4, 6] and request["offset"] is None
    # one segment may complete several lines
    assert [m["message"] for m in frames[30]["messages"]] == ["server", "list_end"]
    begin = frames[8]["messages"][0]
    assert begin["message"] == "list_begin" and begin["frames"] == [8] and begin["offset"] == 66


def test_retransmission_reorder_and_conflict_capture():
    _, out, _ = run_cli("-T", "jsonl", capture("soldat-reordered.pcap"))
    records = jsonl(out)
    codes = {r["frame"]: [f["code"] for f in r["findings"] if f["code"].startswith("tcp.")]
             for r in records if r["kind"] == "frame" and any(f["code"].startswith("tcp.") for f in r["findings"])}
    assert codes == {10: ["tcp.out_of_order"], 17: ["tcp.retransmission"],
                     20: ["tcp.overlap_conflict", "tcp.retransmission"]}
    (result,) = [x["result"] for x in server_lists(out)]
    assert result["received"] == 4 and result["complete"] is True
    assert [s["name"] for s in result["servers"]] == [s[7] for s in sp.SERVERS]


def test_lost_segment_capture_resumes_at_the_next_line():
    _, out, _ = run_cli("-T", "jsonl", capture("soldat-lost.pcap"))
    records = jsonl(out)
    lost = [r for r in records if r["kind"] == "frame" and any(f["code"] == "tcp.lost_segment" for f in r["findings"])]
    assert len(lost) == 1
    assert [m["message"] for m in lost[0]["messages"]] == ["server", "server", "list_end"]
    (listing,) = server_lists(out)
    assert listing["result"]["received"] == 2 and listing["result"]["announced"] == 4
    assert [f["code"] for f in listing["findings"]] == ["soldat.count_mismatch"]


def _tcp_capture(path, segments):
    frames, ts = [], capkit.DEFAULT_TS
    for src, dst, seq, data, flags in segments:
        ts += 0.001
        frames.append((ts, capkit.ethernet(capkit.tcp_packet(*src, *dst, data, seq=seq, flags=flags))))
    capkit.write_pcap(path, frames)


def test_an_f_after_a_list_began_ends_that_list(tmp_path):
    """A second f before the first list's h: the first list ends there, without its end line (it was dropped, its
    server counted into the second list's, with no finding)."""
    first = sp.list_begin(2) + sp.server_entry(sp.SERVERS[0])
    second = sp.list_begin(1) + sp.server_entry(sp.SERVERS[1]) + sp.list_end()
    path = tmp_path / "two.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, first, 0x18),
                        (LOBBY, CLIENT, 1 + len(first), second, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    lists = server_lists(out)
    assert [(r["frames"], r["result"]["announced"], r["result"]["received"], r["result"]["complete"],
             [f["code"] for f in r["findings"]]) for r in lists] == [
        ([1, 2], 2, 1, False, ["soldat.missing_end"]), ([3], 1, 1, True, [])]
    assert lists[0]["findings"][0]["message"].startswith("the list never reached its end line h (a new list began "
                                                        "(f)) (spec: ")
    assert [r["result"]["servers"][0]["name"] for r in lists] == [sp.SERVERS[0][7], sp.SERVERS[1][7]]
    _, text, _ = run_cli(path)
    assert "server list 10.0.0.5:13073 → 10.0.0.9:40000: 1 server of 1 (frames 3)" in text
    # an f whose SERVERCOUNT is no number began a list all the same
    path = tmp_path / "count-x.pcap"
    first = b"f\xa9x\n"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, first, 0x18),
                        (LOBBY, CLIENT, 1 + len(first), second, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    assert [(r["frames"], r["result"]["received"], [f["code"] for f in r["findings"]]) for r in server_lists(out)] \
        == [([1, 2], 0, ["soldat.missing_end"]), ([3], 1, [])]


def test_a_line_whose_separator_is_the_streams_other_encoding_is_flagged_on_its_separator(tmp_path):
    """mixed_separators spans the line's own separator: A9 alone (1 byte) or C2 A9 (2 bytes)."""
    for first, then, length in ((sp.UTF8, sp.LATIN1, 1), (sp.LATIN1, sp.UTF8, 2)):
        reply = sp.list_begin(1, first) + sp.server_entry(sp.SERVERS[0], then) + sp.list_end(first)
        path = tmp_path / f"mixed-{length}.pcap"
        _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(encoding=first), 0x18), (LOBBY, CLIENT, 1, reply, 0x18)])
        _, out, _ = run_cli("-T", "jsonl", path)
        found = [(m["message"], f["offset"], f["length"]) for r in jsonl(out) if r["kind"] == "frame"
                 for m in r["messages"] for f in m["findings"] if f["code"] == "soldat.mixed_separators"]
        assert found == [("server", 1, length)]


def test_servers_seen_name_the_lobby_and_show_what_a_line_lacks(tmp_path):
    """--stats' servers seen: each server's line names the lobby that listed it (its characters were listed one by
    one), and a port that is no number shows as "?" (it showed "None")."""
    _, out, _ = run_cli("--stats", capture("soldat-session.pcap"))
    assert ('  192.0.2.10:23073        "Soldat CTF Classic"  map ctf_Ash  "CTF"  version 42  players 5/12  '
            'no password  responses 2  listed by 127.0.0.1:13074') in out.splitlines()
    fields = list(sp.SERVERS[0])
    fields[2] = "PORT"
    reply = sp.list_begin(1) + sp.server_entry(fields) + sp.list_end()
    path = tmp_path / "port.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, reply, 0x18)])
    _, out, _ = run_cli("--stats", path)
    assert [line.split()[0] for line in out.splitlines() if "listed by 10.0.0.5:13073" in line] == [
        f"{sp.SERVERS[0][1]}:?"]


def test_missing_end_and_unterminated_line(tmp_path):
    reply = sp.list_begin(2) + sp.server_entry(sp.SERVERS[0]) + b"g\xa942\xa9cut"
    path = tmp_path / "cut.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    (listing,) = server_lists(out)
    assert [f["code"] for f in listing["findings"]] == ["soldat.missing_end"]
    assert "inside a server line, which is not counted" in listing["findings"][0]["message"]
    # the line the capture's end cut is shown, but it is no listed server: its values are cut short
    result = listing["result"]
    assert (result["received"], result["omitted"], result["complete"]) == (1, 0, False)
    assert [(s["ip"], s["port"], s["name"]) for s in result["servers"]] == [sp.SERVERS[0][1:3] + sp.SERVERS[0][7:8]]
    ends = [r for r in records if r["kind"] == "analysis" and r["name"] == "stream_end"]
    assert [f["code"] for f in ends[0]["findings"]] == ["soldat.bad_field_count", "soldat.bad_value",
                                                        "soldat.unterminated_line"]
    _, stats, _ = run_cli("--stats", "-T", "json", path)
    seen = json.loads(stats)[-1]["transactions"]["soldat"]["servers"]
    assert [(server["server"], server["map"]) for server in seen] == [("192.0.2.10:23073", "ctf_Ash")]


def test_a_list_whose_lines_end_in_crlf_is_complete(tmp_path):
    """Each line gets its soldat.crlf; the list's counts are read as with \\n alone, so it is complete."""
    reply = sp.lobby_reply(sp.SERVERS[:2]).replace(b"\n", b"\r\n")
    path = tmp_path / "crlf.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    (listing,) = server_lists(out)
    assert listing["findings"] == []
    assert listing["result"]["announced"] == 2 and listing["result"]["received"] == 2
    assert listing["result"]["complete"] is True
    assert [s["country"] for s in listing["result"]["servers"]] == ["DE", "PL"]
    (frame,) = [r for r in jsonl(out) if r["kind"] == "frame" and r["frame"] == 2]
    found = [[f["code"] for f in m["findings"]] for m in frame["messages"]]
    assert found == [["soldat.crlf", "soldat.separator"]] + [["soldat.crlf"]] * 3  # the stream's separator: once


def test_a_retransmitted_syn_and_retransmitted_data_give_one_request_and_one_list(tmp_path):
    request, reply = sp.request(), sp.lobby_reply(sp.SERVERS[:2])
    path = tmp_path / "dupsyn.pcap"
    half = len(reply) // 2
    _tcp_capture(path, [(CLIENT, LOBBY, 1000, b"", 0x02), (LOBBY, CLIENT, 50000, b"", 0x12),
                        (CLIENT, LOBBY, 1001, request, 0x18), (CLIENT, LOBBY, 1000, b"", 0x02),
                        (CLIENT, LOBBY, 1001, request, 0x18), (LOBBY, CLIENT, 50001 + half, reply[half:], 0x18),
                        (LOBBY, CLIENT, 50001, reply[:half], 0x18), (LOBBY, CLIENT, 50001, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert [len(f["messages"]) for f in frames] == [0, 0, 1, 0, 0, 0, 4, 0]
    assert [x["code"] for x in frames[5]["findings"]] == ["tcp.out_of_order"]
    assert [[x["code"] for x in f["findings"]] for f in frames if f["frame"] in (5, 8)] == [["tcp.retransmission"]] * 2
    assert [f["frame"] for f in frames if "line continues" in f["info"]] == []  # none delivered bytes of a line alone
    (listing,) = server_lists(out)
    assert listing["findings"] == [] and listing["result"]["complete"] is True


def test_a_reused_port_ends_the_old_list_and_keeps_its_held_line_out_of_the_new_stream(tmp_path):
    request, reply = sp.request(), sp.lobby_reply(sp.SERVERS[:1])
    held = sp.request(filters=(99,) + sp.FILTERS[1:])
    path = tmp_path / "reused.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1000, b"", 0x02), (CLIENT, LOBBY, 1001, request, 0x18),
                        (CLIENT, LOBBY, 1001 + len(request) + 1, held, 0x18),  # behind a lost byte
                        (CLIENT, LOBBY, 7000, b"", 0x02), (LOBBY, CLIENT, 90000, b"", 0x12),
                        (CLIENT, LOBBY, 7001, request, 0x18), (LOBBY, CLIENT, 90001, reply, 0x18),
                        (LOBBY, CLIENT, 90001 + len(reply), b"", 0x11), (CLIENT, LOBBY, 7001 + len(request), b"", 0x11)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = {r["frame"]: r for r in jsonl(out) if r["kind"] == "frame"}
    assert [x["code"] for x in frames[4]["findings"]] == ["tcp.port_reused"]
    requests = [f["info"] for f in frames.values() if any(m["message"] == "request_list" for m in f["messages"])]
    assert requests == ["Request List version=42 gametype=-1"] * 2  # not the held version=99 line
    assert all(x["code"] != "tcp.lost_segment" for f in frames.values() for x in f["findings"])
    old, new = server_lists(out)
    assert [f["code"] for f in old["findings"]] == ["soldat.missing_end"] and old["frames"] == [2]
    assert new["findings"] == [] and new["result"]["complete"] is True and new["frames"] == [6, 7]


def test_bytes_in_flight_after_an_rst_are_told_not_dissected(tmp_path):
    """The client resets the stream while the lobby's reply is on its way: the reply's later segments are new bytes
    (tshark: data, not retransmissions), not dissected, and each says so; a retransmission of what the stream
    delivered, the last ACK, and a stream no dissector took stay quiet."""
    request, reply = sp.request(), sp.lobby_reply()
    path = tmp_path / "rst.pcap"
    other = ("10.0.0.9", 40001), ("10.0.0.5", 80)
    _tcp_capture(path, [(CLIENT, LOBBY, 100, b"", 0x02), (LOBBY, CLIENT, 500, b"", 0x12),
                        (CLIENT, LOBBY, 101, request, 0x18), (LOBBY, CLIENT, 501, reply[:100], 0x18),
                        (CLIENT, LOBBY, 101 + len(request), b"", 0x14),  # RST
                        (LOBBY, CLIENT, 601, reply[100:200], 0x18), (LOBBY, CLIENT, 651, reply[150:250], 0x18),
                        (LOBBY, CLIENT, 501, reply[:100], 0x18),  # delivered before the RST: a retransmission
                        (LOBBY, CLIENT, 601 + 100, b"", 0x10),
                        (*other, 1, b"GET / HTTP/1.0\r\n", 0x18), (*other, 17, b"", 0x14),
                        (*other, 17, b"more", 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = {r["frame"]: r for r in jsonl(out) if r["kind"] == "frame"}
    late = {number: [(f["code"], f["message"].split(" (a stream ends")[0]) for f in frames[number]["findings"]]
            for number in range(6, 13)}
    assert late == {6: [("tcp.data_after_close", "100 bytes after stream 0 ended (at its RST, or both sides' FINs): "
                                                  "not dissected")],
                    7: [("tcp.data_after_close", "100 bytes after stream 0 ended (at its RST, or both sides' FINs): "
                                                  "not dissected")],
                    8: [], 9: [], 10: [], 11: [], 12: []}
    assert frames[6]["findings"][0]["severity"] == "warning" and frames[6]["messages"] == []


def test_bytes_after_the_end_are_told_in_any_order_and_when_the_closing_segment_brought_the_first():
    """In-flight bytes that come after the RST out of order are each told (bytes never delivered); and a stream whose
    first bytes came in the very segment that closed it (a request with the RST flag) tells them too."""
    request, reply = sp.request(), sp.lobby_reply()
    segments = [(CLIENT, LOBBY, 100, b"", 0x02), (LOBBY, CLIENT, 500, b"", 0x12),
                (CLIENT, LOBBY, 101, request, 0x18), (CLIENT, LOBBY, 101 + len(request), b"", 0x14),
                (LOBBY, CLIENT, 601, reply[100:200], 0x18), (LOBBY, CLIENT, 501, reply[:100], 0x18)]
    told = _after_close_findings(segments)
    assert told == {5: ["100 bytes after stream 0 ended"], 6: ["100 bytes after stream 0 ended"]}
    segments = [(CLIENT, LOBBY, 100, b"", 0x02), (LOBBY, CLIENT, 500, b"", 0x12),
                (CLIENT, LOBBY, 101, request, 0x1C),  # PSH, ACK and RST: the stream's first bytes close it
                (LOBBY, CLIENT, 501, reply[:100], 0x18)]
    assert _after_close_findings(segments) == {4: ["100 bytes after stream 0 ended"]}


def _after_close_findings(segments):
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/late.pcap"
        _tcp_capture(path, segments)
        _, out, _ = run_cli("-T", "jsonl", path)
    return {r["frame"]: [f["message"].split(" (at its RST")[0] for f in r["findings"]]
            for r in jsonl(out) if r["kind"] == "frame" and r["findings"]}


def test_after_a_gap_a_line_whose_first_segment_is_its_type_byte_alone_is_read(tmp_path):
    """The first server line is lost; the next one comes as its type byte alone (or, in UTF-8, with the separator's
    first byte), then the rest: too few bytes to tell a line start, kept until the next segment tells. It is read, as
    when it comes whole."""
    for encoding, split in ((sp.LATIN1, 1), (sp.UTF8, 1), (sp.UTF8, 2)):
        begin = sp.list_begin(4, encoding)
        lines = [sp.server_entry(server, encoding) for server in sp.SERVERS[:4]]
        second = lines[1]
        rest = b"".join(lines[2:]) + sp.list_end(encoding)
        lost = begin + lines[0]
        path = tmp_path / f"split-{encoding}-{split}.pcap"
        _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(encoding=encoding), 0x18), (LOBBY, CLIENT, 1, begin, 0x18),
                            (LOBBY, CLIENT, 1 + len(lost), second[:split], 0x18),
                            (LOBBY, CLIENT, 1 + len(lost) + split, second[split:] + rest, 0x18),
                            (LOBBY, CLIENT, 1 + len(lost) + len(second) + len(rest), b"", 0x11)])
        _, out, _ = run_cli("-T", "jsonl", path)
        (listing,) = server_lists(out)
        assert listing["result"]["received"] == 3, (encoding, split)
        servers = [m for r in jsonl(out) if r["kind"] == "frame" for m in r["messages"] if m["message"] == "server"]
        assert servers[0]["frames"] == [3, 4] and servers[0]["offset"] is None  # the line over both segments


def test_off_its_port_a_request_whose_first_segment_is_one_byte_is_still_found(tmp_path):
    """On a port no dissector names, the client's request comes as its type byte, then the rest: neither segment
    alone looks like a line, the two together do. The stream is taken at the second, and the first is dissected with
    it: the request line names both frames (offset null), and the list record carries its filters."""
    request, reply = sp.request(), sp.lobby_reply(sp.SERVERS[:1])
    server = ("10.0.0.5", 8000)
    path = tmp_path / "offport.pcap"
    _tcp_capture(path, [(CLIENT, server, 100, b"", 0x02), (server, CLIENT, 500, b"", 0x12),
                        (CLIENT, server, 101, request[:1], 0x18), (CLIENT, server, 102, request[1:], 0x18),
                        (server, CLIENT, 501, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = {r["frame"]: r for r in jsonl(out) if r["kind"] == "frame"}
    (msg,) = frames[4]["messages"]
    assert (msg["message"], msg["frames"], msg["offset"], msg["length"]) == ("request_list", [3, 4], None,
                                                                             len(request))
    (listing,) = server_lists(out)
    assert listing["result"]["filters"] is not None and listing["result"]["received"] == 1


def test_count_mismatch(tmp_path):
    reply = sp.lobby_reply(sp.SERVERS[:2], count=3)
    path = tmp_path / "count.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, sp.request(), 0x18), (LOBBY, CLIENT, 1, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    (listing,) = server_lists(out)
    assert [f["code"] for f in listing["findings"]] == ["soldat.count_mismatch"]


def test_soldat_stats_list_servers():
    code, out, _ = run_cli("--stats", capture("soldat-session.pcap"))
    assert "Soldat servers seen: 4" in out and '"Hold the flag"' in out and "players 7/10" in out


def test_non_soldat_tcp_is_left_alone(tmp_path):
    path = tmp_path / "http.pcap"
    _tcp_capture(path, [(CLIENT, ("10.0.0.5", 80), 1, b"GET / HTTP/1.0\r\n\r\n", 0x18),
                        (("10.0.0.5", 80), CLIENT, 1, b"HTTP/1.0 200 OK\r\n\r\nhello", 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    assert [r["protocol"] for r in jsonl(out)] == ["tcp", "tcp"]


# -- IPv4 fragments --------------------------------------------------------------------------------

def fragments(payload, src=("10.0.0.2", 8303), dst=("10.0.0.9", 50000), ident=77, size=600, ulen=None):
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload) if ulen is None else ulen, 0) + payload
    out = []
    for offset in range(0, len(udp), size):
        part = udp[offset:offset + size]
        more = offset + size < len(udp)
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=17, id=ident, ttl=64,
                        data=part)
        ip.offset, ip.mf = offset // 8, int(more)  # dpkt takes the offset in 8-byte units
        ip.len = 20 + len(part)
        out.append(capkit.ethernet(ip))
    return out


def test_fragmented_udp_reply_is_reassembled(tmp_path):
    payload = tf.response_packets(0x0101, tf.sample_clients(20))[0]
    parts = fragments(payload)
    assert len(parts) == 2
    path = tmp_path / "frag.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i, f) for i, f in enumerate(reversed(parts))])
    _, out, _ = run_cli("-T", "jsonl", path)
    first, second = jsonl(out)[:2]
    assert first["protocol"] == "ipv4" and "reassembly in progress" in first["info"]
    msg = second["messages"][0]
    assert second["protocol"] == "teeframe" and msg["message"] == "iext"
    assert msg["offset"] is None and msg["frames"] == [1, 2] and msg["length"] == len(payload)


def test_a_reassembled_datagrams_udp_length_is_checked_as_a_frames(tmp_path):
    """The UDP length of a datagram reassembled from fragments is held to RFC 768 as a frame's is: past the
    datagram's data, or under 8, it is udp.bad_length with no offset (no one frame holds the field), and the
    payload is decoded all the same; a datagram whose last fragment the snap length cut is not flagged."""
    payload = tf.response_packets(0x0101, tf.sample_clients(20))[0]
    size = 8 + len(payload)
    frames = [*fragments(payload, ident=1, ulen=size + 100), *fragments(payload, ident=2, ulen=4),
              *fragments(payload, ident=3)]
    path = tmp_path / "fragulen.pcap"
    records = [(capkit.DEFAULT_TS + i, frame) for i, frame in enumerate(frames)]
    cut = 40  # the last fragment of the third datagram, captured 40 bytes short
    records[-1] = (records[-1][0], frames[-1][:-cut], len(frames[-1]))
    capkit.write_pcap(path, records)
    _, out, _ = run_cli("-T", "jsonl", path)
    done = [r for r in jsonl(out) if r["kind"] == "frame"][1::2]
    assert [[(f["code"], f["severity"], f["offset"], f["length"]) for f in r["findings"] if f["code"] != \
             "capture.truncated_frame"] for r in done] == [[("udp.bad_length", "error", None, None)]] * 2 + [[]]
    assert done[0]["findings"][0]["message"].startswith(f"length {size + 100} is more than the {size} bytes of IP "
                                                        f"payload from the UDP header on")
    assert done[1]["findings"][0]["message"].startswith("length 4 is less than the header's 8 bytes")
    for record in done:
        (msg,) = record["messages"]
        assert (record["protocol"], msg["message"], msg["frames"]) == ("teeframe", "iext", [record["frame"] - 1,
                                                                                            record["frame"]])
    assert [r["messages"][0]["length"] for r in done] == [len(payload), len(payload), len(payload) - cut]


def test_a_reassembled_datagrams_udp_header_is_a_layer_of_the_frame_that_completes_it(tmp_path):
    """As in tshark, the frame that completes a datagram shows its UDP header (-V, the protocols in the frame), and
    a filter on udp finds it; the header is in no one frame, so the hex dump marks none of the frame's bytes as it."""
    payload = tf.response_packets(0x0101, tf.sample_clients(20))[0]
    path = tmp_path / "frag.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i, f) for i, f in enumerate(fragments(payload))])
    _, out, _ = run_cli("-V", path)
    second = out[out.index("Frame 2:"):].splitlines()
    assert second[3:7] == ["    [Protocols in frame: eth:ip:udp:teeframe]",
                           "Ethernet II, Src: 02:00:00:00:00:01, Dst: 02:00:00:00:00:02",
                           "Internet Protocol Version 4, Src: 10.0.0.2, Dst: 10.0.0.9",
                           "User Datagram Protocol, Src Port: 8303, Dst Port: 50000"]
    assert second[7].startswith("TeeFrame iext [reassembled from frames 1,2, ")
    _, out, _ = run_cli("-Y", "udp and teeframe", "-T", "fields", "-e", "frame.number", "-e", "udp.srcport", path)
    assert out == "2\t8303\n"
    _, out, _ = run_cli("-x", "-Y", "frame.number == 2", path)
    legend = out[out.index("  legend:\n"):out.index("Reassembled teeframe")].splitlines()
    assert legend == ["  legend:", "    a  eth [0:14] Ethernet II", "    b  ip [14:20] Internet Protocol Version 4"]


def test_a_tcp_segment_in_ipv4_fragments_joins_its_stream(tmp_path):
    """The client's request segment comes in two IPv4 fragments (tshark: TCP Seq=1 Len=30 in the second): it is
    delivered into its stream, its line names both frames (offset null), and the next segment follows it with no
    gap, no out-of-order hold, no loss."""
    request, again = sp.request(), sp.request(filters=(99,) + sp.FILTERS[1:])
    segment = bytes(dpkt.tcp.TCP(sport=CLIENT[1], dport=LOBBY[1], seq=1001, ack=1, flags=0x18, win=65535,
                                 data=request))
    pieces = []
    for offset, part, more in ((0, segment[:24], 1), (24, segment[24:], 0)):
        ip = dpkt.ip.IP(src=socket.inet_aton(CLIENT[0]), dst=socket.inet_aton(LOBBY[0]), p=6, id=77, ttl=64,
                        data=part)
        ip.offset, ip.mf, ip.len = offset // 8, more, 20 + len(part)
        pieces.append(capkit.ethernet(ip))
    frames = [capkit.ethernet(capkit.tcp_packet(*CLIENT, *LOBBY, b"", seq=1000, flags=0x02)),
              capkit.ethernet(capkit.tcp_packet(*LOBBY, *CLIENT, b"", seq=5000, flags=0x12)), *pieces,
              capkit.ethernet(capkit.tcp_packet(*CLIENT, *LOBBY, again, seq=1001 + len(request))),
              capkit.ethernet(capkit.tcp_packet(*CLIENT, *LOBBY, b"", seq=1001 + len(request) + len(again),
                                                flags=0x11)),
              capkit.ethernet(capkit.tcp_packet(*LOBBY, *CLIENT, b"", seq=5001, flags=0x11))]
    path = tmp_path / "tcpfrag.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i * 0.01, frame) for i, frame in enumerate(frames)])
    _, out, _ = run_cli("-T", "jsonl", path)
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert [f["code"] for r in records for f in r["findings"]] == []
    joined, after = records[3], records[4]
    assert (joined["protocol"], joined["transport"], joined["sport"], joined["dport"]) == ("soldat", "tcp", 40000,
                                                                                           13073)
    (msg,) = joined["messages"]
    assert (msg["message"], msg["frames"], msg["offset"], msg["length"]) == ("request_list", [3, 4], None,
                                                                             len(request))
    (next_msg,) = after["messages"]
    assert next_msg["message"] == "request_list" and next_msg["frames"] == [5] and next_msg["offset"] == 54


def test_overlapping_fragments_are_reported():
    defrag = IPv4Defragmenter()
    packets = []
    for offset, data, more in ((0, b"A" * 16, True), (8, b"B" * 16, True), (0, b"C" * 16, True)):
        packet = Packet()
        packet.src, packet.dst, packet.transport, packet.ip_id = "10.0.0.1", "10.0.0.2", 17, 5
        packet.fragment, packet.payload = (offset, more), data
        packets.append(packet)
    findings = [f.code for p in packets for f in defrag.add(p, 1)[2]]
    assert findings == ["ip.fragment_overlap", "ip.fragment_overlap"]


def test_fragment_flood_stays_bounded():
    defrag = IPv4Defragmenter(max_datagrams=100)
    codes = []
    for ident in range(1000):
        packet = Packet()
        packet.src, packet.dst, packet.transport, packet.ip_id = "10.0.0.1", "10.0.0.2", 17, ident
        packet.fragment, packet.payload = (0, True), b"x" * 64
        codes += [f.code for f in defrag.add(packet, ident)[2]]
    assert len(defrag.pending) == 100 and codes.count("ip.fragments_evicted") == 900
    assert defrag.total == 100 * (64 + PIECE_COST)


def test_gap_piece_type():
    assert Gap(3, 1).size == 3


def test_rst_closes_and_flushes_both_directions():
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(7, flags=0x04)])
    assert out[-1].closed
    assert delivered(out) == [b"ab", ("gap", 2), b"ef"]


def test_stream_index_in_tree_and_filter():
    _, out, _ = run_cli("-Y", "tcp.stream == 1 && soldat.message == \"list_end\"", capture("soldat-session.pcap"))
    frames = [line.split()[0] for line in out.splitlines() if not line.strip().startswith("[")]
    assert frames == ["68"]
    _, tree, _ = run_cli("-V", "-Y", "frame.number == 1", capture("soldat-session.pcap"))
    assert "    [Stream index: 0]" in tree


# -- a segment that never arrives before the FIN -------------------------------------------------------

def test_the_senders_fin_declares_held_bytes_lost_at_once():
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(7, b"gh"), segment(9, flags=0x11)])
    assert delivered(out) == [b"ab", ("gap", 2), b"ef", b"gh"]
    assert [p.frame for _, p in out[3].pieces] == [4, 2, 3]
    assert codes_of(out[3:]) == ["tcp.lost_segment"] and not out[3].closed
    assert "2 bytes of the stream never arrived" in out[3].findings[0].message


def test_bytes_missing_right_before_the_fin_are_lost_too():
    tcp, out = run([segment(1, b"ab"), segment(7, flags=0x11)])
    assert delivered(out) == [b"ab", ("gap", 4)] and codes_of(out) == ["tcp.lost_segment"]
    late = tcp.segment(segment(3, b"cd"), 3)
    assert delivered([late]) == [] and codes_of([late]) == ["tcp.retransmission"]


def _lost_reply_capture(path, lost):
    """A lobby reply cut into segments at ``cuts``; segment ``lost`` never arrives; the lobby then sends FIN
    and the capture ends before the client closes."""
    reply = sp.lobby_reply()
    ends = [0, *lost, len(reply)]
    segments = [(CLIENT, LOBBY, 1, sp.request(), 0x18)]
    for i, (start, end) in enumerate(zip(ends, ends[1:])):
        if i != 1:
            segments.append((LOBBY, CLIENT, 1 + start, reply[start:end], 0x18))
    segments.append((LOBBY, CLIENT, 1 + len(reply), b"", 0x11))
    _tcp_capture(path, segments)


def _messages(records):
    return [(m["message"], m["frames"], m["offset"]) for r in records if r["kind"] == "frame" for m in r["messages"]]


def test_a_lost_lobby_segment_before_the_fin_resumes_at_the_next_line(tmp_path):
    # lines: f 0-4, g 4-83, g 83-158, g 158-235, g 235-305, h 305-312; bytes 34-144 never arrive
    path = tmp_path / "lost.pcap"
    _lost_reply_capture(path, (34, 144, 264))
    code, out, _ = run_cli("-T", "jsonl", path)
    records = jsonl(out)
    fin = records[4]
    assert [f["code"] for f in fin["findings"]] == ["tcp.lost_segment"]
    assert "110 bytes of the stream never arrived" in fin["findings"][0]["message"]
    # the lines held behind the gap are shown in the FIN's frame, 5: their bytes are frames 3's and 4's, so no offset
    # in frame 5 is theirs (-x dumps them apart, as reassembled lines)
    assert fin["frame"] == 5
    assert _messages(records) == [("request_list", [1], 54), ("list_begin", [2], 54), ("server", [3], None),
                                  ("server", [3, 4], None), ("list_end", [4], None)]
    assert [m["findings"] for m in fin["messages"]] == [[], [], []]
    _, dump, _ = run_cli("-x", "--color", "never", "-Y", "frame.number == 5", path)
    assert [line for line in dump.splitlines() if line.startswith("Reassembled")] == [
        "Reassembled soldat server from frame 3: 77 bytes", "Reassembled soldat server from frames 3,4: 70 bytes",
        "Reassembled soldat list_end from frame 4: 7 bytes"]
    assert not [r for r in records if r["kind"] == "analysis" and r["name"] == "stream_end"]
    (listing,) = server_lists(out)
    assert (listing["result"]["announced"], listing["result"]["received"], listing["result"]["complete"]) == \
        (4, 2, False)
    assert [s["name"] for s in listing["result"]["servers"]] == ["Hold the flag", "TM night"]
    (mismatch,) = listing["findings"]
    assert mismatch["code"] == "soldat.count_mismatch" and "bytes of the stream were lost" in mismatch["message"]


def test_a_lost_segment_that_ends_a_line_loses_only_that_line(tmp_path):
    path = tmp_path / "lost-line.pcap"
    _lost_reply_capture(path, (83, 158, 264))          # exactly the second line is lost
    _, out, _ = run_cli("-T", "jsonl", path)
    assert [(name, frames) for name, frames, _ in _messages(jsonl(out))] == \
        [("request_list", [1]), ("list_begin", [2]), ("server", [2]), ("server", [3]), ("server", [3, 4]),
         ("list_end", [4])]
    (listing,) = server_lists(out)
    assert [s["name"] for s in listing["result"]["servers"]] == ["Soldat CTF Classic", "Hold the flag", "TM night"]
    assert [f["code"] for f in listing["findings"]] == ["soldat.count_mismatch"]


# -- IPv4 fragments: work per fragment ----------------------------------------------------------------

def _fragment(ident, offset, data, more=True):
    packet = Packet()
    packet.src, packet.dst, packet.transport, packet.ip_id = "10.0.0.1", "10.0.0.2", 17, ident
    packet.fragment, packet.payload = (offset, more), data
    return packet


def _lines_run(packets, defrag):
    """Lines of reassembly.py executed while ``defrag`` takes the packets: the work, counted, not timed."""
    import sys
    from dissect.capture import reassembly
    source = reassembly.__file__
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename != source:
            return None
        if event == "line":
            count += 1
        return tracer
    done = 0
    sys.settrace(tracer)
    try:
        for packet in packets:
            done += defrag.add(packet, 1)[0] is not None
    finally:
        sys.settrace(None)
    return count, done


def test_fragment_work_does_not_grow_with_the_fragments_of_a_datagram():
    import pytest
    from dissect.capture import reassembly
    if not reassembly.__file__.endswith(".py"):
        pytest.skip("the compiled build runs no Python lines to count")
    size = 2048
    one = [_fragment(1, 8 * k, bytes([k & 255]) * 8, k != size - 1) for k in range(size)]
    groups = [_fragment(2 + k // 4, 8 * (k % 4), bytes([k & 255]) * 8, k % 4 != 3) for k in range(size)]
    interleaved = one[::2] + one[1::2]             # every other fragment first: many separate ranges
    big, done_big = _lines_run(one[::-1], IPv4Defragmenter())
    spread, done_spread = _lines_run(interleaved, IPv4Defragmenter())
    small, done_small = _lines_run(groups, IPv4Defragmenter(max_datagrams=size))
    assert (done_big, done_spread, done_small) == (1, 1, size // 4)
    assert big < 1.5 * small and spread < 1.5 * small, (big, spread, small)


def test_overlapping_fragments_keep_the_first_bytes_and_the_byte_limit_holds():
    defrag = IPv4Defragmenter()
    assert defrag.add(_fragment(9, 8, b"B" * 16), 1)[0] is None
    payload, frames, findings = defrag.add(_fragment(9, 0, b"A" * 16), 2)[0:3]
    assert payload is None and [f.code for f in findings] == ["ip.fragment_overlap"]
    assert "overlaps 8 bytes" in findings[0].message
    payload, frames, findings, cut = defrag.add(_fragment(9, 24, b"C" * 8, more=False), 3)
    assert payload == b"A" * 8 + b"B" * 16 + b"C" * 8 and frames == [1, 2, 3] and findings == [] and cut == 0
    assert defrag.total == 0 and len(defrag.pending) == 0
    duplicate = IPv4Defragmenter()
    duplicate.add(_fragment(3, 0, b"x" * 8), 1)
    assert duplicate.add(_fragment(3, 0, b"x" * 8), 2)[2] == []
    assert duplicate.total == 8 + PIECE_COST
    limited = IPv4Defragmenter(max_bytes=10 * (64 + PIECE_COST))
    codes = [f.code for i in range(15) for f in limited.add(_fragment(i, 0, b"y" * 64), i)[2]]
    assert codes == ["ip.fragments_evicted"] * 5 and limited.total == 10 * (64 + PIECE_COST)


def cut_segment(seq, data, cut, flags=0x18):
    """A segment whose last ``cut`` bytes the capture's snap length did not keep."""
    packet = segment(seq, data, flags)
    packet.cut = cut
    return packet


def test_the_uncaptured_end_of_a_held_segment_is_a_cut_gap_when_the_stream_reaches_it():
    """Bytes 101-116 are "abcdefghijklmnop". The segment at 105 arrives first and its last 4 bytes ("hijk") were
    not captured: it waits; once 101-104 arrive its 3 captured bytes go on, then a gap of 4 that is no loss."""
    _, out = run([segment(100, flags=0x02), cut_segment(105, b"efg", 4), segment(101, b"abcd"),
                  segment(112, b"lmnop")])
    assert delivered(out) == [b"abcd", b"efg", ("gap", 4), b"lmnop"]
    assert codes_of(out) == ["tcp.out_of_order", "tcp.cut_segment"]
    gap = out[2].pieces[2][1]
    assert (gap.cut, gap.frame) == (True, 2)  # the frame that carried the cut segment


def test_uncaptured_bytes_sent_again_and_captured_are_no_gap():
    """The held segment's uncaptured end (108-111) comes again inside a larger retransmission the capture kept
    whole: the bytes go on, no gap is made, and the stream ends without waiting for the forgotten cut."""
    tcp, out = run([segment(100, flags=0x02), cut_segment(105, b"efg", 4), segment(101, b"abcdefghijklm"),
                    segment(114, b"nop", flags=0x19)])
    assert delivered(out) == [b"abcdefghijklm", b"nop"]
    assert "tcp.cut_segment" not in codes_of(out) and "tcp.lost_segment" not in codes_of(out)
    ends = tcp.finish()  # the client's side never sent FIN: the stream is flushed at the capture's end
    assert [(d.pieces, codes_of([d])) for d in ends] == [([], [])]


def test_the_earliest_cut_is_found_in_a_heap_of_exactly_the_cuts():
    """A cut the stream went past (108-111, sent again and captured) is forgotten at once, and 300 more cuts are each
    held and then drained: the heap holds the offsets of the cuts waiting and nothing else, and each gap is its
    cut's."""
    tcp, out = run([segment(100, flags=0x02), cut_segment(105, b"efg", 4), segment(101, b"abcdefghijklm")])
    side = tcp.streams.values()[0].directions[0]
    assert not side.cuts and not side.cut_heap and side.next_off == 13  # offsets from the stream's first byte, 101
    number = 4
    for at in range(114, 114 + 300 * 9, 9):  # 4 bytes, then 3 held whose last 2 were cut off: 9 a round
        out.append(tcp.segment(cut_segment(at + 4, b"xyz", 2), number))
        assert list(side.cuts) == side.cut_heap == [at + 4 + 3 - 101]
        out.append(tcp.segment(segment(at, b"abcd"), number + 1))
        assert not side.cuts and not side.cut_heap
        number += 2
    assert delivered(out[-2:]) == [b"abcd", b"xyz", ("gap", 2)]
    assert codes_of(out).count("tcp.cut_segment") == 300 and "tcp.lost_segment" not in codes_of(out)


def test_a_cut_partly_sent_again_leaves_a_gap_of_what_was_not():
    """The held segment at 3 kept "cd" and lost 5-8 to the snap length; a retransmission then brings 2-6 whole: the
    stream goes on to 7, and 7-8 are still a cut, not a loss."""
    _, out = run([segment(1, b"a"), cut_segment(3, b"cd", 4), segment(2, b"bcdef"), segment(9, flags=0x11)])
    assert delivered(out) == [b"a", b"bcdef", ("gap", 2)]
    gap = out[2].pieces[1][1]
    assert (gap.cut, gap.frame) == (True, 2) and codes_of(out[2:]) == ["tcp.cut_segment"]


def test_a_shorter_copy_of_a_cut_segment_does_not_shrink_its_cut():
    """The segment at 5 kept "e" and lost 6-7; a shorter copy lost only 6: 6-7 are still a cut, not a loss at the
    FIN."""
    _, out = run([segment(1, b"ab"), cut_segment(5, b"e", 2), cut_segment(5, b"e", 1), segment(3, b"cd"),
                  segment(8, flags=0x11)])
    assert delivered(out) == [b"ab", b"cd", b"e", ("gap", 2)]
    assert codes_of(out) == ["tcp.out_of_order", "tcp.cut_segment"] and out[3].pieces[2][1].frame == 2


def test_a_cut_that_runs_past_the_next_byte_is_a_gap_at_once():
    """Bytes 1-6 are delivered; a resend of 3-4 lost 5-10 to the snap length: 7-10 are the stream's next bytes, a cut
    gap in that frame, and the bytes at 11 follow with no loss."""
    _, out = run([segment(1, b"abcdef"), cut_segment(3, b"cd", 6), segment(11, b"kl", flags=0x19)])
    assert delivered(out) == [b"abcdef", ("gap", 4), b"kl"]
    assert codes_of(out) == ["tcp.retransmission", "tcp.cut_segment"] and out[1].pieces[0][1].cut


def test_a_longer_segment_at_the_place_of_one_held_keeps_its_new_bytes():
    """"e" is held at 5; "efgh" then arrives at 5 too: its bytes beyond the one held are held as well, and all go on
    when 3-4 arrive (before, they were dropped unseen)."""
    tcp, out = run([segment(1, b"ab"), segment(5, b"e"), segment(5, b"efgh"), segment(5, b"ef"), segment(3, b"cd")])
    assert delivered(out) == [b"ab", b"cd", b"e", b"fgh"] and codes_of(out) == ["tcp.out_of_order"] * 2
    assert [p.frame for _, p in out[4].pieces] == [5, 2, 3]
    side = tcp.streams.values()[0].directions[0]
    assert side.pending_bytes == 0 and tcp.total_pending == 0


def test_a_fins_own_new_bytes_are_not_declared_lost_behind_a_shorter_copy():
    _, out = run([segment(1, b"ab"), segment(5, b"e"), segment(5, b"ef", flags=0x19)])
    assert delivered(out) == [b"ab", ("gap", 2), b"e", b"f"]
    assert codes_of(out[2:]) == ["tcp.out_of_order", "tcp.lost_segment"]


def test_a_fin_sums_the_gaps_it_flushes_with_those_right_before_it():
    """3-4 are missing behind the held 5-6, and 7-8 right before the FIN at 9: one finding for the 4 bytes."""
    _, out = run([segment(1, b"ab"), segment(5, b"ef"), segment(9, flags=0x11)])
    assert delivered(out) == [b"ab", ("gap", 2), b"ef", ("gap", 2)]
    assert codes_of(out[2:]) == ["tcp.lost_segment"]
    assert out[2].findings[0].message.startswith("4 bytes of the stream in 2 gaps never arrived")


def test_a_later_fin_passes_the_number_the_first_one_took():
    """A second FIN at 1008, after one at 1003: 1004-1007 are the gap; 1003, the first FIN's, is not lost."""
    _, out = run([segment(1000, b"req"), segment(1003, flags=0x11), segment(1008, flags=0x11)])
    assert delivered(out) == [b"req", ("gap", 4)] and codes_of(out) == ["tcp.lost_segment"]


def test_a_fin_says_which_side_finished_once():
    """The first FIN of a side marks the segment that delivered its last byte; a repeated FIN does not."""
    _, out = run([segment(1, b"ab"), segment(3, flags=0x11), segment(3, flags=0x11),
                  segment(900, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert [d.finished for d in out] == [None, 0, None, 1]  # the last one closes the stream too
    assert out[-1].closed and not out[1].closed


def test_bytes_after_a_fin_follow_the_number_it_took():
    """A FIN takes one sequence number, as a SYN does: bytes its side sends after it start one past it, and are the
    stream's next bytes, not one byte ahead of a gap. Where the side's bytes began stays known: its SYN sent again is
    still its own."""
    tcp, out = run([segment(999, flags=0x02), segment(1000, b"req"), segment(1003, flags=0x11),
                    segment(1004, b"more"), segment(1008, b"!"), segment(999, flags=0x02),
                    segment(900, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert delivered(out) == [b"req", b"more", b"!"] and codes_of(out) == []
    assert [d.evicted for d in out] == [[]] * 7 and out[-1].closed


def test_bytes_at_the_fins_own_number_are_delivered_as_before():
    _, out = run([segment(1000, b"req"), segment(1003, flags=0x11), segment(1003, b"more"), segment(1007, b"!")])
    assert delivered(out) == [b"req", b"more", b"!"] and codes_of(out) == []


def test_bytes_two_past_a_fin_leave_a_gap_of_one_byte():
    _, out = run([segment(1000, b"req"), segment(1003, flags=0x11), segment(1005, b"more"),
                  segment(900, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert delivered(out) == [b"req", ("gap", 1), b"more"]
    assert codes_of(out) == ["tcp.out_of_order", "tcp.lost_segment"]


def test_bytes_one_past_a_fin_that_come_before_it_follow_it_with_no_gap():
    """Reordered: the bytes beyond the FIN are held, then the FIN comes and its number is passed, not lost."""
    _, out = run([segment(1000, b"req"), segment(1004, b"more"), segment(1003, flags=0x11),
                  segment(900, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert delivered(out) == [b"req", b"more"] and codes_of(out) == ["tcp.out_of_order"]
    assert [p.frame for _, p in out[2].pieces] == [2] and out[2].finished == 0


def test_bytes_lost_on_both_sides_of_a_fin_are_two_gaps_around_its_number():
    """Bytes 1003-1004 never arrive, the FIN takes 1005, 1006-1009 never arrive: held bytes at 1010 follow two gaps
    of 2 and 4 bytes, and the bytes after them keep flowing."""
    _, out = run([segment(1000, b"req"), segment(1010, b"more"), segment(1005, flags=0x11), segment(1014, b"!")])
    assert delivered(out) == [b"req", ("gap", 2), ("gap", 4), b"more", b"!"]
    assert codes_of(out) == ["tcp.out_of_order", "tcp.lost_segment"]
    assert "6 bytes of the stream in 2 gaps never arrived" in out[2].findings[0].message


def test_a_line_cut_by_the_senders_fin_ends_in_that_frame(tmp_path):
    """The lobby sends half a server line and its FIN; the client's FIN comes later. The half line is the lobby's
    last: it is shown in the lobby's FIN frame, not in the client's."""
    client, lobby = ("10.0.0.1", 40000), ("10.0.0.2", 13073)
    half = sp.server_entry(sp.SERVERS[0])[:30]
    frames = [capkit.tcp_packet(*client, *lobby, sp.request(), seq=1000),
              capkit.tcp_packet(*lobby, *client, sp.list_begin(1) + half, seq=5000),
              capkit.tcp_packet(*lobby, *client, b"", seq=5000 + len(sp.list_begin(1)) + len(half),
                                flags=dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK),
              capkit.tcp_packet(*client, *lobby, b"", seq=1000 + len(sp.request()),
                                flags=dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK)]
    path = tmp_path / "fin.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.01, capkit.ethernet(ip)) for n, ip in enumerate(frames)])
    _, out, _ = run_cli("-T", "jsonl", path)
    shown = {r["frame"]: [(m["message"], [f["code"] for f in m["findings"]]) for m in r["messages"]]
             for r in jsonl(out) if r["kind"] == "frame"}
    assert shown[3] == [("server", ["soldat.bad_field_count", "soldat.unterminated_line"])]
    assert shown[4] == []
    (listing,) = server_lists(out)
    assert (listing["result"]["announced"], listing["result"]["received"], listing["result"]["servers"]) == (1, 0, [])


def test_bytes_a_side_sends_after_its_fin_are_still_dissected(tmp_path):
    """A side's parser is closed at its FIN and a new one takes what it may still send: bytes at the FIN's sequence
    number or one past it (the number the FIN took), or held beyond it until the capture ends while the other side is
    still open (which the closed parser made an internal error)."""
    client, lobby = ("10.0.0.1", 40000), ("10.0.0.2", 13073)
    begin, server = sp.list_begin(2), sp.server_entry(sp.SERVERS[0])
    fin = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK

    def capture(name, frames):
        path = tmp_path / name
        capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.01, capkit.ethernet(capkit.tcp_packet(*ends, data, seq=seq,
                                                                                                  flags=flags)))
                                 for n, (ends, data, seq, flags) in enumerate(frames)])
        code, out, err = run_cli("-T", "jsonl", path)
        assert code == 0 and err == ""
        return jsonl(out)

    after = capture("after.pcap", [((*client, *lobby), sp.request(), 1000, 0x18),
                                   ((*lobby, *client), begin, 5000, 0x18),
                                   ((*lobby, *client), b"", 5000 + len(begin), fin),
                                   ((*lobby, *client), server, 5000 + len(begin), 0x18),
                                   ((*client, *lobby), b"", 1000 + len(sp.request()), fin)])
    names = {r["frame"]: [m["message"] for m in r["messages"]] for r in after if r["kind"] == "frame"}
    assert names[4] == ["server"]
    past = capture("past.pcap", [((*client, *lobby), sp.request(), 1000, 0x18),
                                 ((*lobby, *client), begin, 5000, 0x18),
                                 ((*lobby, *client), b"", 5000 + len(begin), fin),
                                 ((*lobby, *client), server, 5000 + len(begin) + 1, 0x18),
                                 ((*client, *lobby), b"", 1000 + len(sp.request()), fin)])
    names = {r["frame"]: [m["message"] for m in r["messages"]] for r in past if r["kind"] == "frame"}
    assert names[4] == ["server"] and "tcp." not in json.dumps(past)  # one past the FIN's number: no gap
    reordered = capture("reordered.pcap", [((*client, *lobby), sp.request(), 1000, 0x18),
                                           ((*lobby, *client), begin, 5000, 0x18),
                                           ((*lobby, *client), server, 5000 + len(begin) + 1, 0x18),
                                           ((*lobby, *client), b"", 5000 + len(begin), fin),
                                           ((*client, *lobby), b"", 1000 + len(sp.request()), fin)])
    shown = {r["frame"]: [(m["message"], m["frames"]) for m in r["messages"]]
             for r in reordered if r["kind"] == "frame"}
    assert shown[4] == [("server", [3])]  # delivered at the FIN, which it came before
    assert "tcp.lost_segment" not in json.dumps(reordered)
    held = capture("held.pcap", [((*client, *lobby), sp.request(), 1000, 0x18),
                                 ((*lobby, *client), begin, 5000, 0x18),
                                 ((*lobby, *client), b"", 5000 + len(begin), fin),
                                 ((*lobby, *client), server, 5000 + len(begin) + 100, 0x18)])
    ends = [(r["protocol"], r["name"]) for r in held if r["kind"] == "analysis"]
    assert ("soldat", "stream_end") in ends and ("soldat", "server_list") in ends


def test_a_request_sent_a_byte_a_segment_on_the_lobbys_port_is_dissected_whole(tmp_path):
    """On the lobby's port a stream's first byte, a line's type, is enough to take it as Soldat: a client that sends
    its request a byte a segment (no separator in its first one) had its stream ignored, the lobby's list with it.
    Off the port, the first segment must still show the separator."""
    request, reply = sp.request(), sp.lobby_reply()
    path = tmp_path / "bytes.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1 + i, request[i:i + 1], 0x18) for i in range(len(request))]
                 + [(LOBBY, CLIENT, 1, reply, 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    (ask,) = [m for r in frames for m in r["messages"] if m["message"] == "request_list"]
    assert (ask["frames"], ask["length"]) == (list(range(1, len(request) + 1)), len(request))
    assert [m["message"] for m in frames[-1]["messages"]][:2] == ["list_begin", "server"]
    (listing,) = server_lists(out)
    assert (listing["result"]["received"], listing["findings"]) == (len(sp.SERVERS), [])
    off_port = Soldat()
    assert off_port.claims(request[:1], None, True) and not off_port.claims(request[:1], None, False)
    assert off_port.claims(request[:2], None, False)


def test_the_last_ack_of_a_closed_connection_keeps_its_stream_number(cli):
    """The ACK after both FINs is a late segment of a finished connection: it shows nothing, yet it is the stream's,
    as tshark numbers it (tcp.stream in filters and -T fields)."""
    path = capture("soldat-session.pcap")  # two connections, each closed by both FINs and an ACK (frames 34, 72)
    rows = [line.split("\t") for line in cli("-T", "fields", "-e", "frame.number", "-e", "tcp.stream", path)[1]
            .splitlines()]
    assert (rows[33], rows[-1]) == (["34", "0"], ["72", "1"])
    assert cli("-Y", "tcp && !tcp.stream", path)[1] == ""


def test_a_keep_alive_probe_is_a_note_not_an_overlap_conflict(tmp_path):
    """One byte at the next expected byte less one (its value usually garbage) is a keep-alive probe: tshark's
    "TCP Keep-Alive". It was compared with the byte delivered there: a false tcp.overlap_conflict."""
    request = sp.request()
    path = tmp_path / "alive.pcap"
    _tcp_capture(path, [(CLIENT, LOBBY, 1, request, 0x18), (CLIENT, LOBBY, len(request), b"\x00", 0x10),
                        (LOBBY, CLIENT, 1, sp.lobby_reply(), 0x18)])
    _, out, _ = run_cli("-T", "jsonl", path)
    probe = jsonl(out)[1]
    assert [(f["code"], f["severity"], f["message"]) for f in probe["findings"]] == [
        ("tcp.keep_alive", "note", "1 byte just before the next expected byte, not the byte delivered there (one byte "
                                   "just before the next expected byte, other than the byte delivered there, is a "
                                   "keep-alive probe (RFC 1122, 4.2.3.6), not data: no conflict)")]
    (listing,) = server_lists(out)
    assert (listing["result"]["received"], listing["findings"]) == (len(sp.SERVERS), [])


def test_two_copies_of_a_last_fragment_one_cut_by_the_snap_length_are_one_fragment():
    """A copy the capture cut and one it kept whole end the datagram at the same byte: no second end, and the whole
    copy's bytes complete it, whichever came first."""
    for cut_first in (True, False):
        defrag = IPv4Defragmenter()
        whole, cut = _fragment(6, 16, b"C" * 16, more=False), _fragment(6, 16, b"C" * 6, more=False)
        cut.cut = 10
        results = [defrag.add(packet, number) for number, packet in enumerate(
            [*((cut, whole) if cut_first else (whole, cut)), _fragment(6, 0, b"A" * 16)], 1)]
        payload, _, _, missing = results[-1]
        assert payload == b"A" * 16 + b"C" * 16 and missing == 0
        assert not any("second last fragment" in f.message for result in results for f in result[2])


def test_a_second_last_fragment_does_not_move_the_datagrams_end():
    """Two last fragments at one offset, the second a shortened copy: the first's end stands whichever order the
    others come in (the first bytes are kept), the copy is no conflict of bytes, and the second end is told."""
    for order in ((0, 1, 2, 3), (1, 0, 2, 3)):
        defrag = IPv4Defragmenter()
        parts = [_fragment(4, 16, b"C" * 16, more=False), _fragment(4, 16, b"C" * 4, more=False),
                 _fragment(4, 0, b"A" * 8), _fragment(4, 8, b"B" * 8)]
        results = [defrag.add(parts[index], number) for number, index in enumerate(order, 1)]
        payload, frames, _, cut = results[-1]
        findings = [f.message.split(" (the fragments")[0] for result in results for f in result[2]]
        end = 32 if order[0] == 0 else 20
        assert payload == (b"A" * 8 + b"B" * 8 + b"C" * 16)[:end] and cut == 0
        longer = [] if order[0] == 0 else ["fragment at offset 16 overlaps 4 bytes of other fragments; the first "
                                           "bytes are kept"]  # the same bytes, but more of them: an overlap
        assert findings == longer + [f"a second last fragment ends the datagram at byte {52 - end}, the first at "
                                     f"{end}; the first is kept"]


def test_a_segment_far_from_a_finished_sides_bytes_is_a_new_connection_whose_syn_was_not_captured():
    """After the lobby's FIN, a segment of its side more than 1 MiB past its next byte, or the client's more than
    1 MiB before its first byte: a new connection (no SYN seen), not bytes held or dropped in the old stream."""
    far = 1004 + (1 << 20) + 1  # the lobby's next expected byte is its FIN's number, 1004; the client's first is 1
    for first, then in ((segment(far, b"ok", src=LOBBY, dst=CLIENT), segment(900, b"new")),
                        (segment(-(1 << 20), b"new"), segment(far, b"ok", src=LOBBY, dst=CLIENT))):
        tcp, out = run([segment(1, b"req"), segment(1000, b"list", src=LOBBY, dst=CLIENT),
                        segment(1004, flags=0x11, src=LOBBY, dst=CLIENT), first, then])
        old, new = out[0].stream, out[3].stream
        assert (old.index, new.index) == (0, 1) and out[4].stream is new and out[3].evicted == [old]
        assert [[f.code for f in d.findings] for d in out] == [[], [], [], ["tcp.port_reused"], []]
        assert out[3].findings[0].message.startswith("no SYN seen: a segment more than 1 MiB outside the "
                                                     "bytes of stream 0")
        assert delivered(out) == [b"req", b"list", first.payload, then.payload]


@pytest.mark.parametrize("closing", ["fins", "rst"])
def test_a_closed_ignored_streams_late_segments_stay_in_it_however_far_it_went(tmp_path, closing):
    """A stream no dissector took is let go (its numbers no longer followed): however far its bytes went after
    that, its last ACK, or a reply in flight after an RST, is a late segment of it, not a new connection."""
    web = ("10.0.0.5", 8080)
    far = 5001 + (2 << 20)  # the server's bytes went 2 MiB past where the stream was let go
    segments = [(CLIENT, web, 1000, b"", 0x02), (web, CLIENT, 5000, b"", 0x12), (CLIENT, web, 1001, b"", 0x10)]
    segments += [(CLIENT, web, 1001 + 20 * k, b"Z" * 20, 0x18) for k in range(5)]
    segments += [(web, CLIENT, far - 1400, b"x" * 1400, 0x18)]
    if closing == "fins":
        segments += [(web, CLIENT, far, b"", 0x11), (CLIENT, web, 1101, b"", 0x11), (web, CLIENT, far + 1, b"", 0x10)]
    else:
        segments += [(CLIENT, web, 1101, b"", 0x04), (web, CLIENT, far, b"y" * 100, 0x18)]
    path = tmp_path / "ignored.pcap"
    _tcp_capture(path, segments)
    _, out, _ = run_cli("-T", "fields", "-e", "tcp.stream", "-e", "expert.code", path)
    assert out.splitlines() == ["0\t"] * len(segments)


def test_segments_within_1_mib_of_a_finished_sides_bytes_stay_in_its_stream():
    """A retransmission of the side's first bytes after its FIN, bytes just past the FIN (held behind a gap) and a
    segment exactly 1 MiB past the next expected byte are still the old connection's."""
    tcp, out = run([segment(1, b"req"), segment(1000, b"list", src=LOBBY, dst=CLIENT),
                    segment(1004, flags=0x11, src=LOBBY, dst=CLIENT), segment(1000, b"list", src=LOBBY, dst=CLIENT),
                    segment(1000 - (1 << 20) + 4, b"x", src=LOBBY, dst=CLIENT),
                    segment(4 + (1 << 20), b"ahead"), segment(1, b"req")])
    assert {d.stream.index for d in out} == {0} and [d.evicted for d in out] == [[]] * 7
    assert codes_of(out) == ["tcp.retransmission", "tcp.retransmission", "tcp.out_of_order", "tcp.retransmission"]


def test_after_both_fins_a_segment_far_from_a_sides_bytes_begins_a_new_stream_and_near_ones_stay_late():
    tcp, out = run([segment(1, b"req"), segment(1000, b"list", src=LOBBY, dst=CLIENT), segment(4, flags=0x11),
                    segment(1004, flags=0x11, src=LOBBY, dst=CLIENT)])
    assert out[-1].closed
    assert tcp.segment(segment(5, b""), 5) is None  # the last ACK
    assert tcp.segment(segment(1005 + 100, b"late", src=LOBBY, dst=CLIENT), 6) is None  # in flight: after close
    new = tcp.segment(segment(3_000_000_000, b"new"), 7)
    assert new.stream.index == 1 and new.findings == [] and delivered([new]) == [b"new"]


def _reuse_capture(path, both_fins):
    """A lobby exchange; the lobby's FIN (and the client's); then the same ports carry a new exchange with no SYN,
    its numbers far from the old ones."""
    request, reply = sp.request(), sp.lobby_reply(sp.SERVERS[:1])
    segments = [(CLIENT, LOBBY, 1000, request, 0x18), (LOBBY, CLIENT, 5000, reply, 0x18),
                (LOBBY, CLIENT, 5000 + len(reply), b"", 0x11)]
    if both_fins:
        segments.append((CLIENT, LOBBY, 1000 + len(request), b"", 0x11))
    segments += [(CLIENT, LOBBY, 3_000_000_000, request, 0x18), (LOBBY, CLIENT, 2_000_000_000, reply, 0x18),
                 (LOBBY, CLIENT, 2_000_000_000 + len(reply), b"", 0x11)]
    _tcp_capture(path, segments)


def test_a_new_lobby_exchange_on_the_ports_of_a_finished_one_without_syn_is_a_new_stream(tmp_path):
    for both_fins in (False, True):
        path = tmp_path / f"nosyn-{both_fins}.pcap"
        _reuse_capture(path, both_fins)
        code, out, err = run_cli("-T", "jsonl", path)
        assert code == 0 and err == ""
        frames = [r for r in jsonl(out) if r["kind"] == "frame"]
        new = 4 if both_fins else 3  # the index of the new exchange's first frame
        shown = [([m["message"] for m in f["messages"]], [x["code"] for x in f["findings"]]) for f in frames]
        assert shown == [(["request_list"], []), (["list_begin", "server", "list_end"], []), ([], [])] \
            + [([], [])] * both_fins + [
            (["request_list"], [] if both_fins else ["tcp.port_reused"]),
            (["list_begin", "server", "list_end"], []), ([], [])]
        assert frames[new]["info"] == "Request List version=42 gametype=-1"
        lists = server_lists(out)
        assert [(r["result"]["stream"], r["frames"], r["result"]["complete"], r["findings"],
                 [s["name"] for s in r["result"]["servers"]]) for r in lists] == [
            (0, [1, 2], True, [], [sp.SERVERS[0][7]]), (1, [new + 1, new + 2], True, [], [sp.SERVERS[0][7]])]
        assert "tcp.lost_segment" not in out and "tcp.out_of_order" not in out and "tcp.data_after_close" not in out
        _, fields, _ = run_cli("-T", "fields", "-e", "frame.number", "-e", "tcp.stream", path)
        assert [line.split("\t") for line in fields.splitlines()] == [
            [str(n + 1), "0" if n < new else "1"] for n in range(new + 3)]
