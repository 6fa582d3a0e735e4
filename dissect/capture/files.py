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
_RECORD_LIMIT = MAX_RECORD  # a C integer when compiled (files.pxd): a record's C-typed length is compared unboxed
# Other pcapng blocks (SHB and IDB options, name resolution) may be longer; a length beyond this is damage. Those
# longer than a packet block may be are read past in chunks, never held: an interface description keeps the first
# MAX_OPTIONS bytes of its options, and its first packet says that the rest were not read.
MAX_BLOCK = 16 * 1024 * 1024
MAX_INTERFACE_BLOCK = 20 + MAX_OPTIONS
# The interfaces of a pcapng section that are kept: a packet naming one past them is a frame with a problem. (Real
# captures describe a few; each kept costs about 200 bytes, and a small file could describe millions.)
MAX_INTERFACES = 4096
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
SHB_TYPE = 0x0A0D0D0A  # its block type: the same bytes in either byte order


def read_capture(handle, name="input", opened=None):
    """Yield the Frames of a pcap or pcapng stream (closed when read); raise CaptureError where it cannot go
    on. dissect.capture.sources opens paths, standard input and compressed captures for it. ``opened``, if given,
    is called once the stream is known for a capture (its header read), before its first record is."""
    with handle:
        head = handle.read(4)
        if len(head) < 4:
            raise CaptureError(f"{name}: not a capture file: {len(head)} bytes is too short for a header")
        if head in PCAP_MAGICS:
            records = _PcapRecords(handle, name, head)
        elif head == PCAPNG_SHB:
            records = _PcapngBlocks(handle, name, head)
        else:
            raise CaptureError(f"{name}: not a pcap or pcapng file (starts with {head.hex(' ')})")
        if opened is not None:
            opened()
        yield from records


class _Chunks:
    """A capture stream's records, cut from chunks of the stream (one ``read1`` a chunk, so that a pipe's
    records come as they are written) rather than read two or three calls a record; their headers read in C
    when compiled. A format's reader gives ``_next``."""

    __slots__ = ("handle", "read1", "name", "data", "pos", "position", "number")

    def __init__(self, handle, name, data, position):
        self.handle, self.read1, self.name = handle, getattr(handle, "read1", None), name
        self.data, self.pos = data, 0  # the bytes read and not yet taken, from pos on
        self.position = position       # the file offset of data[pos]
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
        return None

    def _refill(self, need):
        """The bytes not yet taken and what the stream has next, until they hold ``need`` bytes or the stream
        ends."""
        rest = self.data[self.pos:]
        parts, have = [rest], len(rest)  # joined once: a slow pipe's short reads would copy ``rest`` each
        read1 = self.read1
        while have < need:
            missing = need - have
            if read1 is not None and missing <= READ_CHUNK:
                more = read1(READ_CHUNK)  # what the stream has, up to a chunk: a pipe's records come as written
            else:  # the rest of a long record or block at once: a pipe gives 64 KiB a read, too many to join
                more = self.handle.read(missing)
            if not more:
                break
            parts.append(more)
            have += len(more)
        self.data, self.pos = b"".join(parts), 0


class _PcapRecords(_Chunks):
    """A pcap stream's records."""

    __slots__ = ("little", "scale", "snaplen", "linktype", "record")

    def __init__(self, handle, name, magic):
        order, self.scale = PCAP_MAGICS[magic]
        rest = handle.read(20)
        if len(rest) < 20:
            raise CaptureError(f"{name}: pcap file header cut short ({4 + len(rest)} of 24 bytes)")
        _vmaj, _vmin, _zone, _sigfigs, self.snaplen, network = struct.unpack(order + "HHiIII", rest)
        self.linktype = network & 0x03FFFFFF
        self.little = order == "<"
        self.record = struct.Struct(order + "IIII")
        _Chunks.__init__(self, handle, name, b"", 24)

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
        if caplen > _RECORD_LIMIT:
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


_COMPILED = not __file__.endswith(".py")
READ_CHUNK = 1 << 16


def _u32(data, pos, little):
    """The unsigned 32-bit number at ``pos``: compiled, four C reads of the bytes (struct's unpack_from is a
    method call and a tuple); run as Python, unpack_from is the faster and is used."""
    if little:
        return data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24
    return data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]


class _Interface:
    __slots__ = ("linktype", "snaplen", "scale", "per_second", "offset", "note")

    def __init__(self, linktype, snaplen, scale=1e-6, offset=0):
        self.linktype = linktype
        self.snaplen = snaplen
        self.scale = scale
        self.per_second = 1_000_000  # its time units in a second (if_tsresol), whose length ``scale`` is
        self.offset = offset
        self.note = None  # what its first packet tells of its description (see _PcapngBlocks._pass_block)


def _time(iface, units):
    """The time ``units`` of ``iface``'s resolution stand for: whole seconds plus the fraction, added as a pcap's
    seconds and fraction are, so that one time reads as the same float from either format."""
    seconds, part = divmod(units, iface.per_second)
    return seconds + part * iface.scale + iface.offset


def _parse_options(body, order):
    """Yield (code, value) of a pcapng options list; an option that runs past the list's end, as (code, None), last."""
    pos = 0
    end = len(body)
    while pos + 4 <= end:
        code, length = struct.unpack_from(order + "HH", body, pos)
        if code == 0:
            return
        if pos + 4 + length > end:
            yield code, None
            return
        yield code, body[pos + 4:pos + 4 + length]
        pos += 4 + ((length + 3) & ~3)


def _interface(body, order, where):
    """The interface a description block's ``body`` describes; ``where`` names the block for its note."""
    linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", body, 0)
    iface = _Interface(linktype, snaplen)
    for code, value in _parse_options(body[8:], order):
        if value is None:  # damaged: what it would say (a time resolution) is not taken
            iface.note = (f"{where} has an option (code {code}) that runs past the block: it and the options after "
                          f"it were not read")
        elif code == 9 and len(value) >= 1:  # if_tsresol
            res = value[0]
            iface.scale = 2.0 ** -(res & 0x7F) if res & 0x80 else 10.0 ** -res
            iface.per_second = 1 << (res & 0x7F) if res & 0x80 else 10 ** res
        elif code == 14 and len(value) >= 8:  # if_tsoffset, seconds
            iface.offset = struct.unpack(order + "q", value[:8])[0]
    return iface


class _PcapngBlocks(_Chunks):
    """A pcapng stream's packet blocks, as Frames; the section headers and interface descriptions between
    them are read on the way."""

    __slots__ = ("little", "interfaces", "notes", "last_ts")

    def __init__(self, handle, name, first):
        _Chunks.__init__(self, handle, name, first, 0)
        self.little = True
        self.interfaces = []
        self.notes = 0  # interfaces whose note no packet has carried yet
        self.last_ts = None  # the last packet block's time: a simple packet block, which has none, takes it

    def _next(self):
        """The next packet block's Frame; None where the stream ends between blocks."""
        while True:
            if len(self.data) - self.pos < 12:
                self._refill(12)
                if not self.data:
                    return None
            frame = self._block()
            if frame is not None:
                return frame

    def _block(self):
        """Take the block at ``pos``: a packet block's Frame, None for any other block."""
        data, pos, name, position = self.data, self.pos, self.name, self.position
        have = len(data) - pos
        if have < 4:
            raise CaptureError(f"{name}: block header cut short at byte {position}")
        if _u32(data, pos, True) == SHB_TYPE:
            if have < 12:
                raise CaptureError(f"{name}: section header block cut short at byte {position}")
            bom = data[pos + 8:pos + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                self.little = True
            elif bom == b"\x1a\x2b\x3c\x4d":
                self.little = False
            else:
                raise CaptureError(f"{name}: section header at byte {position} has a bad byte-order magic "
                                   f"({bom.hex(' ')})")
            self.interfaces = []
            self.notes = 0
        elif have < 8:
            raise CaptureError(f"{name}: block header cut short at byte {position}")
        little = self.little
        block_type, total = _u32(data, pos, little), _u32(data, pos + 4, little)
        if total < 12 or total % 4 or total > MAX_BLOCK:
            raise CaptureError(f"{name}: block at byte {position} has an impossible length {total}; "
                               f"the file is corrupt")
        if _holds_packet(block_type):
            if total > MAX_PACKET_BLOCK:
                self.number += 1
                return self._skip_oversized(block_type, total)
        elif total > (MAX_INTERFACE_BLOCK if block_type == 1 else MAX_PACKET_BLOCK):
            self._pass_block(block_type, total)
            return None
        if have < total:
            self._refill(total)
            data, pos = self.data, 0
            if len(data) < total:
                raise CaptureError(f"{name}: block at byte {position} cut short: {len(data)} of {total} bytes "
                                   f"present")
        trailer = _u32(data, pos + total - 4, little)
        if trailer != total:
            raise CaptureError(f"{name}: block at byte {position} has inconsistent lengths "
                               f"({total} at its start, {trailer} at its end)")
        self.pos = pos + total
        self.position = position + total
        if block_type == 1:
            if total < 20:
                raise CaptureError(f"{name}: interface description block at byte {position} is too short")
            if len(self.interfaces) < MAX_INTERFACES:
                iface = _interface(data[pos + 8:pos + total - 4], self._order(),
                                   f"interface {len(self.interfaces)}'s description block at byte {position}")
                self.interfaces.append(iface)
                self.notes += iface.note is not None
        elif _holds_packet(block_type):
            self.number += 1
            if block_type == 6 and total >= 32:
                frame = self._enhanced(data, pos, total)
            else:
                frame = _packet_block(block_type, data[pos + 8:pos + total - 4], self._order(),
                                      self.interfaces, self.number, position)
            if block_type == 3 and self.last_ts is not None:
                frame.ts = self.last_ts  # no time of its own: not 1970, nor a jump back in the capture's clock
            elif block_type != 3 and frame.error is None:
                self.last_ts = frame.ts
            if self.notes:
                self._tell_note(frame)
            return frame
        return None

    def _enhanced(self, data, pos, total):
        """An enhanced packet block's Frame, its header read in place; one that _packet_block would flag
        goes there."""
        little, interfaces = self.little, self.interfaces
        iface_id, caplen = _u32(data, pos + 8, little), _u32(data, pos + 20, little)
        if iface_id >= len(interfaces) or caplen > _RECORD_LIMIT or 32 + caplen > total:
            return _packet_block(6, data[pos + 8:pos + total - 4], self._order(), interfaces,
                                 self.number, self.position - total)
        iface = interfaces[iface_id]
        high, low = _u32(data, pos + 12, little), _u32(data, pos + 16, little)
        ts_units = high << 32 | low
        return new_frame(self.number, _time(iface, ts_units), caplen, _u32(data, pos + 24, little),
                         iface.linktype, cut(data, pos + 28, pos + 28 + caplen), iface_id, None)

    def _skip_oversized(self, block_type, total):
        """A packet block too long for any record: read past it in chunks and return a corrupt Frame (with the
        block's time where its header gives one)."""
        block_at = self.position
        head = self._read_past(total, 20)
        ts, iface_id, linktype, wirelen = _block_header(block_type, head, self._order(), self.interfaces)
        return Frame(self.number, ts, 0, wirelen, linktype, b"", iface_id,
                     f"packet block at byte {block_at} is {total} bytes long, more than a record may be "
                     f"({MAX_RECORD} captured bytes, {MAX_OPTIONS} of options); skipped")

    def _pass_block(self, block_type, total):
        """A block other than a packet's, longer than it may be held: read past it in chunks. An interface
        description keeps the options in its first ``MAX_OPTIONS`` bytes of them, and the note that the rest were
        not read."""
        block_at = self.position
        kept = self._read_past(total, MAX_INTERFACE_BLOCK - 12 if block_type == 1 else 0)
        if block_type == 1 and len(self.interfaces) < MAX_INTERFACES:
            iface = _interface(kept, self._order(), f"interface {len(self.interfaces)}'s description block")
            iface.note = (f"interface {len(self.interfaces)}'s description block at byte {block_at} is {total} bytes "
                          f"long, more than {MAX_OPTIONS} bytes of options: the options past them were not read")
            self.interfaces.append(iface)
            self.notes += 1

    def _read_past(self, total, keep):
        """Read past the block of ``total`` bytes at ``pos`` in chunks, its trailer checked; the first ``keep`` bytes
        of its body."""
        name, block_at = self.name, self.position
        self.pos += 8
        kept = self._take(keep)
        left = self._skip(total - 12 - len(kept))
        trailer = self._take(4)
        if left > 0 or len(kept) < keep or len(trailer) < 4:
            raise CaptureError(f"{name}: block at byte {block_at} cut short: it claims {total} bytes")
        end = _u32(trailer, 0, self.little)
        if end != total:
            raise CaptureError(f"{name}: block at byte {block_at} has inconsistent lengths "
                               f"({total} at its start, {end} at its end)")
        self.position = block_at + total
        return kept

    def _tell_note(self, frame):
        """``frame`` carries its interface's note, where it is the interface's first packet and has no problem of
        its own to say."""
        if frame.error is None and frame.iface < len(self.interfaces):
            iface = self.interfaces[frame.iface]
            if iface.note is not None:
                frame.error, iface.note = iface.note, None
                self.notes -= 1

    def _order(self):
        """The section's byte order as struct writes it."""
        return "<" if self.little else ">"

    def _take(self, size):
        """The next ``size`` bytes, fewer where the stream ends."""
        if len(self.data) - self.pos < size:
            self._refill(size)
        taken = self.data[self.pos:self.pos + size]
        self.pos += len(taken)
        return taken

    def _skip(self, size):
        """Step over the next ``size`` bytes, a chunk at a time: the bytes that were not there."""
        while size > 0:
            have = len(self.data) - self.pos
            if not have:
                self._refill(min(size, SKIP_CHUNK))
                have = len(self.data)
                if not have:
                    break
            step = min(have, size)
            self.pos += step
            size -= step
        return size


def _holds_packet(block_type):
    return block_type == 6 or block_type == 2 or block_type == 3  # enhanced, obsolete, simple


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
    return _time(iface, (hi << 32) | lo), iface_id, iface.linktype, wirelen


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
        kept = (f"past the first {MAX_INTERFACES} of its section, which are all that are kept"
                if len(interfaces) >= MAX_INTERFACES else f"but only {len(interfaces)} are described")
        return Frame(number, ts_units * 1e-6, 0, wirelen, None, b"", iface_id,
                     f"packet block at byte {block_at} names interface {iface_id}, {kept}")
    iface = interfaces[iface_id]
    ts = _time(iface, ts_units)
    if caplen > MAX_RECORD:
        return Frame(number, ts, 0, wirelen, iface.linktype, b"", iface_id,
                     f"packet block at byte {block_at} claims {caplen} captured bytes, more than any link "
                     f"allows ({MAX_RECORD})")
    if data_at + caplen > len(body):
        return Frame(number, ts, 0, wirelen, iface.linktype, b"", iface_id,
                     f"packet block at byte {block_at} claims {caplen} captured bytes but holds "
                     f"{len(body) - data_at}")
    return new_frame(number, ts, caplen, wirelen, iface.linktype, body[data_at:data_at + caplen], iface_id, None)
