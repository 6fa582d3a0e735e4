"""Hostile captures, and dissect's peak memory on each.

- tokens:     TeeFrame responses with N distinct tokens that never complete
- streams:    N TCP connections (SYN, then one Soldat line) that never close
- window:     one TCP stream whose first segment never arrives, then N one-byte segments after the gap
- held:       4,096 TCP streams interleaved, each holding N / 4,096 one-byte segments behind a gap that never fills
- lines:      4,090 TCP streams interleaved, each an unfinished Soldat line of N / 4,090 segments of 1,400 bytes
- trickle:    4,090 TCP streams interleaved, each an unfinished Soldat line sent one byte a segment
- ending:     4,096 TCP streams interleaved, each a Soldat request, then server lines held behind a lost one
              until the capture ends
- fragments:  N overlapping IPv4 fragments of datagrams that never complete
- blocks:     pcapng with N packet blocks of nearly 16 MiB each (over the 256 KiB record limit: skipped
              without being held in memory), each followed by a good frame
- sidelong:   pcapng whose interface description carries nearly 16 MiB of options, then N blocks of other kinds
              (name resolution, statistics, a custom block) of nearly 16 MiB each, each followed by a good frame:
              read past in chunks, the interface keeping the options in its first 64 KiB of them
- inflating:  zstd-compressed pcap of N records of 256 KiB of zeros (a GiB at full size in 66 KB: a step of
              decompression is bounded by what it makes, not by what it reads)
- digits:     N TeeFrame responses whose decimal strings are 5000 digits (not numbers) and 4000 digits
              (the longest read as a number)
- steady:     2,000 addresses each asking a NetQuake server once a second, N frames in all (an hour of rate history
              for each address, were it all kept)
- big:        N frames of 262,144 bytes, the largest record: NetQuake server-info replies of text, their IPv4 and UDP
              lengths 0 (as a capture of segmentation offload shows them), each from an address of its own (the text of
              -x, -V and JSON grows with a frame: -j's chunks and the HTML report's are bounded in bytes too)

    python tools/hostile.py [--scale 1.0] [--keep DIR]
"""

import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import dpkt  # noqa: E402
import netquake_peer as nq  # noqa: E402
import soldat_peer as sp  # noqa: E402
import teeframe_peer as tf  # noqa: E402

FULL_SIZES = {"tokens": 1_000_000, "streams": 100_000, "window": 200_000, "held": 1_600_000, "lines": 200_000,
              "trickle": 1_600_000, "ending": 400_000, "fragments": 200_000, "blocks": 16, "sidelong": 16,
              "inflating": 4096, "digits": 2_000, "steady": 3_600_000, "big": 1_000}
FRAMES = {"streams": lambda n: 2 * n, "window": lambda n: n + 3, "held": lambda n: n // 4096 * 4096 + 4096,
          "lines": lambda n: n // 4090 * 4090 + 4090, "trickle": lambda n: n // 4090 * 4090 + 4090,
          "ending": lambda n: n // 4096 * 4096 + 4096,
          "blocks": lambda n: 2 * n, "sidelong": lambda n: n}
SUFFIXES = {"blocks": "pcapng", "sidelong": "pcapng", "inflating": "pcap.zst"}
BLOCK_BYTES = 16 * 1024 * 1024 - 1024  # just under the reader's bound on any pcapng block
MAX_RECORD = 262144                    # the largest record the reader takes
ETHERNET_IPV4 = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"  # the Ethernet header of every frame


class _Writer:
    """Frames straight to a pcap file, without keeping them."""

    def __init__(self, path):
        self.handle = open(path, "wb")
        self.writer = dpkt.pcap.Writer(self.handle, snaplen=65535, linktype=1)
        self.ts = capkit.DEFAULT_TS

    def add(self, frame, ts=None):
        """``frame`` at ``ts``, or 10 µs after the frame before."""
        self.ts = self.ts + 0.00001 if ts is None else ts
        self.writer.writepkt(frame, ts=self.ts)

    def close(self):
        self.handle.close()


def _eth_ipv4(src, dst, proto, ident, offset_units, more, payload):
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, (0x2000 if more else 0) | offset_units,
                         64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return ETHERNET_IPV4 + header + payload


def write_tokens(path, count):
    out = _Writer(path)
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    record = tf.client_record("x", "", 0, 0, 1)
    head = b"\xff" * 10 + b"iext"
    tail = tf.s("0.6.4") + tf.s("flood") + tf.s("dm1") + tf.s(1) + tf.s(1) + tf.s("DM") + tf.s(0) + tf.s(1) + \
        tf.s(16) + tf.s(10) + tf.s(16) + tf.s("") + record
    template = capkit.ethernet(capkit.udp_packet(*server, *client, head + b"0000000\0" + tail))
    at = template.index(b"0000000\0")
    for token in range(count):
        frame = bytearray(template)
        frame[at:at + 7] = b"%07d" % token
        out.add(bytes(frame))
    out.close()


def write_streams(path, count):
    out = _Writer(path)
    line = sp.request()
    for i in range(count):
        client = (f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}", 1024 + i % 60000)
        out.add(capkit.ethernet(capkit.tcp_packet(*client, "10.0.0.5", 13073, b"", seq=999, flags=0x02)))
        out.add(capkit.ethernet(capkit.tcp_packet(*client, "10.0.0.5", 13073, line, seq=1000)))
    out.close()


def write_window(path, count):
    out = _Writer(path)
    client, lobby = ("10.0.0.9", 41000), ("10.0.0.5", 13073)
    out.add(capkit.ethernet(capkit.tcp_packet(*lobby, *client, b"", seq=0, flags=0x02)))
    out.add(capkit.ethernet(capkit.tcp_packet(*lobby, *client, b"f\xa94\n", seq=1)))
    for i in range(count):  # byte 5 never arrives; everything after it is one byte at a time
        out.add(capkit.ethernet(capkit.tcp_packet(*lobby, *client, b"g", seq=6 + i)))
    out.add(capkit.ethernet(capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, b"\x80\x00\x00\x0c\x02QUAKE\x00\x03")))
    out.close()


def _interleaved(path, streams, count, payload):
    """``streams`` connections to the lobby, each opened by a SYN, then ``count`` segments from the lobby in turns:
    segment i of every stream, then segment i + 1. ``payload(i)`` gives segment i's (sequence offset, bytes)."""
    out = _Writer(path)
    lobby = ("10.0.0.5", 13073)
    clients = [(f"10.1.{(s >> 8) & 255}.{s & 255}", 20000 + s) for s in range(streams)]
    for client in clients:
        out.add(capkit.ethernet(capkit.tcp_packet(*lobby, *client, b"", seq=0, flags=0x02)))
    for i in range(max(1, count // streams)):
        offset, data = payload(i)
        for client in clients:
            out.add(capkit.ethernet(capkit.tcp_packet(*lobby, *client, data, seq=1 + offset)))
    out.close()


def write_held(path, count, streams=4096):
    _interleaved(path, streams, count, lambda i: (2 + 2 * i, b"g"))  # byte 0 never comes; nor does every other one


def write_lines(path, count):
    _interleaved(path, 4090, count, lambda i: (1400 * i, (b"g\xa9" if i == 0 else b"") + b"A" * (1400 - 2 * (i == 0))))


def write_trickle(path, count):
    # the first segment holds a type and its separator, so that the stream is claimed
    _interleaved(path, 4090, count, lambda i: (0, b"g\xa9") if i == 0 else (i + 1, b"A"))


def write_ending(path, count):
    line, request = sp.server_entry(sp.SERVERS[0]), sp.request()
    _interleaved(path, 4096, count, lambda i: (0, request) if i < 2 else (len(request) + (i - 1) * len(line), line))


def write_fragments(path, count):
    out = _Writer(path)
    for i in range(count):
        ident = i // 4
        offset_units = (i % 4) * 2            # 16-byte pieces every 16 bytes, each overlapping the next
        out.add(_eth_ipv4("10.0.0.2", "10.0.0.9", 17, ident & 0xFFFF, offset_units, True, bytes([i & 255]) * 24))
    out.close()


SECTION = capkit.pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))  # little-endian, version 1.0


def _good_block(units):
    """An enhanced packet block on interface 0 at ``units`` of its time resolution: a NetQuake server-info request."""
    frame = capkit.ethernet(capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, nq.ccreq_server_info()))
    return capkit.pcapng_block(6, struct.pack("<IIIII", 0, units >> 32, units & 0xFFFFFFFF, len(frame), len(frame))
                               + frame)


def write_blocks(path, count, block_bytes=BLOCK_BYTES):
    """Each oversized enhanced packet block is written in pieces: the writer holds none of it either."""
    caplen = block_bytes - 32
    with open(path, "wb") as handle:
        handle.write(SECTION + capkit.pcapng_block(1, struct.pack("<HHI", 1, 0, 65535)))
        ts = int(capkit.DEFAULT_TS * 1e6)
        for _ in range(count):
            handle.write(struct.pack("<IIIIIII", 6, block_bytes, 0, ts >> 32, ts & 0xFFFFFFFF, caplen, caplen))
            _write_repeated(handle, b"\xee", caplen)
            handle.write(struct.pack("<I", block_bytes))
            handle.write(_good_block(ts + 10))
            ts += 20


def write_sidelong(path, count, block_bytes=BLOCK_BYTES):
    """The interface's options (``block_bytes`` in all): its time resolution first (nanoseconds), then empty comments;
    the other blocks cycle through types 4, 5 and 0x40000BAD, their bodies a byte repeated. Written in pieces."""
    comments = (block_bytes - 20 - 8 - 4) // 4  # after the interface's fields and its resolution; before the end
    with open(path, "wb") as handle:
        handle.write(SECTION)
        handle.write(struct.pack("<IIHHI", 1, block_bytes, 1, 0, 65535) + struct.pack("<HHB3x", 9, 1, 9))
        _write_repeated(handle, struct.pack("<HH", 1, 0), comments)
        handle.write(struct.pack("<HHI", 0, 0, block_bytes))
        ts = int(capkit.DEFAULT_TS * 1e9)
        for n in range(count):
            handle.write(struct.pack("<II", (4, 5, 0x40000BAD)[n % 3], block_bytes))
            _write_repeated(handle, b"\xee", block_bytes - 12)
            handle.write(struct.pack("<I", block_bytes))
            handle.write(_good_block(ts))
            ts += 10_000


def write_inflating(path, count):
    """Written through zstd's stream writer, a record at a time: neither the GiB nor its compressed form is held."""
    import zstandard
    record = struct.pack("<IIII", int(capkit.DEFAULT_TS), 0, MAX_RECORD, MAX_RECORD) + bytes(MAX_RECORD)
    with open(path, "wb") as handle, zstandard.ZstdCompressor().stream_writer(handle) as writer:
        writer.write(capkit.pcap_header(snaplen=MAX_RECORD))
        for _ in range(count):
            writer.write(record)


def _write_repeated(handle, piece, count):
    """``piece`` ``count`` times, a MiB or so a write."""
    run = max(1, (1 << 20) // len(piece))
    for start in range(0, count, run):
        handle.write(piece * min(run, count - start))


def write_digits(path, count):
    out = _Writer(path)
    server, client = ("10.0.0.2", 8303), ("10.0.0.9", 50000)
    clients = [("tee", "", "7" * 5000, "9" * 4000, 1)] * 6
    payload = tf.iext(0x2A, clients, map_size="8" * 5000)
    frame = capkit.ethernet(capkit.udp_packet(*server, *client, payload))
    for _ in range(count):
        out.add(frame)
    out.close()


def write_steady(path, count, addresses=2000):
    """Each second, every one of ``addresses`` sources asks the server once (the frames of one second spread over it)."""
    frames = [capkit.ethernet(capkit.udp_packet(f"10.{n // 250}.{n % 250}.1", 50000, "203.0.113.7", 26000,
                                                nq.ccreq_server_info())) for n in range(addresses)]
    out = _Writer(path)
    for index in range(count):
        second, n = divmod(index, addresses)
        out.add(frames[n], capkit.DEFAULT_TS + second + n / addresses)
    out.close()


def write_big(path, count):
    body = MAX_RECORD - 14 - 20 - 8
    payload = (b"\x80\x00\xff\xff\x83" + bytes(range(32, 127)) * (body // 95 + 1))[:body]

    def frames():
        for n in range(count):
            udp = struct.pack("!HHHH", 26000, 40000 + n % 20000, 0, 0) + payload
            header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 0, n & 0xFFFF, 0, 64, 17, 0,
                                 socket.inet_aton(f"10.0.{n // 250 % 250}.{n % 250 + 1}"), socket.inet_aton("10.9.9.9"))
            yield capkit.DEFAULT_TS + n, ETHERNET_IPV4 + header + udp
    capkit.write_pcap(path, frames(), snaplen=MAX_RECORD)


WRITERS = {"tokens": write_tokens, "streams": write_streams, "window": write_window, "held": write_held,
           "lines": write_lines, "trickle": write_trickle, "ending": write_ending, "fragments": write_fragments,
           "blocks": write_blocks, "sidelong": write_sidelong, "inflating": write_inflating,
           "digits": write_digits, "steady": write_steady, "big": write_big}


def measure(path, args=()):
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen([sys.executable, "-m", "dissect", *args, path], stdout=devnull,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, time.perf_counter() - start, err


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full sizes")
    parser.add_argument("--keep", help="write the captures here and keep them")
    parser.add_argument("--jobs", type=int, default=1,
                        help="also run with -j JOBS and report the summed PSS of all its processes")
    parser.add_argument("cases", nargs="*", default=list(WRITERS))
    args = parser.parse_args()
    workdir = args.keep or tempfile.mkdtemp(prefix="dissect-hostile-")
    os.makedirs(workdir, exist_ok=True)
    jobs_head = f" {f'-j {args.jobs} PSS MB':>14}" if args.jobs > 1 else ""
    print(f"{'capture':<10} {'frames':>10} {'MB file':>8} {'peak RSS MB':>12} {'seconds':>8} {'exit':>5}{jobs_head}")
    try:
        for name in args.cases:
            count = max(1, int(FULL_SIZES[name] * args.scale))
            path = os.path.join(workdir, f"hostile-{name}.{SUFFIXES.get(name, 'pcap')}")
            WRITERS[name](path, count)
            code, rss, seconds, err = measure(path, ["--stats"])
            frames = FRAMES.get(name, lambda n: n)(count)
            jobs = ""
            if args.jobs > 1:
                import bench
                pss = bench.tree_peak_pss([sys.executable, "-m", "dissect", "-j", str(args.jobs), "--stats", path])
                jobs = f" {pss:>14.1f}"
            print(f"{name:<10} {frames:>10,} {os.path.getsize(path) / 1e6:>8.1f} {rss:>12.1f} {seconds:>8.1f} "
                  f"{code:>5}{jobs}", flush=True)
            if code not in (0, 1):
                print(err.strip()[:500])
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
