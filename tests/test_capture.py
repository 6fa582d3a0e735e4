"""Capture reading: both file formats in all their variants, every link type, damaged files."""

import socket
import struct

import capkit
import dpkt
import netquake_peer as nq
import pytest
from conftest import capture, jsonl, run_cli

from dissect.capture.files import CaptureError, read_capture
from dissect.capture.sources import CaptureFiles, open_capture
from dissect.capture.layers import decode_frame

PAYLOAD = nq.ccreq_server_info()
TS = capkit.DEFAULT_TS


def udp4():
    return capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, PAYLOAD)


def udp6():
    return capkit.udp_packet("2001:db8::7", 40000, "2001:db8::1", 26000, PAYLOAD)


@pytest.mark.parametrize("link", ["ethernet", "sll", "sll2", "null", "raw"])
@pytest.mark.parametrize("make_ip", [udp4, udp6], ids=["ipv4", "ipv6"])
def test_every_link_type_reaches_the_payload(tmp_path, link, make_ip):
    linktype, wrap = capkit.LINKTYPES[link]
    path = tmp_path / f"{link}.pcap"
    frame = wrap(make_ip())
    capkit.write_pcap(path, [(TS, frame)], linktype=linktype)
    frames = list(open_capture(str(path)))
    assert len(frames) == 1 and frames[0].linktype == linktype
    packet = decode_frame(frames[0].data, linktype)
    assert packet.transport == "udp" and (packet.sport, packet.dport) == (40000, 26000)
    assert packet.payload == PAYLOAD
    assert packet.payload_offset == len(frame) - len(PAYLOAD)
    expected_src = "10.0.0.7" if make_ip is udp4 else "2001:db8::7"
    assert packet.src == expected_src



def test_ipv6_addresses_as_inet_ntop_writes_them_through_the_slot_cache():
    # the texts are kept by slot: two addresses that share a slot take turns (these two, 65,536 apart, share one in
    # a table of up to 65,536 slots), the zero address is not taken for an empty slot's, and a repeated address comes
    # back as the same text
    same_slot = ["2001:db8::1", "2001:db8::1:1"]
    addresses = ["::", "::1", *same_slot, "fe80::1:2:3:4", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:10.0.0.1"]
    for src in [*addresses, *same_slot, *reversed(addresses)]:
        dst = addresses[(addresses.index(src) + 1) % len(addresses)]
        frame = capkit.ethernet(capkit.udp_packet(src, 40000, dst, 26000, PAYLOAD))
        packet = decode_frame(frame, 1)
        expected = [socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, a)) for a in (src, dst)]
        assert [packet.src, packet.dst] == expected
    again = decode_frame(capkit.ethernet(capkit.udp_packet("fe80::1:2:3:4", 1, "::1", 2, PAYLOAD)), 1)
    assert again.src is decode_frame(capkit.ethernet(capkit.udp_packet("fe80::1:2:3:4", 1, "::1", 2, PAYLOAD)), 1).src

def test_vlan_tagged_ethernet():
    frame = capkit.ethernet(udp4(), vlan=42)
    packet = decode_frame(frame, 1)
    assert [layer.key for layer in packet.layers] == ["eth", "vlan", "ip", "udp"]
    assert "ID: 42" in packet.layers[1].summary
    assert packet.payload == PAYLOAD and packet.payload_offset == 14 + 4 + 20 + 8


@pytest.mark.parametrize("link", ["sll", "sll2"])
def test_vlan_tags_behind_a_linux_cooked_header(link):
    """SLL's protocol field names a tag as Ethernet's does (tshark: sll:ethertype:vlan:ethertype:ip): here QinQ, an
    outer tag (0x88A8, VID 7) that names the inner (0x8100, VID 42), which names IPv4."""
    frame = capkit.LINKTYPES[link][1](udp4())
    at = 16 if link == "sll" else 20
    header = frame[:14] + b"\x88\xa8" if link == "sll" else b"\x88\xa8" + frame[2:20]
    tagged = header + struct.pack("!HH", 7, 0x8100) + struct.pack("!HH", 42, 0x0800) + bytes(udp4())
    packet = decode_frame(tagged, capkit.LINKTYPES[link][0])
    assert [(layer.key, layer.offset, layer.length) for layer in packet.layers] == [
        (link, 0, at), ("vlan", at, 4), ("vlan", at + 4, 4), ("ip", at + 8, 20), ("udp", at + 28, 8)]
    assert "ID: 42" in packet.layers[2].summary
    assert (packet.src, packet.sport, packet.payload) == ("10.0.0.7", 40000, PAYLOAD)


def test_an_ipv6_link_type_or_ethertype_carrying_another_version_is_a_bad_header():
    """EtherType 0x86DD or LINKTYPE 229 with an IPv4 packet behind, or an IPv6 header whose version nibble is 5: no
    addresses read out of the wrong header, nothing decoded past it (tshark: Bogus IPv6 version)."""
    v4 = bytes(udp4())
    v6 = bytearray(bytes(udp6()))
    v6[0] = 0x50 | v6[0] & 0x0F
    for data, linktype in ((capkit.ethernet(udp6())[:12] + b"\x86\xdd" + v4, 1), (v4, 229), (bytes(v6), 229)):
        packet = decode_frame(data, linktype)
        assert (packet.problem, packet.src, packet.transport, packet.payload) == ("bad IPv6 header", None, None, None)
    from dissect.capture.layers import ethernet_ip_pair
    assert ethernet_ip_pair(capkit.ethernet(udp6())[:12] + b"\x86\xdd" + v4) is None  # -j's owner: as decoded


def test_a_transport_header_the_frame_ends_inside_still_shows_its_ports():
    """tshark shows the ports of a UDP header cut after 6 bytes, a TCP header after 10; nothing is carried. Under 4
    bytes, no port."""
    for build, kept, name in ((capkit.udp_packet, 6, "UDP"), (capkit.tcp_packet, 10, "TCP"), (capkit.udp_packet, 3,
                                                                                            "UDP")):
        frame = capkit.ethernet(build("10.0.0.7", 40000, "10.0.0.1", 26000, PAYLOAD))
        packet = decode_frame(frame[:14 + 20 + kept], 1)
        ports = (40000, 26000) if kept >= 4 else (None, None)
        assert (packet.problem, (packet.sport, packet.dport), packet.transport, packet.payload) == (
            f"{name} header cut short", ports, None, None)


def test_layers_not_kept_while_decoding_are_made_when_read():
    # the summary's path: no Layer is made while decoding, the same ones when a view asks for them
    frame = capkit.ethernet(udp4(), vlan=42)
    light = decode_frame(frame, 1, keep_layers=False)
    assert (light.src, light.sport, light.dport, light.payload) == ("10.0.0.7", 40000, 26000, PAYLOAD)
    assert [(layer.key, layer.offset, layer.length, layer.summary) for layer in light.layers] == [
        ("eth", 0, 14, f"Ethernet II, Src: {frame[6:12].hex(':')}, Dst: {frame[0:6].hex(':')}"),
        ("vlan", 14, 4, "802.1Q Virtual LAN, PRI: 0, ID: 42"),
        ("ip", 18, 20, "Internet Protocol Version 4, Src: 10.0.0.7, Dst: 10.0.0.1"),
        ("udp", 38, 8, "User Datagram Protocol, Src Port: 40000, Dst Port: 26000")]
    assert light.layers is light.layers  # made once


def test_addresses_that_share_a_slot_of_the_text_cache_each_keep_their_text():
    """IPv4 texts are kept in 4,096 slots picked by the address's low bits: 10.0.0.7 and 10.0.16.7 take the
    same one, 255.255.255.255 the last; each frame still shows its own addresses."""
    pairs = [("10.0.0.7", "10.0.16.7"), ("10.0.16.7", "10.0.0.7"), ("10.0.0.7", "10.0.0.7"),
             ("255.255.255.255", "0.0.15.255"), ("0.0.0.0", "192.168.0.0")] * 2
    for src, dst in pairs:
        frame = capkit.ethernet(capkit.udp_packet(src, 40000, dst, 26000, PAYLOAD))
        packet = decode_frame(frame, 1)
        assert (packet.src, packet.dst) == (src, dst)


def test_ports_that_share_a_slot_of_the_port_cache_each_keep_their_number():
    """Port objects are kept in 1,024 slots picked by the port's low bits: 26000 and 27024 take the same one,
    65535 the last; each frame shows its own ports (UDP and TCP), and a port met again while it holds its
    slot is the very object of the last time (the tables keyed by ports find it by identity)."""
    pairs = [(26000, 27024), (27024, 26000), (26000, 26000), (65535, 1023), (0, 1024)] * 2
    for sport, dport in pairs:
        for build in (capkit.udp_packet, capkit.tcp_packet):
            packet = decode_frame(capkit.ethernet(build("10.0.0.7", sport, "10.0.0.1", dport, PAYLOAD)), 1)
            assert (packet.sport, packet.dport) == (sport, dport)
    first = decode_frame(capkit.ethernet(capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, PAYLOAD)), 1)
    again = decode_frame(capkit.ethernet(capkit.udp_packet("10.0.0.9", 40000, "10.0.0.1", 26000, PAYLOAD)), 1)
    assert again.sport is first.sport and again.dport is first.dport


def test_ethernet_padding_is_not_payload():
    frame = capkit.ethernet(capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 26000, b"\x80\x00\x00\x06\x03\x00"))
    padded = frame + b"\x00" * (60 - len(frame))
    assert decode_frame(padded, 1).payload == b"\x80\x00\x00\x06\x03\x00"


def test_pcap_microsecond_and_nanosecond_timestamps(tmp_path):
    for nano in (False, True):
        path = tmp_path / f"ts-{nano}.pcap"
        capkit.write_pcap(path, [(TS + 0.123456, capkit.ethernet(udp4()))], nano=nano)
        with open(path, "rb") as handle:
            magic = handle.read(4)
        assert magic == (b"\x4d\x3c\xb2\xa1" if nano else b"\xd4\xc3\xb2\xa1")
        frame = next(open_capture(str(path)))
        assert frame.ts == pytest.approx(TS + 0.123456, abs=1e-6)


def _big_endian_pcap(path, frames, nano=False):
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    with open(path, "wb") as handle:
        handle.write(struct.pack(">IHHiIII", magic, 2, 4, 0, 0, 65535, 1))
        for ts, data in frames:
            sec = int(ts)
            frac = int(round((ts - sec) * (1e9 if nano else 1e6)))
            handle.write(struct.pack(">IIII", sec, frac, len(data), len(data)) + data)


def test_pcap_big_endian_both_resolutions(tmp_path):
    for nano in (False, True):
        path = tmp_path / f"be-{nano}.pcap"
        _big_endian_pcap(path, [(TS + 0.5, capkit.ethernet(udp4()))], nano=nano)
        frames = list(open_capture(str(path)))
        assert len(frames) == 1
        assert frames[0].ts == pytest.approx(TS + 0.5)
        assert decode_frame(frames[0].data, frames[0].linktype).payload == PAYLOAD


def test_pcapng_interfaces_with_different_link_types(tmp_path):
    path = tmp_path / "multi.pcapng"
    ip = udp4()
    capkit.write_pcapng(path, [(0, TS, capkit.ethernet(ip)), (1, TS + 1, capkit.raw(ip)),
                               (2, TS + 2, capkit.sll2(udp6()))], [1, 101, 276])
    frames = list(open_capture(str(path)))
    assert [f.linktype for f in frames] == [1, 101, 276]
    assert [f.iface for f in frames] == [0, 1, 2]
    assert [round(f.ts - TS, 6) for f in frames] == [0.0, 1.0, 2.0]
    for f in frames:
        assert decode_frame(f.data, f.linktype).payload == PAYLOAD
    # dpkt's own reader, as an independent check, sees the same bytes.
    with open(path, "rb") as handle:
        assert [bytes(buf) for _, buf in dpkt.pcapng.Reader(handle)] == [f.data for f in frames]


def test_pcapng_tsresol_nanoseconds(tmp_path):
    path = tmp_path / "ns.pcapng"
    shb = dpkt.pcapng.SectionHeaderBlockLE()
    idb = dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=1, snaplen=65535, opts=[
        dpkt.pcapng.PcapngOptionLE(code=9, data=b"\x09"), dpkt.pcapng.PcapngOptionLE(code=0)])
    with open(path, "wb") as handle:
        writer = dpkt.pcapng.Writer(handle, shb=shb, idb=idb)
        ts_ns = 1700000000_123456789
        epb = dpkt.pcapng.EnhancedPacketBlockLE(iface_id=0, pkt_data=capkit.ethernet(udp4()),
                                                ts_high=ts_ns >> 32, ts_low=ts_ns & 0xFFFFFFFF)
        writer.writepkt(epb)
    frame = next(open_capture(str(path)))
    assert frame.ts == pytest.approx(1700000000.123456789, abs=1e-6)


def test_truncated_frame_is_decoded_and_flagged():
    code, out, err = run_cli("-T", "jsonl", capture("netquake-damaged.pcap"))
    records = jsonl(out)
    snapped = records[10]
    assert snapped["caplen"] == 60 and snapped["length"] == 85
    assert [f["code"] for f in snapped["findings"]] == ["capture.truncated_frame"]
    msg = snapped["messages"][0]
    assert msg["message"] == "CCREP_SERVER_INFO"
    cut = msg["fields"][3]
    assert (cut["key"], cut["offset"], cut["length"], cut["value"]) == \
        ("netquake.control.server_address", 5, 13, "10.0.0.1:2600")
    assert [(f["code"], f["offset"], f["length"]) for f in msg["findings"]] == [("capture.cut_message", 18, 0)]
    assert snapped["info"] == "CCREP_SERVER_INFO [Packet size limited during capture]"


def test_unknown_link_type_still_gets_a_record(tmp_path):
    path = tmp_path / "unknown.pcap"
    capkit.write_pcap(path, [(TS, b"\x01\x02\x03\x04"), (TS + 1, b"")], linktype=147)
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0
    records = jsonl(out)
    assert [r["frame"] for r in records] == [1, 2]
    assert records[0]["protocol"] == "frame" and records[0]["messages"] == []
    assert "link type 147" in records[0]["info"]


# -- damaged files: exit 2 with a one-line reason, after every frame before the damage ----------------

def _good_pcap(tmp_path, count=3):
    path = tmp_path / "good.pcap"
    capkit.write_pcap(path, [(TS + i, capkit.ethernet(udp4())) for i in range(count)])
    return path


def _check_fatal(path, frames_before, reason):
    code, out, err = run_cli(path)
    assert code == 2
    assert len(out.splitlines()) == frames_before
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dissect: ") and reason in lines[0]
    assert "Traceback" not in err


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(b"")
    _check_fatal(path, 0, "too short")


def test_text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are not packets\n")
    _check_fatal(path, 0, "not a pcap or pcapng file")


def test_record_cut_in_the_middle(tmp_path):
    good = _good_pcap(tmp_path).read_bytes()
    path = tmp_path / "cut.pcap"
    path.write_bytes(good[:-10])
    _check_fatal(path, 2, "record 3 cut short")


def test_absurd_record_length(tmp_path):
    good = bytearray(_good_pcap(tmp_path).read_bytes())
    second = 24 + 16 + (len(good) - 24) // 3 - 16
    good[second + 8:second + 12] = struct.pack("<I", 0xFFFFFFF0)
    path = tmp_path / "absurd.pcap"
    path.write_bytes(bytes(good))
    _check_fatal(path, 1, "claims 4294967280 captured bytes")


def test_missing_file():
    code, out, err = run_cli("/nonexistent/x.pcap")
    assert code == 2 and "cannot open" in err and "Traceback" not in err


def test_pcapng_enhanced_block_header_fields(tmp_path):
    """An enhanced packet block's own wire length, its interface's if_tsoffset and if_tsresol, and a captured
    length one byte longer than the block holds (its trailer must not become packet bytes)."""
    packet = capkit.ethernet(udp4())
    options = struct.pack("<HHB3x", 9, 1, 3) + struct.pack("<HHq", 14, 8, 1_000_000) + struct.pack("<HH", 0, 0)
    room = 20 + len(packet) + (-len(packet) % 4)  # what the block body holds before its trailer
    path = tmp_path / "fields.pcapng"
    path.write_bytes(
        SHB + capkit.pcapng_block(1, struct.pack("<HHI", 1, 0, 65535) + options)  # ms, from second 1,000,000
        + capkit.pcapng_block(6, struct.pack("<IIIII", 0, 0, 1234, len(packet), 1500) + packet)
        + capkit.pcapng_block(6, struct.pack("<IIIII", 0, 0, 5678, room - 20 + 1, 1500) + packet))
    good, cut = list(open_capture(str(path)))
    assert (good.caplen, good.wirelen, good.data, good.error) == (len(packet), 1500, packet, None)
    assert good.ts == pytest.approx(1_000_001.234, abs=1e-9)
    assert (cut.caplen, cut.wirelen, cut.data) == (0, 1500, b"")
    assert cut.ts == pytest.approx(1_000_005.678, abs=1e-9)
    at = 28 + (20 + len(options)) + 12 + room
    assert cut.error == f"packet block at byte {at} claims {room - 19} captured bytes but holds {room - 20}"


def test_a_simple_packet_block_takes_the_previous_packets_time(tmp_path):
    """A simple packet block carries no time: it takes the packet's before it (not 1970, which read as a jump back
    and a 56-year capture); one first in the file has the interface's offset alone (0 here), as before."""
    packet = capkit.ethernet(udp4())
    interface = capkit.pcapng_block(1, struct.pack("<HHI", 1, 0, 65535))
    units = 1_700_000_000_250_000  # microseconds
    enhanced = capkit.pcapng_block(6, struct.pack("<IIIII", 0, units >> 32, units & 0xFFFFFFFF, len(packet),
                                                  len(packet)) + packet)
    simple = capkit.pcapng_block(3, struct.pack("<I", len(packet)) + packet)
    path = tmp_path / "simple.pcapng"
    path.write_bytes(SHB + interface + simple + enhanced + simple)
    first, timed, after = list(open_capture(str(path)))
    assert (first.ts, timed.ts, after.ts) == (0.0, 1_700_000_000.25, 1_700_000_000.25)
    assert after.data == packet and after.error is None
    code, out, err = run_cli("-T", "jsonl", path)
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert code == 0 and [f["code"] for f in records[2]["findings"]] == []  # no capture.time_backwards


def test_pcapng_inconsistent_block_length(tmp_path):
    path = tmp_path / "bad.pcapng"
    capkit.write_pcapng(path, [(0, TS, capkit.ethernet(udp4())), (0, TS + 1, capkit.ethernet(udp4()))], [1])
    data = bytearray(path.read_bytes())
    data[-4:] = struct.pack("<I", 999)
    path.write_bytes(bytes(data))
    _check_fatal(path, 1, "inconsistent lengths")


def test_pcapng_interface_out_of_range_resumes(tmp_path):
    path = tmp_path / "iface.pcapng"
    capkit.write_pcapng(path, [(0, TS, capkit.ethernet(udp4())), (0, TS + 1, capkit.ethernet(udp4())),
                               (0, TS + 2, capkit.ethernet(udp4()))], [1])
    data = bytearray(path.read_bytes())
    # Point the second enhanced packet block at interface 5.
    blocks, pos = [], 0
    while pos < len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        blocks.append((btype, pos))
        pos += blen
    second_epb = [p for t, p in blocks if t == 6][1]
    data[second_epb + 8:second_epb + 12] = struct.pack("<I", 5)
    path.write_bytes(bytes(data))
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0
    records = jsonl(out)
    assert [r["frame"] for r in records] == [1, 2, 3]
    assert records[1]["findings"][0]["code"] == "capture.corrupt"
    assert "interface 5" in records[1]["findings"][0]["message"]
    assert records[2]["protocol"] == "netquake"


SHB = capkit.pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
IDB = capkit.pcapng_block(1, struct.pack("<HHI", 1, 0, 65535))  # Ethernet, microseconds


def _epb(interface, units, frame):
    return capkit.pcapng_block(6, struct.pack("<IIIII", interface, units >> 32, units & 0xFFFFFFFF, len(frame),
                                              len(frame)) + frame)


def test_pcapng_keeps_at_most_max_interfaces_a_section(tmp_path):
    """A section describing more interfaces than MAX_INTERFACES keeps the first ones: a packet on the last one kept
    is dissected, one on the next is a frame saying why it has no bytes, and the reading goes on."""
    from dissect.capture.files import MAX_INTERFACES
    frame, micros = capkit.ethernet(udp4()), int(TS * 1_000_000)
    path = tmp_path / "interfaces.pcapng"
    path.write_bytes(SHB + IDB * (MAX_INTERFACES + 2) + _epb(MAX_INTERFACES - 1, micros, frame)
                     + _epb(MAX_INTERFACES, micros + 1_000_000, frame) + _epb(0, micros + 2_000_000, frame))
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0 and err == ""
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert [(r["frame"], r["protocol"]) for r in records] == [(1, "netquake"), (2, "frame"), (3, "netquake")]
    (finding,) = records[1]["findings"]
    assert finding["code"] == "capture.corrupt" and (
        f"names interface {MAX_INTERFACES}, past the first {MAX_INTERFACES} of its section, which are all that are "
        f"kept (" in finding["message"])


def _idb(comment_bytes, offset_after=False):
    """An Ethernet interface counting milliseconds, then a comment of ``comment_bytes`` (a multiple of 4, at most
    65532), then an offset of 7 seconds: before the comment, or after it where ``offset_after``."""
    resolution, offset = struct.pack("<HHB3x", 9, 1, 3), struct.pack("<HHq", 14, 8, 7)
    comment = struct.pack("<HH", 1, comment_bytes) + b"c" * comment_bytes
    options = resolution + (comment + offset if offset_after else offset + comment) + struct.pack("<HH", 0, 0)
    return capkit.pcapng_block(1, struct.pack("<HHI", 1, 0, 65535) + options)


@pytest.mark.parametrize("comment_bytes, kept", [(65536 - 28, True), (65536 - 16, False)])
def test_pcapng_interface_keeps_the_options_of_its_first_max_options_bytes(tmp_path, comment_bytes, kept):
    """An interface description is read whole up to MAX_OPTIONS bytes of options. A longer one is read past in
    chunks: the options that lie in its first MAX_OPTIONS bytes count (the resolution), those after do not (the
    offset), and the interface's first packet says so, once; it is dissected all the same."""
    from dissect.capture.files import MAX_OPTIONS
    idb = _idb(comment_bytes, offset_after=True)
    assert len(idb) - 20 == (MAX_OPTIONS if kept else MAX_OPTIONS + 12)  # the offset's value past them
    frame = capkit.ethernet(udp4())
    path = tmp_path / "idb.pcapng"
    path.write_bytes(SHB + idb + _epb(0, 1500, frame) + _epb(0, 2500, frame))
    frames = list(open_capture(str(path)))
    assert [(f.data, f.iface) for f in frames] == [(frame, 0), (frame, 0)]
    assert [f.ts for f in frames] == ([8.5, 9.5] if kept else [1.5, 2.5])
    note = (f"interface 0's description block at byte 28 is {len(idb)} bytes long, more than {MAX_OPTIONS} bytes of "
            f"options: the options past them were not read")
    assert [f.error for f in frames] == ([None, None] if kept else [note, None])
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0 and err == ""
    records = jsonl(out)
    assert [r["protocol"] for r in records] == ["netquake", "netquake"]
    assert [[(f["code"], f["severity"]) for f in r["findings"]] for r in records] == \
        ([[], []] if kept else [[("capture.corrupt", "warning")], []])


def test_pcapng_long_interface_notes_belong_to_their_section(tmp_path):
    """Interface 1's note goes to its first packet, after interface 0's packets; a new section's interfaces carry
    none of the last section's notes."""
    frame = capkit.ethernet(udp4())
    path = tmp_path / "sections.pcapng"
    long_idb = _idb(65532)
    path.write_bytes(SHB + _idb(0) + long_idb + _epb(0, 1000, frame) + _epb(1, 2000, frame) + _epb(1, 3000, frame)
                     + SHB + long_idb + SHB + _idb(0) + _epb(0, 4000, frame))
    frames = list(open_capture(str(path)))
    assert [f.ts for f in frames] == [8.0, 9.0, 10.0, 11.0]
    assert [f.error is not None for f in frames] == [False, True, False, False]
    assert frames[1].error.startswith(f"interface 1's description block at byte {len(SHB) + len(_idb(0))} is "
                                      f"{len(long_idb)} bytes long")


@pytest.mark.parametrize("block_type", [0x0A0D0D0A, 4, 5, 0x40000BAD])
def test_pcapng_long_blocks_other_than_packets_are_read_past(tmp_path, block_type):
    """A section header, name resolution, statistics or custom block longer than a packet block may be is read past
    in chunks: the packets on both sides are read; one cut short or with a wrong trailer ends the file."""
    from dissect.capture.files import MAX_PACKET_BLOCK
    frame = capkit.ethernet(udp4())
    body = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) if block_type == 0x0A0D0D0A else b""
    long_block = capkit.pcapng_block(block_type, body + b"\xee" * (MAX_PACKET_BLOCK - len(body)))
    assert len(long_block) == MAX_PACKET_BLOCK + 12
    middle = long_block + (IDB if block_type == 0x0A0D0D0A else b"")
    data = SHB + IDB + _epb(0, 1_000_000, frame) + middle + _epb(0, 2_000_000, frame)
    path = tmp_path / "long.pcapng"
    path.write_bytes(data)
    frames = list(open_capture(str(path)))
    assert [(f.ts, f.data, f.error) for f in frames] == [(1.0, frame, None), (2.0, frame, None)]
    at = len(SHB) + len(IDB) + len(_epb(0, 0, frame))
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:at + len(long_block) - 8])
    _check_fatal(cut, 1, f"block at byte {at} cut short: it claims {len(long_block)} bytes")
    wrong = tmp_path / "wrong.pcapng"
    end = at + len(long_block)
    wrong.write_bytes(data[:end - 4] + struct.pack("<I", 1234) + data[end:])
    _check_fatal(wrong, 1, f"block at byte {at} has inconsistent lengths ({len(long_block)} at its start, 1234 at "
                           f"its end)")


def test_pcapng_packet_blocks_over_the_record_limit_are_skipped(tmp_path):
    """One limit for both formats: 256 KiB captured bytes. A longer pcapng packet block is a corrupt record,
    skipped without being read whole; one that claims more than 256 KiB captured is corrupt too."""
    from dissect.capture.files import MAX_PACKET_BLOCK, MAX_RECORD
    path = tmp_path / "big.pcapng"
    good = capkit.ethernet(udp4())
    capkit.write_pcapng(path, [(0, TS, good), (0, TS + 1, b"\xaa" * 400000), (0, TS + 2, b"\xbb" * (MAX_RECORD + 1)),
                               (0, TS + 3, good)], [1])
    data = path.read_bytes()
    blocks, pos = [], 0
    while pos < len(data):
        blocks.append((pos,) + struct.unpack_from("<II", data, pos))
        pos += blocks[-1][2]
    epbs = [(at, length) for at, kind, length in blocks if kind == 6]
    assert [length for _, length in epbs] == [32 + len(good) + 2, 32 + 400000, 32 + MAX_RECORD + 4, 32 + len(good) + 2]
    assert epbs[1][1] > MAX_PACKET_BLOCK >= epbs[2][1]
    frames = list(open_capture(str(path)))
    assert [f.number for f in frames] == [1, 2, 3, 4]
    assert [f.data for f in frames] == [good, b"", b"", good]
    assert [(f.caplen, f.wirelen, f.linktype) for f in frames[1:3]] == [(0, 400000, 1), (0, MAX_RECORD + 1, 1)]
    assert [round(f.ts - TS, 6) for f in frames] == [0.0, 1.0, 2.0, 3.0]
    assert frames[1].error == (f"packet block at byte {epbs[1][0]} is 400032 bytes long, more than a record may be "
                               f"(262144 captured bytes, 65536 of options); skipped")
    assert frames[2].error == (f"packet block at byte {epbs[2][0]} claims 262145 captured bytes, more than any link "
                               f"allows (262144)")
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    records = jsonl(out)
    assert [r["frame"] for r in records] == [1, 2, 3, 4]
    for record in records[1:3]:
        assert [(f["code"], f["severity"]) for f in record["findings"]] == [("capture.corrupt", "error")]
        assert record["info"] == "[corrupt record]"
    assert records[3]["protocol"] == "netquake" and records[3]["messages"][0]["message"] == "CCREQ_SERVER_INFO"


def test_pcapng_oversized_block_cut_short_or_with_a_wrong_trailer_is_fatal(tmp_path):
    path = tmp_path / "big.pcapng"
    capkit.write_pcapng(path, [(0, TS, capkit.ethernet(udp4())), (0, TS + 1, b"\xaa" * 400000)], [1])
    data = path.read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:-1000])
    _check_fatal(cut, 1, "cut short: it claims 400032 bytes")
    wrong = tmp_path / "wrong.pcapng"
    wrong.write_bytes(data[:-4] + struct.pack("<I", 1234))
    _check_fatal(wrong, 1, "inconsistent lengths (400032 at its start, 1234 at its end)")


def test_reader_errors_are_capture_errors(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\0" * 5)
    with pytest.raises(CaptureError):
        list(open_capture(str(path)))


def test_matches_dpkt_reader_on_live_capture():
    path = capture("netquake-session.pcap")
    ours = [(round(f.ts, 6), f.data) for f in open_capture(path)]
    with open(path, "rb") as handle:
        theirs = [(round(ts, 6), bytes(buf)) for ts, buf in dpkt.pcap.Reader(handle)]
    assert ours == theirs and len(ours) > 40


@pytest.mark.parametrize("step", [1, 7, 61])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_records_cut_from_a_trickling_stream_are_the_files_records(tmp_path, fmt, step):
    path = tmp_path / f"three.{fmt}"
    frames = [(TS, capkit.ethernet(udp4())), (TS + 1, capkit.ethernet(udp6())), (TS + 2, b"\x01" * 3)]
    if fmt == "pcap":
        capkit.write_pcap(path, frames)
    else:
        capkit.write_pcapng(path, [(0, ts, data) for ts, data in frames], [1])
    whole = [(f.number, f.ts, f.caplen, f.wirelen, f.linktype, f.data, f.error) for f in open_capture(str(path))]
    assert [data for *_, data, _ in whole] == [data for _, data in frames]
    trickled = read_capture(capkit.Trickle(path.read_bytes(), step), "trickle")
    assert [(f.number, f.ts, f.caplen, f.wirelen, f.linktype, f.data, f.error) for f in trickled] == whole


def test_several_inputs_number_their_frames_on_from_the_last_one_read(tmp_path):
    """Frame numbers go on from one input to the next, also after an input cut short (its frames read count) and
    an empty one; ``-c`` stops across inputs."""
    good = _good_pcap(tmp_path)  # three records
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good.read_bytes()[:-10])  # two records, then one cut short
    empty = tmp_path / "none.pcap"
    empty.write_bytes(good.read_bytes()[:24])  # a header and no record
    inputs = [str(good), str(cut), str(empty), str(good)]
    files = CaptureFiles(inputs)
    assert [frame.number for frame in files] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert len(files.errors) == 1 and "record 3 cut short" in files.errors[0]
    assert [frame.number for frame in CaptureFiles(inputs, limit=6)] == [1, 2, 3, 4, 5, 6]
    assert [frame.number for frame in CaptureFiles(inputs, limit=1)] == [1]
    assert list(CaptureFiles(inputs, limit=0)) == []  # not the one frame it read before counting down


def test_one_time_reads_as_one_float_from_pcap_and_pcapng(tmp_path):
    """A microsecond time is its whole seconds plus its fraction in either format: a pcapng's units were multiplied
    by 1e-6 in one step, which differs from a pcap's seconds + micros * 1e-6 in the last bit for about a third of
    this era's times (what a live capture showed then differed from its -w pcapng file)."""
    from dissect.capture.files import Frame
    from dissect.capture.writer import open_writer
    micros = [1765113436_424411 + step * 7919 for step in range(200)]
    times = [seconds + part * 1e-6 for seconds, part in (divmod(m, 1_000_000) for m in micros)]
    read = {}
    for kind in ("pcap", "pcapng"):
        path = tmp_path / f"times.{kind}"
        writer = open_writer(str(path), kind, 1)
        for number, ts in enumerate(times, 1):
            writer.write(Frame(number, ts, 14, 14, 1, bytes(14)))
        writer.close()
        read[kind] = [frame.ts for frame in open_capture(str(path))]
    assert read["pcap"] == read["pcapng"] == times
    assert any(m * 1e-6 != ts for m, ts in zip(micros, times))  # the one-step product is another float for some


# -- IPv4 total length, IPv6 payload length and UDP length checked against the header and the frame -----------------

REPLY = nq.ccrep_server_info("10.0.0.1:26000", "dissect test server", "e1m1", 2, 8)  # 48 bytes: no Ethernet padding
ETH_HEAD = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"


def eth_ipv4_udp(payload, total=None, ulen=None, pad=0):
    """Ethernet + IPv4 (no options) + UDP 26000 -> 40000, byte by byte; ``total`` and ``ulen`` as given, else right."""
    ulen = 8 + len(payload) if ulen is None else ulen
    total = 28 + len(payload) if total is None else total
    udp = struct.pack("!HHHH", 26000, 40000, ulen, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 1, 0, 64, 17, 0, socket.inet_aton("10.0.0.1"),
                     socket.inet_aton("10.0.0.7"))
    return ETH_HEAD + b"\x08\x00" + ip + udp + bytes(pad)


def eth_ipv6_udp(payload, plen=None, ulen=None):
    ulen = 8 + len(payload) if ulen is None else ulen
    plen = 8 + len(payload) if plen is None else plen
    udp = struct.pack("!HHHH", 26000, 40000, ulen, 0) + payload
    ip = struct.pack("!IHBB16s16s", 0x60000000, plen, 17, 64, socket.inet_pton(socket.AF_INET6, "2001:db8::1"),
                     socket.inet_pton(socket.AF_INET6, "2001:db8::7"))
    return ETH_HEAD + b"\x86\xdd" + ip + udp


def rule_text(spec, detail):
    return f"{detail} ({spec.rule})"


def length_cases():
    """(frame bytes, wire length, the frame's findings: (code, severity, offset, length, message))."""
    from dissect.capture.tables import FRAME_FINDINGS, IP_FINDINGS, IPV6_FINDINGS, UDP_FINDINGS
    ip_bad, udp_bad = IP_FINDINGS.bad_total_length, UDP_FINDINGS.bad_length
    whole = len(eth_ipv4_udp(REPLY))
    assert whole == 90  # 14 + 20 + 8 + 48: the IPv4 header and all after it are 76 bytes

    def snapped(kept):
        return ("capture.truncated_frame", "warning", kept, 0,
                rule_text(FRAME_FINDINGS.truncated_frame,
                          f"frame captured {kept} of {whole} bytes: decoded as far as the bytes go"))

    short_ip = ("ip.bad_total_length", "error", 16, 2,
                rule_text(ip_bad, "total length 12 is less than the header length 20: the frame's bytes after the "
                                  "header are taken as its data"))
    long_ip = ("ip.bad_total_length", "error", 16, 2,
               rule_text(ip_bad, "total length 176 is more than the 76 bytes the frame holds from the IPv4 header on"))
    long_udp = ("udp.bad_length", "error", 38, 2,
                rule_text(udp_bad, "length 66 is more than the 56 bytes of IP payload from the UDP header on"))
    return [
        (eth_ipv4_udp(PAYLOAD, pad=60 - 42 - len(PAYLOAD)), 60, []),  # a request, padded to Ethernet's 60 bytes
        (eth_ipv4_udp(REPLY), whole, []),
        (eth_ipv4_udp(REPLY, total=12), whole, [short_ip]),
        (eth_ipv4_udp(REPLY, total=0), whole, []),  # TCP segmentation offload's 0: not flagged (as tshark)
        (eth_ipv4_udp(REPLY, total=176), whole, [long_ip]),
        (eth_ipv4_udp(REPLY, ulen=4), whole, [("udp.bad_length", "error", 38, 2, rule_text(
            udp_bad, "length 4 is less than the header's 8 bytes: the bytes after the header are taken as its "
                     "payload"))]),
        (eth_ipv4_udp(REPLY, ulen=66), whole, [long_udp]),
        # the snap length kept 60 of the 90 bytes: lengths past the captured end are checked against the wire
        (eth_ipv4_udp(REPLY)[:60], whole, [snapped(60)]),
        (eth_ipv4_udp(REPLY, total=176)[:60], whole, [snapped(60), long_ip]),
        (eth_ipv4_udp(REPLY, ulen=66)[:60], whole, [snapped(60), long_udp]),
        (eth_ipv6_udp(REPLY), whole + 20, []),
        (eth_ipv6_udp(REPLY, ulen=66), whole + 20, [("udp.bad_length", "error", 58, 2, rule_text(
            udp_bad, "length 66 is more than the 56 bytes of IP payload from the UDP header on"))]),
        (eth_ipv6_udp(REPLY, plen=100), whole + 20, [("ipv6.bad_payload_length", "error", 18, 2, rule_text(
            IPV6_FINDINGS.bad_payload_length, "payload length 100 is more than the 56 bytes the frame holds after "
                                              "the IPv6 header"))]),
    ]


def test_bad_ip_and_udp_lengths_are_flagged_and_the_payload_still_decoded(tmp_path):
    import dissect
    cases = length_cases()
    path = tmp_path / "lengths.pcap"
    capkit.write_pcap(path, [(TS + number, data, wirelen) for number, (data, wirelen, _) in enumerate(cases)])
    code, out, err = run_cli("-T", "jsonl", path)
    assert code == 0, err
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    with dissect.open(str(path)) as cap:
        api = [[(f.code, f.severity, f.offset, f.length, f.message) for f in r.findings] for r in cap
               if r.kind == "frame"]
    assert len(records) == len(api) == len(cases)
    for record, found, (data, wirelen, expected) in zip(records, api, cases):
        number = record["frame"]
        assert [(f["code"], f["severity"], f["offset"], f["length"], f["message"])
                for f in record["findings"]] == found == expected, number
        assert record["protocol"] == "netquake", number
        msg = record["messages"][0]
        assert msg["message"] == ("CCREQ_SERVER_INFO" if number == 1 else "CCREP_SERVER_INFO"), number
        cut = len(data) < wirelen
        assert [f["code"] for f in msg["findings"]] == (["capture.cut_message"] if cut else []), number
        assert msg["length"] == (18 if cut else len(REPLY) if number > 1 else len(PAYLOAD)), number


def test_good_lengths_leave_no_bad_lengths_on_the_packet():
    from dissect.capture.layers import length_findings
    for data in (eth_ipv4_udp(REPLY), eth_ipv4_udp(PAYLOAD, pad=60 - 42 - len(PAYLOAD)), eth_ipv6_udp(REPLY)):
        assert decode_frame(data, 1).bad_lengths is None
    snapped = decode_frame(eth_ipv4_udp(REPLY)[:60], 1)  # the total length passes the captured end, not the wire's
    assert snapped.bad_lengths == [("ip_long", 16, 76, 90)] and length_findings(snapped, 90) == []
    assert length_findings(snapped, 89)[0].code == "ip.bad_total_length"
    packet = decode_frame(eth_ipv4_udp(REPLY, total=12, ulen=4), 1)
    assert packet.payload == REPLY  # lenient: the frame's bytes after the UDP header, as before
    assert [check[0] for check in packet.bad_lengths] == ["ip_short", "udp_short"]
