"""Where capture bytes come from: a path, standard input (``-``), or a binary file object; compressed
or not. Compression is recognized by the first bytes, never by the name, and everything streams:
nothing is read whole into memory and nothing seeks, so pipes work.

gzip, bzip2 and xz come with Python; zstd and lz4 need the packages ``zstandard`` and ``lz4``
(dependencies of dissect; a missing one is named in a one-line error).
"""

import io
import os
import stat
import sys
import zlib

from .files import CaptureError, read_capture

STDIN = "-"
MAGICS = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4"),
)
READ_BUFFER = 1 << 16


def source_name(source):
    """What messages call an input: its path, ``standard input``, or a file object's name."""
    if isinstance(source, str) and source == STDIN:
        return "standard input"
    if hasattr(source, "read"):
        name = getattr(source, "name", None)
        return name if isinstance(name, str) else "input"
    return os.fsdecode(source)


def rereadable(source):
    """True when the input can be read a second time from its start (a regular file, uncompressed or not), or when
    reading it fails whatever the processes (missing, unreadable, a directory): that error is then the one said."""
    if hasattr(source, "read") or source == STDIN:
        return False
    try:
        mode = os.stat(source).st_mode
    except (OSError, ValueError):
        return True
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def open_input(source):
    """A binary stream of the capture's uncompressed bytes, read as it goes; CaptureError says why not."""
    return _decompressing(_open_raw(source), source)


def _decompressing(raw, source):
    try:
        head = raw.peek(6)[:6]
    except OSError as exc:
        raw.close()
        raise CaptureError(f"{source_name(source)}: cannot read: {exc.strerror or exc}") from None
    for magic, kind in MAGICS:
        if head.startswith(magic):
            return io.BufferedReader(_decompressed(raw, kind, source_name(source)), READ_BUFFER)
    return raw


def _open_raw(source):
    if hasattr(source, "read"):
        return source if hasattr(source, "peek") else io.BufferedReader(_Readable(source), READ_BUFFER)
    if source == STDIN:
        if sys.stdin is None:
            raise CaptureError("standard input: cannot read: it was closed when dissect started")
        return sys.stdin.buffer
    try:
        return open(source, "rb", buffering=READ_BUFFER)
    except OSError as exc:
        raise CaptureError(f"{source_name(source)}: cannot open: {exc.strerror}") from None
    except ValueError:  # a NUL in the path (the API refuses capture bytes given as a path before this)
        raise CaptureError(f"{source_name(source)[:60]!r}: cannot open: a path cannot hold a NUL byte (to read a "
                           f"capture's bytes, give them as a file object, io.BytesIO(data))") from None


def _decompressed(raw, kind, name):
    return _Decompressing(raw, _engine_factory(kind, name), f"{name}: {kind} data")


def _engine_factory(kind, name):
    """A function that makes a fresh incremental decompressor (one per gzip member, xz stream, frame)."""
    if kind == "gzip":
        return lambda: zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        import bz2  # imported for a capture that needs it, not at every start-up

        return bz2.BZ2Decompressor
    if kind == "xz":
        import lzma

        return lzma.LZMADecompressor
    if kind == "zstd":
        zstandard = _optional("zstandard", name, kind)
        return lambda: zstandard.ZstdDecompressor().decompressobj()
    lz4_frame = _optional("lz4.frame", name, kind)
    return lz4_frame.LZ4FrameDecompressor


def _optional(module, name, kind):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise CaptureError(f"{name}: a {kind}-compressed capture needs the package {package} "
                           f"(pip install {package})") from None


class _Decompressing(io.RawIOBase):
    """Uncompressed bytes from a compressed stream, as they come. Everything before a cut or damage is
    delivered first; then CaptureError says what went wrong. Several members or frames in a row (as
    ``cat a.gz b.gz`` makes) are read in turn. Compressed input is taken a small chunk at a time, so
    what one step may inflate to stays bounded."""

    CHUNK = 16384

    def __init__(self, raw, factory, what):
        self.raw = raw
        self.factory = factory
        self.what = what
        self.engine = factory()
        self.started = False  # whether the current engine has been given any input
        self.out = b""
        self.at = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        while self.at >= len(self.out):
            if not self._inflate():
                return 0
        size = min(len(buffer), len(self.out) - self.at)
        buffer[:size] = self.out[self.at:self.at + size]
        self.at += size
        return size

    def _inflate(self):
        """Decompress the next chunk into ``out``; False at the end of the data."""
        chunk = self.raw.read(self.CHUNK)
        if not chunk:
            if self.started and not self.engine.eof:
                raise CaptureError(f"{self.what} is cut short: the compressed stream ends before its end marker")
            return False
        out = []
        try:
            while chunk:
                if self.engine.eof:  # the next member or frame
                    self.engine = self.factory()
                self.started = True
                out.append(self.engine.decompress(chunk))
                chunk = self.engine.unused_data if self.engine.eof else b""
        except Exception as exc:  # zlib.error, OSError, lzma.LZMAError, zstandard.ZstdError, RuntimeError
            raise CaptureError(f"{self.what} is damaged ({type(exc).__name__}: {exc})") from None
        self.out, self.at = b"".join(out), 0
        return True

    def close(self):
        self.raw.close()
        super().close()


class _Readable(io.RawIOBase):
    """A file object without ``peek`` (a socket's makefile, a user's stream) as a raw stream."""

    def __init__(self, stream):
        self.stream = stream

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        self.stream.close()
        super().close()


def open_capture(source):
    """Yield the Frames of one capture (a path, ``-``, or a binary file object); raise CaptureError where
    it cannot go on."""
    return read_capture(open_input(source), source_name(source))


class CaptureFiles:
    """Several inputs read in turn as one capture: frame numbers go on from one to the next.

    An input that cannot be read to its end adds its reason to ``errors``, and reading goes on with
    the next one. ``limit``: stop after that many frames in all (``-c``)."""

    def __init__(self, sources, limit=None):
        self.paths = list(sources)
        self.limit = limit
        self.errors = []
        self.index = 0
        self.raw = None

    def __iter__(self):
        base = 0
        left = self.limit
        if left is not None and left <= 0:
            return
        for self.index, source in enumerate(self.paths):
            frame = None
            try:
                self.raw = _open_raw(source)
                for frame in read_capture(_decompressing(self.raw, source), source_name(source)):
                    if base:  # the first input's numbers stand: no attribute written for each of its frames
                        frame.number += base
                    yield frame
                    if left is not None:
                        left -= 1
                        if left <= 0:  # stop now: on a pipe, the next frame may be long in coming
                            return
            except CaptureError as exc:
                self.errors.append(str(exc))
            if frame is not None:
                base = frame.number  # the last frame's number, the inputs before it counted in

    def position(self):
        """(index of the input being read, bytes of it read so far, compressed bytes for a compressed
        one), for a progress line."""
        try:
            return self.index, self.raw.tell()
        except (AttributeError, OSError, ValueError):  # not opened, closed at its end, or a pipe
            return self.index, 0
