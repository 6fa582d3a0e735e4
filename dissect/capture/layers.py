"""Link, network and transport layers, decoded with precompiled structs.

``decode_frame`` turns a frame's bytes into a Packet: the addresses, ports and the
transport payload, plus a short list of the layers met (for trees and hex dumps).
"""

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from ..core import nocython as cython

import struct
from array import array
# socket.py's C module: socket.py itself imports selectors and builds its enums, 2 ms of every start-up
from _socket import AF_INET6, inet_ntop

from ..core.bounded import kept
from ..core.cursor import cut
from ..core.fmt import decimal_text
from .tables import IP_FINDINGS, IPV6_FINDINGS, UDP_FINDINGS

_U16 = struct.Struct("!H")
_U32BE = struct.Struct("!I")
_U32LE = struct.Struct("<I")

LINKTYPE_NAMES = {0: "BSD loopback", 1: "Ethernet", 12: "Raw IP", 14: "Raw IP", 101: "Raw IP",
                  108: "OpenBSD loopback", 113: "Linux cooked (SLL)", 228: "Raw IPv4", 229: "Raw IPv6",
                  276: "Linux cooked v2 (SLL2)"}

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
IPV6_EXTENSIONS = (0, 43, 60, 51)
ADDRESS_SLOTS = 4096
_numbers = array("q", [-1]) * ADDRESS_SLOTS  # the IPv4 address, as a number, whose text a slot holds
_texts = [""] * ADDRESS_SLOTS
V6_SLOTS = 1024
_v6_high = array("Q", [0]) * V6_SLOTS  # the IPv6 address whose text a slot holds: its first 8 bytes as a number,
_v6_low = array("Q", [0]) * V6_SLOTS   # its last 8
_v6_texts = [None] * V6_SLOTS
PORT_SLOTS = 1024
_port_numbers = array("i", [-1]) * PORT_SLOTS  # the port whose integer object a slot holds
_ports = [None] * PORT_SLOTS
UNSTATED = 0x7FFFFFFF  # the end of an IP datagram whose header states none that can be used (_odd_ip_length)
TCP_FLAG_NAMES = ((0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"))


@cython.freelist(64)
@cython.cclass
class Layer:
    """A lower layer's place in the frame; its one-line summary is built only when a view asks."""

    __slots__ = ("key", "offset", "length", "_describe", "_args")

    def __init__(self, key, offset, length, describe, *args):
        self.key = key
        self.offset = offset
        self.length = length
        self._describe = describe
        self._args = args

    @property
    def summary(self):
        return layer_summary(self)


def layer_summary(layer):
    """``layer.summary``: its text, made when a view shows it. The lower layers' own describers are called
    directly (C calls when compiled: -V writes a few lines of these a frame)."""
    describe, args = layer._describe, layer._args
    if describe is _ip_summary:
        return _ip_summary(args[0], args[1], args[2])
    if describe is _udp_summary:
        return _udp_summary(args[0], args[1])
    if describe is _ethernet_summary:
        return _ethernet_summary(args[0])
    if describe is _tcp_summary:
        return _tcp_summary(args[0], args[1], args[2], args[3])
    return describe(*args) if callable(describe) else describe


def _add_layer(packet, key, offset, length, describe, args=()):
    """Append a Layer to the packet's: made without the constructor's argument parsing (every frame has a few).
    Nothing to do where the packet does not keep its layers (see decode_frame)."""
    if packet._layers is None:
        return
    layer = Layer.__new__(Layer)
    layer.key, layer.offset, layer.length, layer._describe, layer._args = key, offset, length, describe, args
    packet._layers.append(layer)


@cython.freelist(16)
@cython.cclass
class Packet:
    """A frame's lower layers. ``transport`` is "udp" or "tcp" once that header is decoded (else None);
    ``ip_proto`` is the IP header's protocol number (17, 6, ...), set for fragments too. ``cut`` counts the bytes
    of a UDP or TCP payload that the capture did not keep (``count_cut``). ``bad_lengths`` is None, or the IP and
    UDP length fields that do not fit, for ``length_findings``. ``reassembled``: the Layer of the UDP or TCP header
    of a datagram reassembled from fragments (decode_reassembled), kept for ``layers`` where they are made later."""

    __slots__ = ("_layers", "top", "src", "dst", "sport", "dport", "transport", "ip_proto", "payload",
                 "payload_offset", "ip_id", "fragment", "tcp_seq", "tcp_flags", "tcp_stream", "problem", "_frame",
                 "cut", "bad_lengths", "reassembled")

    def __init__(self):
        _empty(self)
        self._layers = []

    @property
    def layers(self):
        """The layers met, outermost first (for trees, hex dumps and filters)."""
        if self._layers is None:
            self._layers = decode_frame(*self._frame).layers
            self._frame = None
            if self.reassembled is not None:
                self._layers.append(self.reassembled)
        return self._layers


def _empty(packet):
    """Every attribute but ``_layers``, which the caller sets (a list, or None where no Layer is kept)."""
    packet._frame = None  # (bytes, link type) where the layers were not kept: they are decoded again if read
    packet.top = "frame"
    packet.src = packet.dst = None
    packet.sport = packet.dport = None
    packet.transport = None
    packet.ip_proto = None
    packet.payload = None
    packet.payload_offset = 0
    packet.ip_id = None
    packet.fragment = None  # (offset, more_fragments) for an IPv4 fragment
    packet.tcp_seq = None
    packet.tcp_flags = 0
    packet.tcp_stream = None  # the reassembler's index of this connection
    packet.problem = None  # why decoding stopped early, for the Info column
    packet.cut = 0  # bytes of the payload past the bytes the capture kept (snap length): see count_cut
    packet.bad_lengths = None
    packet.reassembled = None


def decode_frame(data, linktype, keep_layers=True):
    """The frame's Packet. Without ``keep_layers`` (the summary and --stats, which show none) no Layer is made
    while decoding: reading ``layers`` decodes the frame again to make them."""
    if type(data) is not bytes:  # the compiled layers read bytes in C (layers.pxd)
        data = bytes(data)
    packet = Packet.__new__(Packet)  # without a constructor call's argument parsing: one a frame
    _empty(packet)
    if keep_layers:
        packet._layers = []
    else:
        packet._layers = None
        packet._frame = (data, linktype)
    try:
        if linktype == 1:
            _ethernet(packet, data)
        else:
            _decode_link(packet, data, linktype)
    except (struct.error, IndexError, ValueError):
        packet.problem = f"malformed {packet.top} header"
    return packet


def count_cut(packet, data, missing):
    """Set ``packet.cut`` for a frame the capture kept ``missing`` bytes short of its wire length (snap length):
    the bytes of its UDP or TCP payload that the UDP length, or the IP length for TCP and for an IPv4 fragment,
    counts past the captured end. A header the snap length itself cut leaves it 0."""
    if packet.payload is None:
        return
    if packet.fragment is not None:
        stated_end = _ip_end(packet, data)
    elif packet.transport == "udp":
        at = packet.payload_offset - 8
        stated_end = packet.payload_offset + (data[at + 4] << 8 | data[at + 5]) - 8
    elif packet.transport == "tcp":
        stated_end = _ip_end(packet, data)
    else:
        return
    packet.cut = max(0, min(stated_end - packet.payload_offset - len(packet.payload), missing))


def length_findings(packet, wirelen):
    """The findings for ``packet.bad_lengths`` in a frame ``wirelen`` bytes long on the wire. An IP length past the
    captured bytes is flagged only where it passes the wire length too: a snap length explains the rest. ``wirelen``
    None: the lengths of a datagram reassembled from fragments (decode_reassembled), whose fields no one frame holds
    (the findings have no offset)."""
    findings = []
    size = None if wirelen is None else 2  # each length field's bytes
    for check, at, stated, bound in packet.bad_lengths:
        if wirelen is None:
            at = None
        if check == "ip_short":
            findings.append(IP_FINDINGS.bad_total_length.at(
                f"total length {stated} is less than the header length {bound}: the frame's bytes after the header "
                f"are taken as its data", at, size))
        elif check == "ip_long" and bound > wirelen:
            findings.append(IP_FINDINGS.bad_total_length.at(
                f"total length {stated} is more than the {wirelen - at + 2} bytes the frame holds from the IPv4 "
                f"header on", at, size))
        elif check == "ipv6_long" and bound > wirelen:
            findings.append(IPV6_FINDINGS.bad_payload_length.at(
                f"payload length {stated} is more than the {wirelen - at - 36} bytes the frame holds after "
                f"the IPv6 header", at, size))
        elif check == "udp_short":
            findings.append(UDP_FINDINGS.bad_length.at(
                f"length {stated} is less than the header's {bound} bytes: the bytes after the header are taken as "
                f"its payload", at, size))
        elif check == "udp_long":
            findings.append(UDP_FINDINGS.bad_length.at(
                f"length {stated} is more than the {bound} bytes of IP payload from the UDP header on", at, size))
    return findings


def decode_reassembled(packet, data):
    """The UDP or TCP header at the start of ``data``, an IPv4 datagram's data reassembled from fragments, decoded
    onto ``packet`` as a frame's own is (its ports, payload, and a UDP length that does not fit in ``bad_lengths``,
    the frame's own lengths told already; ``packet.cut``: the bytes the datagram lost to a snap length), without a
    layer in the frame: its bytes are in no one frame (its Layer's offset is None). False, ``packet`` unchanged,
    where ``data`` is too short for the header or the protocol is neither UDP nor TCP."""
    proto = packet.ip_proto
    if not (proto == 17 and len(data) >= 8 or proto == 6 and len(data) >= 20):
        return False
    layers = packet._layers
    packet._layers, packet.fragment, packet.bad_lengths = [], None, None
    _transport(packet, data, 0, len(data), len(data) + packet.cut, proto)
    header = packet._layers[0]
    header.offset = None
    packet._layers = layers
    if layers is None:
        packet.reassembled = header  # for ``layers``, which decodes the frame again where a view reads them
    else:
        layers.append(header)
    return True


def _bad_length(packet, check):
    """Keep ``check``, (name, offset of the length field, its value, what it is checked against)."""
    if packet.bad_lengths is None:
        packet.bad_lengths = [check]
    else:
        packet.bad_lengths.append(check)


def _ip_end(packet, data):
    """Where the innermost IP header says its datagram ends: its total length (IPv4) or payload length (IPv6)."""
    headers = [layer for layer in packet.layers if layer.key in ("ip", "ipv6")]
    if not headers:
        return 0
    at = headers[-1].offset
    if headers[-1].key == "ip":
        return at + (data[at + 2] << 8 | data[at + 3])
    return at + 40 + (data[at + 4] << 8 | data[at + 5])


def ethernet_ip_pair(data):
    """(the unordered address pair of an untagged Ethernet frame carrying IPv4, or IPv6 with no extension header,
    IP protocol), read at fixed offsets without building a Packet; None for any other frame. The pair is both
    addresses' bytes (4 each for IPv4, 16 for IPv6), the lower address first (as ``parallel.pair_key`` packs the
    texts of a decoded Packet): ``-j`` workers ask this of every frame, most of which another worker dissects,
    and find its owner by it."""
    if type(data) is not bytes:  # the compiled readers read bytes in C
        data = bytes(data)
    return _ethernet_ip_pair(data)


def _ethernet_ip_pair(data):
    size = len(data)
    # An IPv4 header as _ipv4 takes it (version 4, a length of 20 bytes or more, whatever follows)
    if size >= 34 and data[12] == 0x08 and data[13] == 0x00 and data[14] >> 4 == 4 and data[14] & 0x0F >= 5:
        return _ordered_pair(data, 26, 4), data[23]
    # The IPv6 header's fixed 40 bytes, as _ipv6 reads them; its next header the transport's (no chain to walk)
    if size >= 54 and data[12] == 0x86 and data[13] == 0xDD and data[14] >> 4 == 6 and not _is_extension(data[20]):
        return _ordered_pair(data, 22, 16), data[20]
    return None


def _ordered_pair(data, at, width):
    """The source address (``width`` bytes at ``at``) and the destination after it, the lower one first."""
    for index in range(at, at + width):
        if data[index] != data[index + width]:
            if data[index] < data[index + width]:
                break
            return cut(data, at + width, at + 2 * width) + cut(data, at, at + width)
    return cut(data, at, at + 2 * width)  # as they are: the source sorts first, or they are the same


def _is_extension(next_header):
    """An IPv6 extension header (hop-by-hop, routing, destination options, authentication) or a fragment
    header: what _ipv6 walks past to reach the transport."""
    return next_header in IPV6_EXTENSIONS or next_header == 44


def _decode_link(packet, data, linktype):
    """Every link type but Ethernet (which decode_frame reads first)."""
    if linktype in (101, 12, 14):
        _ip(packet, data, 0, "raw")
    elif linktype == 228:
        _ipv4(packet, data, 0)
    elif linktype == 229:
        _ipv6(packet, data, 0)
    elif linktype in (0, 108):
        _loopback(packet, data, linktype)
    elif linktype == 113:
        _sll(packet, data)
    elif linktype == 276:
        _sll2(packet, data)
    else:
        packet.problem = f"link type {linktype} not supported"


def _network(packet, data, offset, ethertype):
    """What an Ethernet or Linux cooked header's protocol field names at ``offset``: VLAN tags (802.1Q, QinQ), then
    IPv4 or IPv6."""
    while ethertype in VLAN_TPIDS:
        if len(data) < offset + 4:
            packet.problem = "VLAN tag cut short"
            return
        tci, ethertype = struct.unpack_from("!HH", data, offset)
        _add_layer(packet, "vlan", offset, 4, f"802.1Q Virtual LAN, PRI: {tci >> 13}, ID: {tci & 0xFFF}")
        packet.top = "vlan"
        offset += 4
    if ethertype == ETHERTYPE_IPV4:
        _ipv4(packet, data, offset)
    elif ethertype == ETHERTYPE_IPV6:
        _ipv6(packet, data, offset)
    else:
        packet.problem = f"ethertype 0x{ethertype:04x}"


def _ethernet(packet, data):
    if len(data) < 14:
        packet.problem = "Ethernet header cut short"
        return
    ethertype = data[12] << 8 | data[13]
    if packet._layers is not None:  # the describer's arguments made only where a Layer is
        _add_layer(packet, "eth", 0, 14, _ethernet_summary, (data,))
    packet.top = "eth"
    _network(packet, data, 14, ethertype)


def _mac(raw):
    return raw.hex(":")


ETHERNET_TEXTS = 4096  # Ethernet summaries kept, by their 12 bytes of addresses: a capture has few address pairs
_ethernet_texts = {}


def _ethernet_summary(data):
    """The addresses are read from the frame's bytes only when a view shows the summary."""
    if _COMPILED:  # C (layers.pxd): written in place, where a kept text costs a look-up by a new bytes object
        text = _ethernet_text(data)
        if text is not None:
            return text
    addresses = cut(data, 0, 12)
    text = _ethernet_texts.get(addresses)
    if text is None:
        text = kept(_ethernet_texts, addresses, f"Ethernet II, Src: {_mac(data[6:12])}, Dst: {_mac(data[0:6])}",
                    ETHERNET_TEXTS)
    return text


def _ip_summary(version, src, dst):
    if _COMPILED:  # C (layers.pxd), as the other layers' lines
        text = _ip_text(IP_TITLES[version], src, dst)
        if text is not None:
            return text
    return f"{IP_TITLES[version]}, Src: {src}, Dst: {dst}"


IP_TITLES = {4: "Internet Protocol Version 4", 6: "Internet Protocol Version 6"}


def _udp_summary(sport, dport):
    if _COMPILED:  # C (layers.pxd): the ports' digits written in place, one str made
        text = _udp_text(sport, dport)
        if text is not None:
            return text
    return f"User Datagram Protocol, Src Port: {decimal_text(sport)}, Dst Port: {decimal_text(dport)}"


def _tcp_summary(sport, dport, seq, flags):
    if _COMPILED:  # C (layers.pxd), as _udp_summary
        text = _tcp_text(sport, dport, seq, tcp_flag_text(flags))
        if text is not None:
            return text
    return f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {seq}, Flags: " \
           f"{tcp_flag_text(flags)}"


_COMPILED = not __file__.endswith(".py")


def _loopback(packet, data, linktype):
    if len(data) < 4:
        packet.problem = "loopback header cut short"
        return
    if linktype == 108 or data[0:2] == b"\0\0":
        family = _U32BE.unpack_from(data, 0)[0]
    else:
        family = _U32LE.unpack_from(data, 0)[0]
    _add_layer(packet, "null", 0, 4, f"Null/Loopback, Family: {family}")
    packet.top = "null"
    if family == 2:
        _ipv4(packet, data, 4)
    elif family in (10, 24, 28, 30):
        _ipv6(packet, data, 4)
    else:
        packet.problem = f"address family {family}"


def _sll(packet, data):
    if len(data) < 16:
        packet.problem = "Linux cooked header cut short"
        return
    ethertype = _U16.unpack_from(data, 14)[0]
    _add_layer(packet, "sll", 0, 16, f"Linux cooked capture v1, Protocol: 0x{ethertype:04x}")
    packet.top = "sll"
    _network(packet, data, 16, ethertype)


def _sll2(packet, data):
    if len(data) < 20:
        packet.problem = "Linux cooked v2 header cut short"
        return
    ethertype = _U16.unpack_from(data, 0)[0]
    ifindex = _U32BE.unpack_from(data, 4)[0]
    _add_layer(packet, "sll2", 0, 20, f"Linux cooked capture v2, Protocol: 0x{ethertype:04x}, "
                                      f"Interface index: {ifindex}")
    packet.top = "sll2"
    _network(packet, data, 20, ethertype)


def _ip(packet, data, offset, _how):
    if len(data) <= offset:
        packet.problem = "no IP header"
        return
    version = data[offset] >> 4
    if version == 4:
        _ipv4(packet, data, offset)
    elif version == 6:
        _ipv6(packet, data, offset)
    else:
        packet.problem = f"IP version {version}"


def _ipv4(packet, data, offset):
    if len(data) < offset + 20:
        packet.problem = "IPv4 header cut short"
        return
    # Byte by byte rather than with a struct: the compiled module reads each in C (layers.pxd types them).
    ver_ihl = data[offset]
    ihl = (ver_ihl & 0x0F) * 4
    if ver_ihl >> 4 != 4 or ihl < 20:
        packet.problem = "bad IPv4 header"
        return
    total = data[offset + 2] << 8 | data[offset + 3]
    ident = data[offset + 4] << 8 | data[offset + 5]
    frag = data[offset + 6] << 8 | data[offset + 7]
    proto = data[offset + 9]
    packet.src = _ipv4_text(data, offset + 12)
    packet.dst = _ipv4_text(data, offset + 16)
    packet.ip_id = ident
    packet.ip_proto = proto
    end = limit = offset + total
    if end > len(data) or total < ihl:
        limit = _odd_ip_length(packet, offset, total, ihl)
        end = len(data)
    if packet._layers is not None:
        _add_layer(packet, "ip", offset, ihl, _ip_summary, (4, packet.src, packet.dst))
    packet.top = "ipv4"
    frag_offset = (frag & 0x1FFF) * 8
    more = bool(frag & 0x2000)
    if frag_offset or more:
        packet.fragment = (frag_offset, more)
        packet.payload = data[offset + ihl:end]
        packet.payload_offset = offset + ihl
        packet.problem = f"IPv4 fragment (offset {frag_offset}{', more' if more else ''})"
        return
    if proto == 17:
        _udp(packet, data, offset + ihl, end, limit)
    else:
        _transport(packet, data, offset + ihl, end, limit, proto)


def _odd_ip_length(packet, offset, total, ihl):
    """Where the IPv4 datagram at ``offset`` ends by its header (UNSTATED where that is no use), for a total length
    under the header's length or past the captured bytes (length_findings tells the second from a snap length)."""
    if total < ihl:
        if total:  # 0 is what TCP segmentation offload leaves (tshark takes the frame's length then)
            _bad_length(packet, ("ip_short", offset + 2, total, ihl))
        return UNSTATED
    _bad_length(packet, ("ip_long", offset + 2, total, offset + total))
    return offset + total


def _ipv4_text(data, offset):
    """The dotted quad of the address at ``offset``, as socket.inet_ntoa writes it. A capture's frames come
    from few addresses: each one's text is kept in the slot its low bits pick, until another takes it."""
    a, b, c, d = data[offset], data[offset + 1], data[offset + 2], data[offset + 3]
    number = a << 24 | b << 16 | c << 8 | d
    slot = number % ADDRESS_SLOTS
    if _numbers[slot] != number:
        _numbers[slot] = number
        _texts[slot] = _dotted_quad(a, b, c, d) if _COMPILED else f"{a}.{b}.{c}.{d}"  # C (layers.pxd)
    return _texts[slot]


def _ipv6_text(data, offset):
    """The address at ``offset`` as inet_ntop writes it, kept in a slot as _ipv4_text keeps its texts: the text
    comes back as the same object while the address keeps its slot, where inet_ntop costs about 2,000 instructions
    and makes a new text for each frame."""
    high = _u64(data, offset)
    low = _u64(data, offset + 8)
    slot = (high ^ low) % V6_SLOTS
    text = _v6_texts[slot]
    if text is None or _v6_high[slot] != high or _v6_low[slot] != low:
        text = _v6_texts[slot] = inet_ntop(AF_INET6, data[offset:offset + 16])
        _v6_high[slot] = high
        _v6_low[slot] = low
    return text


def _u64(data, offset):
    """The 8 bytes at ``offset`` as a big-endian number."""
    number = 0
    for index in range(offset, offset + 8):
        number = number << 8 | data[index]
    return number


def _port(number):
    """The port's integer object, the same one while the port keeps its slot: the tables keyed by ports and by
    endpoints then find a port by identity, where each frame's own object (an int above 256 is made anew)
    would be compared by value."""
    slot = number % PORT_SLOTS
    if _port_numbers[slot] != number:
        _port_numbers[slot] = number
        _ports[slot] = number
    return _ports[slot]


def _ipv6(packet, data, offset):
    if len(data) < offset + 40:
        packet.problem = "IPv6 header cut short"
        return
    if data[offset] >> 4 != 6:  # an IPv4 packet behind an IPv6 link type or ethertype, or damage
        packet.problem = "bad IPv6 header"
        return
    plen = data[offset + 4] << 8 | data[offset + 5]
    nxt = data[offset + 6]
    packet.src = _ipv6_text(data, offset + 8)
    packet.dst = _ipv6_text(data, offset + 24)
    if packet._layers is not None:
        _add_layer(packet, "ipv6", offset, 40, _ip_summary, (6, packet.src, packet.dst))
    packet.top = "ipv6"
    end = limit = offset + 40 + plen
    if end > len(data):
        _bad_length(packet, ("ipv6_long", offset + 4, plen, limit))
        end = len(data)
    pos = offset + 40
    while _is_extension(nxt):
        if pos + 8 > end:
            packet.problem = "IPv6 extension header cut short"
            return
        if nxt == 44:
            frag = data[pos + 2] << 8 | data[pos + 3]
            if frag & 0xFFF9:
                packet.fragment = ((frag >> 3) * 8, bool(frag & 1))
                packet.problem = "IPv6 fragment"
                return
            nxt, size = data[pos], 8
        elif nxt == 51:
            nxt, size = data[pos], (data[pos + 1] + 2) * 4
        else:
            nxt, size = data[pos], (data[pos + 1] + 1) * 8
        pos += size
    _transport(packet, data, pos, end, limit, nxt)


def _transport(packet, data, offset, end, limit, proto):
    """``end``: where the captured datagram ends; ``limit``: where its IP header says it ends."""
    packet.ip_proto = proto
    if proto == 17:
        _udp(packet, data, offset, end, limit)
    elif proto == 6:
        _tcp(packet, data, offset, end)
    else:
        packet.problem = f"IP protocol {proto}"


def _udp(packet, data, offset, end, limit):
    if end < offset + 8:
        _cut_header(packet, data, offset, end, "UDP")
        return
    sport = _port(data[offset] << 8 | data[offset + 1])
    dport = _port(data[offset + 2] << 8 | data[offset + 3])
    ulen = data[offset + 4] << 8 | data[offset + 5]
    packet.sport, packet.dport, packet.transport = sport, dport, "udp"
    if packet._layers is not None:
        _add_layer(packet, "udp", offset, 8, _udp_summary, (sport, dport))
    packet.top = "udp"
    stop = offset + ulen
    if stop > end or ulen < 8:
        stop = _odd_udp_length(packet, offset, ulen, end, limit)
    packet.payload = cut(data, offset + 8, stop)
    packet.payload_offset = offset + 8


def _odd_udp_length(packet, offset, ulen, end, limit):
    """Where the payload of the UDP header at ``offset`` stops when its length is under 8 or past ``end`` (the
    captured datagram's): at ``end``, as past a snap length; flagged unless the IP header's ``limit`` covers it."""
    if ulen < 8:
        _bad_length(packet, ("udp_short", offset + 4, ulen, 8))
    elif offset + ulen > limit:
        _bad_length(packet, ("udp_long", offset + 4, ulen, limit - offset))
    return end


def _tcp(packet, data, offset, end):
    if end < offset + 20:
        _cut_header(packet, data, offset, end, "TCP")
        return
    sport = _port(data[offset] << 8 | data[offset + 1])
    dport = _port(data[offset + 2] << 8 | data[offset + 3])
    seq = data[offset + 4]  # compiled, a C unsigned int (layers.pxd): shifted to its top byte without overflow
    seq = seq << 24 | data[offset + 5] << 16 | data[offset + 6] << 8 | data[offset + 7]
    hlen = (data[offset + 12] >> 4) * 4
    flags = data[offset + 13]
    packet.sport, packet.dport, packet.transport = sport, dport, "tcp"
    packet.tcp_seq = seq
    packet.tcp_flags = flags
    if packet._layers is not None:
        _add_layer(packet, "tcp", offset, max(hlen, 20), _tcp_summary, (sport, dport, seq, flags))
    packet.top = "tcp"
    start = offset + max(hlen, 20)
    packet.payload = cut(data, start, end)
    packet.payload_offset = start


def _cut_header(packet, data, offset, end, name):
    """A UDP or TCP header that the frame ends inside: its ports, where their 4 bytes are there (as tshark shows
    them), and nothing carried."""
    packet.problem = f"{name} header cut short"
    if end >= offset + 4:
        packet.sport = _port(data[offset] << 8 | data[offset + 1])
        packet.dport = _port(data[offset + 2] << 8 | data[offset + 3])


def tcp_flag_text(flags):
    if type(flags) is int and 0 <= flags < 256:
        return TCP_FLAG_TEXTS[flags]
    return _flag_text(flags)


def _flag_text(flags):
    names = [name for bit, name in TCP_FLAG_NAMES if flags & bit]
    return "[" + ", ".join(names) + "]" if names else "[]"


TCP_FLAG_TEXTS = [_flag_text(flags) for flags in range(256)]  # every value of the flags byte, made once
