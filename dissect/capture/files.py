"""Streaming readers for pcap and pcapng files.

Written on struct rather than dpkt's readers so that every damaged record can be
told apart and reported (dpkt raises or reads blindly), reading never allocates
what a length field merely claims, and the hot loop stays cheap. dpkt's writers
make the test captures, and its readers serve the tests as an independent check.

One record-size limit holds for both formats: a record carries at most ``MAX_RECORD`` (256 KiB)
captured bytes. A pcap record that claims more ends the file (its header cannot be trusted to find the
next one). A pcapng packet block that holds more (or is longer than that plus its 32 bytes of framing
and ``MAX_OPTIONS`` of options) becomes a corrupt record, is skipped without being read into memory,
and reading resumes after it: its length at both ends shows where the next block starts.
"""

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from ..core import nocython as cython

import struct

from ..core.cursor import cut

# No real link layer produces a record larger than this (Wireshark uses the same bound).
MAX_RECORD = 262144
# Room in a pcapng packet block for options (comments, flags, hashes) besides the packet's bytes.
MAX_OPTIONS = 65536
MAX_PACKET_BLOCK = 32 + MAX_RECORD + MAX_OPTIONS
# Other pcapng blocks (SHB and IDB options, name resolution) may be longer; a length beyond this is damage.
MAX_BLOCK = 16 * 1024 * 1024
PACKET_BLOCKS = (6, 2, 3)  # enhanced, obsolete, simple
SKIP_CHUNK = 65536


class CaptureError(Exception):
    """The file cannot be read further; the message is one line for the user."""


@cython.freelist(16)
@cython.cclass
class Frame:
    __slots__ = ("number", "ts", "caplen", "wirelen", "linktype", "data", "iface", "error")

    def __init__(self, number, ts, caplen, wirelen, linktype, data, iface=0, error=None):
        _fill(self, number, ts, caplen, wirelen, linktype, data, iface, error)


def new_frame(number, ts, caplen, wirelen, linktype, data, iface, error):
    """A Frame, made without the argument parsing of a constructor call (one a record read)."""
    frame = Frame.__new__(Frame)
    _fill(frame, number, ts, caplen, wirelen, linktype, data, iface, error)
    return frame


def _fill(frame, number, ts, caplen, wirelen, linktype, data, iface, error):
    frame.number = number
    frame.ts = ts
    frame.caplen = caplen
    frame.wirelen = wirelen
    frame.linktype = linktype
    frame.data = data
    frame.iface = iface
    frame.error = error  # a damaged record that reading could step over


PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"


def read_capture(handle, name="input"):
    """Yield the Frames of a pcap or pcapng stream (closed when read); raise CaptureError where it cannot go
    on. dissect.capture.sources opens paths, standard input and compressed captures for it."""
    with handle:
        head = handle.read(4)
        if len(head) < 4:
            raise CaptureError(f"{name}: not a capture file: {len(head)} bytes is too short for a header")
        if head in PCAP_MAGICS:
            yield from _PcapRecords(handle, name, head)
        elif head == PCAPNG_SHB:
            yield from _read_pcapng(handle, name, head)
        else:
            raise CaptureError(f"{name}: not a pcap or pcapng file (starts with {head.hex(' ')})")


class _PcapRecords:
    """A pcap stream's records, cut from chunks of the stream (one ``read1`` a chunk, so that a pipe's
    records come as they are written) rather than read two calls a record; their headers read in C when
    compiled."""

    __slots__ = ("handle", "read1", "name", "little", "scale", "snaplen", "linktype", "record", "data", "pos",
                 "position", "number")

    def __init__(self, handle, name, magic):
        order, self.scale = PCAP_MAGICS[magic]
        rest = handle.read(20)
        if len(rest) < 20:
            raise CaptureError(f"{name}: pcap file header cut short ({4 + len(rest)} of 24 bytes)")
        _vmaj, _vmin, _zone, _sigfigs, self.snaplen, network = struct.unpack(order + "HHiIII", rest)
        self.linktype = network & 0x03FFFFFF
        self.little = order == "<"
        self.record = struct.Struct(order + "IIII")
        self.handle, self.read1, self.name = handle, getattr(handle, "read1", None), name
        self.data, self.pos = b"", 0  # the bytes read and not yet taken, from pos on
        self.position = 24
        self.number = 0

    def __iter__(self):
        return self

    def __next__(self):
        frame = self._next()
        if frame is None:
            raise StopIteration
        return frame

    def _next(self):
        """The next record's Frame; None where the stream ends between records."""
        if len(self.data) - self.pos < 16:
            self._refill(16)
            if not self.data:
                return None
        self.number += 1
        data, pos, name, number, position = self.data, self.pos, self.name, self.number, self.position
        if len(data) - pos < 16:
            raise CaptureError(f"{name}: record {number} header cut short at byte {position} "
                               f"({len(data) - pos} of 16 bytes)")
        if _COMPILED:
            little = self.little
            sec, frac, caplen, wirelen = (_u32(data, pos, little), _u32(data, pos + 4, little),
                                          _u32(data, pos + 8, little), _u32(data, pos + 12, little))
        else:
            sec, frac, caplen, wirelen = self.record.unpack_from(data, pos)
        if caplen > MAX_RECORD:
            raise CaptureError(f"{name}: record {number} at byte {position} claims {caplen} captured bytes, "
                               f"more than any link allows ({MAX_RECORD}); the file is corrupt")
        if len(data) - pos < 16 + caplen:
            self._refill(16 + caplen)
            data, pos = self.data, 0
            if len(data) < 16 + caplen:
                raise CaptureError(f"{name}: record {number} cut short at byte {position}: "
                                   f"{len(data) - 16} of {caplen} bytes present")
        self.pos = pos + 16 + caplen
        self.position = position + 16 + caplen
        error = None
        if self.snaplen and caplen > self.snaplen:
            error = f"captured length {caplen} exceeds the file's snap length {self.snaplen}"
        return new_frame(number, sec + frac * self.scale, caplen, wirelen, self.linktype,
                         cut(data, pos + 16, pos + 16 + caplen), 0, error)

    def _refill(self, need):
        """The bytes not yet taken and what the stream has next, until they hold ``need`` bytes or the stream
        ends."""
        rest = self.data[self.pos:]
        read1 = self.read1
        while len(rest) < need:
            more = read1(max(READ_CHUNK, need - len(rest))) if read1 is not None else \
                self.handle.read(need - len(rest))
            if not more:
                break
            rest += more
        self.data, self.pos = rest, 0


_COMPILED = not __file__.endswith(".py")
READ_CHUNK = 1 << 16


def _u32(data, pos, little):
    """The unsigned 32-bit number at ``pos``: compiled, four C reads of the bytes (struct's unpack_from is a
    method call and a tuple); run as Python, unpack_from is the faster and is used."""
    if little:
        return data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24
    return data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]


class _Interface:
    __slots__ = ("linktype", "snaplen", "scale", "offset")

    def __init__(self, linktype, snaplen, scale=1e-6, offset=0):
        self.linktype = linktype
        self.snaplen = snaplen
        self.scale = scale
        self.offset = offset


def _parse_options(body, order):
    """Yield (code, value) of a pcapng options list."""
    pos = 0
    end = len(body)
    while pos + 4 <= end:
        code, length = struct.unpack_from(order + "HH", body, pos)
        if code == 0:
            return
        value = body[pos + 4:pos + 4 + length]
        yield code, value
        pos += 4 + ((length + 3) & ~3)


def _interface(body, order):
    linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", body, 0)
    iface = _Interface(linktype, snaplen)
    for code, value in _parse_options(body[8:], order):
        if code == 9 and len(value) >= 1:  # if_tsresol
            res = value[0]
            iface.scale = 2.0 ** -(res & 0x7F) if res & 0x80 else 10.0 ** -res
        elif code == 14 and len(value) >= 8:  # if_tsoffset, seconds
            iface.offset = struct.unpack(order + "q", value[:8])[0]
    return iface


def _read_pcapng(handle, name, first):
    read = handle.read
    order = "<"
    interfaces = []
    position = 0
    number = 0
    pending = first
    while True:
        block_type_raw = pending if pending is not None else read(4)
        pending = None
        if not block_type_raw:
            return
        if len(block_type_raw) < 4:
            raise CaptureError(f"{name}: block header cut short at byte {position}")
        if block_type_raw == PCAPNG_SHB:
            head = read(8)
            if len(head) < 8:
                raise CaptureError(f"{name}: section header block cut short at byte {position}")
            bom = head[4:8]
            if bom == b"\x4d\x3c\x2b\x1a":
                order = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                order = ">"
            else:
                raise CaptureError(f"{name}: section header at byte {position} has a bad byte-order magic "
                                   f"({bom.hex(' ')})")
            total = struct.unpack(order + "I", head[:4])[0]
            body_prefix = head[4:]
            block_type = 0x0A0D0D0A
            interfaces = []
        else:
            head = read(4)
            if len(head) < 4:
                raise CaptureError(f"{name}: block header cut short at byte {position}")
            block_type = struct.unpack(order + "I", block_type_raw)[0]
            total = struct.unpack(order + "I", head)[0]
            body_prefix = b""
        if total < 12 or total % 4 or total > MAX_BLOCK:
            raise CaptureError(f"{name}: block at byte {position} has an impossible length {total}; "
                               f"the file is corrupt")
        if total > MAX_PACKET_BLOCK and block_type in PACKET_BLOCKS:
            number += 1
            yield _skip_oversized(handle, name, block_type, total, order, interfaces, number, position)
            position += total
            continue
        rest = read(total - 8 - len(body_prefix))
        if len(rest) < total - 8 - len(body_prefix):
            raise CaptureError(f"{name}: block at byte {position} cut short: "
                               f"{8 + len(body_prefix) + len(rest)} of {total} bytes present")
        block = body_prefix + rest
        body, trailer = block[:-4], block[-4:]
        if struct.unpack(order + "I", trailer)[0] != total:
            raise CaptureError(f"{name}: block at byte {position} has inconsistent lengths "
                               f"({total} at its start, {struct.unpack(order + 'I', trailer)[0]} at its end)")
        block_at = position
        position += total
        if block_type == 1:
            if len(body) < 8:
                raise CaptureError(f"{name}: interface description block at byte {block_at} is too short")
            interfaces.append(_interface(body, order))
        elif block_type in (6, 2, 3):
            number += 1
            yield _packet_block(block_type, body, order, interfaces, number, block_at)


def _skip_oversized(handle, name, block_type, total, order, interfaces, number, block_at):
    """A packet block too long for any record: read past it in chunks and return a corrupt Frame (with the
    block's time where its header gives one)."""
    head = handle.read(20)
    left = total - 8 - len(head) - 4
    while left > 0:
        chunk = handle.read(min(left, SKIP_CHUNK))
        if not chunk:
            break
        left -= len(chunk)
    trailer = handle.read(4)
    if left > 0 or len(head) < 20 or len(trailer) < 4:
        raise CaptureError(f"{name}: block at byte {block_at} cut short: it claims {total} bytes")
    if struct.unpack(order + "I", trailer)[0] != total:
        raise CaptureError(f"{name}: block at byte {block_at} has inconsistent lengths "
                           f"({total} at its start, {struct.unpack(order + 'I', trailer)[0]} at its end)")
    ts, iface_id, linktype, wirelen = _block_header(block_type, head, order, interfaces)
    return Frame(number, ts, 0, wirelen, linktype, b"", iface_id,
                 f"packet block at byte {block_at} is {total} bytes long, more than a record may be "
                 f"({MAX_RECORD} captured bytes, {MAX_OPTIONS} of options); skipped")


def _block_header(block_type, head, order, interfaces):
    """(time, interface, link type, wire length) from a packet block's first 20 body bytes."""
    if block_type == 3:
        wirelen = struct.unpack_from(order + "I", head, 0)[0]
        iface = interfaces[0] if interfaces else None
        return 0.0, 0, iface.linktype if iface else None, wirelen
    if block_type == 6:
        iface_id, hi, lo, _caplen, wirelen = struct.unpack_from(order + "IIIII", head, 0)
    else:
        iface_id, _drops, hi, lo, _caplen, wirelen = struct.unpack_from(order + "HHIIII", head, 0)
    if iface_id >= len(interfaces):
        return 0.0, iface_id, None, wirelen
    iface = interfaces[iface_id]
    return ((hi << 32) | lo) * iface.scale + iface.offset, iface_id, iface.linktype, wirelen


def _packet_block(block_type, body, order, interfaces, number, block_at):
    if block_type == 3:  # simple packet block: interface 0, no timestamp
        if len(body) < 4:
            return Frame(number, 0.0, 0, 0, None, b"", 0, f"simple packet block at byte {block_at} too short")
        wirelen = struct.unpack_from(order + "I", body, 0)[0]
        iface_id, ts_units, caplen = 0, 0, min(wirelen, len(body) - 4)
        if interfaces and interfaces[0].snaplen:
            caplen = min(caplen, interfaces[0].snaplen)
        data_at = 4
    elif len(body) < 20:
        return Frame(number, 0.0, 0, 0, None, b"", 0, f"packet block at byte {block_at} too short")
    elif block_type == 6:
        iface_id, hi, lo, caplen, wirelen = struct.unpack_from(order + "IIIII", body, 0)
        ts_units = (hi << 32) | lo
        data_at = 20
    else:  # obsolete packet block
        iface_id, _drops, hi, lo, caplen, wirelen = struct.unpack_from(order + "HHIIII", body, 0)
        ts_units = (hi << 32) | lo
        data_at = 20
    if iface_id >= len(interfaces):
        return Frame(number, ts_units * 1e-6, 0, wirelen, None, b"", iface_id,
                     f"packet block at byte {block_at} names interface {iface_id}, "
                     f"but only {len(interfaces)} are described")
    iface = interfaces[iface_id]
    ts = ts_units * iface.scale + iface.offset
    if caplen > MAX_RECORD:
        return Frame(number, ts, 0, wirelen, iface.linktype, b"", iface_id,
                     f"packet block at byte {block_at} claims {caplen} captured bytes, more than any link "
                     f"allows ({MAX_RECORD})")
    if data_at + caplen > len(body):
        return Frame(number, ts, 0, wirelen, iface.linktype, b"", iface_id,
                     f"packet block at byte {block_at} claims {caplen} captured bytes but holds "
                     f"{len(body) - data_at}")
    return new_frame(number, ts, caplen, wirelen, iface.linktype, body[data_at:data_at + caplen], iface_id, None)
