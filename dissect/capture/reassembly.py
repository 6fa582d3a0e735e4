"""TCP stream reassembly and IPv4 defragmentation, both bounded.

TcpReassembler hands each direction's payload bytes on in sequence order, once:
retransmissions and overlaps are cut away (an overlap whose bytes differ from
what was delivered is a finding), out-of-order segments wait until the gap fills,
and a gap that never fills (at FIN or RST, when too much waits behind it, or at
the end of the capture) is delivered as a Gap so that parsers can resynchronize.
Memory is bounded per stream and in total; evictions are reported.
"""

import heapq

from ..core import Finding
from ..core.bounded import BoundedDict

MAX_STREAMS = 4096                 # streams tracked at once; the least recently used is evicted
MAX_PENDING_PER_STREAM = 256 * 1024
MAX_PENDING_TOTAL = 32 * 1024 * 1024
MAX_PENDING_SEGMENTS = 4096        # segments held behind a gap, per direction
HISTORY = 4096                     # delivered bytes kept per direction, to check overlaps
RECENTLY_CLOSED = 4096             # closed connections remembered, so late retransmissions stay quiet

FIN, SYN, RST = 0x01, 0x02, 0x04


def seq_diff(a, b):
    """a - b in 32-bit sequence space, as a signed number."""
    d = (a - b) & 0xFFFFFFFF
    return d - 0x100000000 if d & 0x80000000 else d


class Chunk:
    """In-order bytes of one direction, from one frame. ``frame_offset``: where they sit in that frame."""

    __slots__ = ("data", "frame", "frame_offset")

    def __init__(self, data, frame, frame_offset):
        self.data = data
        self.frame = frame
        self.frame_offset = frame_offset


class Gap:
    """Bytes that never arrived."""

    __slots__ = ("size", "frame")

    def __init__(self, size, frame):
        self.size = size
        self.frame = frame


class _Direction:
    """One direction of a connection. Held segments are keyed by their offset from the stream start
    (unwrapped, so that a heap finds the earliest even across sequence-number wraparound)."""

    __slots__ = ("index", "next_seq", "next_off", "pending", "heap", "pending_bytes", "history", "fin_seq", "closed")

    def __init__(self, index):
        self.index = index
        self.next_seq = None
        self.next_off = 0
        self.pending = {}            # offset -> (data, frame, frame_offset)
        self.heap = []
        self.pending_bytes = 0
        self.history = bytearray()
        self.fin_seq = None
        self.closed = False


class TcpStream:
    __slots__ = ("index", "key", "client", "directions", "dissector", "parsers", "ignored", "probed")

    def __init__(self, index, key, client):
        self.index = index
        self.key = key
        self.client = client          # (ip, port) of the side seen first (the SYN's sender, if seen)
        self.directions = (_Direction(0), _Direction(1))
        self.dissector = None
        self.parsers = None
        self.ignored = False
        self.probed = 0

    def direction_of(self, src, sport):
        return 0 if (src, sport) == self.client else 1

    @property
    def closed(self):
        return all(d.closed for d in self.directions)


class Delivery:
    """What one segment produced: (direction, Chunk or Gap) pieces in order, findings, and whether the
    stream closed. ``evicted`` lists streams dropped to make room for this one."""

    __slots__ = ("stream", "direction", "pieces", "findings", "closed", "evicted")

    def __init__(self, stream, direction):
        self.stream = stream
        self.direction = direction
        self.pieces = []
        self.findings = []
        self.closed = False
        self.evicted = []


class TcpReassembler:
    __slots__ = ("streams", "max_pending", "max_total", "total_pending", "next_index", "recently_closed")

    def __init__(self, max_streams=MAX_STREAMS, max_pending=MAX_PENDING_PER_STREAM, max_total=MAX_PENDING_TOTAL):
        self.streams = BoundedDict(max_streams)
        self.max_pending = max_pending
        self.max_total = max_total
        self.total_pending = 0
        self.next_index = 0
        self.recently_closed = BoundedDict(RECENTLY_CLOSED)

    def segment(self, packet, frame_number):
        key = _key(packet)
        stream = self.streams.get(key)
        evicted = None
        if stream is None:
            if key in self.recently_closed and not packet.tcp_flags & SYN:
                return None           # a late segment of a finished connection
            self.recently_closed.pop(key, None)
            stream = TcpStream(self.next_index, key, (packet.src, packet.sport))
            self.next_index += 1
            evicted = self.streams.put(key, stream)
        else:
            self.streams.move_to_end(key)
        direction = stream.direction_of(packet.src, packet.sport)
        delivery = Delivery(stream, direction)
        if evicted is not None:
            old = evicted[1]
            self._drop(old)
            delivery.evicted.append(old)
            delivery.findings.append(Finding(
                "tcp.stream_evicted", "warning",
                f"more than {self.streams.limit} TCP streams open at once: stream {old.index} was dropped "
                f"to keep memory bounded"))
        if stream.ignored:
            self._close_if_done(stream, packet, key, delivery)
            return delivery
        self._segment(stream.directions[direction], packet, frame_number, delivery)
        self._close_if_done(stream, packet, key, delivery, frame_number)
        return delivery

    def _close_if_done(self, stream, packet, key, delivery, frame=None):
        side = stream.directions[delivery.direction]
        if packet.tcp_flags & FIN and side.fin_seq is None:
            side.fin_seq = 0
        ended = packet.tcp_flags & RST or all(d.fin_seq is not None for d in stream.directions)
        if not ended:
            return
        for other in stream.directions:
            if not stream.ignored:
                self._flush(other, frame, delivery)
            other.closed = True
        delivery.closed = True
        self.streams.pop(key, None)
        self.recently_closed.put(key, True)

    def _segment(self, side, packet, frame, delivery):
        flags, seq, data = packet.tcp_flags, packet.tcp_seq, packet.payload or b""
        if flags & SYN:
            side.next_seq = (seq + 1) & 0xFFFFFFFF
            seq = side.next_seq
        elif side.next_seq is None:
            side.next_seq = seq           # the capture began mid-stream
        if data:
            self._data(side, seq, bytes(data), frame, packet.payload_offset, delivery)
        if flags & FIN:
            side.fin_seq = (seq + len(data)) & 0xFFFFFFFF

    def _data(self, side, seq, data, frame, offset, delivery):
        rel = seq_diff(seq, side.next_seq)
        if rel > 0:
            self._hold(side, side.next_off + rel, data, frame, offset, delivery)
            return
        if rel < 0:
            overlap = min(-rel, len(data))
            self._check_overlap(side, -rel, data[:overlap], delivery)
            if overlap == len(data):
                delivery.findings.append(Finding(
                    "tcp.retransmission", "note",
                    f"retransmission of {len(data)} bytes already delivered (ignored)"))
                return
            data, offset = data[overlap:], offset + overlap
        self._deliver(side, data, frame, offset, delivery)
        self._drain(side, delivery)

    def _hold(self, side, stream_offset, data, frame, offset, delivery):
        if stream_offset in side.pending:
            return
        side.pending[stream_offset] = (data, frame, offset)
        heapq.heappush(side.heap, stream_offset)
        side.pending_bytes += len(data)
        self.total_pending += len(data)
        delivery.findings.append(Finding("tcp.out_of_order", "note",
                                         f"segment {stream_offset - side.next_off} bytes ahead of the next expected "
                                         f"byte: held until the gap fills"))
        if (side.pending_bytes > self.max_pending or self.total_pending > self.max_total
                or len(side.pending) > MAX_PENDING_SEGMENTS):
            delivery.findings.append(Finding(
                "tcp.buffer_limit", "warning",
                f"{side.pending_bytes} bytes in {len(side.pending)} segments wait behind a gap (limits: "
                f"{self.max_pending} bytes and {MAX_PENDING_SEGMENTS} segments a stream, {self.max_total} bytes "
                f"in all): the gap is declared lost"))
            self._skip_gap(side, frame, delivery)

    def _check_overlap(self, side, back, old_part, delivery):
        history = side.history
        if back > len(history):
            return
        start = len(history) - back
        kept = bytes(history[start:start + len(old_part)])
        if kept != old_part[:len(kept)]:
            delivery.findings.append(Finding("tcp.overlap_conflict", "warning",
                                             f"a segment overlaps {len(kept)} bytes already delivered with "
                                             f"different contents; the first bytes are kept"))

    def _deliver(self, side, data, frame, offset, delivery):
        if not data:
            return
        delivery.pieces.append((side.index, Chunk(data, frame, offset)))
        side.next_seq = (side.next_seq + len(data)) & 0xFFFFFFFF
        side.next_off += len(data)
        side.history += data
        if len(side.history) > HISTORY:
            del side.history[:len(side.history) - HISTORY]

    def _drain(self, side, delivery):
        heap = side.heap
        while heap and heap[0] <= side.next_off:
            stream_offset = heapq.heappop(heap)
            data, frame, offset = self._take(side, stream_offset)
            behind = side.next_off - stream_offset
            if behind < len(data):
                self._check_overlap(side, behind, data[:behind], delivery)
                self._deliver(side, data[behind:], frame, offset + behind, delivery)

    def _take(self, side, stream_offset):
        data, frame, offset = side.pending.pop(stream_offset)
        side.pending_bytes -= len(data)
        self.total_pending -= len(data)
        return data, frame, offset

    def _skip_gap(self, side, frame, delivery):
        """Give up on the bytes before the earliest held segment: report them lost and go on after them."""
        missing = side.heap[0] - side.next_off
        delivery.pieces.append((side.index, Gap(missing, frame)))
        delivery.findings.append(Finding("tcp.lost_segment", "warning",
                                         f"{missing} bytes of the stream never arrived (a lost segment); "
                                         f"parsing resumes after them"))
        side.next_off += missing
        side.next_seq = (side.next_seq + missing) & 0xFFFFFFFF
        side.history.clear()
        self._drain(side, delivery)

    def _flush(self, side, frame, delivery):
        while side.pending:
            self._skip_gap(side, frame, delivery)

    def _drop(self, stream):
        for side in stream.directions:
            self.total_pending -= side.pending_bytes
            side.pending.clear()
            side.heap.clear()
            side.pending_bytes = 0

    def finish(self):
        """A delivery per stream still open at the end of the capture, with what waited behind gaps."""
        out = []
        for stream in list(self.streams.values()):
            delivery = Delivery(stream, 0)
            if not stream.ignored:
                for side in stream.directions:
                    self._flush(side, None, delivery)
            delivery.closed = True
            out.append(delivery)
        self.streams.clear()
        return out


def _key(packet):
    a, b = (packet.src, packet.sport), (packet.dst, packet.dport)
    return (a, b) if a <= b else (b, a)


class IPv4Defragmenter:
    """Collects IPv4 fragments by (src, dst, protocol, id) until the datagram is whole."""

    __slots__ = ("pending", "max_bytes", "total")

    def __init__(self, max_datagrams=1024, max_bytes=16 * 1024 * 1024):
        self.pending = BoundedDict(max_datagrams)
        self.max_bytes = max_bytes
        self.total = 0

    def add(self, packet, frame):
        """Return (payload, frames, findings) when a datagram completes, else (None, None, findings)."""
        findings = []
        key = (packet.src, packet.dst, packet.transport, packet.ip_id)
        offset, more = packet.fragment
        data = bytes(packet.payload or b"")
        entry = self.pending.get(key)
        if entry is None:
            entry = {"parts": {}, "frames": [], "end": None, "bytes": 0}
            evicted = self.pending.put(key, entry)
            if evicted is not None:
                self.total -= evicted[1]["bytes"]
                findings.append(Finding("ip.fragments_evicted", "warning",
                                        f"more than {self.pending.limit} IPv4 datagrams in reassembly: the oldest "
                                        f"(frames {evicted[1]['frames'][:4]}) was dropped"))
        if offset + len(data) > 65535:
            findings.append(Finding("ip.bad_fragment", "warning",
                                    f"fragment at offset {offset} runs past 65535 bytes; ignored"))
            return None, None, findings
        previous = entry["parts"].get(offset)
        if previous is not None and previous != data:
            findings.append(Finding("ip.fragment_overlap", "warning",
                                    f"fragment at offset {offset} repeated with different bytes; the first is kept"))
        elif previous is None:
            if self._overlaps(entry["parts"], offset, data):
                findings.append(Finding("ip.fragment_overlap", "warning",
                                        f"fragment at offset {offset} overlaps another fragment"))
            entry["parts"][offset] = data
            entry["bytes"] += len(data)
            self.total += len(data)
        if len(entry["frames"]) < 64:
            entry["frames"].append(frame)
        if not more:
            entry["end"] = offset + len(data)
        while self.total > self.max_bytes and len(self.pending) > 1:
            _, old = self.pending.popitem(last=False)
            self.total -= old["bytes"]
            findings.append(Finding("ip.fragments_evicted", "warning",
                                    f"IPv4 reassembly holds more than {self.max_bytes} bytes: the oldest datagram "
                                    f"was dropped"))
        payload = self._assemble(entry)
        if payload is None:
            return None, None, findings
        del self.pending[key]
        self.total -= entry["bytes"]
        return payload, entry["frames"], findings

    @staticmethod
    def _overlaps(parts, offset, data):
        end = offset + len(data)
        return any(o < end and offset < o + len(d) for o, d in parts.items())

    @staticmethod
    def _assemble(entry):
        end = entry["end"]
        if end is None:
            return None
        out = bytearray(end)
        covered = 0
        for offset in sorted(entry["parts"]):
            part = entry["parts"][offset]
            if offset > covered:
                return None
            out[offset:offset + len(part)] = part
            covered = max(covered, offset + len(part))
        return bytes(out[:end]) if covered >= end else None
