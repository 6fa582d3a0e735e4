"""Frames the capture kept shorter than they were on the wire (snap length): a message cut by the capture is
decoded as far as the bytes go, and its missing end is one ``capture.cut_message`` note, not a malformed message."""

import capkit
import netquake_peer as nq
import odamex_peer as od
import teeframe_peer as tf
from conftest import jsonl, run_cli

HEADERS = 42  # Ethernet 14 + IPv4 20 + UDP 8: where the payload starts in these frames


def write_frame(path, payload, sport, kept=None):
    """One Ethernet/IPv4/UDP frame of ``payload``; the capture keeps ``kept`` bytes of the payload (all by
    default), with the frame's wire length still the whole frame's."""
    frame = capkit.ethernet(capkit.udp_packet("10.0.0.1", sport, "10.0.0.7", 40000, payload))
    kept = len(payload) if kept is None else kept
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, frame[:HEADERS + kept], len(frame))])


def only_record(path, *flags):
    code, out, err = run_cli("-T", "jsonl", *flags, path)
    assert code == 0, err
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert len(records) == 1
    return records[0]


def codes(findings):
    return [(f["code"], f["severity"], f["offset"], f["length"]) for f in findings]


def test_netquake_reply_cut_by_the_snap_length_is_no_length_mismatch(tmp_path):
    payload = nq.ccrep_server_info("10.0.0.1:26000", "dissect test server", "e1m1", 2, 8)
    assert len(payload) == 48 and payload[2:4] == b"\x00\x30"  # the header counts all 48 bytes
    path = tmp_path / "snapped.pcap"
    write_frame(path, payload, 26000, kept=18)
    record = only_record(path)
    assert (record["caplen"], record["length"]) == (HEADERS + 18, HEADERS + 48)
    assert codes(record["findings"]) == [("capture.truncated_frame", "warning", 60, 0)]
    msg = record["messages"][0]
    assert (msg["offset"], msg["length"]) == (HEADERS, 18)
    assert codes(msg["findings"]) == [("capture.cut_message", "note", 18, 0)]
    assert msg["findings"][0]["message"].startswith("the capture kept 18 of the message's 48 bytes")
    assert record["info"] == "CCREP_SERVER_INFO [Packet size limited during capture]"
    fields = {f["key"]: f for f in msg["fields"]}
    assert fields["netquake.length"]["value"] == 48
    address = fields["netquake.control.server_address"]
    assert (address["offset"], address["length"], address["value"]) == (5, 13, "10.0.0.1:2600")


def test_netquake_header_length_is_checked_against_the_wire_length(tmp_path):
    payload = bytearray(nq.ccrep_server_info("10.0.0.1:26000", "dissect test server", "e1m1", 2, 8))
    payload[2:4] = (47).to_bytes(2, "big")  # one less than the 48 bytes the datagram carries
    path = tmp_path / "snapped.pcap"
    write_frame(path, bytes(payload), 26000, kept=18)
    msg = only_record(path)["messages"][0]
    assert codes(msg["findings"]) == [("netquake.length_mismatch", "error", 2, 2),
                                      ("capture.cut_message", "note", 18, 0)]
    assert "header length 47 differs from the payload length 48" in msg["findings"][0]["message"]


def test_teeframe_record_cut_by_the_capture_is_no_split_record(tmp_path):
    clients = tf.sample_clients(8)
    records = [tf.client_record(*c) for c in clients]
    payload = tf.iext(42, clients)
    first_record = len(payload) - sum(map(len, records))
    kept = first_record + len(records[0]) + 5  # five bytes into the second record
    snapped, short = tmp_path / "snapped.pcap", tmp_path / "short.pcap"
    write_frame(snapped, payload, 8303, kept=kept)
    write_frame(short, payload[:kept], 8303)  # the same bytes as a whole datagram: a record really split
    cut_record, short_record = only_record(snapped), only_record(short)
    cut_msg, split_msg = cut_record["messages"][0], short_record["messages"][0]
    assert cut_record["info"] == short_record["info"] + " [Packet size limited during capture]"
    assert ("teeframe.split_record", "error", kept - 5, 5) in codes(split_msg["findings"])
    cut_codes = codes(cut_msg["findings"])
    assert ("capture.cut_message", "note", kept, 0) in cut_codes
    assert not any(code.startswith("teeframe.split") for code, *_ in cut_codes)
    assert [c for c in cut_codes if c[0] != "capture.cut_message"] == \
           [c for c in codes(split_msg["findings"]) if c[0] != "teeframe.split_record"]


def test_a_teeframe_response_short_of_records_the_capture_cut_is_no_incomplete_response(tmp_path):
    """The response's records the snap length cut never arrive: at the capture's end the response is short of them,
    which a capture.cut_message note says, not teeframe.incomplete_response (a warning: the server's fault). A
    response short of records with no packet cut is still incomplete."""
    clients = tf.sample_clients(8)
    payload = tf.iext(42, clients)
    kept = len(payload) - sum(len(tf.client_record(*c)) for c in clients[5:]) - 3  # 4 whole records kept
    snapped, short = tmp_path / "snapped.pcap", tmp_path / "short.pcap"
    write_frame(snapped, payload, 8303, kept=kept)
    write_frame(short, tf.iext(42, clients[:4], num_clients=8), 8303)
    _, out, _ = run_cli("-T", "jsonl", snapped)
    (response,) = [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == "server_info"]
    assert [(f["code"], f["severity"]) for f in response["findings"]] == [("teeframe.unmatched_token", "note"),
                                                                         ("capture.cut_message", "note")]
    assert response["findings"][1]["message"].startswith(
        "4 of 8 client records of response token 42 from 10.0.0.1:8303: the capture's snap length cut packets of the "
        "response (")
    _, out, _ = run_cli("-T", "jsonl", short)
    (response,) = [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == "server_info"]
    assert [f["code"] for f in response["findings"]] == ["teeframe.unmatched_token", "teeframe.incomplete_response"]


def test_teeframe_packet_size_counts_the_bytes_the_capture_left_out(tmp_path):
    clients = tf.sample_clients(40)
    payload = tf.iext(42, clients)
    assert len(payload) > 1400
    path = tmp_path / "snapped.pcap"
    write_frame(path, payload, 8303, kept=300)
    found = codes(only_record(path)["messages"][0]["findings"])
    assert ("teeframe.packet_too_large", "warning", 1400, len(payload) - 1400) in found


def test_odamex_reply_cut_by_the_capture_has_no_truncation_findings(tmp_path):
    payload = od.server_info(players=[(f"p{i}", i, 50, 0) for i in range(4)], layout="real")
    path, whole = tmp_path / "snapped.pcap", tmp_path / "whole.pcap"
    write_frame(path, payload, 10666, kept=len(payload) - 30)
    write_frame(whole, payload[:len(payload) - 30], 10666)
    cut_found = codes(only_record(path)["messages"][0]["findings"])
    short_found = {code for code, *_ in codes(only_record(whole)["messages"][0]["findings"])}
    assert "odamex.truncated" in short_found or "odamex.bad_layout" in short_found
    assert cut_found == [("capture.cut_message", "note", len(payload) - 30, 0)]


def test_a_snap_length_that_cuts_only_the_ethernet_padding_cuts_no_message(tmp_path):
    payload = nq.ccreq_server_info()  # 12 bytes: the frame is padded to Ethernet's 60
    frame = capkit.ethernet(capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, payload)) + bytes(6)
    path = tmp_path / "padded.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, frame[:HEADERS + len(payload) + 2], len(frame))])
    record = only_record(path)
    assert codes(record["findings"]) == [("capture.truncated_frame", "warning", HEADERS + 14, 0)]
    assert record["messages"][0]["findings"] == []
    assert record["info"] == 'CCREQ_SERVER_INFO game="QUAKE" version=3'


def test_summary_of_a_cut_message_says_the_capture_cut_it(tmp_path):
    payload = nq.ccrep_server_info("10.0.0.1:26000", "dissect test server", "e1m1", 2, 8)
    path = tmp_path / "snapped.pcap"
    write_frame(path, payload, 26000, kept=18)
    code, out, _ = run_cli(path)
    assert code == 0
    assert "CCREP_SERVER_INFO [Packet size limited during capture]  [warning]" in out
    assert "Malformed" not in out
    code, _, err = run_cli("--fail-on", "error", path)
    assert code == 0, err


def test_tcp_segments_cut_by_the_capture_are_gaps_not_losses(tmp_path):
    """Soldat's lobby captured with a snap length of 120 bytes: each cut segment's missing bytes are a gap at once
    (tcp.cut_segment), so nothing waits out of order or is reported lost, and every line the capture kept whole
    decodes as in the full capture."""
    import dpkt
    from conftest import capture
    full = capture("soldat-session.pcap")
    frames, cut_segments = [], 0
    with open(full, "rb") as handle:
        for ts, data in dpkt.pcap.Reader(handle):
            frames.append((ts, data[:120], len(data)))
            ip = dpkt.ethernet.Ethernet(data).data
            if len(data) > 120 and len(ip.data.data) > 120 - 14 - ip.hl * 4 - ip.data.off * 4:
                cut_segments += 1
    snapped = tmp_path / "soldat-120.pcap"
    capkit.write_pcap(snapped, frames, snaplen=120)
    whole, cut = only_records(full), only_records(snapped)
    found = [f["code"] for r in cut for f in r["findings"]]
    assert cut_segments == 5 and found.count("tcp.cut_segment") == cut_segments
    assert "tcp.lost_segment" not in found and "tcp.out_of_order" not in found
    messages = {(r["frame"], m["message"]): m for r in whole for m in r["messages"]}
    kept = [(r["frame"], m) for r in cut for m in r["messages"]]
    assert len(kept) == 9 and len(messages) == 14
    for frame, msg in kept:
        assert msg == messages[(frame, msg["message"])]
        assert not msg["findings"] or "capture.cut_message" not in [f["code"] for f in msg["findings"]]


def only_records(path):
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    return [r for r in jsonl(out) if r["kind"] == "frame"]


def test_the_cut_of_a_tcp_segment_is_counted_from_the_ip_length_in_both_versions():
    from dissect.capture.layers import count_cut, decode_frame
    body = b"0123456789" * 10
    for src, dst in (("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")):
        frame = capkit.ethernet(capkit.tcp_packet(src, 13073, dst, 50000, body)) + bytes(4)  # and a 4-byte trailer
        kept = frame[:len(frame) - 4 - 30]  # the trailer and the last 30 bytes of the payload not captured
        packet = decode_frame(kept, 1, False)
        count_cut(packet, kept, len(frame) - len(kept))
        assert (len(packet.payload), packet.cut) == (70, 30), src


def soldat_snapped(tmp_path, snaplen, dropped=(), swapped=None):
    """Soldat's lobby as a capture with snap length ``snaplen`` would keep it, without the frames ``dropped``, and
    with the two frames ``swapped`` in each other's place (their times too)."""
    import dpkt
    from conftest import capture
    frames = []
    with open(capture("soldat-session.pcap"), "rb") as handle:
        for number, (ts, data) in enumerate(dpkt.pcap.Reader(handle), 1):
            if number not in dropped:
                frames.append((ts, data[:snaplen], len(data)))
    if swapped:
        first, second = swapped[0] - 1, swapped[1] - 1
        (first_ts, *first_rest), (second_ts, *second_rest) = frames[first], frames[second]
        frames[first], frames[second] = (first_ts, *second_rest), (second_ts, *first_rest)
    path = tmp_path / "soldat-snapped.pcap"
    capkit.write_pcap(path, frames, snaplen=snaplen)
    return path


def server_lists(path):
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    return [r for r in jsonl(out) if r["kind"] == "analysis" and r["name"] == "server_list"]


def test_a_list_short_of_lines_the_capture_cut_is_no_count_mismatch(tmp_path):
    """Frames 14 and 18 of the first list, and lines of the second, lose their ends to a snap length of 120: the lines
    that crossed the cut are dropped, and each list says so with a note, not with soldat.count_mismatch."""
    lists = server_lists(soldat_snapped(tmp_path, 120))
    assert [(r["result"]["received"], r["result"]["announced"]) for r in lists] == [(2, 4), (1, 4)]
    assert [[f["code"] for f in r["findings"]] for r in lists] == [["capture.cut_message"]] * 2
    assert lists[0]["findings"][0]["severity"] == "note"
    assert lists[0]["findings"][0]["message"].startswith("2 servers listed between f and h, SERVERCOUNT is 4: the "
                                                         "capture's snap length cut lines of the list (")


def test_a_list_that_also_lost_bytes_keeps_its_count_mismatch(tmp_path):
    """Frame 22 (a server line, shorter than the snap length) never captured: its bytes are lost, and the first
    list's count mismatch is the warning it always was; the second list lost nothing."""
    lists = server_lists(soldat_snapped(tmp_path, 120, dropped={22}))
    first, second = ([f["code"] for f in r["findings"]] for r in lists)
    assert first == ["soldat.count_mismatch"] and second == ["capture.cut_message"]
    assert "but SERVERCOUNT is 4; bytes of the stream were lost (" in lists[0]["findings"][0]["message"]
    full = server_lists(soldat_snapped(tmp_path, 65535))
    assert [r["findings"] for r in full] == [[], []]


def test_a_cut_segment_held_out_of_order_is_a_gap_once_the_stream_reaches_it(tmp_path):
    """Frame 14 (a server line whose last 10 bytes the snap length of 120 cut) arrives before frame 12, the 3 bytes
    ahead of it: it waits, and once frame 12 fills the gap its captured bytes go on and its uncaptured end is a
    tcp.cut_segment gap, not bytes lost when the lobby's FIN comes."""
    in_order = only_records(soldat_snapped(tmp_path, 120))
    path = soldat_snapped(tmp_path, 120, swapped=(12, 14))
    swapped = only_records(path)
    found = [f["code"] for r in swapped for f in r["findings"]]
    assert "tcp.lost_segment" not in found
    assert found.count("tcp.out_of_order") == 1
    assert found.count("tcp.cut_segment") == [f["code"] for r in in_order for f in r["findings"]].count(
        "tcp.cut_segment") == 5
    frame_12 = swapped[13]  # the 3 bytes, now 14th, fill the gap: the held segment's bytes and its cut follow
    assert [f["code"] for f in frame_12["findings"]] == ["tcp.cut_segment"]
    assert [m["message"] for r in swapped for m in r["messages"]] == [m["message"] for r in in_order
                                                                      for m in r["messages"]]
    assert [[f["code"] for f in r["findings"]] for r in server_lists(path)] == [["capture.cut_message"]] * 2


def test_soldat_captures_snapped_reordered_and_thinned_never_break_the_stream(tmp_path):
    """Random snap lengths, neighbours swapped, frames dropped and repeated, on the three Soldat captures: every
    frame gets its record, none an internal error, and the capture's end concludes without one (the uncaptured
    ends held out of order, losses and retransmissions meet in every order)."""
    import random

    import dpkt
    from conftest import capture
    from dissect.capture.sources import CaptureFiles
    from dissect.session import Session

    class Kept:
        def __init__(self):
            self.frames, self.errors = 0, []

        def frame(self, record):
            self.frames += 1
            self.errors += [f.message for f in record.all_findings() if f.code == "dissect.internal_error"]

        def analysis(self, rec):
            self.errors += [f.message for f in rec.findings if f.code == "dissect.internal_error"]

    bases = []
    for name in ("soldat-session.pcap", "soldat-lost.pcap", "soldat-reordered.pcap"):
        with open(capture(name), "rb") as handle:
            bases.append(list(dpkt.pcap.Reader(handle)))
    rng = random.Random(16)
    for trial in range(60):
        frames = list(rng.choice(bases))
        snaplen = rng.randint(54, 200)
        for _ in range(rng.randint(0, 6)):
            i = rng.randrange(len(frames) - 1)
            frames[i], frames[i + 1] = frames[i + 1], frames[i]
        for _ in range(rng.randint(0, 3)):
            del frames[rng.randrange(len(frames))]
        frames += [rng.choice(frames) for _ in range(rng.randint(0, 3))]
        path = tmp_path / f"trial-{trial}.pcap"
        capkit.write_pcap(path, [(ts, data[:snaplen], len(data)) for ts, data in frames], snaplen=snaplen)
        kept = Kept()
        session = Session(kept, tree=bool(trial % 2), stats=trial % 3 == 0)
        for frame in CaptureFiles([str(path)]):
            session.frame(frame)
        session.finish()
        assert (kept.frames, kept.errors) == (len(frames), []), (trial, snaplen)


def test_a_netquake_rule_reply_cut_to_its_header_is_no_end_of_rules(tmp_path):
    """The 5-byte reply ends the rule list ('the length of the packet will be 5'): one the capture cut to 5 bytes
    of its 18 is not that reply."""
    payload = nq.ccrep_rule_info("sv_gravity", "800")
    path = tmp_path / "snapped.pcap"
    write_frame(path, payload, 26000, kept=5)
    msg = only_record(path)["messages"][0]
    assert msg["message"] == "CCREP_RULE_INFO" and len(payload) == 20
    assert "netquake.control.end_of_rules" not in {f["key"] for f in msg["fields"]}
    assert codes(msg["findings"]) == [("capture.cut_message", "note", 5, 0)]
    whole = tmp_path / "end.pcap"
    write_frame(whole, nq.ccrep_rule_info(), 26000)
    end = only_record(whole)["messages"][0]
    assert {f["key"]: f["value"] for f in end["fields"]}["netquake.control.end_of_rules"] is True


def test_a_teeframe_reply_cut_before_its_records_is_no_list_left_out(tmp_path):
    """Counts without records are what a rate-limited server sends (teeframe.no_client_records); where the capture
    kept none of the records that followed, the records were sent and are only missing here."""
    payload = tf.iext(42, tf.sample_clients(3))
    records = sum(len(tf.client_record(*c)) for c in tf.sample_clients(3))
    path = tmp_path / "snapped.pcap"
    write_frame(path, payload, 8303, kept=len(payload) - records)
    msg = only_record(path)["messages"][0]
    found = codes(msg["findings"])
    assert ("capture.cut_message", "note", len(payload) - records, 0) in found
    assert not any(code == "teeframe.no_client_records" for code, *_ in found)


def test_an_ipv4_datagram_whose_last_fragment_the_capture_cut_is_a_cut_message(tmp_path):
    """An Odamex reply in three fragments, the last kept short by the snap length: reassembled as far as the bytes
    go, its missing end one capture.cut_message note (as for a frame the capture cut), not odamex.truncated and
    bad_layout errors; a middle fragment cut leaves a hole, and the datagram is not reassembled (as in tshark)."""
    import socket
    import struct

    import dpkt
    payload = od.server_info(players=[(f"p{i}", i, 50, 0) for i in range(4)], layout="real")
    udp = struct.pack("!HHHH", 10666, 40000, 8 + len(payload), 0) + payload
    frames = []
    for offset in range(0, len(udp), 96):
        part = udp[offset:offset + 96]
        ip = dpkt.ip.IP(src=socket.inet_aton("10.0.0.1"), dst=socket.inet_aton("10.0.0.7"), p=17, id=9, ttl=64,
                        data=part)
        ip.offset, ip.mf, ip.len = offset // 8, int(offset + 96 < len(udp)), 20 + len(part)
        frames.append(capkit.ethernet(ip))
    assert len(frames) == 3 and len(frames[2]) > 14 + 20 + 30
    for cut_at, reassembled in ((2, True), (1, False)):
        kept = [frame[:14 + 20 + 30] if index == cut_at else frame for index, frame in enumerate(frames)]
        path = tmp_path / f"cut{cut_at}.pcap"
        capkit.write_pcap(path, [(capkit.DEFAULT_TS + i * 0.001, frame, len(frames[i]))
                                 for i, frame in enumerate(kept)])
        code, out, err = run_cli("-T", "jsonl", path)
        assert code == 0, err
        last = [r for r in jsonl(out) if r["kind"] == "frame"][-1]
        if not reassembled:
            assert last["messages"] == [] and last["protocol"] == "ipv4"
            continue
        (msg,) = last["messages"]
        missing = len(udp) - (96 * 2 + 30)
        assert (msg["protocol"], msg["frames"], msg["length"]) == ("odamex", [1, 2, 3], len(payload) - missing)
        assert codes(msg["findings"]) == [("capture.cut_message", "note", len(payload) - missing, 0)]
