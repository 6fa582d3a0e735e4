"""``-w``: frames written back out, byte for byte as read, with their timestamps, as pcap or pcapng.

pcap holds one link type: a frame of another is an error naming both (write pcapng instead).
pcapng gets one interface description per link type met, so a capture of several link types keeps
each frame's. Timestamps are written in microseconds since 1970, without pcapng's offset: a time
outside what that holds (pcap: 0 to 2**32 seconds; pcapng: 0 to 2**64 microseconds; a pcapng read
may hold any, with its if_tsoffset or a damaged block) is written as the nearest it holds, the frame
kept, and closing the output is then an error that names the first such frame.
"""

import math
import os
import stat
import struct
import sys

PCAP_HEADER = struct.Struct("<IHHiIII")
PCAP_RECORD = struct.Struct("<IIII")
SNAPLEN = 262144
PCAP_MAX_MICROS = (1 << 32) * 1_000_000 - 1  # pcap: 32-bit seconds and their microseconds
PCAPNG_MAX_MICROS = (1 << 64) - 1            # pcapng: one 64-bit count of microseconds
PCAPNG_MAX_LINKTYPE = 0xFFFF                 # pcapng: an interface's link type is 16 bits (pcap's record: 32)
LINKTYPE_ETHERNET = 1                        # the link type of a pcap written without any frame to give one


class WriteError(Exception):
    """A frame that cannot go into the output, or the output that cannot be written."""


def pick_format(path, requested=None):
    """``-F`` when given, else pcapng for a name ending in .pcapng/.ntar, else pcap."""
    if requested:
        return requested
    return "pcapng" if str(path).lower().endswith((".pcapng", ".ntar")) else "pcap"


def open_output(path):
    """The binary stream ``-w PATH`` writes to: standard output for ``-``, else the file made anew (OSError as
    open raises it). Live capture's writer opens its output here too."""
    return sys.stdout.buffer if path == "-" else open(path, "wb")


def open_writer(path, file_format, linktype=None):
    """A writer for ``path`` (``-`` is standard output). With ``linktype`` (live capture, whose link type is
    known before any frame) the file's header is written at once, so a capture that saw nothing is still one.
    Without it (frames read from captures) a file already at ``path`` keeps its bytes until the writer writes
    its first: a run that reads no capture leaves it as it was (``discard``)."""
    try:
        if path == "-" or linktype is not None:
            handle, made, kept = open_output(path), False, False
        else:
            handle, made, kept = _open_keeping(path)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    cls = PcapngWriter if file_format == "pcapng" else PcapWriter
    return cls(handle, path, linktype, made=made, kept=kept)


def _open_keeping(path):
    """(handle, made, kept): ``path`` opened to be written without emptying it; ``made``: the file did not exist
    and was made (also through a link to no file); ``kept``: a regular file's bytes are still in it (a FIFO's or
    a device's are not bytes to keep)."""
    try:
        return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb"), True, False
    except FileExistsError:
        pass
    existed = os.path.exists(path)  # False for a link to no file, which O_EXCL took for a file
    handle = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666), "wb")
    return handle, not existed, existed and stat.S_ISREG(os.fstat(handle.fileno()).st_mode)


class _Writer:
    FORMAT = "pcap"
    MAX_MICROS = PCAP_MAX_MICROS

    def __init__(self, handle, path, made=False, kept=False):
        self.handle = handle
        self.path = path
        self.made = made          # the file did not exist before this writer
        self.kept = kept          # the file's earlier bytes are in it until the first are written
        self.started = False      # bytes written
        self.count = 0
        self.outside = 0          # frames whose time the format cannot hold
        self.first_outside = None  # (frame number, its time, the time written)
        self.unwritten = 0        # corrupt records with no link type (no bytes either): not written
        self.first_unwritten = None  # frame number of the first

    def _micros(self, frame):
        """The frame's time in microseconds since 1970, within what the format holds."""
        micros = whole_micros(frame.ts)
        if micros is not None and 0 <= micros <= self.MAX_MICROS:
            return micros
        held = self.MAX_MICROS if frame.ts > 0 else 0  # a NaN at 0
        # Rounded up past the end, a time still before it is held (pcap: the last half microsecond before 2**32 s
        # of a nanosecond capture); a float of pcapng's end is that end read back (1.8446744073709552e13 s).
        if held == 0 or (frame.ts >= (self.MAX_MICROS + 1) / 1e6 and frame.ts > self.MAX_MICROS / 1e6):
            self.outside += 1
            if self.first_outside is None:
                self.first_outside = (frame.number, frame.ts, held)
        return held

    def _put(self, data):
        try:
            if not self.started:
                self._start()
            self.handle.write(data)
        except OSError as exc:
            raise _cannot_write(self.path, exc) from None

    def _start(self):
        """Before the first bytes: the file's earlier ones go, and the format's own first bytes are written."""
        self.started = True
        if self.kept:
            self.kept = False
            self.handle.truncate(0)
        self.handle.write(self._preamble())

    def _preamble(self):
        """What the format writes before anything else (pcap: nothing; its header names a frame's link type)."""
        return b""

    def _without_frames(self):
        """A capture of no frames, where none was written."""
        self._put(b"")

    def flush(self):
        try:
            self.handle.flush()
        except OSError as exc:
            raise _cannot_write(self.path, exc) from None

    def finish(self, sync=False):
        """Flush, with ``sync`` also to the disk, and close (standard output stays open); WriteError when the
        output cannot take it. The times written as the nearest held are not checked here (``close`` does)."""
        if not self.started:
            self._without_frames()
        self.flush()
        if self.path == "-":
            return
        try:
            if sync:
                os.fsync(self.handle.fileno())
            self.handle.close()
        except OSError as exc:
            raise _cannot_write(self.path, exc) from None

    def close(self):
        self.finish()
        if self.outside or self.unwritten:
            raise WriteError(self.not_as_read_error())

    def _placeless(self, frame):
        """A corrupt record the reader could not place (a pcapng packet block of an interface never described): it
        has no link type, and no bytes, to write. It is left out, counted for the error ``close`` gives."""
        if frame.linktype is not None:
            return False
        self.unwritten += 1
        if self.first_unwritten is None:
            self.first_unwritten = frame.number
        return True

    def abandon(self):
        """After a WriteError: the output closed as it is, without telling its failure again (standard output
        stays open for the command)."""
        if self.path != "-":
            try:
                self.handle.close()
            except OSError:
                pass

    def discard(self):
        """The run read no capture: nothing is written, and the output is as it was before (``kept``), or is not
        (a file this writer made is removed), as tshark leaves it. A writer that has written is closed as it is."""
        self.abandon()
        if self.made and not self.started:
            try:
                os.unlink(os.path.realpath(self.path))  # the file made, not a link to it
            except OSError:
                pass

    def not_as_read_error(self):
        """The error of the times written as the nearest held and of the records left out (None while every frame
        was written as read)."""
        name = "standard output" if self.path == "-" else self.path
        errors = []
        if self.outside:
            number, ts, held = self.first_outside
            errors.append(f"frame {number}'s time {ts!r} is outside what {self.FORMAT} timestamps hold as dissect "
                          f"writes them (0 to {_seconds(self.MAX_MICROS)} s since 1970): written as "
                          f"{_seconds(held)}{_likewise(self.outside)}")
        if self.unwritten:
            errors.append(f"frame {self.first_unwritten} is a corrupt record with no link type and no bytes: not "
                          f"written{_likewise(self.unwritten)}")
        return f"{name}: {'; '.join(errors)}" if errors else None


class PcapWriter(_Writer):
    """Classic pcap, microsecond timestamps, little-endian; the link type of the first frame, or ``linktype``
    when given, whose header is then written at once."""

    def __init__(self, handle, path, linktype=None, made=False, kept=False):
        super().__init__(handle, path, made, kept)
        self.linktype = None
        if linktype is not None:
            self._header(linktype)

    def _without_frames(self):
        self._header(LINKTYPE_ETHERNET)

    def _header(self, linktype):
        self.linktype = linktype
        self._put(PCAP_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, linktype))

    def write(self, frame):
        """``frame``: anything with number, ts, caplen, wirelen, linktype and data (a Frame, a FrameRecord)."""
        if self._placeless(frame):
            return
        linktype = frame.linktype
        if self.linktype is None:
            self._header(linktype)
        elif linktype != self.linktype:
            raise WriteError(f"{self.path}: frame {frame.number} has link type {linktype} but the pcap holds link "
                             f"type {self.linktype}: a pcap has one link type (write pcapng: -F pcapng)")
        seconds, micros = divmod(self._micros(frame), 1_000_000)
        self._put(PCAP_RECORD.pack(seconds, micros, len(frame.data), max(frame.wirelen, len(frame.data)))
                  + bytes(frame.data))
        self.count += 1


class PcapngWriter(_Writer):
    """pcapng: one section, an interface description per link type, enhanced packet blocks."""

    FORMAT = "pcapng"
    MAX_MICROS = PCAPNG_MAX_MICROS

    def __init__(self, handle, path, linktype=None, made=False, kept=False):
        super().__init__(handle, path, made, kept)
        self.interfaces = {}
        if linktype is not None:
            self._interface(linktype)

    def _preamble(self):
        return _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))  # the section header

    def _interface(self, linktype, number=None):
        """The interface of ``linktype``, described the first time it is met (for frame ``number``, if one)."""
        interface = self.interfaces.get(linktype)
        if interface is None:
            if linktype > PCAPNG_MAX_LINKTYPE:
                frame = "the capture" if number is None else f"frame {number}"
                raise WriteError(f"{self.path}: {frame} has link type {linktype}, which a pcapng interface cannot "
                                 f"hold (16 bits: at most {PCAPNG_MAX_LINKTYPE}); write pcap: -F pcap")
            interface = self.interfaces[linktype] = len(self.interfaces)
            self._put(_block(0x00000001, struct.pack("<HHI", linktype, 0, SNAPLEN)))
        return interface

    def write(self, frame):
        if self._placeless(frame):
            return
        interface = self._interface(frame.linktype, frame.number)
        stamp = self._micros(frame)
        data = bytes(frame.data)
        body = struct.pack("<IIIII", interface, stamp >> 32, stamp & 0xFFFFFFFF, len(data),
                           max(frame.wirelen, len(data))) + data + b"\0" * (-len(data) % 4)
        self._put(_block(0x00000006, body))
        self.count += 1


def _likewise(count):
    """What follows the first frame's error when ``count`` frames had it."""
    more = count - 1
    return f"; {more} more frame{'s' if more > 1 else ''} likewise" if more else ""


def _cannot_write(path, exc):
    return WriteError(f"{path}: cannot write: {exc.strerror or exc}")


def _block(block_type, body):
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def whole_micros(ts):
    """``ts`` (seconds) in whole microseconds, as the files written hold it; None for a time that is no finite
    number."""
    if isinstance(ts, float) and not math.isfinite(ts):
        return None
    return int(round(ts * 1_000_000))


def _seconds(micros):
    """Whole microseconds as seconds with six decimals, exactly."""
    seconds, micros = divmod(micros, 1_000_000)
    return f"{seconds}.{micros:06d}"
