"""Frames in, records out: layers, registry, dissector, analysis."""

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from .core import nocython as cython


from .analysis.abuse import DEFAULT_RATE, DEFAULT_WINDOW, TrafficAnalyzer
from .analysis.base import Analyzer
from .capture.files import Frame
from .capture.layers import Packet, count_cut, decode_frame, decode_reassembled, length_findings, tcp_flag_text
from .capture.reassembly import Chunk, Gap, IPv4Defragmenter, TcpReassembler
from .capture.tables import DISSECT_FINDINGS, FRAME_FINDINGS, TCP_FINDINGS
from .core import AnalysisRecord
from .core.fmt import endpoint
from .plugin_guard import fault_record
from .registry import dissect_message

PROBE_SEGMENTS = 4   # data segments a TCP stream gets to be recognized before it is ignored
PROBE_HELD = 1024    # bytes of those a stream keeps, probed again with the next ones and dissected once one is taken
CUT = "ended inside a line"
HELD = "held this line behind lost bytes until the capture ended"
MAX_END_MESSAGES = 8192  # messages kept, in all, from the bytes still held behind gaps when the capture ends
END_SLICE = 1024         # bytes of those fed at a time, at least (a parser resynchronizes within what it is given)


@cython.freelist(16)
@cython.cclass
class FrameRecord:
    __slots__ = ("number", "ts", "caplen", "wirelen", "linktype", "data", "packet", "protocol", "info",
                 "messages", "findings", "first_ts")

    def __init__(self, frame, packet, first_ts=None):
        _fill_record(self, frame, packet, first_ts)

    @property
    def src(self):
        return self.packet.src

    @property
    def dst(self):
        return self.packet.dst

    @property
    def sport(self):
        return self.packet.sport

    @property
    def dport(self):
        return self.packet.dport

    @property
    def transport(self):
        return self.packet.transport

    def all_findings(self):
        yield from self.findings
        for msg in self.messages:
            yield from msg.findings

    @property
    def kind(self):
        return "frame"

    def to_dict(self):
        """The object ``-T jsonl`` writes for this frame."""
        # Imported here: the compiled JSON module declares FrameRecord's type (jsonout.pxd), so it imports
        # this module when it loads; importing it at the top here would make the two wait on each other.
        from .render.jsonout import frame_dict
        return frame_dict(self)


def new_record(frame, packet, first_ts):
    """A FrameRecord, made without the argument parsing of a constructor call (one a frame)."""
    record = FrameRecord.__new__(FrameRecord)
    _fill_record(record, frame, packet, first_ts)
    return record


def _fill_record(record, frame, packet, first_ts):
    record.number = frame.number
    record.ts = frame.ts
    record.caplen = frame.caplen
    record.wirelen = frame.wirelen
    record.linktype = frame.linktype
    record.data = frame.data
    record.packet = packet
    record.protocol = packet.top
    record.info = ""
    record.messages = []
    record.findings = []
    record.first_ts = first_ts if first_ts is not None else frame.ts  # the capture's first frame: time 0


class Pipeline:
    """Runs one capture: call ``frame`` for each frame, then ``finish``.

    ``traffic`` is the abuse analysis, fed every message of every protocol; ``abuse_rate`` (requests per
    second) sustained over ``abuse_window`` (whole seconds) is its rules' threshold. ``analyzer_stats``: a
    view reads the analyzers' ``stats`` (``--stats``, the HTML report); without it they skip what only
    ``stats`` shows (their ``stats_off``)."""

    __slots__ = ("registry", "tree", "analyzers", "observing", "traffic", "tcp", "defrag", "carried", "first_ts",
                 "last_ts")

    def __init__(self, registry, tree=False, abuse_rate=DEFAULT_RATE, abuse_window=DEFAULT_WINDOW,
                 analyzer_stats=True):
        self.registry = registry
        self.tree = tree
        self.analyzers = registry.make_analyzers()
        self.observing = registry.observing()
        self.traffic = TrafficAnalyzer.for_registry(registry, abuse_rate, abuse_window)
        self.traffic.stats_off = not analyzer_stats
        _set_stats_off(self.analyzers.values(), not analyzer_stats)
        self.tcp = TcpReassembler()
        self.defrag = IPv4Defragmenter()
        self.carried = None  # while a TCP segment reassembled from IPv4 fragments is dissected: their frames
        self.first_ts = None
        self.last_ts = None

    def frame(self, frame, packet=None):
        """Return the frame's record and the analysis records it concluded; never raises.

        ``packet`` is the frame already decoded by ``decode_frame``, when the caller has done that."""
        if self.first_ts is None:
            self.first_ts = frame.ts
        try:
            result = self._frame(frame, packet)
        except Exception as exc:  # a bug must cost one frame, not the capture
            result = self._failed(frame, exc), []
        if self.registry.faults:  # what plugins' guards found outside their messages
            result[0].findings.extend(self.registry.take_faults())
        return result

    def _failed(self, frame, exc):
        """The record of a frame whose dissection raised ``exc``: its layers as far as they decode, and the error."""
        try:
            packet = decode_frame(frame.data, frame.linktype, self.tree) if frame.data else Packet()
        except Exception:
            packet = Packet()
        record = FrameRecord(frame, packet, self.first_ts)
        record.info = "[internal error]"
        record.findings.append(DISSECT_FINDINGS.internal_error.at(
            f"internal error while dissecting this frame: {type(exc).__name__}: {exc}"))
        return record

    def payload(self, payload, key):
        """A bare message of protocol ``key`` (``--payload``, ``dissect_payload``): frame 1, no lower layers."""
        packet = Packet()
        packet.top, packet.payload = "payload", payload
        record = FrameRecord(Frame(1, 0.0, len(payload), len(payload), None, payload), packet)
        msg = self.registry.get(key).dissect(payload, self.tree, None, 0)
        msg.frames.append(1)
        record.messages.append(msg)
        record.protocol = key
        record.info = msg.info
        record.findings.extend(self.registry.take_faults())
        return record

    def skip(self, frame):
        """A frame another worker dissects (``-j``): only the capture's clock moves."""
        if self.first_ts is None:
            self.first_ts = frame.ts
        if frame.data or frame.error is None:  # as in _frame: a record with no bytes does not set the clock
            self.last_ts = frame.ts

    def _frame(self, frame, packet):
        if frame.error is not None and not frame.data:
            return self._corrupt(frame), []
        if packet is None:
            packet = decode_frame(frame.data, frame.linktype, self.tree)
        record = new_record(frame, packet, self.first_ts)
        if frame.error is not None:
            record.findings.append(FRAME_FINDINGS.corrupt.at(frame.error, severity="warning"))
        if self.last_ts is not None and frame.ts < self.last_ts:
            record.findings.append(FRAME_FINDINGS.time_backwards.at(
                f"timestamp is {self.last_ts - frame.ts:.6f} s earlier than the previous frame's"))
        self.last_ts = frame.ts
        if frame.caplen < frame.wirelen:
            record.findings.append(FRAME_FINDINGS.truncated_frame.at(
                f"frame captured {frame.caplen} of {frame.wirelen} bytes: decoded as far as the bytes go",
                frame.caplen, 0))
            count_cut(packet, frame.data, frame.wirelen - frame.caplen)
        if packet.bad_lengths is not None:
            record.findings.extend(length_findings(packet, frame.wirelen))
        if packet.fragment is not None:
            return record, self._fragment(record, packet)
        if packet.payload is None or packet.transport is None:
            record.info = packet.problem or ""
            return record, []
        if packet.transport == "tcp":
            return record, self._tcp(record, packet)
        return record, self._datagram(record, packet, packet.payload, packet.payload_offset, None)

    # -- UDP ----------------------------------------------------------------------------------------
    def _datagram(self, record, packet, payload, offset, frames):
        dissector = self.registry.select(packet, payload) if payload else None
        if dissector is None:
            record.info = _transport_info(packet, payload)
            return []
        msg = dissect_message(dissector, payload, self.tree, packet, offset)
        if frames:
            msg.frames.extend(frames)
        else:
            msg.frames.append(record.number)
        key = dissector.key
        if key in self.observing:
            dissector.observe(packet, msg)
        record.protocol = key
        record.info = msg.info
        return self._add_message(record, msg)

    def _add_message(self, record, msg):
        record.messages.append(msg)
        analyzer = self.analyzers.get(msg.protocol)
        out = analyzer.feed(record, msg, self.tree) if analyzer is not None else []
        self.traffic.feed(record.number, record.ts, record.packet, msg, msg.length, _wire_length(record, msg))
        return out

    def _fragment(self, record, packet):
        if packet.src is None or ":" in packet.src or packet.payload is None:
            record.info = packet.problem or "IP fragment"
            return []
        payload, frames, findings, cut = self.defrag.add(packet, record.number)
        record.findings.extend(findings)
        if payload is None:
            record.info = f"{packet.problem} [reassembly in progress]"
            return []
        packet.cut = cut  # the datagram's end the capture did not keep: its message is cut, not malformed
        headers = packet.payload_offset  # the link and IP headers of a fragment's frame (see _wire_length)
        if not decode_reassembled(packet, payload):
            record.info = f"reassembled IPv4 datagram of {len(payload)} bytes (IP protocol {packet.ip_proto})"
            return []
        if packet.bad_lengths is not None:
            record.findings.extend(length_findings(packet, None))
        record.protocol = packet.transport
        if packet.transport == "tcp":
            return self._defragmented_tcp(record, packet, frames)
        packet.payload_offset = headers
        return self._datagram(record, packet, packet.payload, None, frames)

    def _defragmented_tcp(self, record, packet, frames):
        """A TCP segment that came in IPv4 fragments, reassembled: into its stream as any segment; a message whose
        bytes it alone carried names the fragments' frames, its offset null (its bytes are in no one frame)."""
        packet.payload_offset = 0
        self.carried = frames
        try:
            return self._tcp(record, packet)
        finally:
            self.carried = None

    # -- TCP ----------------------------------------------------------------------------------------
    def _tcp(self, record, packet):
        delivery = self.tcp.segment(packet, record.number)
        packet.cut = 0  # the bytes the capture did not keep are the stream's gap now: its messages are not cut
        if delivery is None:
            record.info = _transport_info(packet, packet.payload)
            late = self.tcp.after_close(packet) if packet.tcp_stream is not None and packet.payload else None
            if late is not None:
                record.findings.append(late)
            return []
        record.findings.extend(delivery.findings)
        packet.tcp_stream = delivery.stream.index
        out = []
        for old in delivery.evicted:
            out += self._close_stream(old, record, packet)
        stream = delivery.stream
        if stream.dissector is None and not stream.ignored:
            self._probe(stream, packet, delivery)
        dissector = stream.dissector
        if dissector is not None:
            if delivery.closed:
                self.tcp.dissected(stream)  # taken by the segment that closed it: bytes after its end are told
            for direction, piece in delivery.pieces:
                parser = stream.parsers[direction]
                if isinstance(piece, Gap):
                    _gap(parser, piece)
                    continue
                for msg in parser.feed(piece, self.tree, packet):
                    out += self._stream_message(record, stream, direction, msg)
            if delivery.closed:
                out += self._close_stream(stream, record, packet)
            elif delivery.finished is not None:
                out += self._close_side(stream, delivery.finished, record, packet)
        if record.messages:  # the segment's own info is made only where no message's info replaces it
            record.protocol = record.messages[0].protocol
            record.info = "; ".join([m.info for m in record.messages[:4]]) + (
                f" (+{len(record.messages) - 4} more)" if len(record.messages) > 4 else "")
        else:
            record.info = _transport_info(packet, packet.payload)
            if dissector is not None and packet.payload and _carried_bytes(delivery):
                record.info += f" [{dissector.title} line continues]"
        return out

    def _probe(self, stream, packet, delivery):
        """Ask the TCP dissectors about each side's first bytes: the segments probed before (up to PROBE_HELD bytes,
        kept) and this one, so that a first line cut after its first byte is still seen; the kept segments are
        dissected first once a dissector takes the stream."""
        for direction, piece in delivery.pieces:
            if isinstance(piece, Gap):
                stream.probe_held = False  # a side's bytes are no longer one run: each segment is asked alone
                continue
            dissector = self.registry.select(packet, _probe_head(stream.probe_held, direction, piece))
            if dissector is not None and dissector.stream_parser is not None:
                stream.dissector = dissector
                stream.parsers = (dissector.stream_parser(), dissector.stream_parser())
                _replay_held(stream, delivery)
                return
            _hold_probed(stream, direction, piece)
            stream.probed += 1
            if stream.probed >= PROBE_SEGMENTS:
                stream.probe_held = None
                self.tcp.ignore(stream)
                return

    def _stream_message(self, record, stream, direction, msg):
        _tag(stream, direction, msg)
        frames = msg.frames
        if msg.offset is not None and frames and frames[-1] != record.number:
            msg.offset = None  # a line held behind a gap, shown in the frame that released it: its bytes are not there
        elif msg.offset is not None and self.carried is not None:
            msg.offset = None  # in a segment reassembled from IPv4 fragments: its bytes are in theirs
            msg.frames[:] = self.carried
        return self._add_message(record, msg)

    def _close_side(self, stream, direction, record, packet):
        """One side sent its FIN, its last byte delivered: its parser's unfinished line ends in this frame, not in
        the frame that ends the stream. The parser is closed once, here; a new one takes what the side may still
        send (bytes held past the FIN, a new connection from the same port whose SYN was not captured), and is
        closed with the stream."""
        parser = stream.parsers[direction]
        parsers = list(stream.parsers)
        parsers[direction] = stream.dissector.stream_parser()
        stream.parsers = tuple(parsers)
        return self._closed(stream, direction, parser, record, packet)

    def _close_stream(self, stream, record, packet):
        """A stream ended (FIN, RST, eviction or the end of the capture): flush its parsers."""
        if stream.dissector is None:
            return []
        out = []
        for direction, parser in enumerate(stream.parsers):
            out += self._closed(stream, direction, parser, record, packet)
        analyzer = self.analyzers.get(stream.dissector.key)
        if analyzer is not None:
            out += analyzer.stream_closed(stream.index)
        stream.dissector = None
        return out

    def _closed(self, stream, direction, parser, record, packet):
        """Close ``parser``, the stream's for ``direction``: the messages of what it held, in ``record``'s frame (at
        the capture's end, with none, as analysis)."""
        out = []
        for msg in parser.close(self.tree, packet):
            if record is not None:
                out += self._stream_message(record, stream, direction, msg)
            else:
                out += self._orphan(stream, direction, msg)
        return out

    def _orphan(self, stream, direction, msg, why=CUT):
        """A message completed only at the end of the capture has no frame of its own to be shown with:
        report it as analysis. ``why``: it ended inside a line (CUT), or it was whole but held behind
        bytes that never came (HELD)."""
        _tag(stream, direction, msg)
        analyzer = self.analyzers.get(msg.protocol)
        out = analyzer.feed(_NoFrame(), msg, self.tree) if analyzer is not None else []
        return out + [AnalysisRecord(msg.protocol, "stream_end", msg.frames,
                                     {"stream": stream.index, "message": msg.name, "info": msg.info},
                                     msg.findings, f"stream {stream.index} {why}: {msg.info}")]

    def finish(self):
        records, budget = [], MAX_END_MESSAGES
        for delivery in self.tcp.finish():
            stream, orphans = delivery.stream, []
            if stream.dissector is not None:
                orphans, budget = self._held_messages(delivery, budget)
            if delivery.findings:  # bytes declared lost now that the capture has ended
                records.append(AnalysisRecord("tcp", "capture_end", [], {"stream": stream.index},
                                              delivery.findings, f"stream {stream.index}: bytes held behind a gap "
                                                                 f"when the capture ended"))
            records += orphans
            if stream.dissector is not None:
                records += self._close_stream(stream, None, None)
        for analyzer in self.analyzers.values():
            records.extend(analyzer.finish())
        records += [fault_record(finding) for finding in self.registry.take_faults()]  # parsers closed at the end
        self.traffic.finish()  # its rules look across conversations: Session.finish concludes them
        return records

    def _held_messages(self, delivery, budget):
        """The records of the messages in what ``delivery`` frees from behind gaps at the capture's end. They wait to
        be shown in order with the end's other records, so ``budget`` more messages are kept, at most; the records and
        the budget left are returned. The bytes are fed in slices of END_SLICE bytes or more, so that only a slice's
        messages are ever made past the budget; the bytes of those, and all after them, are not shown, and the
        delivery's findings say how many."""
        stream, records, skipped = delivery.stream, [], 0
        for direction, piece in delivery.pieces:
            parser = stream.parsers[direction]
            if isinstance(piece, Gap):
                _gap(parser, piece)
                continue
            data, start = piece.data, 0
            while start < len(data):
                if budget <= 0:
                    skipped += len(data) - start
                    _gap(parser, Gap(len(data) - start, piece.frame))
                    break
                stop = min(len(data), start + max(budget, END_SLICE))
                for msg in parser.feed(Chunk(data[start:stop], piece.frame, piece.frame_offset + start), self.tree,
                                       None):
                    if budget > 0:
                        budget -= 1
                        records += self._orphan(stream, direction, msg, HELD)
                    else:
                        skipped += msg.length
                start = stop
        if skipped:
            delivery.findings.append(TCP_FINDINGS.buffer_limit.at(
                f"{skipped} bytes held behind gaps are not shown: more than {MAX_END_MESSAGES} messages of all "
                f"streams waited behind gaps when the capture ended"))
        return records, budget

    def _corrupt(self, frame):
        record = FrameRecord(frame, Packet(), self.first_ts)
        record.info = "[corrupt record]"
        record.findings.append(FRAME_FINDINGS.corrupt.at(frame.error))
        return record


class _NoFrame:
    """Stands in for a frame record when the capture has ended."""
    number = None
    ts = None
    src = dst = sport = dport = None
    packet = Packet()  # no addresses either


def _gap(parser, gap):
    """Tell a stream parser that the bytes of ``gap`` are missing: ``uncaptured()`` where the capture cut them and
    the parser tells that apart (an optional method), else ``gap()``."""
    uncaptured = getattr(parser, "uncaptured", None) if gap.cut else None
    if uncaptured is not None:
        uncaptured()
    else:
        parser.gap()


def _set_stats_off(analyzers, off):
    """Tell the analyzers whether a view reads their ``stats`` (a plugin's that is no Analyzer is left as it is;
    one that is has the flag set even where its ``__init__`` did not call Analyzer's)."""
    for analyzer in analyzers:
        if isinstance(analyzer, Analyzer):
            analyzer.stats_off = off


def _wire_length(record, msg):
    """The bytes on the wire a message cost: its frame's; for a datagram reassembled from IPv4 fragments,
    its bytes and UDP header plus each fragment's lower headers (those of the last one); for a TCP
    message, its bytes plus the headers of the frame that completed it, counted with the frame's first."""
    packet = record.packet
    if packet.transport == "tcp":
        headers = max(record.wirelen - len(packet.payload or b""), 0)  # a segment from fragments: longer than its frame
        return msg.length + (headers if record.messages[0] is msg else 0)
    if len(msg.frames) > 1:
        return msg.length + 8 + len(msg.frames) * (packet.payload_offset or 0)
    return record.wirelen


def _probe_head(held, direction, piece):
    """The first bytes of ``direction``'s side as far as ``piece``: the segments of it probed before, then it."""
    earlier = [chunk.data for side, chunk in held if side == direction] if held else None
    return b"".join(earlier + [piece.data]) if earlier else piece.data


def _hold_probed(stream, direction, piece):
    """Keep a probed segment for the next probe (and for its parser), within PROBE_HELD bytes a stream; past them, or
    after a gap (``probe_held`` False), none is kept."""
    held = stream.probe_held
    if held is False:
        return
    held = held or []
    if sum([len(chunk.data) for _, chunk in held]) + len(piece.data) > PROBE_HELD:
        stream.probe_held = False
        return
    held.append((direction, piece))
    stream.probe_held = held


def _replay_held(stream, delivery):
    """A dissector took the stream: the segments kept from earlier probes go before this segment's pieces."""
    held, stream.probe_held = stream.probe_held, None
    if held:
        current = {id(piece) for _, piece in delivery.pieces}
        delivery.pieces[:0] = [item for item in held if id(item[1]) not in current]


def _tag(stream, direction, msg):
    """Stream messages carry their stream and direction: the packet at hand may be the other side's."""
    ends = stream.ends
    if ends is None:  # a stream's ends, named in each of its messages, are written once
        client = stream.client
        server = _other(stream.key, client)
        ends = stream.ends = (endpoint(client[0], client[1]), endpoint(server[0], server[1]))
    values = msg.values
    values["stream"] = stream.index
    values["from_client"] = direction == 0
    values["client"] = ends[0]
    values["server"] = ends[1]


def _other(key, side):
    return key[1] if key[0] == side else key[0]



def _carried_bytes(delivery):
    """Whether a segment delivered bytes of its stream: not when it only repeated delivered ones or waits behind a
    gap."""
    for _, piece in delivery.pieces:
        if type(piece) is Chunk:
            return True
    return False


def _transport_info(packet, payload):
    if _COMPILED:  # C (pipeline.pxd): the numbers' digits written in place, one str made
        tcp = packet.transport == "tcp"
        info = _transport_text(packet.sport, packet.dport, tcp_flag_text(packet.tcp_flags) if tcp else None,
                               packet.tcp_seq, len(payload))
        if info is not None:
            return info
    if packet.transport == "tcp":
        return f"{packet.sport} → {packet.dport} {tcp_flag_text(packet.tcp_flags)} Seq={packet.tcp_seq} " \
               f"Len={len(payload)}"
    return f"{packet.sport} → {packet.dport} Len={len(payload)}"


_COMPILED = not __file__.endswith(".py")
