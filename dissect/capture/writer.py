"""``-w``: frames written back out, byte for byte as read, with their timestamps, as pcap or pcapng.

pcap holds one link type: a frame of another is an error naming both (write pcapng instead).
pcapng gets one interface description per link type met, so a capture of several link types keeps
each frame's. Timestamps are written in microseconds.
"""

import struct
import sys

PCAP_HEADER = struct.Struct("<IHHiIII")
PCAP_RECORD = struct.Struct("<IIII")
SNAPLEN = 262144


class WriteError(Exception):
    """A frame that cannot go into the output, or the output that cannot be written."""


def pick_format(path, requested=None):
    """``-F`` when given, else pcapng for a name ending in .pcapng/.ntar, else pcap."""
    if requested:
        return requested
    return "pcapng" if str(path).lower().endswith((".pcapng", ".ntar")) else "pcap"


def open_writer(path, file_format):
    """A writer for ``path`` (``-`` is standard output)."""
    try:
        handle = sys.stdout.buffer if path == "-" else open(path, "wb")
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror}") from None
    cls = PcapngWriter if file_format == "pcapng" else PcapWriter
    return cls(handle, path)


class _Writer:
    def __init__(self, handle, path):
        self.handle = handle
        self.path = path
        self.count = 0

    def _put(self, data):
        try:
            self.handle.write(data)
        except OSError as exc:
            raise WriteError(f"{self.path}: cannot write: {exc.strerror or exc}") from None

    def close(self):
        try:
            self.handle.flush()
            if self.path != "-":
                self.handle.close()
        except OSError as exc:
            raise WriteError(f"{self.path}: cannot write: {exc.strerror or exc}") from None


class PcapWriter(_Writer):
    """Classic pcap, microsecond timestamps, little-endian; the link type of the first frame."""

    def __init__(self, handle, path):
        super().__init__(handle, path)
        self.linktype = None

    def write(self, frame):
        """``frame``: anything with number, ts, caplen, wirelen, linktype and data (a Frame, a FrameRecord)."""
        linktype = frame.linktype if frame.linktype is not None else 1
        if self.linktype is None:
            self.linktype = linktype
            self._put(PCAP_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, linktype))
        elif linktype != self.linktype:
            raise WriteError(f"{self.path}: frame {frame.number} has link type {linktype} but the pcap holds link "
                             f"type {self.linktype}: a pcap has one link type (write pcapng: -F pcapng)")
        seconds, micros = _split(frame.ts)
        self._put(PCAP_RECORD.pack(seconds, micros, len(frame.data), max(frame.wirelen, len(frame.data)))
                  + bytes(frame.data))
        self.count += 1


class PcapngWriter(_Writer):
    """pcapng: one section, an interface description per link type, enhanced packet blocks."""

    def __init__(self, handle, path):
        super().__init__(handle, path)
        self.interfaces = {}
        self._put(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))

    def write(self, frame):
        linktype = frame.linktype if frame.linktype is not None else 1
        interface = self.interfaces.get(linktype)
        if interface is None:
            interface = self.interfaces[linktype] = len(self.interfaces)
            self._put(_block(0x00000001, struct.pack("<HHI", linktype, 0, SNAPLEN)))
        stamp = _micros(frame.ts)
        data = bytes(frame.data)
        body = struct.pack("<IIIII", interface, stamp >> 32, stamp & 0xFFFFFFFF, len(data),
                           max(frame.wirelen, len(data))) + data + b"\0" * (-len(data) % 4)
        self._put(_block(0x00000006, body))
        self.count += 1


def _block(block_type, body):
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def _micros(ts):
    return max(0, int(round(ts * 1_000_000)))


def _split(ts):
    seconds, micros = divmod(_micros(ts), 1_000_000)
    return seconds & 0xFFFFFFFF, micros
