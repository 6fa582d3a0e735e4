"""Build frames with dpkt and write them with dpkt's pcap and pcapng writers, and
give a capture's bytes back as a slow pipe does (``Trickle``).

Shared by tools/make_captures.py, tools/fuzz.py and the tests, so that test captures
come from a real writer rather than hand-packed bytes.
"""

import io
import socket
import struct

import dpkt

DEFAULT_TS = 1700000000.0


def ip_packet(src, dst, transport, proto):
    """An IPv4 or IPv6 packet (by the form of ``src``) around a dpkt UDP or TCP object."""
    if ":" in src:
        packet = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src),
                              dst=socket.inet_pton(socket.AF_INET6, dst), nxt=proto, hlim=64, data=transport)
        packet.plen = len(bytes(transport))
        return packet
    packet = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=proto, ttl=64, data=transport)
    packet.len = 20 + len(bytes(transport))
    return packet


def udp_packet(src, sport, dst, dport, payload):
    udp = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
    udp.ulen = 8 + len(payload)
    return ip_packet(src, dst, udp, 17)


def tcp_packet(src, sport, dst, dport, payload, seq=1, ack=1, flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH):
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=payload)
    return ip_packet(src, dst, tcp, 6)


def ethernet(ip, vlan=None):
    ethertype = 0x86DD if isinstance(ip, dpkt.ip6.IP6) else 0x0800
    src, dst = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"
    if vlan is None:
        return bytes(dpkt.ethernet.Ethernet(src=src, dst=dst, type=ethertype, data=ip))
    tag = struct.pack("!HH", vlan & 0x0FFF, ethertype)
    return dst + src + struct.pack("!H", 0x8100) + tag + bytes(ip)


def sll(ip):
    ethertype = 0x86DD if isinstance(ip, dpkt.ip6.IP6) else 0x0800
    return bytes(dpkt.sll.SLL(type=0, hrd=1, hlen=6, hdr=b"\x02\x00\x00\x00\x00\x01\x00\x00",
                              ethtype=ethertype, data=ip))


def sll2(ip, ifindex=3):
    ethertype = 0x86DD if isinstance(ip, dpkt.ip6.IP6) else 0x0800
    return struct.pack("!HHIHBB8s", ethertype, 0, ifindex, 1, 0, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00") \
        + bytes(ip)


def null_loopback(ip):
    family = 30 if isinstance(ip, dpkt.ip6.IP6) else 2
    return struct.pack("<I", family) + bytes(ip)


def raw(ip):
    return bytes(ip)


LINKTYPES = {"ethernet": (1, ethernet), "sll": (113, sll), "sll2": (276, sll2), "null": (0, null_loopback),
             "raw": (101, raw)}


def write_pcap(path, frames, linktype=1, nano=False, snaplen=65535):
    """``frames``: (ts, bytes) or (ts, bytes, wirelen) tuples."""
    with open(path, "wb") as handle:
        writer = dpkt.pcap.Writer(handle, snaplen=snaplen, linktype=linktype, nano=nano)
        for item in frames:
            ts, data = item[0], item[1]
            if len(item) > 2:
                _write_pcap_record(handle, writer, ts, data, item[2], nano)
            else:
                writer.writepkt(data, ts=ts)


def _write_pcap_record(handle, writer, ts, data, wirelen, nano):
    """dpkt's writer sets wire length = captured length; a snapped frame needs its real length."""
    sec = int(ts)
    frac = int(round((ts - sec) * (1e9 if nano else 1e6)))
    handle.write(struct.pack("<IIII", sec, frac, len(data), wirelen) + data)


def record_offsets(data):
    """Where each record of a little-endian pcap file's bytes begins (its 16-byte header)."""
    offsets, pos = [], 24
    while pos < len(data):
        offsets.append(pos)
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return offsets


def write_pcapng(path, frames_by_iface, linktypes):
    """``frames_by_iface``: list of (iface_index, ts, bytes); ``linktypes``: one per interface."""
    with open(path, "wb") as handle:
        idbs = [dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=lt, snaplen=65535) for lt in linktypes]
        writer = dpkt.pcapng.Writer(handle, snaplen=65535, linktype=linktypes[0], idb=idbs)
        for iface, ts, data in frames_by_iface:
            epb = dpkt.pcapng.EnhancedPacketBlockLE(iface_id=iface, pkt_data=data)
            writer.writepkt(epb, ts=ts)


def pcapng_block(block_type, body):
    """One pcapng block: its type, its total length on both sides, the body padded to 32 bits."""
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", block_type, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def write_pcapng_units(path, frames, linktypes, tsresol=6, tsoffset=None):
    """A pcapng whose interfaces (one a link type) count time in units of 10**-tsresol s (if_tsresol) from
    ``tsoffset`` seconds (if_tsoffset): ``frames``, (interface, units, bytes), may then lie before 1970 or
    beyond what a float or -w's formats hold. Written field by field (dpkt takes float seconds)."""
    options = struct.pack("<HHB3x", 9, 1, tsresol)
    if tsoffset is not None:
        options += struct.pack("<HHq", 14, 8, tsoffset)
    data = pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for linktype in linktypes:
        data += pcapng_block(1, struct.pack("<HHI", linktype, 0, 65535) + options + struct.pack("<HH", 0, 0))
    for interface, units, frame in frames:
        data += pcapng_block(6, struct.pack("<IIIII", interface, units >> 32, units & 0xFFFFFFFF, len(frame),
                                                len(frame)) + frame)
    with open(path, "wb") as handle:
        handle.write(data)


def pcap_header(linktype=1, snaplen=65535):
    """A little-endian pcap file header (microseconds)."""
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)


def write_pcap_us(path, frames, linktype=1, snaplen=65535):
    """Stream ``frames``, (timestamp in whole microseconds, bytes) pairs, to a little-endian pcap file.
    Whole microseconds keep a long capture's times exact where float seconds near 1.7e9 would round."""
    record = struct.Struct("<IIII")
    with open(path, "wb") as handle:
        handle.write(pcap_header(linktype, snaplen))
        for ts_us, data in frames:
            seconds, micros = divmod(ts_us, 1_000_000)
            handle.write(record.pack(seconds, micros, len(data), len(data)))
            handle.write(data)


class Trickle(io.BytesIO):
    """A buffered stream whose ``read1`` gives at most ``step`` bytes, as a slow pipe does: every record and
    block straddles reads (``read`` waits for all it asks, as a buffered reader does)."""

    def __init__(self, data, step):
        super().__init__(data)
        self.step = step

    def read1(self, size=-1):
        return super().read1(min(self.step, size if size >= 0 else self.step))
