"""Frames in, records out: layers, registry, dissector, analysis."""

from .analysis import make_analyzers
from .capture.layers import decode_frame, tcp_flag_text
from .core import Finding


class FrameRecord:
    __slots__ = ("number", "ts", "caplen", "wirelen", "linktype", "data", "packet", "protocol", "info",
                 "messages", "findings")

    def __init__(self, frame, packet):
        self.number = frame.number
        self.ts = frame.ts
        self.caplen = frame.caplen
        self.wirelen = frame.wirelen
        self.linktype = frame.linktype
        self.data = frame.data
        self.packet = packet
        self.protocol = packet.top
        self.info = ""
        self.messages = []
        self.findings = []

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
        return self.packet.transport if self.packet.transport in ("udp", "tcp") else None

    def all_findings(self):
        yield from self.findings
        for msg in self.messages:
            yield from msg.findings


class Pipeline:
    """Runs one capture: call ``frame`` for each frame, then ``finish``."""

    def __init__(self, registry, tree=False):
        self.registry = registry
        self.tree = tree
        self.analyzers = make_analyzers()

    def frame(self, frame):
        """Return the frame's record and the analysis records it concluded."""
        if frame.error is not None and not frame.data:
            return self._corrupt(frame), []
        packet = decode_frame(frame.data, frame.linktype)
        record = FrameRecord(frame, packet)
        if frame.error is not None:
            record.findings.append(Finding("capture.corrupt", "warning", frame.error))
        if frame.caplen < frame.wirelen:
            record.findings.append(Finding(
                "capture.truncated_frame", "warning",
                f"frame captured {frame.caplen} of {frame.wirelen} bytes (snap length): decoded as far as "
                f"the bytes go", frame.caplen, 0))
        payload = packet.payload
        if payload is None or packet.transport not in ("udp", "tcp") or packet.fragment:
            record.info = packet.problem or ""
            return record, []
        dissector = self.registry.select(packet, payload) if payload else None
        if dissector is None:
            record.info = _transport_info(packet, payload)
            return record, []
        msg = dissector.dissect(payload, self.tree, packet, packet.payload_offset)
        msg.frames.append(frame.number)
        dissector.observe(packet, msg)
        record.messages.append(msg)
        record.protocol = dissector.key
        record.info = msg.info
        analyzer = self.analyzers.get(dissector.key)
        if analyzer is None:
            return record, []
        return record, analyzer.feed(record, msg, self.tree)

    def finish(self):
        records = []
        for analyzer in self.analyzers.values():
            records.extend(analyzer.finish())
        return records

    @staticmethod
    def _corrupt(frame):
        class _Empty:
            layers = ()
            top = "frame"
            src = dst = sport = dport = transport = payload = fragment = None
            payload_offset = 0
        record = FrameRecord(frame, _Empty())
        record.info = "[corrupt record]"
        record.findings.append(Finding("capture.corrupt", "error", frame.error))
        return record


def _transport_info(packet, payload):
    if packet.transport == "tcp":
        return f"{packet.sport} → {packet.dport} {tcp_flag_text(packet.tcp_flags)} Seq={packet.tcp_seq} " \
               f"Len={len(payload)}"
    return f"{packet.sport} → {packet.dport} Len={len(payload)}"
