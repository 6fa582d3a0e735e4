"""``-j N`` writes what one process writes: every view, on captures whose conversations span workers."""

import glob
import os
import re
import struct
import subprocess
import sys

import bench
import capkit
import hostile
import netquake_peer as nq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import teeframe_peer as tf
from conftest import CAPTURES, ROOT, run_cli

from dissect.capture.sources import open_capture
from dissect.capture.layers import decode_frame
from dissect.capture.files import Frame
import dissect.parallel as parallel
from dissect.parallel import Partition, address_pair, pair_key
from dissect.registry import Registry

VIEWS = [[], ["-V"], ["-x"], ["-T", "json"], ["-T", "jsonl"], ["--stats"], ["--stats", "-T", "json"],
         ["-Y", "teeframe || soldat"], ["--fail-on", "note"], ["--color", "always"]]


def handoff_and_fragments(path):
    """Three NetQuake clients that each get a game port and use it, and a TeeFrame reply in IPv4 fragments."""
    frames = []
    for i in range(3):
        client, server = (f"10.1.0.{i + 1}", 40000 + i), ("10.1.0.100", 26000)
        frames.append(capkit.udp_packet(*client, *server, nq.ccreq_connect()))
        frames.append(capkit.udp_packet(*server, *client, nq.ccrep_accept(26100 + i)))
        frames.append(capkit.udp_packet(*client, server[0], 26100 + i, nq.data_packet(9, 0, b"move")))
        frames.append(capkit.udp_packet(server[0], 26100 + i, *client, nq.data_packet(2, 0)))
    frames = [capkit.ethernet(ip) for ip in frames]
    browser, tee = ("10.2.0.1", 50000), ("10.2.0.2", 8303)
    frames.append(capkit.ethernet(capkit.udp_packet(*browser, *tee, tf.gie3(7, 1))))
    reply = capkit.udp_packet(*tee, *browser, tf.sample_iext(0x701, clients=6)).pack()[20:]  # UDP header + payload
    cut = 8 * (len(reply) // 16)
    frames.append(hostile._eth_ipv4(tee[0], browser[0], 17, 99, cut // 8, False, reply[cut:]))  # last piece first
    frames.append(hostile._eth_ipv4(tee[0], browser[0], 17, 99, 0, True, reply[:cut]))
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.001, frame) for n, frame in enumerate(frames)])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The benchmark's traffic (six address pairs, all four protocols, TCP and noise), then the crafted case."""
    folder = tmp_path_factory.mktemp("parallel")
    traffic, crafted = folder / "traffic.pcap", folder / "crafted.pcap"
    bench.write_mixed(str(traffic), 6000)
    handoff_and_fragments(crafted)
    return [traffic, crafted]


def test_the_captures_spread_over_both_workers(mixed):
    partition = Partition(2, mixed[0])
    assert set(partition.pairs.values()) == {0, 1}
    owners = {partition.owner(frame, address_pair(frame)[0]) for frame in open_capture(mixed[1])}
    assert owners == {0, 1}


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: " ".join(view) or "summary")
def test_every_view_is_the_same_with_two_and_three_workers(mixed, view):
    single = run_cli(*view, *mixed)
    assert single[0] in (0, 1) and single[1]
    for jobs in ("2", "3"):
        assert run_cli("-j", jobs, *view, *mixed) == single


def test_handoff_and_fragments_decode_across_workers(mixed):
    """Each game port is known to the worker that saw it handed out; fragments meet in one worker."""
    _, out, _ = run_cli("-j", "2", "-V", mixed[1])
    assert out.count("Request in frame") == 4  # three CCREP_ACCEPTs and the fragmented TeeFrame reply
    _, out, _ = run_cli("-j", "2", mixed[1])
    lines = out.splitlines()
    assert [line.split()[-3:] for line in lines[2:12:4]] == [["DATA|EOM", "seq=0", "len=4"]] * 3
    assert "Server Information token=1793" in lines[14] and "6/6 clients in packets 0 complete" in lines[15]


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "tests", "corrupt", "*.pcap*"))),
                         ids=os.path.basename)
def test_damaged_files_end_the_same_way(path):
    assert run_cli("-j", "2", path) == run_cli(path)


def incomplete_responses(path):
    """Four TeeFrame servers whose responses lose their last packet: each an incomplete_response warning that
    only the capture's end concludes, in the order of their first frames."""
    frames = []
    for n in range(4):
        browser, server = (f"10.3.0.{n + 1}", 50000), (f"10.3.1.{n + 1}", 8303)
        frames.append(capkit.udp_packet(*browser, *server, tf.gie3(n, n)))
        first = tf.response_packets(n, tf.sample_clients(40))[0]
        frames.append(capkit.udp_packet(*server, *browser, first))
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.001, capkit.ethernet(ip)) for n, ip in enumerate(frames)])


@pytest.mark.parametrize("case", ["frame findings", "notes", "the end's records", "the abuse analysis's"])
def test_fail_on_names_the_finding_a_filter_hides_as_one_process_does(mixed, tmp_path, case):
    """With -Y hiding the frame or record whose finding fails the run, stderr names it: the one that one process
    meets first, whichever worker found it (each worker finds its own first)."""
    reflection = os.path.join(CAPTURES, "reflection.pcap")
    incomplete_responses(tmp_path / "incomplete.pcap")
    paths = [*mixed, os.path.join(CAPTURES, "teeframe-damaged.pcap"), reflection]
    fail_on, paths, expected = {
        "frame findings": ("error", paths, "frame "),
        "notes": ("note", paths, "frame "),
        "the end's records": ("warning", [tmp_path / "incomplete.pcap"],
                              "the teeframe server_info record of frames [2]"),
        "the abuse analysis's": ("warning", [reflection], "the abuse reflection record of frames [75]"),
    }[case]
    single = run_cli("--fail-on", fail_on, "-Y", "frame.number == 1", *paths)
    assert single[0] == 1 and single[2].startswith(f"dissect: --fail-on: {expected}")
    assert single[2].endswith("(not shown by the filter)\n")
    assert run_cli("-j", "2", "--fail-on", fail_on, "-Y", "frame.number == 1", *paths) == single


def test_fail_on_names_the_hidden_finding_on_a_damaged_file_as_one_process_does(tmp_path):
    """A file whose last record is cut short (exit 2) with a finding that fails the run in a frame -Y hides: stderr
    names the finding, then the file's error, as one process writes them."""
    path = tmp_path / "cut.pcap"
    request = tf.gie3(0x1234, 0x2A) + b"\0" * 8  # longer than 15 bytes: teeframe.bad_request_length, a note
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet("10.0.0.1", 40000, "10.0.1.1",
                                                                                   8303, request)))])
    with open(path, "ab") as handle:  # a record that promises 48 bytes and holds 10
        handle.write(struct.pack("<IIII", int(capkit.DEFAULT_TS) + 1, 0, 48, 48) + b"\0" * 10)
    single = run_cli("--fail-on", "note", "-Y", "frame.number == 9", path)
    assert single[0] == 2 and single[2].startswith("dissect: --fail-on: frame 1 has note")
    for jobs in ("2", "3"):
        assert run_cli("-j", jobs, "--fail-on", "note", "-Y", "frame.number == 9", path) == single


def test_a_finding_code_met_at_two_severities_is_counted_at_each_as_in_one_process(tmp_path):
    """TeeFrame's bad_request_length is a note for a long request and an error for a short one. --stats kept the last
    severity met for the code, and -j the last worker's: 3 notes under -j 2 where one process wrote 3 errors. Each
    severity is counted now, as Wireshark's expert information groups them, the most severe first."""
    long_request, short_request = tf.gie3(0x1234, 0x2A) + b"\0" * 8, tf.gie3(0x1234, 0x2A)[:14]
    path = tmp_path / "two.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.1, capkit.ethernet(capkit.udp_packet(*pair, 8303, payload)))
                             for n, (pair, payload) in enumerate([
                                 (("10.0.0.1", 40000, "10.0.1.1"), long_request + b"\0" * 200),
                                 (("10.0.0.1", 40000, "10.0.1.1"), long_request),
                                 (("10.0.0.2", 40000, "10.0.1.2"), short_request)])])
    code, out, _ = run_cli("--stats", path)
    assert code == 0
    lines = out.split("\nFindings\n")[1].splitlines()
    assert [line.split() for line in lines if "bad_request_length" in line] == [
        ["error", "teeframe.bad_request_length", "1"], ["note", "teeframe.bad_request_length", "2"]]
    for jobs in ("2", "3"):
        assert run_cli("-j", jobs, "--stats", path) == (code, out, "")
        assert run_cli("-j", jobs, "--stats", "-T", "json", path) == run_cli("--stats", "-T", "json", path)


def test_session_captures_read_as_one_capture():
    paths = sorted(glob.glob(os.path.join(CAPTURES, "*.pcap")))
    assert run_cli("-j", "2", "-T", "jsonl", *paths) == run_cli("-T", "jsonl", *paths)


def placed(partition):
    """The pairs of the weights capture below that the partition's table holds, with their workers."""
    pairs = [pair_key(f"10.0.0.{a}", f"10.0.0.{b}") for a, b in ((1, 2), (3, 4), (5, 6), (7, 8), (9, 10))]
    found = {pair: partition.pairs.get(pair) for pair in pairs}
    assert len(partition.pairs) == sum(worker is not None for worker in found.values())
    return {pair: worker for pair, worker in found.items() if worker is not None}


def test_the_first_pairs_are_dealt_by_their_bytes_heaviest_first(tmp_path):
    """Weights are wire bytes plus FRAME_COST a frame; worker 0, the parent, carries MERGE_SHARE of every frame's
    weight for merging, and the TCP weighed PINNED_WEIGHT times: the split is the capture's alone."""
    def udp(src, dst, size):
        return capkit.ethernet(capkit.udp_packet(src, 5000, dst, 26000, b"x" * size))
    frames = ([udp("10.0.0.1", "10.0.0.2", 1000)] * 3 +     # 3 * (1042 + 64) = 3318
              [udp("10.0.0.4", "10.0.0.3", 1200)] * 2 +     # 2 * (1242 + 64) = 2612, pair ordered
              [udp("10.0.0.5", "10.0.0.6", 100)] * 20 +     # 20 * (142 + 64) = 4120
              [capkit.ethernet(capkit.tcp_packet("10.0.0.7", 1000, "10.0.0.8", 13073, b"y" * 1500))] * 2 +
              [udp("10.0.0.9", "10.0.0.10", 10)] * 30)      # 30 * (52 + 64) = 3480
    path = tmp_path / "weights.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n, frame) for n, frame in enumerate(frames)])
    partition = Partition(2, path, merge=0.25)
    # worker 0 starts with the TCP's 2 * (1554 + 64) * 1.3 = 4206.8 and a quarter of all 16,766: 8398.3. Heaviest
    # first, each to the least loaded: 4120 to worker 1, 3480 to worker 1 (4120 < 8398.3), 3318 to worker 1
    # (7600 < 8398.3), 2612 to worker 0 (8398.3 < 10918)
    assert parallel.PINNED_WEIGHT == 1.3
    assert placed(partition) == {pair_key("10.0.0.5", "10.0.0.6"): 1, pair_key("10.0.0.9", "10.0.0.10"): 1,
                                 pair_key("10.0.0.1", "10.0.0.2"): 1, pair_key("10.0.0.3", "10.0.0.4"): 0}
    assert list(partition.load) == [0, 0] and partition.fixed == 0  # the workers model the load from frame 1 on
    # With no share for merging, the TCP alone: 4120 to worker 1, 3480 to worker 1 (4120 < 4206.8), 3318 to
    # worker 0 (4206.8 < 7600), 2612 to worker 0 (7524.8 < 7600)
    alone = Partition(2, path, merge=0.0)
    assert placed(alone) == {pair_key("10.0.0.5", "10.0.0.6"): 1, pair_key("10.0.0.9", "10.0.0.10"): 1,
                             pair_key("10.0.0.1", "10.0.0.2"): 0, pair_key("10.0.0.3", "10.0.0.4"): 0}


def test_partition_is_stable_and_keeps_pairs_together(mixed, monkeypatch):
    monkeypatch.setattr(parallel, "MAX_PAIRS", 2)
    partition = Partition(3, mixed[1])
    assert len(partition.pairs) == 2
    frames = [(frame, decode_frame(frame.data, frame.linktype)) for frame in open_capture(mixed[1])]
    first = {}
    for frame, packet in frames:
        pair = pair_key(packet.src, packet.dst)
        assert address_pair(frame) == (pair, None)  # Ethernet and IPv4: read at fixed offsets
        owner = partition.owner(frame, pair)
        assert first.setdefault(pair, owner) == owner  # by load or, past the table, by hash: never moves
    assert len(partition.pairs) == 2


def test_a_pair_has_one_key_whichever_way_its_frames_are_read():
    """Ethernet frames carrying IPv4 are keyed from their 8 address bytes (lower address first, compared byte by
    byte from the first); any other frame from its decoded Packet's texts, packed the same way. A request and its
    reply, or the same pair over another link type, meet under one key."""
    from dissect.capture.layers import ethernet_ip_pair
    cases = [("10.0.0.7", "10.0.0.8", bytes([10, 0, 0, 7, 10, 0, 0, 8])),     # the last byte decides
             ("10.0.0.8", "10.0.0.7", bytes([10, 0, 0, 7, 10, 0, 0, 8])),     # swapped: the same key
             ("255.0.0.0", "1.255.255.255", bytes([1, 255, 255, 255, 255, 0, 0, 0])),  # the first byte decides
             ("192.0.2.1", "192.0.2.1", bytes([192, 0, 2, 1, 192, 0, 2, 1]))]  # to itself
    for src, dst, key in cases:
        udp = capkit.udp_packet(src, 40000, dst, 26000, b"x")
        frame = capkit.ethernet(udp)
        assert ethernet_ip_pair(frame) == (key, 17)
        assert address_pair(Frame(1, 0.0, len(frame), len(frame), 1, frame)) == (key, None)
        for linktype, data in ((113, capkit.sll(udp)), (101, capkit.raw(udp)), (1, capkit.ethernet(udp, vlan=5))):
            pair, packet = address_pair(Frame(1, 0.0, len(data), len(data), linktype, data))
            assert pair == key and packet.sport == 40000  # decoded in full: no fixed offsets
        assert pair_key(src, dst) == key
    assert ethernet_ip_pair(capkit.ethernet(capkit.udp_packet("10.0.0.1", 5, "10.0.0.2", 6, b""))[:33]) is None


def test_an_ipv6_pair_is_read_at_fixed_offsets_unless_an_extension_header_comes_first():
    """Ethernet frames carrying IPv6 are keyed from their 32 address bytes, the lower address first, when the
    fixed header's next header is the transport's; behind an extension header, or cut inside the fixed header,
    the frame is decoded in full. Either way the key is pair_key's."""
    from dissect.capture.layers import ethernet_ip_pair
    low = bytes.fromhex("20010db8" + "0" * 23 + "1")
    high = bytes.fromhex("20010db8" + "0" * 23 + "2")
    for src, dst in (("2001:db8::2", "2001:db8::1"), ("2001:db8::1", "2001:db8::2")):
        v6 = capkit.ethernet(capkit.udp_packet(src, 5, dst, 6, b"x"))
        assert ethernet_ip_pair(v6) == (low + high, 17)
        assert address_pair(Frame(1, 0.0, len(v6), len(v6), 1, v6)) == (low + high, None)
        assert pair_key(src, dst) == low + high
    v6 = capkit.ethernet(capkit.udp_packet("2001:db8::2", 5, "2001:db8::1", 6, b"x"))
    # A hop-by-hop options header (next header 0) before the UDP header: 8 bytes, its own next header 17.
    hop_by_hop = bytes([17, 0, 1, 4, 0, 0, 0, 0])
    payload_length = (v6[18] << 8 | v6[19]) + 8
    extended = v6[:18] + bytes([payload_length >> 8, payload_length & 0xFF, 0]) + v6[21:54] + hop_by_hop + v6[54:]
    assert ethernet_ip_pair(extended) is None
    pair, packet = address_pair(Frame(1, 0.0, len(extended), len(extended), 1, extended))
    assert pair == low + high and packet.sport == 5 and packet.ip_proto == 17  # decoded in full
    tcp = capkit.ethernet(capkit.tcp_packet("2001:db8::2", 1000, "2001:db8::1", 13073, b"e\r\n"))
    assert ethernet_ip_pair(tcp) == (low + high, 6)
    assert address_pair(Frame(1, 0.0, len(tcp), len(tcp), 1, tcp)) == (None, None)  # TCP: worker 0's
    assert ethernet_ip_pair(v6[:53]) is None  # the fixed header cut: no addresses, worker 0's
    assert address_pair(Frame(1, 0.0, 53, 53, 1, v6[:53]))[1].problem == "IPv6 header cut short"
    assert address_pair(Frame(1, 0.0, 53, 53, 1, v6[:53]))[0] is None
    assert ethernet_ip_pair(v6[:58]) == (low + high, 17)  # the UDP header cut: its pair as decode_frame finds it
    packet = decode_frame(v6[:58], 1)
    assert pair_key(packet.src, packet.dst) == low + high and packet.problem == "UDP header cut short"


@settings(max_examples=400, deadline=None)
@given(version=st.sampled_from([4, 6]), header=st.binary(min_size=0, max_size=80),
       next_header=st.sampled_from([0, 6, 17, 43, 44, 50, 51, 58, 60, 255]))
def test_the_fixed_offsets_give_the_full_decode_s_key_on_any_header(version, header, next_header):
    """Whatever follows an Ethernet header that says IPv4 or IPv6 (random bytes, any length, the protocol or
    next header byte chosen among transports, extension headers and others), address_pair gives the key the full
    decode gives: pair_key of its addresses, None for TCP or where there are none."""
    ethertype = b"\x08\x00" if version == 4 else b"\x86\xdd"
    data = bytearray(b"\x02" * 12 + ethertype + header)
    if version == 4 and len(data) > 23:
        data[14] = 0x40 | (data[14] & 0x0F)  # IPv4 (the header length as drawn)
        data[23] = next_header
    elif version == 6 and len(data) > 20:
        data[20] = next_header
    data = bytes(data)
    packet = decode_frame(data, 1)
    expected = None if packet.src is None or packet.ip_proto == 6 else pair_key(packet.src, packet.dst)
    assert address_pair(Frame(1, 0.0, len(data), len(data), 1, data))[0] == expected


def test_tcp_and_frames_without_ip_go_to_worker_zero(mixed):
    partition = Partition(2, mixed[0])
    tcp = capkit.ethernet(capkit.tcp_packet("10.9.9.1", 1000, "10.9.9.2", 13073, b"e\r\n"))
    assert address_pair(Frame(1, 0.0, len(tcp), len(tcp), 1, tcp))[0] is None
    sll = capkit.sll(capkit.udp_packet("10.9.9.2", 5, "10.9.9.1", 6, b"x"))
    pair, packet = address_pair(Frame(1, 0.0, len(sll), len(sll), 113, sll))
    assert pair == bytes([10, 9, 9, 1, 10, 9, 9, 2]) and packet.sport == 5  # decoded in full: no fixed offsets
    arp = b"\xff" * 12 + b"\x08\x06" + b"\x00" * 28
    assert address_pair(Frame(1, 0.0, len(arp), len(arp), 1, arp))[0] is None
    frame = next(iter(open_capture(mixed[0])))
    assert partition.owner(frame, None) == 0


def test_output_cut_short_by_the_reader_is_quiet(mixed):
    proc = subprocess.run(f"{sys.executable} -m dissect -j 2 -V {mixed[0]} | head -3", shell=True,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.stdout.count("\n") == 3 and proc.stderr == ""


def test_jobs_usage():
    code, _, err = run_cli("-j", "2", "-i", "lo")
    assert code == 2 and "-j works on capture files" in err
    code, _, err = run_cli("-j", "x", os.path.join(CAPTURES, "netquake-session.pcap"))
    assert code == 2 and "expected a number of processes" in err
    code, out, _ = run_cli("-j", "0", os.path.join(CAPTURES, "netquake-session.pcap"))
    assert code == 0 and out == run_cli(os.path.join(CAPTURES, "netquake-session.pcap"))[1]


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """48 MB of one small UDP frame: over the progress line's 20 MB, and over half a second to read."""
    import struct
    path = tmp_path_factory.mktemp("large") / "large.pcap"
    frame = capkit.ethernet(capkit.udp_packet("10.5.0.1", 5353, "10.5.0.2", 5353, b"\x00" * 60))
    record = struct.pack("<IIII", 1700000000, 0, len(frame), len(frame)) + frame
    with open(path, "wb") as handle:
        handle.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        handle.write(record * (48 * 1024 * 1024 // len(record)))
    return path


def test_progress_on_a_terminal_with_and_without_jobs(large):
    """A large file shows frames read and percent on stderr when it is a terminal, then clears the line."""
    import pty
    path = large
    for jobs in ("1", "2"):
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "dissect", "-j", jobs, "-V", str(path)], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        shown = b""
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            shown += data
        os.close(master)
        assert proc.wait(timeout=120) == 0
        lines = shown.decode().split("\r")
        assert any(line.endswith("%") and " frames, " in line for line in lines), (jobs, shown[:200])
        assert lines[-2].strip() == "" and lines[-1] == ""  # the progress line is cleared at the end


def test_a_worker_that_dies_or_fails_is_one_clear_error():
    from dissect.parallel import _pipe, _receive
    from dissect.registry import UsageError
    receiver, sender = _pipe()
    sender.send(("error", "ValueError: broken analyzer"))
    with pytest.raises(UsageError, match="worker 1 of -j failed: ValueError: broken analyzer"):
        _receive(receiver, 1)
    sender.close()  # a worker killed before it could say anything
    with pytest.raises(UsageError, match="worker 1 of -j failed: it stopped without a word"):
        _receive(receiver, 1)
    receiver.close()


def test_a_message_cut_short_by_a_dying_worker_is_that_worker_stopping():
    """A worker killed while it writes leaves part of a message in the pipe: the parent reads no half of it."""
    from dissect.parallel import HEADER, _pipe, _receive
    from dissect.registry import UsageError
    receiver, sender = _pipe()
    os.write(sender.fd, HEADER.pack(100) + b"\x80\x05" * 5)  # 10 of the 100 bytes its header announces
    sender.close()
    with pytest.raises(UsageError, match="worker 2 of -j failed: it stopped without a word"):
        _receive(receiver, 2)
    receiver.close()


def _child_that_says_done_after(seconds):
    """A forked process that sleeps, then writes b"done" to the pipe returned with its pid and exits 0: killed
    before that, it writes nothing."""
    import time
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read_end)
            time.sleep(seconds)
            os.write(write_end, b"done")
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _said(read_end):
    with os.fdopen(read_end, "rb") as said:
        return said.read()


def test_workers_that_sent_their_end_are_left_to_exit():
    """At the run's end each worker has sent its end and is exiting: the parent waits for it, and does not cut
    short what it still does on its way out (SIGTERM did, where the worker had not yet exited)."""
    pid, read_end = _child_that_says_done_after(0.3)
    parallel._stop([pid], finished=True)
    assert _said(read_end) == b"done"
    with pytest.raises(ChildProcessError):  # waited for: none is left behind
        os.waitpid(pid, 0)


def test_workers_still_running_at_an_error_are_ended():
    pid, read_end = _child_that_says_done_after(30)
    parallel._stop([pid])  # returns at once: SIGTERM ended it
    assert _said(read_end) == b""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)


def test_messages_larger_than_the_pipe_cross_whole_and_in_order():
    import threading
    from dissect.parallel import _pipe
    receiver, sender = _pipe()
    messages = [("chunk", [(1, b"x" * (3 << 20))], (7, 9), []), ("end", {"finished": [(2, "\u2192 \udcff")]})]

    def send_all():
        for message in messages:
            sender.send(message)
        sender.close()
    writer = threading.Thread(target=send_all)
    writer.start()
    received = [receiver.recv(), receiver.recv()]
    writer.join()
    assert received == messages
    with pytest.raises(EOFError):
        receiver.recv()
    receiver.close()


def test_the_ring_gives_room_only_where_the_parent_has_written_out():
    """A worker's texts cross in a ring of shared memory: each is placed whole (the ring's end skipped where it does
    not fit), and no byte the parent has not acknowledged is written over; without room, the text goes by the pipe."""
    from dissect.parallel import _Ring
    ring = _Ring(64)
    try:
        texts = [bytes([65 + n]) * 20 for n in range(3)]
        starts = [ring.place(text) for text in texts]
        assert starts == [0, 20, 40] and ring.head == 60
        assert ring.place(b"d" * 20) == -1  # 4 bytes left at the end, and nothing released
        assert [bytes(ring.view[start:start + 20]) for start in starts] == texts  # as placed
        ring.release(20)  # the parent wrote the first text out
        assert ring.place(b"e" * 21) == -1  # the 4 bytes at the end skipped: 25 would pass the 20 released
        assert ring.place(b"f" * 20) == 0  # where the first text was
        assert ring.head == 84 and bytes(ring.view[20:60]) == texts[1] + texts[2]  # the others untouched
        assert ring.place(b"g" * 64) == -1  # only the first text's 20 bytes are released
        ring.release(84)  # all of them now
        assert ring.place(b"h" * 65) == -1  # no text larger than the ring
        assert ring.place(b"i" * 64) == 0 and ring.head == 192  # 44 skipped at the end
    finally:
        ring.close()


RING_OF = """
import sys
import dissect.parallel as parallel
parallel.RING_BYTES = int(sys.argv[1])
from dissect.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("view", [[], ["-V"], ["-T", "json"], ["-x"]], ids=lambda view: " ".join(view) or "summary")
def test_output_is_whole_and_in_order_whatever_the_ring_holds(mixed, view):
    """A ring smaller than most chunks' text (it wraps and fills, texts larger than it go by the pipe) gives the
    output of one process, as does one that holds a frame's text at most."""
    single = run_cli(*view, *mixed)
    for size in ("3000", "65536"):
        proc = subprocess.run([sys.executable, "-c", RING_OF, size, "-j", "2", *view, *map(str, mixed)],
                              capture_output=True, text=True, encoding="utf-8", cwd=ROOT, timeout=120)
        assert (proc.returncode, proc.stdout, proc.stderr) == single, size


def test_the_workers_are_waited_for_and_multiprocessing_is_not_loaded(mixed):
    """-j forks its workers itself: no process is left behind, and the 30 modules of multiprocessing (2 MB in every
    process) are not imported."""
    script = (
        "import os, sys\n"
        "from dissect.cli import main\n"
        f"sys.argv = ['dissect', '-j', '3', {str(mixed[0])!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "try:\n"
        "    left = os.waitpid(-1, os.WNOHANG)\n"
        "except ChildProcessError:\n"
        "    left = None\n"
        "print(left, 'multiprocessing' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "None False\n"


def test_ctrl_c_ends_a_run_of_workers_as_one_process_ends_it(large, tmp_path):
    """SIGINT to the parent alone (the workers never see it): the JSON array is closed, the exit code is 130, nothing
    reaches standard error, and the workers are ended and waited for before the parent exits."""
    import json
    import signal
    import time
    output = open(tmp_path / "out.json", "wb")  # a file: the parent never waits to write, it is busy dissecting
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-j", "3", "-T", "json", str(large)], cwd=ROOT,
                            stdout=output, stderr=subprocess.PIPE)
    children = []
    deadline = time.monotonic() + 30
    while len(children) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as handle:
            children = handle.read().split()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    output.close()
    assert (proc.returncode, err) == (130, b"")
    assert [os.path.exists(f"/proc/{child}") for child in children] == [False, False]
    records = json.loads((tmp_path / "out.json").read_bytes())
    assert records and all(record["kind"] == "frame" for record in records)
    assert [record["frame"] for record in records] == list(range(1, len(records) + 1))


def test_a_killed_worker_ends_the_run_with_one_line(large):
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-j", "2", "-V", str(large)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    children = []
    deadline = time.monotonic() + 30
    while not children and time.monotonic() < deadline:
        time.sleep(0.05)
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as handle:
            children = handle.read().split()
    time.sleep(0.3)
    # Worker 1, the one child of -j 2, which the capture's one address pair went to (the parent, worker 0, carries
    # the merging).
    os.kill(int(children[0]), signal.SIGKILL)  # as the OOM killer would
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err == "dissect: worker 1 of -j failed: it stopped without a word\n"


def test_an_unreadable_file_among_several_is_reported_once():
    paths = ["/nonexistent.pcap", os.path.join(CAPTURES, "netquake-session.pcap")]
    single = run_cli(*paths)
    assert single[0] == 2 and single[2] == "dissect: /nonexistent.pcap: cannot open: No such file or directory\n"
    assert run_cli("-j", "2", *paths) == single


def test_servers_seen_in_several_workers_merge_as_in_one_process(tmp_path):
    """Two masters list one server and two launchers ask it; one worker saw each launcher's traffic.
    Merged, the two workers' analyzers say what one process says."""
    import odamex_peer as od
    server = ("198.51.100.1", 10666)
    exchanges = [(("10.7.0.1", 40000), ("10.7.0.100", 15000), od.master_list([server, ("198.51.100.2", 10666)])),
                 (("10.7.0.2", 40000), ("10.7.0.200", 15000), od.master_list([server])),
                 (("10.7.0.1", 40001), server, od.server_info(players=od.PLAYERS)),
                 (("10.7.0.2", 40001), server, od.server_info(players=od.PLAYERS[:1]))]
    one, merged = _odamex_in_one_process_and_merged(tmp_path / "servers.pcap", exchanges * 2)
    assert merged.stats() == one.stats()
    assert [(s["server"], s["responses"], s["listed_by"]) for s in merged.stats()["servers"]] == [
        ("198.51.100.1:10666", 4, ["10.7.0.100:15000", "10.7.0.200:15000"]),
        ("198.51.100.2:10666", 0, ["10.7.0.100:15000"])]
    assert merged.stats()["response_times"]["server_info"]["count"] == 4


def test_servers_listed_in_one_master_list_keep_its_order_when_merged(tmp_path):
    """One worker saw a master list naming S2 alone; the other, later, a list naming S1 then S2. One process lists
    the servers no reply came from in the order of the latest list (S1, S2): so does the merge of the workers (it
    kept S2 where the first worker's table had it, before S1, as both carry the same latest frame)."""
    import odamex_peer as od
    s1, s2 = ("198.51.100.1", 10666), ("198.51.100.2", 10666)
    exchanges = [(("10.7.0.1", 40000), ("10.7.0.100", 15000), od.master_list([s2])),
                 (("10.7.0.2", 40000), ("10.7.0.200", 15000), od.master_list([s1, s2]))]
    one, merged = _odamex_in_one_process_and_merged(tmp_path / "listed.pcap", exchanges)
    assert [s["server"] for s in one.stats()["servers"]] == ["198.51.100.1:10666", "198.51.100.2:10666"]
    assert merged.stats() == one.stats()


def _odamex_in_one_process_and_merged(path, exchanges):
    """(one process's Odamex analyzer, two workers' merged) over ``exchanges`` ((launcher, peer, reply): a request
    and its reply each) written to ``path``; the worker of launcher address 10.7.0.1 saw its traffic, the other the
    rest."""
    import odamex_peer as od
    from dissect.capture.sources import open_capture as frames_of
    from dissect.pipeline import Pipeline
    frames = []
    for launcher, peer, reply in exchanges:
        frames.append(capkit.ethernet(capkit.udp_packet(*launcher, *peer, od.request())))
        frames.append(capkit.ethernet(capkit.udp_packet(*peer, *launcher, reply)))
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.001, frame) for n, frame in enumerate(frames)])
    one, workers = Pipeline(Registry()), [Pipeline(Registry()), Pipeline(Registry())]
    for frame in frames_of(path):
        one.frame(frame)
        owner = 0 if bytes([10, 7, 0, 1]) in address_pair(frame)[0] else 1
        workers[owner].frame(frame)
        workers[1 - owner].skip(frame)
    merged = workers[0].analyzers["odamex"]
    merged.merge(workers[1].analyzers["odamex"])
    return one.analyzers["odamex"], merged


def _one_server_two_clients(path, first_ts):
    """Two browsers ask one TeeFrame server (5 ms and 1 ms answers); then an unrequested iext (token -1)
    reaches a third address last. Each browser's address pair may land in another worker."""
    server = ("10.3.0.1", 8303)
    frames = []
    for n, (client, delay) in enumerate(((("10.3.0.2", 50000), 0.005), (("10.3.0.3", 50001), 0.001))):
        start = first_ts + n * 0.1
        frames.append((start, capkit.udp_packet(*client, *server, tf.gie3(7, 0x10 + n))))
        frames.append((start + delay, capkit.udp_packet(*server, *client, tf.iext((7 << 8) | (0x10 + n),
                                                                                    tf.sample_clients(2)))))
    frames.append((first_ts + 0.5, capkit.udp_packet(*server, "10.3.0.4", 50002, tf.iext(-1))))
    capkit.write_pcap(path, [(ts, capkit.ethernet(ip)) for ts, ip in frames])


def test_servers_seen_merge_as_one_process_keeps_them(tmp_path):
    first, second = tmp_path / "first.pcap", tmp_path / "second.pcap"
    _one_server_two_clients(first, capkit.DEFAULT_TS)
    _one_server_two_clients(second, capkit.DEFAULT_TS + 10)
    for view in (("--stats",), ("--stats", "-T", "jsonl"), ()):
        single = run_cli(*view, first, second)
        assert single[0] == 0 and single[1]
        for jobs in ("2", "3"):
            assert run_cli("-j", jobs, *view, first, second) == single
    stats = run_cli("--stats", first)[1]
    assert "rtt 1.000 ms" in stats  # the newest reply that had a request, not the unrequested one


def test_pairs_past_the_table_make_up_for_what_worker_zero_carries(tmp_path, monkeypatch):
    """Past the table, pairs go by hash; worker 0, the parent, which merges every frame's output and alone carries
    the TCP, gets the smaller share: (1/2 - t) / (1 - t) of them with two workers, t being the part of the load so
    far that it carries whatever the split."""
    monkeypatch.setattr(parallel, "MAX_PAIRS", 1)
    path = tmp_path / "empty.pcap"
    capkit.write_pcap(path, [])
    partition = Partition(2, path, merge=0.25)
    for number in (1, 2):
        assert partition.owner(Frame(number, 0.0, 60, 60, 1, b""), None) == 0  # TCP: 2 * (60 + 64)
    assert partition.owner(Frame(3, 0.0, 3000, 3000, 1, b""), pair_key("10.0.0.1", "10.0.0.2")) == 1  # the table's
    # The first hashed frame's merging is counted before its pair is placed.
    fixed = 2 * 124 * parallel.PINNED_WEIGHT + 0.25 * (2 * 124 + 3064 + 164)
    carried = fixed / (fixed + 3064)
    share = (0.5 - carried) / (1 - carried)  # 0.306
    owners = {}
    for index in range(4000):
        pair = pair_key(f"10.1.{index // 250}.{index % 250}", "10.2.0.1")
        owners[pair] = partition.owner(Frame(4 + index, 0.0, 100, 100, 1, b""), pair)
    assert partition.bounds == [pytest.approx(share), 1.0]
    assert abs(list(owners.values()).count(0) / 4000 - share) < 0.03
    assert all(partition.owner(Frame(1, 0.0, 100, 100, 1, b""), pair) == owner for pair, owner in owners.items())
    assert len(partition.pairs) == 1


SMALL_LIMITS = """
import sys
import dissect.analysis.abuse as abuse
for name in ("MAX_HOSTS", "MAX_SERVERS", "MAX_PAIRS", "MAX_OPEN"):
    setattr(abuse, name, 24)
abuse.MAX_PEER_ENTRIES = 64
from dissect.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("view", [("--stats",), ("-T", "jsonl")])
def test_the_abuse_analysis_is_one_processs_even_when_its_tables_overflow(view):
    """The parent counts every worker's messages in frame order: with the analysis's tables far too small for
    the reflection capture (24 addresses, servers, pairs and open queries, 64 peers), -j 2 still writes what
    one process writes. (Merging two workers' tables gave other top talkers and servers here.)"""
    def run(*args):
        proc = subprocess.run([sys.executable, "-c", SMALL_LIMITS, *args, *view, capture_path], capture_output=True,
                              text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout
    capture_path = os.path.join(CAPTURES, "reflection.pcap")
    single = run()
    assert "abuse" in single
    assert run("-j", "2") == single


def test_the_parent_keeps_one_object_for_each_endpoint_of_the_workers_messages():
    """A worker's messages reach the parent unpickled, with new endpoint objects in every chunk. The parent
    counts them with one object per endpoint and per address, as one process's tables share them: otherwise
    each entry of its tables would hold its own copy, and its memory would grow with the capture."""
    import pickle
    from dissect.analysis.abuse import TrafficAnalyzer

    traffic = TrafficAnalyzer.for_registry(Registry())
    server = ("10.9.0.1", 8303)
    frame = 0
    for chunk in range(4):
        events = []
        for client in range(3):
            for port in (50000, 50001):  # a browser asks from more than one port
                frame += 1
                sender = (f"10.8.0.{client}", port)
                events.append((frame, capkit.DEFAULT_TS + frame, "teeframe", "gie3", sender, server,
                               frame, 20, 62))
                frame += 1
                events.append((frame, capkit.DEFAULT_TS + frame, "teeframe", "iext", server, sender, None,
                               300, 342))
        parallel._count(traffic, [("chunk", [], None, pickle.loads(pickle.dumps(parallel._flat(events))))])
    held = [key[0] for key in traffic.pairs.keys()] + list(traffic.hosts.keys())
    held += [key[2][0] for key in traffic.open.keys()]
    endpoints = [key[2] for key in traffic.open.keys()] + [key[3] for key in traffic.open.keys()]
    assert sorted(set(held)) == ["10.8.0.0", "10.8.0.1", "10.8.0.2"]
    assert len({id(address) for address in held}) == 3
    assert len(endpoints) == 12 and len({id(endpoint) for endpoint in endpoints}) == 7
    assert all(key[0] is traffic.servers.keys()[0][0] for key in [*traffic.servers.keys(), *endpoints[6:]])
    kept = [*traffic.pairs.values(), *traffic.servers.values()]
    assert all(entry.protocol is sys.intern("teeframe") for entry in kept)
