"""Live capture on the loopback interface with real sockets (needs root; CI runs as root)."""

import fcntl
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import time

import dpkt
import netquake_peer as nq
import odamex_peer as od
import pytest
import soldat_peer as sp
import teeframe_peer as tf
from conftest import ROOT, jsonl, run_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root (CI runs as root)")


def free_port(kind=socket.SOCK_DGRAM):
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_STARTED = []  # the captures a test started: what a failed test leaves running is killed after it


@pytest.fixture(autouse=True)
def _no_capture_left_running():
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def start_capture(*args, stdout=subprocess.PIPE, env=None):
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-i", "lo", *map(str, args)], cwd=ROOT,
                            stdout=stdout, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env)
    _STARTED.append(proc)
    line = proc.stderr.readline()
    assert "capturing on lo" in line, line + proc.stderr.read()
    time.sleep(0.3)
    return proc


def stop(proc, sig=signal.SIGINT):
    """Signal the capture and collect its output through the same buffered readers a test may already have
    read lines from (communicate() would read the raw pipes and lose what those buffers hold)."""
    proc.send_signal(sig)
    out = proc.stdout.read() if proc.stdout is not None else ""
    err = proc.stderr.read()
    proc.wait(timeout=30)
    return proc.returncode, out, err


def test_every_protocol_live_with_write_and_sigint(tmp_path):
    nq_port, tee_port, oda_port, lobby_port = free_port(), free_port(), free_port(), free_port(socket.SOCK_STREAM)
    bpf = f"port {nq_port} or port {tee_port} or port {oda_port} or port {lobby_port}"
    written = tmp_path / "live.pcap"
    decode = ["-d", f"udp.port=={oda_port},odamex", "-d", f"tcp.port=={lobby_port},soldat"]
    output = open(tmp_path / "out.jsonl", "w+", encoding="utf-8")
    proc = start_capture("-f", bpf, "-T", "jsonl", "-w", written, *decode, stdout=output)
    servers = [nq.Server("127.0.0.1", nq_port).start(), tf.Server("127.0.0.1", tee_port, clients=64).start(),
               od.server(port=oda_port, players=od.PLAYERS).start(), sp.Lobby(port=lobby_port).start()]
    try:
        assert len(nq.query("127.0.0.1", nq_port, timeout=5.0, connect=False)) == 12  # info, 3 players, 7 rules, end
        assert len(tf.query("127.0.0.1", tee_port)) == 3
        assert od.query("127.0.0.1", oda_port) is not None
        assert sp.query("127.0.0.1", lobby_port).endswith(sp.list_end())
        time.sleep(0.5)
    finally:
        for server in servers:
            server.stop()
    code, _, err = stop(proc)
    assert code == 0, err
    output.seek(0)
    records = jsonl(output.read())
    output.close()
    frames = [r for r in records if r["kind"] == "frame"]
    messages = {(m["protocol"], m["message"]) for r in frames for m in r["messages"]}
    assert {("netquake", "CCREP_SERVER_INFO"), ("netquake", "CCREP_RULE_INFO"), ("teeframe", "iext"),
            ("teeframe", "iex+"), ("odamex", "server_info"), ("soldat", "server"), ("soldat", "list_end")} <= messages
    analyses = {(r["protocol"], r["name"]): r for r in records if r["kind"] == "analysis"}
    assert analyses[("teeframe", "server_info")]["result"]["records"] == 64
    assert analyses[("soldat", "server_list")]["result"]["complete"] is True
    assert analyses[("netquake", "rule_walk")]["result"]["complete"] is True
    assert f"{len(frames)} packets captured on lo" in err
    # The written file reads back the same, in dissect and in dpkt.
    code, back, _ = run_cli("-T", "jsonl", written)
    assert code == 0
    assert [r["info"] for r in jsonl(back) if r["kind"] == "frame"] == [r["info"] for r in frames]
    # live times are the file's, to the last digit (they were the socket's, finer than the file's microseconds)
    assert [r["time"] for r in jsonl(back) if r["kind"] == "frame"] == [r["time"] for r in frames]
    assert [r.get("result", {}).get("response_time") for r in jsonl(back) if r["kind"] == "analysis"] == [
        r.get("result", {}).get("response_time") for r in records if r["kind"] == "analysis"]
    with open(written, "rb") as handle:
        stored = list(dpkt.pcap.Reader(handle))
    assert len(stored) == len(frames)
    # Each record's time is the one shown for its frame, to the microsecond (dpkt reads them as floats).
    assert [round(ts * 1e6) for ts, _ in stored] == [round(r["time"] * 1e6) for r in frames]
    if shutil.which("tshark"):
        listed = subprocess.run(["tshark", "-r", str(written)], capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(frames)


def test_jsonl_streams_while_capturing_and_sigterm_concludes():
    port = free_port()
    proc = start_capture("-f", f"udp port {port}", "-T", "jsonl")
    server = tf.Server("127.0.0.1", port, clients=64).start()
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.sendto(tf.gie3(0x0001, 0x02), ("127.0.0.1", port))
        first = json.loads(proc.stdout.readline())   # arrives before the capture ends
        assert first["kind"] == "frame" and first["messages"][0]["message"] == "gie3"
        sock.sendto(tf.gie3(0x0003, 0x04), ("127.0.0.1", 1))  # nothing answers this one
        sock.close()
        time.sleep(0.5)
    finally:
        server.stop()
    code, out, err = stop(proc, signal.SIGTERM)
    assert code == 0
    records = jsonl(out)
    assert [m["message"] for r in records if r["kind"] == "frame" for m in r["messages"]] == ["iext", "iex+", "iex+"]
    (assembled,) = [r for r in records if r["kind"] == "analysis"]
    assert assembled["result"]["records"] == 64 and assembled["result"]["request_frame"] == 1


def queued_bytes(stream):
    """How many bytes wait in the pipe behind ``stream``, not yet read."""
    return struct.unpack("i", fcntl.ioctl(stream.fileno(), termios.FIONREAD, b"\0" * 4))[0]


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_sigterm_during_a_blocked_write_loses_no_output(unbuffered):
    """The capture is stopped while its output waits on a full pipe, part of a record written: every
    record still arrives whole. Under PYTHONUNBUFFERED the interrupted write used to return the part's
    length and the rest of the record was dropped."""
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    proc = start_capture("-f", f"udp port {port}", "-T", "jsonl", env=env)
    server = tf.Server("127.0.0.1", port, clients=64).start()
    try:
        for token in range(1, 4):  # each answer is three frames and about 70 KB of JSON: more than a pipe holds
            # each request from its own port: a client's next token ends the response to its previous one, which a
            # loaded machine may not have finished sending yet
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.sendto(tf.gie3(token, token), ("127.0.0.1", port))
        deadline = time.monotonic() + 10
        while queued_bytes(proc.stdout) < 60000 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the capture is now blocked in its write, part of a record in the pipe
    finally:
        server.stop()
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)  # the signal ends the write before the pipe is read (a slow reader)
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=30) == 0, err
    records = jsonl(out)
    assert len([r for r in records if r["kind"] == "frame"]) == 12, err
    assert [r["result"]["records"] for r in records if r["kind"] == "analysis"] == [64, 64, 64]


def _send_server_info_requests(port, count):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _ in range(count):
            sock.sendto(nq.ccreq_server_info(), ("127.0.0.1", port))
            time.sleep(0.05)


def test_count_stops_and_stats_are_printed():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-i", "lo", "-f", f"udp port {port}", "-c", "3",
                             "--stats"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "capturing on lo" in proc.stderr.readline()
    time.sleep(0.3)
    _send_server_info_requests(port, 5)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "Frames: 3" in out and "CCREQ_SERVER_INFO" in out
    assert "3 packets captured" in err


def test_a_burst_of_datagrams_is_not_dropped_by_the_kernel():
    """The capture socket's receive buffer is 8 MiB (Linux's SO_RCVBUFFORCE, which Python's socket module does not
    name): 2,000 datagrams sent as fast as a loop sends them all arrive. With the kernel's default of about 200 KiB,
    which the socket kept while the option's name was missing, most of such a burst was dropped."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", port))  # a listener: no ICMP port unreachable for each datagram
        proc = subprocess.Popen([sys.executable, "-m", "dissect", "-i", "lo", "-f", f"udp port {port}", "-c", "2000",
                                 "-a", "duration:20", "-q", "--stats"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        _STARTED.append(proc)
        assert "capturing on lo" in proc.stderr.readline()
        time.sleep(0.3)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = nq.ccreq_server_info()
            for _ in range(2000):
                sock.sendto(request, ("127.0.0.1", port))
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "2000 packets captured on lo, 0 dropped by the kernel" in err
    assert "Frames: 2000" in out


def test_write_to_standard_output_while_capturing(tmp_path):
    """-i with -w -: the pcap goes to standard output (not to a file named -), every packet in it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-i", "lo", "-f", f"udp port {port}", "-c", "3",
                             "-w", "-"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": ROOT})
    _STARTED.append(proc)
    assert b"capturing on lo" in proc.stderr.readline()
    time.sleep(0.3)
    _send_server_info_requests(port, 5)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and b"3 packets captured" in err
    payloads = [bytes(dpkt.ethernet.Ethernet(data).data.data.data) for _, data in dpkt.pcap.Reader(io.BytesIO(out))]
    assert payloads == [nq.ccreq_server_info()] * 3
    assert os.listdir(tmp_path) == []


def test_duration_stops_with_no_traffic():
    start = time.monotonic()
    code, out, err = run_cli("-i", "lo", "-f", "udp port 9", "-a", "duration:1")
    assert code == 0 and out == "" and "0 packets captured" in err
    assert time.monotonic() - start < 15


def test_write_with_no_traffic_leaves_the_file_header(tmp_path):
    """-w on a capture that saw nothing: a file of no records, its header naming the interface's link type."""
    written = tmp_path / "quiet.pcap"
    code, _, err = run_cli("-i", "lo", "-f", "udp port 9", "-a", "duration:1", "-w", written)
    assert code == 0 and "0 packets captured" in err
    header = written.read_bytes()
    assert len(header) == 24
    magic, major, minor, zone, sigfigs, snaplen, linktype = struct.unpack("<IHHiIII", header)
    assert (magic, major, minor, zone, sigfigs) == (0xA1B2C3D4, 2, 4, 0, 0)
    assert (snaplen, linktype) == (262144, 1)  # loopback is read as Ethernet, as libpcap does
    assert run_cli(written) == (0, "", "")
    written = tmp_path / "quiet.pcapng"
    code, _, err = run_cli("-i", "lo", "-f", "udp port 9", "-a", "duration:1", "-w", written)
    assert code == 0 and "0 packets captured" in err
    blocks = written.read_bytes()
    assert len(blocks) == 28 + 20  # a section header and one interface description
    assert struct.unpack("<IIIHHqI", blocks[:28]) == (0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    assert struct.unpack("<IIHHII", blocks[28:]) == (1, 20, 1, 0, 262144, 20)
    assert run_cli(written) == (0, "", "")


def test_write_pcapng_while_capturing(tmp_path):
    """-w OUT.pcapng (or -F pcapng): the frames as enhanced packet blocks of one interface, their times in
    microseconds, what dissect showed read back the same."""
    port = free_port()
    written = tmp_path / "live.pcapng"
    proc = start_capture("-f", f"udp port {port}", "-c", "3", "-T", "jsonl", "-w", written)
    _send_server_info_requests(port, 3)
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=30) == 0 and "3 packets captured" in err, err
    shown = [r for r in jsonl(out) if r["kind"] == "frame"]
    blocks = written.read_bytes()
    assert blocks[:4] == b"\x0a\x0d\x0d\x0a" and struct.unpack("<IIH", blocks[28:38]) == (1, 20, 1)
    pos, stored = 48, []
    while pos < len(blocks):
        block_type, length, iface, high, low, caplen, wirelen = struct.unpack_from("<IIIIIII", blocks, pos)
        assert (block_type, iface, length) == (6, 0, 32 + caplen + (-caplen % 4))
        stored.append((high << 32 | low, caplen, wirelen))
        pos += length
    assert stored == [(round(r["time"] * 1e6), r["caplen"], r["length"]) for r in shown]
    code, back, _ = run_cli("-T", "jsonl", written)
    assert code == 0
    assert [(r["info"], r["caplen"], r["time"]) for r in jsonl(back) if r["kind"] == "frame"] == \
        [(r["info"], r["caplen"], r["time"]) for r in shown]  # times to the last digit, as from a pcap


def test_errors_are_one_line():
    code, _, err = run_cli("-i", "nosuchif0")
    assert code == 2 and err.count("\n") == 1 and "no such interface: nosuchif0" in err
    code, _, err = run_cli("-i", "lo", "-f", "udp portx 1")
    assert code == 2 and "bad capture filter" in err and "Traceback" not in err
    code, _, err = run_cli("-a", "5s", "-i", "lo")
    assert code == 2 and "duration:SECONDS" in err
    code, _, err = run_cli("-f", "udp", "some.pcap")
    assert (code, err) == (2, "dissect: -f goes with -i IFACE (live capture)\n")
    code, _, err = run_cli("-f", "udp", "-a", "duration:1", "some.pcap")
    assert (code, err) == (2, "dissect: -f, -a go with -i IFACE (live capture)\n")
    code, _, err = run_cli("-i", "lo", "-i", "eth0")  # tshark captures on both; dissect on one, and says so
    assert (code, err) == (2, "dissect: -i lo -i eth0: dissect captures on one interface at a time\n")
    code, _, err = run_cli("-i", "any")
    assert code == 2 and err.startswith("dissect: no such interface: any (interfaces: ") and "1. lo" in err


def test_an_interface_by_its_number_in_the_list():
    """-i takes -D's number, as tshark does: lo's is its index."""
    number = socket.if_nametoindex("lo")
    code, _, err = run_cli("-i", str(number), "-a", "duration:1", "-q", "--stats")
    lines = err.splitlines()
    assert code == 0 and lines[0] == "dissect: capturing on lo"
    assert lines[-1].startswith("dissect: ") and " packets captured on lo" in lines[-1]


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv (util-linux) to drop CAP_NET_RAW")
def test_without_cap_net_raw_is_told_plainly():
    proc = subprocess.run(["setpriv", "--bounding-set", "-net_raw", "--", sys.executable, "-m", "dissect", "-i", "lo"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "dissect: capturing needs root or CAP_NET_RAW"


def test_list_interfaces():
    code, out, _ = run_cli("-D")
    assert code == 0 and any(line.split(". ", 1)[1] == "lo" for line in out.splitlines())


def test_write_onto_a_full_disk_stops_with_the_stats_gathered():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-i", "lo", "-f", f"udp port {port}", "-w", "/dev/full",
                             "--stats", "-a", "duration:20"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert "capturing on lo" in proc.stderr.readline()
    time.sleep(0.3)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(3):
        sock.sendto(nq.ccreq_server_info(), ("127.0.0.1", port))
        time.sleep(0.4)  # the pcap is flushed every half second: the flush meets the full disk
    sock.close()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err
    assert "Frames: " in out and "CCREQ_SERVER_INFO" in out
    lines = err.splitlines()
    assert lines[-1] == "dissect: /dev/full: cannot write: No space left on device: capture stopped"
    assert "packets captured on lo" in lines[-2]
    assert "Traceback" not in err
