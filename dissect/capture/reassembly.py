"""TCP stream reassembly and IPv4 defragmentation, both bounded.

TcpReassembler hands each direction's payload bytes on in sequence order, once:
retransmissions and overlaps are cut away (an overlap whose bytes differ from
what was delivered is a finding), out-of-order segments wait until the gap fills,
and a gap that never fills (at the sender's FIN, at RST, when too much waits
behind it, or at the end of the capture) is delivered as a Gap so that parsers
can resynchronize. Memory is bounded per stream and in total; evictions are
reported.

IPv4Defragmenter keeps each datagram's fragments as non-overlapping pieces and
the ranges they cover merged and sorted, so that placing a fragment costs two
bisections however many fragments are held; its bytes are bounded in total.
"""

import heapq
from bisect import bisect_left, bisect_right

from ..core.bounded import BoundedDict, popped, put, refreshed
from ..core.model import Finding
from .tables import IP_FINDINGS, TCP_FINDINGS

MAX_STREAMS = 4096                 # streams tracked at once; the least recently used is evicted
MAX_PENDING_PER_STREAM = 256 * 1024
MAX_PENDING_TOTAL = 32 * 1024 * 1024
MAX_PENDING_SEGMENTS = 4096        # segments held behind a gap, per direction
SEGMENT_COST = 256                 # bytes a held segment, or an uncaptured end ahead, costs beyond its data
HISTORY = 4096                     # delivered bytes kept per direction, to check overlaps
RECENTLY_CLOSED = 4096             # closed connections remembered (their stream numbers and ends), so late segments
                                   # stay quiet, and bytes sent after the end are told
PIECE_COST = 96                    # bytes a held IPv4 fragment costs beyond its data (bookkeeping)
UNSYNCED_REUSE = 1 << 20           # once a side has sent its FIN: a segment this far outside a side's bytes is a new
                                   # connection's whose SYN was not captured (see _unsynced_connection)

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
SYN_ACK = SYN | ACK
# The findings of a segment's gaps, which a segment that makes several of sums up (see _sum_gaps).
_GAP_CODES = (TCP_FINDINGS.lost_segment.code, TCP_FINDINGS.cut_segment.code)


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
    """Bytes that never arrived: lost on the way, or ``cut`` (sent, but not kept by the capture's snap length)."""

    __slots__ = ("size", "frame", "cut")

    def __init__(self, size, frame, cut=False):
        self.size = size
        self.frame = frame
        self.cut = cut


class _Direction:
    """One direction of a connection. Held segments are keyed by their offset from the stream start
    (unwrapped, so that a heap finds the earliest even across sequence-number wraparound)."""

    __slots__ = ("index", "next_seq", "next_off", "pending", "heap", "pending_bytes", "history", "fin_seq", "closed",
                 "cuts", "cut_heap")

    def __init__(self, index):
        self.index = index
        self.next_seq = None
        self.next_off = 0
        self.pending = {}            # offset -> (data, frame, frame_offset)
        self.heap = []
        self.pending_bytes = 0
        self.history = b""           # the last HISTORY bytes delivered, exactly
        self.fin_seq = None
        self.closed = False
        self.cuts = {}               # offset -> (size, frame): bytes ahead the capture did not keep (snap length)
        self.cut_heap = []           # the offsets of the cuts, earliest first


class _Closed:
    """A connection that ended (at an RST or both FINs), as ``recently_closed`` remembers it: its stream number,
    its client (address, port), each direction's end and first sequence number (None: that side was never seen,
    or the stream was ignored, its numbers no longer followed), and whether a dissector took it (bytes after its
    end are then told)."""

    __slots__ = ("index", "client", "ends", "starts", "dissected")

    def __init__(self, index, client, ends, starts, dissected):
        self.index = index
        self.client = client
        self.ends = ends
        self.starts = starts
        self.dissected = dissected

    def direction_of(self, src, sport):
        return 0 if (src, sport) == self.client else 1


class TcpStream:
    __slots__ = ("index", "key", "client", "directions", "dissector", "parsers", "ignored", "probed", "probe_held",
                 "ends")

    def __init__(self, index, key, client):
        self.index = index
        self.key = key
        self.client = client          # (ip, port) of the side seen first (a SYN-ACK's receiver: the SYN's sender)
        self.directions = (_Direction(0), _Direction(1))
        self.dissector = None
        self.parsers = None
        self.ignored = False
        self.probed = 0
        self.probe_held = None  # the pipeline's: segments probed while no dissector took the stream (see _probe)
        self.ends = None  # (client, server) as texts, made by the pipeline for the first message it tags

    def direction_of(self, src, sport):
        return 0 if (src, sport) == self.client else 1

    @property
    def closed(self):
        return all(d.closed for d in self.directions)


class Delivery:
    """What one segment produced: (direction, Chunk or Gap) pieces in order, findings, whether the stream closed,
    and ``finished``, the direction whose last byte it delivered (its FIN's; None). ``evicted`` lists streams
    dropped to make room for this one."""

    __slots__ = ("stream", "direction", "pieces", "findings", "closed", "finished", "evicted")

    def __init__(self, stream, direction):
        self.stream = stream
        self.direction = direction
        self.pieces = []
        self.findings = []
        self.closed = False
        self.finished = None
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
        stream = refreshed(self.streams, key)  # the most recently used, if it is there
        evicted = reused = None
        unsynced = False
        if stream is not None:
            if packet.tcp_flags & SYN:
                if _new_connection(stream, packet):
                    reused = popped(self.streams, key)  # its end was not captured: it ends here, and a new one begins
                    stream = None
            elif _finished_sides(stream.directions) and _unsynced_connection(stream, packet):
                reused = popped(self.streams, key)
                stream, unsynced = None, True
        if stream is None:
            closed = self.recently_closed.get(key)
            if closed is not None and not packet.tcp_flags & SYN and not _unsynced_after_close(closed, packet):
                packet.tcp_stream = closed.index  # a late segment of a finished connection (its last ACK)
                return None
            popped(self.recently_closed, key)
            stream = TcpStream(self.next_index, key, _client(packet))
            self.next_index += 1
            evicted = put(self.streams, key, stream)
        direction = stream.direction_of(packet.src, packet.sport)
        delivery = Delivery(stream, direction)
        if evicted is not None:
            old = evicted[1]
            self._end_early(old, delivery, TCP_FINDINGS.stream_evicted.at(
                f"more than {self.streams.limit} TCP streams open at once: stream {old.index} was dropped"))
        if reused is not None:
            held = "; the bytes it held behind a gap are dropped" if _holds_bytes(reused) else ""
            if unsynced:
                finding = TCP_FINDINGS.port_reused.at(
                    f"no SYN seen: a segment more than {UNSYNCED_REUSE >> 20} MiB outside the bytes of stream "
                    f"{reused.index}, on its ports, after its FIN: a new connection whose SYN was not captured; that "
                    f"stream ends here{held}")
            else:
                finding = TCP_FINDINGS.port_reused.at(
                    f"a SYN that does not start where the bytes of stream {reused.index} began, on its ports: a new "
                    f"connection, the end of that stream not captured; it ends here{held}")
            self._end_early(reused, delivery, finding)
        if stream.ignored:
            self._close_if_done(stream, packet, key, delivery)
            return delivery
        self._segment(stream.directions[direction], packet, frame_number, delivery)
        self._close_if_done(stream, packet, key, delivery, frame_number)
        return delivery

    def _end_early(self, old, delivery, finding):
        """A stream ends before its FINs or RST (evicted, or its ports taken by a new connection): what it held is
        dropped, and the pipeline closes its parsers (``evicted``)."""
        self._drop(old)
        delivery.evicted.append(old)
        delivery.findings.append(finding)

    def _close_if_done(self, stream, packet, key, delivery, frame=None):
        side = stream.directions[delivery.direction]
        if packet.tcp_flags & FIN and side.fin_seq is None:
            side.fin_seq = 0
        ended = packet.tcp_flags & RST or _finished_sides(stream.directions) == 2
        if not ended:
            return
        for other in stream.directions:
            if not stream.ignored:
                self._flush(other, frame, delivery)
            other.closed = True
        delivery.closed = True
        self._drop(stream)
        popped(self.streams, key)
        if stream.ignored:  # its numbers stopped where the pipeline let it go: no end nor start to judge by
            ends = starts = (None, None)
        else:
            ends = tuple([side.next_seq for side in stream.directions])
            starts = tuple([None if side.next_seq is None else (side.next_seq - side.next_off) & 0xFFFFFFFF
                            for side in stream.directions])
        put(self.recently_closed, key, _Closed(stream.index, stream.client, ends, starts, stream.dissector is not None))

    def after_close(self, packet):
        """For a segment ``segment`` took as a late one of a closed stream: a finding where it carries bytes past
        those its side delivered, which are not dissected (None for a last ACK, a retransmission, or a stream no
        dissector took)."""
        closed = self.recently_closed.get(_key(packet))
        data = packet.payload
        if closed is None or not closed.dissected or not data or packet.tcp_flags & SYN:
            return None
        end = closed.ends[closed.direction_of(packet.src, packet.sport)]
        beyond = len(data) if end is None else min(len(data), seq_diff((packet.tcp_seq + len(data)) & 0xFFFFFFFF,
                                                                       end))
        if beyond <= 0:
            return None
        return TCP_FINDINGS.data_after_close.at(f"{beyond} bytes after stream {closed.index} ended (at its RST, or "
                                                f"both sides' FINs): not dissected")

    def dissected(self, stream):
        """A dissector took ``stream``, closed by the segment that brought its first bytes: bytes after its end are
        told (``after_close``) as for a stream taken before."""
        closed = self.recently_closed.get(stream.key)
        if closed is not None and closed.index == stream.index:
            closed.dissected = True

    def _segment(self, side, packet, frame, delivery):
        first_finding, first_piece = len(delivery.findings), len(delivery.pieces)
        self._segment_bytes(side, packet, frame, delivery)
        _sum_gaps(delivery, first_finding, first_piece)

    def _segment_bytes(self, side, packet, frame, delivery):
        flags, seq, data = packet.tcp_flags, packet.tcp_seq, packet.payload or b""
        if flags & SYN:
            seq = (seq + 1) & 0xFFFFFFFF  # the SYN takes one sequence number: its data, if any, follows it
            if side.next_seq is None:
                side.next_seq = seq
        elif side.next_seq is None:
            side.next_seq = seq           # the capture began mid-stream
        if data:
            self._data(side, seq, bytes(data), frame, packet.payload_offset, delivery)
        if packet.cut:
            self._uncaptured(side, (seq + len(data)) & 0xFFFFFFFF, packet.cut, frame, delivery)
        if flags & FIN:
            if side.fin_seq is None:
                delivery.finished = side.index  # the first FIN of this side: its last byte is delivered now
            else:
                _beyond_fin(side, seq)  # a later FIN at a later number: bytes beyond the first one's
            side.fin_seq = (seq + len(data) + packet.cut) & 0xFFFFFFFF
            self._finished(side, frame, delivery)

    def _data(self, side, seq, data, frame, offset, delivery):
        _beyond_fin(side, seq)
        rel = seq_diff(seq, side.next_seq)
        if rel > 0:
            self._hold(side, side.next_off + rel, data, frame, offset, delivery)
            return
        if rel < 0:
            if rel == -1 and len(data) == 1 and side.history[-1:] != data:
                delivery.findings.append(TCP_FINDINGS.keep_alive.at("1 byte just before the next expected byte, not "
                                                                    "the byte delivered there"))
                return
            overlap = min(-rel, len(data))
            self._check_overlap(side, -rel, data[:overlap], delivery)
            if overlap == len(data):
                delivery.findings.append(TCP_FINDINGS.retransmission.at(_behind_text(side, -rel, len(data))))
                return
            data, offset = data[overlap:], offset + overlap
        self._deliver(side, data, frame, offset, delivery)
        self._drain(side, delivery)

    def _hold(self, side, stream_offset, data, frame, offset, delivery):
        held = side.pending.get(stream_offset)
        while held is not None:  # a segment held at the same place: only the bytes beyond it are new
            size = len(held[0])
            if data[:size] != held[0][:len(data)]:
                delivery.findings.append(TCP_FINDINGS.overlap_conflict.at(
                    "a segment overlaps bytes held behind a gap with different contents; the first bytes are kept"))
            if len(data) <= size:
                return
            stream_offset, data, offset = stream_offset + size, data[size:], offset + size
            held = side.pending.get(stream_offset)
        side.pending[stream_offset] = (data, frame, offset)
        heapq.heappush(side.heap, stream_offset)
        self._charge(side, len(data) + SEGMENT_COST)
        delivery.findings.append(TCP_FINDINGS.out_of_order.at(
            f"segment {stream_offset - side.next_off} bytes ahead of the next expected byte: held until the gap "
            f"fills"))
        if (side.pending_bytes > self.max_pending or self.total_pending > self.max_total
                or len(side.pending) > MAX_PENDING_SEGMENTS):
            delivery.findings.append(TCP_FINDINGS.buffer_limit.at(
                f"{len(side.pending)} segments wait behind a gap, {side.pending_bytes} bytes with their bookkeeping "
                f"(limits: {self.max_pending} bytes and {MAX_PENDING_SEGMENTS} segments a stream, {self.max_total} "
                f"bytes in all): the gap is declared lost"))
            self._skip_gap(side, frame, delivery)

    def _check_overlap(self, side, back, old_part, delivery):
        history = side.history
        if back > len(history):
            return
        start = len(history) - back
        kept = bytes(history[start:start + len(old_part)])
        if kept != old_part[:len(kept)]:
            delivery.findings.append(TCP_FINDINGS.overlap_conflict.at(
                f"a segment overlaps {len(kept)} bytes already delivered with different contents; the first bytes "
                f"are kept"))

    def _deliver(self, side, data, frame, offset, delivery):
        if not data:
            return
        delivery.pieces.append((side.index, Chunk(data, frame, offset)))
        side.next_seq = (side.next_seq + len(data)) & 0xFFFFFFFF
        side.next_off += len(data)
        side.history = _last_bytes(side.history, data)

    def _drain(self, side, delivery):
        heap = side.heap
        while True:
            if heap and heap[0] <= side.next_off:
                stream_offset = heapq.heappop(heap)
                data, frame, offset = self._take(side, stream_offset)
                behind = side.next_off - stream_offset
                self._check_overlap(side, behind, data[:behind], delivery)  # all of it, where it adds nothing
                if behind < len(data):
                    self._deliver(side, data[behind:], frame, offset + behind, delivery)
            elif side.cut_heap and side.cut_heap[0] <= side.next_off:
                self._reach_cut(side, heapq.heappop(side.cut_heap), delivery)
            else:
                return

    def _reach_cut(self, side, at, delivery):
        """The stream reached the uncaptured bytes from ``at``: what of them it has not gone past (bytes sent again and
        captured) is a gap."""
        size, frame = side.cuts.pop(at)
        self._charge(side, -SEGMENT_COST)
        left = at + size - side.next_off
        if left > 0:
            self._cut_gap(side, left, frame, delivery)

    def _take(self, side, stream_offset):
        data, frame, offset = side.pending.pop(stream_offset)
        self._charge(side, -len(data) - SEGMENT_COST)
        return data, frame, offset

    def _charge(self, side, cost):
        """Count ``cost`` bytes (negative: given back) held by ``side`` against its limit and the total."""
        side.pending_bytes += cost
        self.total_pending += cost

    def _skip_gap(self, side, frame, delivery):
        """Give up on the bytes before the earliest held segment or uncaptured bytes: report them lost and go on
        after them."""
        starts = side.heap[:1] + side.cut_heap[:1]  # the earliest held segment, the earliest cut
        if not starts:
            return
        ahead = min(starts)
        if ahead > side.next_off:
            self._lose_before(side, ahead - side.next_off, frame, delivery)
        self._drain(side, delivery)

    def _lose_before(self, side, missing, frame, delivery):
        """The ``missing`` bytes before what ``side`` holds are lost, but for its FIN's sequence number among them
        (bytes beyond the FIN that came before it): that number is passed, as when they come after it, and only the
        bytes on either side of it are gaps."""
        to_fin = -1 if side.fin_seq is None else seq_diff(side.fin_seq, side.next_seq)
        if 0 <= to_fin < missing:
            if to_fin:
                self._lose(side, to_fin, frame, delivery)
            _pass_fin(side)
            missing -= to_fin + 1
        if missing:
            self._lose(side, missing, frame, delivery)

    def _uncaptured(self, side, seq, size, frame, delivery):
        """The ``size`` bytes from ``seq`` were sent but the capture did not keep them (snap length). Where they
        are the stream's next bytes they are a gap now, and what waits behind them goes on; ahead of them (the end
        of a segment held out of order) they become one when the stream reaches them, for at most
        MAX_PENDING_SEGMENTS such ends a direction, within the bytes held in all; what the stream has gone past (a
        retransmission) is nothing new."""
        ahead = seq_diff(seq, side.next_seq)
        if ahead > 0:
            at = side.next_off + ahead
            if at in side.cuts:  # the same segment cut again: the later frame says so, unless it cut fewer bytes
                if size >= side.cuts[at][0]:
                    side.cuts[at] = (size, frame)
            elif len(side.cuts) < MAX_PENDING_SEGMENTS and self.total_pending + SEGMENT_COST <= self.max_total:
                side.cuts[at] = (size, frame)
                heapq.heappush(side.cut_heap, at)
                self._charge(side, SEGMENT_COST)
        elif ahead + size > 0:  # they are, or run on into, the stream's next bytes
            self._cut_gap(side, ahead + size, frame, delivery)
            self._drain(side, delivery)

    def _cut_gap(self, side, size, frame, delivery):
        """The stream's next ``size`` bytes were not captured: a gap, and no loss."""
        delivery.pieces.append((side.index, Gap(size, frame, True)))
        delivery.findings.append(TCP_FINDINGS.cut_segment.at(
            f"{size} bytes of the segment were not captured (snap length); parsing resumes after them"))
        side.next_off += size
        side.next_seq = (side.next_seq + size) & 0xFFFFFFFF
        side.history = b""

    def _lose(self, side, missing, frame, delivery):
        delivery.pieces.append((side.index, Gap(missing, frame)))
        delivery.findings.append(TCP_FINDINGS.lost_segment.at(f"{missing} bytes of the stream never arrived (a lost "
                                                              f"segment); parsing resumes after them"))
        side.next_off += missing
        side.next_seq = (side.next_seq + missing) & 0xFFFFFFFF
        side.history = b""

    def _finished(self, side, frame, delivery):
        """The sender's FIN: it has sent its last byte, so bytes still missing before the FIN were lost
        (the capture missed them). The bytes held behind them are delivered now, in the FIN's frame, rather
        than when the other side closes or the capture ends; a retransmission of the lost bytes that
        comes later is reported as one and ignored."""
        self._flush(side, frame, delivery)
        missing = seq_diff(side.fin_seq, side.next_seq)
        if missing > 0:
            self._lose(side, missing, frame, delivery)

    def _flush(self, side, frame, delivery):
        """Declare every gap still open in ``side`` lost and deliver what waited behind each; its findings are
        summed up, one of each kind, however many gaps there were."""
        if not (side.pending or side.cuts):
            return
        first_finding, first_piece = len(delivery.findings), len(delivery.pieces)
        while side.pending or side.cuts:
            self._skip_gap(side, frame, delivery)
        delivery.findings[first_finding:] = _summed_up(delivery.findings[first_finding:], delivery.pieces[first_piece:])

    def ignore(self, stream):
        """No parser takes ``stream``: from now on its segments only open and close it, and it holds no bytes."""
        stream.ignored = True
        self._drop(stream)

    def _drop(self, stream):
        for side in stream.directions:
            self.total_pending -= side.pending_bytes
            side.pending.clear()
            side.heap.clear()
            side.cuts.clear()
            side.cut_heap.clear()
            side.pending_bytes = 0

    def finish(self):
        """A delivery per stream still open at the end of the capture, with what waited behind gaps: made one
        at a time, as the caller takes them, so that only one stream's held bytes are out at once."""
        while self.streams:
            stream = self.streams.popitem(last=False)[1]  # the oldest: one step (iter() would list every key)
            delivery = Delivery(stream, 0)
            if not stream.ignored:
                for side in stream.directions:
                    self._flush(side, None, delivery)
            self._drop(stream)
            delivery.closed = True
            yield delivery


def _behind_text(side, back, size):
    """What a segment wholly behind the next expected byte (``back`` bytes before it) is: bytes the stream delivered,
    or, in a stream whose capture began mid-stream, bytes from before the first one it saw, which it never had."""
    if back <= side.next_off:
        return f"retransmission of {size} bytes already delivered (ignored)"
    return f"{size} bytes from before the first byte the capture saw of this side (it began mid-stream): ignored"


def _last_bytes(history, data):
    """The last HISTORY bytes of ``history`` followed by ``data``, in a bytes object of exactly that size."""
    if len(data) >= HISTORY:
        return data[len(data) - HISTORY:]
    keep = HISTORY - len(data)
    return (history[len(history) - keep:] if len(history) > keep else history) + data


def _summed_up(findings, pieces):
    """``findings`` with one finding per code: the lost and the uncaptured bytes of the gaps among ``pieces`` (a
    delivery's, the side each came from and the piece) summed, and any other code that came more than once counted."""
    gaps = [piece for _, piece in pieces if type(piece) is Gap]
    by_code = {}
    for finding in findings:
        by_code.setdefault(finding.code, []).append(finding)
    out = []
    for code, same in by_code.items():
        if len(same) == 1:
            out.append(same[0])
        elif code == TCP_FINDINGS.lost_segment.code:
            lost = [gap.size for gap in gaps if not gap.cut]
            out.append(TCP_FINDINGS.lost_segment.at(f"{sum(lost)} bytes of the stream in {len(lost)} gaps never "
                                                    f"arrived (lost segments); parsing resumes after each"))
        elif code == TCP_FINDINGS.cut_segment.code:
            cut = [gap.size for gap in gaps if gap.cut]
            out.append(TCP_FINDINGS.cut_segment.at(f"{sum(cut)} bytes in {len(cut)} segments were not captured "
                                                   f"(snap length); parsing resumes after each"))
        else:
            first = same[0]
            out.append(Finding(code, first.severity, f"{first.message} (and {len(same) - 1} more like it)"))
    return out


def _sum_gaps(delivery, first_finding, first_piece):
    """One segment's gaps, from ``first_finding`` and ``first_piece`` of ``delivery`` on, with one lost-segment and
    one uncaptured-bytes finding, summed (as ``_flush`` sums a flush's: a FIN's flush, then the bytes missing right
    before it, or a buffer limit's gap in the same segment)."""
    findings = delivery.findings
    if len(findings) - first_finding < 2:
        return
    mine = findings[first_finding:]
    codes = [finding.code for finding in mine]
    if all(codes.count(code) < 2 for code in _GAP_CODES):
        return
    summed = {finding.code: finding for finding in _summed_up(
        [finding for finding in mine if finding.code in _GAP_CODES], delivery.pieces[first_piece:])}
    out = []
    for finding in mine:
        if finding.code not in _GAP_CODES:
            out.append(finding)
        elif finding.code in summed:
            out.append(summed.pop(finding.code))  # in the first one's place
    findings[first_finding:] = out


def _holds_bytes(stream):
    return bool(stream.directions[0].pending or stream.directions[1].pending)


def _new_connection(stream, packet):
    """Whether a SYN on the ports of an open stream starts another connection: its sender's side of the stream began
    at another sequence number than the one after the SYN's. A retransmitted SYN repeats its number, a SYN captured
    late (after its side's first segments) is the one right before them, and a side's first SYN is the stream's own,
    unless it opens the connection (no ACK) after the other side's bytes: a connection's data follows its opening
    SYN, so that one is a new connection's, on a stream whose capture began mid-way with only the other side talking.
    (Where a side's bytes began: ``next_seq`` less the bytes delivered since, ``next_off``.)"""
    direction = stream.direction_of(packet.src, packet.sport)
    side = stream.directions[direction]
    if side.next_seq is None:
        return not packet.tcp_flags & ACK and stream.directions[1 - direction].next_off > 0
    return (side.next_seq - side.next_off) & 0xFFFFFFFF != (packet.tcp_seq + 1) & 0xFFFFFFFF


def _unsynced_connection(stream, packet):
    """Whether a segment without SYN on the ports of a stream that a side has finished (sent its FIN) is a new
    connection's whose SYN was not captured: neither an RST nor a segment of an ignored stream (which keeps no
    numbers), from a side the stream has seen, and its sequence number more than UNSYNCED_REUSE past that side's next
    expected byte or before its first byte. Every segment of the old connection stays within a window of those bytes
    (a retransmission, bytes from before a mid-stream capture's first byte, or past a FIN); a new connection's
    initial number is anywhere."""
    if packet.tcp_flags & RST or stream.ignored:
        return False
    side = stream.directions[stream.direction_of(packet.src, packet.sport)]
    if side.next_seq is None:
        return False
    return _outside(packet.tcp_seq, side.next_seq, side.next_off)


def _unsynced_after_close(closed, packet):
    """As _unsynced_connection, for a segment on the ports of a stream that ended (``closed``, its entry in
    ``recently_closed``) at both FINs or an RST: its bytes are a new connection's, not bytes in flight at the end."""
    if packet.tcp_flags & RST:
        return False
    direction = closed.direction_of(packet.src, packet.sport)
    end, start = closed.ends[direction], closed.starts[direction]
    return end is not None and _outside(packet.tcp_seq, end, (end - start) & 0xFFFFFFFF)


def _outside(seq, next_seq, delivered):
    """Whether ``seq`` is more than UNSYNCED_REUSE past ``next_seq`` or before the ``delivered`` bytes behind it."""
    ahead = seq_diff(seq, next_seq)
    return ahead > UNSYNCED_REUSE or -ahead > delivered + UNSYNCED_REUSE


def _beyond_fin(side, seq):
    """Bytes or a FIN at ``seq`` beyond the side's FIN, which the stream has reached: the FIN's number is passed."""
    if side.fin_seq is not None and side.next_seq == side.fin_seq and seq_diff(seq, side.fin_seq) > 0:
        _pass_fin(side)


def _pass_fin(side):
    """The side's FIN took one sequence number, as a SYN does: bytes it sends beyond its FIN (which a sender keeping to
    the spec does not) begin after that number, and only the bytes before them are a gap. The stream's offset takes
    the number too, so that ``next_seq`` less ``next_off`` still says where the side's bytes began (see
    _new_connection); no bytes span the FIN, so no overlap is checked across it."""
    side.next_seq = (side.next_seq + 1) & 0xFFFFFFFF
    side.next_off += 1
    side.history = b""


def _client(packet):
    """The client end of a stream that ``packet`` opens: its sender, or the receiver of a SYN-ACK (which answers the
    client's SYN)."""
    if packet.tcp_flags & SYN_ACK == SYN_ACK:
        return packet.dst, packet.dport
    return packet.src, packet.sport


def _finished_sides(directions):
    """How many directions of a stream have sent their FIN (0, 1 or 2)."""
    count = 0
    for side in directions:
        if side.fin_seq is not None:
            count += 1
    return count


def _key(packet):
    a, b = (packet.src, packet.sport), (packet.dst, packet.dport)
    return (a, b) if a <= b else (b, a)


class _Datagram:
    """The fragments of one IPv4 datagram received so far. ``pieces`` holds only bytes not received before
    (the first bytes are kept), so they never overlap; ``starts``/``ends`` are the ranges they cover,
    merged: sorted, disjoint and not touching, so that a fragment is placed with two bisections."""

    __slots__ = ("pieces", "starts", "ends", "frames", "end", "cut", "cost")

    def __init__(self):
        self.pieces = {}     # offset -> bytes
        self.starts = []
        self.ends = []
        self.frames = []
        self.end = None      # the datagram's captured length, once the last fragment (MF clear) is seen
        self.cut = 0         # the bytes of its last fragment that the capture's snap length did not keep
        self.cost = 0        # estimated bytes held: the pieces and their bookkeeping

    def add(self, offset, data):
        """Keep the bytes of ``data`` (at ``offset``) that no earlier fragment brought; return how many
        bytes it overlapped and the cost added."""
        end = offset + len(data)
        starts, ends, pieces = self.starts, self.ends, self.pieces
        lo = bisect_left(ends, offset)       # the first range that ends at or after this fragment's start
        hi = bisect_right(starts, end)       # past the last range that starts at or before its end
        pos, overlap, cost = offset, 0, 0
        for k in range(lo, hi):              # each range visited here is merged away below
            if starts[k] > pos:
                pieces[pos] = data[pos - offset:starts[k] - offset]
                cost += starts[k] - pos + PIECE_COST
            overlap += max(0, min(ends[k], end) - max(starts[k], offset))
            pos = max(pos, ends[k])
        if pos < end:
            pieces[pos] = data[pos - offset:]
            cost += end - pos + PIECE_COST
        if lo < hi:
            offset, end = min(offset, starts[lo]), max(end, ends[hi - 1])
        starts[lo:hi] = [offset]
        ends[lo:hi] = [end]
        self.cost += cost
        return overlap, cost

    def payload(self):
        """The whole datagram, or None while bytes are missing."""
        if self.end is None or len(self.starts) != 1 or self.starts[0] != 0 or self.ends[0] < self.end:
            return None
        return b"".join(self.pieces[offset] for offset in sorted(self.pieces))[:self.end]


class IPv4Defragmenter:
    """Collects IPv4 fragments by (src, dst, protocol, id) until the datagram is whole. The work per
    fragment does not grow with the fragments already held; the bytes held are bounded in all."""

    __slots__ = ("pending", "max_bytes", "total")

    def __init__(self, max_datagrams=1024, max_bytes=16 * 1024 * 1024):
        self.pending = BoundedDict(max_datagrams)
        self.max_bytes = max_bytes
        self.total = 0       # estimated bytes held by all datagrams in reassembly

    def add(self, packet, frame):
        """Return (payload, frames, findings, cut) when a datagram completes, else (None, None, findings, 0). ``cut``:
        the bytes at its end the capture's snap length did not keep (of its last fragment: one cut before its end
        leaves a hole, and the datagram does not complete)."""
        findings = []
        key = (packet.src, packet.dst, packet.ip_proto, packet.ip_id)
        offset, more = packet.fragment
        data = bytes(packet.payload or b"")
        if offset + len(data) > 65535:
            findings.append(IP_FINDINGS.bad_fragment.at(f"fragment at offset {offset} runs past 65535 bytes; "
                                                        f"ignored"))
            return None, None, findings, 0
        datagram = self._datagram(key, findings)
        if data:
            self._place(datagram, offset, data, findings)
        if len(datagram.frames) < 64:
            datagram.frames.append(frame)
        if not more:
            self._end(datagram, offset + len(data), packet.cut, findings)
        self._evict_beyond_limit(key, findings)
        payload = datagram.payload()
        if payload is None:
            return None, None, findings, 0
        del self.pending[key]
        self.total -= datagram.cost
        return payload, datagram.frames, findings, datagram.cut

    def _datagram(self, key, findings):
        datagram = self.pending.get(key)
        if datagram is not None:
            self.pending.move_to_end(key)
            return datagram
        datagram = _Datagram()
        evicted = self.pending.put(key, datagram)
        if evicted is not None:
            self.total -= evicted[1].cost
            findings.append(IP_FINDINGS.fragments_evicted.at(
                f"more than {self.pending.limit} IPv4 datagrams in reassembly: the oldest (frames "
                f"{evicted[1].frames[:4]}) was dropped"))
        return datagram

    def _end(self, datagram, end, cut, findings):
        """A last fragment (MF clear) ends the datagram at ``end`` (``cut``: its bytes past it the snap length did not
        keep). A copy of it ends it where it did, the copy that kept more standing; a second one that ends it
        elsewhere is told, and the first kept, as the first bytes are."""
        if datagram.end is None:
            datagram.end, datagram.cut = end, cut
        elif end + cut == datagram.end + datagram.cut:
            if end > datagram.end:
                datagram.end, datagram.cut = end, cut
        else:
            findings.append(IP_FINDINGS.fragment_overlap.at(f"a second last fragment ends the datagram at byte "
                                                            f"{end + cut}, the first at {datagram.end + datagram.cut}; "
                                                            f"the first is kept"))

    def _place(self, datagram, offset, data, findings):
        repeated = datagram.pieces.get(offset)
        overlap, cost = datagram.add(offset, data)
        self.total += cost
        if not overlap or (overlap == len(data) and repeated is not None and repeated[:len(data)] == data):
            return  # new bytes, or a plain duplicate (of the first bytes kept there, whole or cut short)
        what = "repeated with different bytes" if repeated is not None and overlap == len(data) else \
            f"overlaps {overlap} bytes of other fragments"
        findings.append(IP_FINDINGS.fragment_overlap.at(f"fragment at offset {offset} {what}; the first bytes "
                                                        f"are kept"))

    def _evict_beyond_limit(self, key, findings):
        while self.total > self.max_bytes and len(self.pending) > 1:
            old_key, old = self.pending.popitem(last=False)   # never this datagram: it was moved to the end
            self.total -= old.cost
            findings.append(IP_FINDINGS.fragments_evicted.at(
                f"IPv4 reassembly holds more than {self.max_bytes} bytes: the oldest datagram was dropped"))
