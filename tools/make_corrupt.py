"""Write the corpus of damaged capture files in tests/corrupt/ (described in tests/corrupt/README.md).

Each starts from a good file written by dpkt (three NetQuake frames) and damages it
in one way.

    python tools/make_corrupt.py
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import netquake_peer as nq  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "corrupt")
PAYLOADS = [nq.ccreq_server_info(), nq.ccrep_server_info("10.0.0.1:26000", "host", "e1m1", 1, 8),
            nq.ccreq_player_info(0)]


def frames():
    up = ("10.0.0.7", 40000, "10.0.0.1", 26000)
    down = ("10.0.0.1", 26000, "10.0.0.7", 40000)
    return [capkit.ethernet(capkit.udp_packet(*(up if i % 2 == 0 else down), p)) for i, p in enumerate(PAYLOADS)]


def good_pcap(path, snaplen=65535):
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i, f) for i, f in enumerate(frames())], snaplen=snaplen)
    with open(path, "rb") as handle:
        return bytearray(handle.read())


def good_pcapng(path):
    capkit.write_pcapng(path, [(0, capkit.DEFAULT_TS + i, f) for i, f in enumerate(frames())], [1])
    with open(path, "rb") as handle:
        return bytearray(handle.read())


def blocks(data):
    out, pos = [], 0
    while pos < len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        out.append((btype, pos, blen))
        pos += blen
    return out


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as handle:
        handle.write(bytes(data))


def main():
    os.makedirs(OUT, exist_ok=True)
    scratch = os.path.join(OUT, "_scratch")
    pcap = good_pcap(scratch)
    offsets = capkit.record_offsets(pcap)

    write("bad-magic.pcap", b"\x00\x11\x22\x33" + pcap[4:])
    write("truncated-header.pcap", pcap[:10])
    write("record-cut-short.pcap", pcap[:-7])
    huge = bytearray(pcap)
    huge[offsets[1] + 8:offsets[1] + 12] = struct.pack("<I", 0xFFFFFFF0)
    write("huge-record-length.pcap", huge)
    header_cut = pcap[:offsets[2] + 9]
    write("record-header-cut.pcap", header_cut)

    over = good_pcap(scratch, snaplen=60)            # the second frame (89 bytes) is over the snap length
    write("caplen-over-snaplen.pcap", over)

    zero = bytearray(pcap[:offsets[1]])
    zero += struct.pack("<IIII", int(capkit.DEFAULT_TS) + 1, 0, 0, 0)
    zero += pcap[offsets[1]:offsets[2]]
    zero += struct.pack("<IIII", int(capkit.DEFAULT_TS) + 2, 0, 0, 60)
    zero += pcap[offsets[2]:]
    write("zero-length-records.pcap", zero)

    backwards = bytearray(pcap)
    backwards[offsets[2]:offsets[2] + 4] = struct.pack("<I", int(capkit.DEFAULT_TS) - 100)
    write("time-backwards.pcap", backwards)

    ng = good_pcapng(scratch)
    epbs = [b for b in blocks(ng) if b[0] == 6]
    inconsistent = bytearray(ng)
    _, pos, blen = epbs[1]
    inconsistent[pos + blen - 4:pos + blen] = struct.pack("<I", blen + 8)
    write("pcapng-inconsistent-lengths.pcapng", inconsistent)

    unknown = bytearray(ng[:epbs[1][1]])
    unknown += struct.pack("<II", 0x00000BAD, 20) + b"junk" + b"\0" * 4 + struct.pack("<I", 20)
    unknown += ng[epbs[1][1]:]
    write("pcapng-unknown-block.pcapng", unknown)

    bad_iface = bytearray(ng)
    bad_iface[epbs[1][1] + 8:epbs[1][1] + 12] = struct.pack("<I", 7)
    write("pcapng-interface-out-of-range.pcapng", bad_iface)

    write("pcapng-block-cut-short.pcapng", ng[:-10])
    huge_block = bytearray(ng)
    huge_block[epbs[2][1] + 4:epbs[2][1] + 8] = struct.pack("<I", 0xFFFFFFF0)
    write("pcapng-huge-block-length.pcapng", huge_block)

    no_idb = bytearray(ng[:blocks(ng)[1][1]]) + ng[blocks(ng)[2][1]:]  # the interface block removed
    write("pcapng-no-interface.pcapng", no_idb)

    # an if_tsresol option that claims 65535 bytes of a block of 28: its byte after the header is no resolution
    body = struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HH", 9, 0xFFFF) + b"\x00\x00\x00\x00"
    overrun_idb = struct.pack("<II", 1, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))
    write("pcapng-option-overrun.pcapng", ng[:blocks(ng)[1][1]] + overrun_idb + ng[blocks(ng)[2][1]:])

    bad_bom = bytearray(ng)
    bad_bom[8:12] = b"\x01\x02\x03\x04"
    write("pcapng-bad-byte-order.pcapng", bad_bom)

    write("empty.pcap", b"")
    write("text.pcap", b"No.  Time  Source  Destination\n1 0.0 10.0.0.1 10.0.0.2\n")
    os.remove(scratch)
    print("written to", OUT)


if __name__ == "__main__":
    main()
