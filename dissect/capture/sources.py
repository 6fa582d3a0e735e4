"""Where capture bytes come from: a path, standard input (``-``), or a binary file object; compressed
or not. Compression is recognized by the first bytes, never by the name, and everything streams:
nothing is read whole into memory and nothing seeks, so pipes work.

gzip, bzip2 and xz come with Python; zstd and lz4 need the packages ``zstandard`` and ``lz4``
(dependencies of dissect; a missing one is named in a one-line error).
"""

import io
import os
from bisect import bisect_right
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


# What an input is when it is none of a regular file, a directory or standard input, by its stat mode.
_KINDS = ((stat.S_ISFIFO, "a pipe or FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_once(source):
    """What an input that can be read only once is, as a note names it ("standard input", "NAME (a character
    device)"), or None when it can be read a second time from its start (a regular file, uncompressed or not) or
    when reading it fails whatever the processes (missing, unreadable, a directory): that error is then the one
    said."""
    if hasattr(source, "read") or source == STDIN:
        return source_name(source)
    try:
        mode = os.stat(source).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{source_name(source)} ({kind})"


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
        return io.BufferedReader(_Borrowed(source, source_name(source)), READ_BUFFER)
    if source == STDIN:
        if sys.stdin is None:
            raise CaptureError("standard input: cannot read: it was closed when dissect started")
        # Borrowed, as a caller's file object is: closing the capture must leave the process's standard input open.
        stdin = getattr(sys.stdin, "buffer", sys.stdin)
        return io.BufferedReader(_Borrowed(stdin, source_name(source)), READ_BUFFER)
    try:
        return open(source, "rb", buffering=READ_BUFFER)
    except OSError as exc:
        raise CaptureError(f"{source_name(source)}: cannot open: {exc.strerror}") from None
    except ValueError:  # a NUL in the path (the API refuses capture bytes given as a path before this)
        raise CaptureError(f"{source_name(source)[:60]!r}: cannot open: a path cannot hold a NUL byte (to read a "
                           f"capture's bytes, give them as a file object, io.BytesIO(data))") from None


def _decompressed(raw, kind, name):
    return _Decompressing(raw, _engine_factory(kind, name), f"{name}: {kind} data")


# What one step of decompression makes at most: a compressed capture of zeros (empty records) inflates a thousand to a
# million times, so a step is bounded by what it makes, not by what it reads.
STEP = 1 << 20
# The largest window a compressed stream may ask of its decompressor (what it keeps of the bytes made before): zstd's
# own default limit, and room for xz's largest preset dictionary (64 MiB). A stream that asks more is refused.
MAX_WINDOW = 1 << 27


def _engine_factory(kind, name):
    """A function that makes a fresh incremental decompressor (one per gzip member, xz stream, frame), as a _Steps."""
    if kind == "gzip":
        return _ZlibSteps
    if kind == "bzip2":
        import bz2  # imported for a capture that needs it, not at every start-up

        return lambda: _Steps(bz2.BZ2Decompressor())
    if kind == "xz":
        import lzma

        return lambda: _Steps(lzma.LZMADecompressor(memlimit=MAX_WINDOW))
    if kind == "zstd":
        zstandard = _optional("zstandard", name, kind)
        return lambda: _ZstdSteps(zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).decompressobj())
    lz4_frame = _optional("lz4.frame", name, kind)
    return lambda: _Steps(lz4_frame.LZ4FrameDecompressor())


class _Steps:
    """A decompressor that makes at most STEP bytes a step (``step``): one given its input when it ``wants_input``,
    else called again without any to make what it still holds. bzip2, xz and lz4's decompressors keep the input they
    have not used themselves (``max_length``, ``needs_input``)."""

    def __init__(self, engine):
        self.engine = engine

    @property
    def wants_input(self):
        return self.engine.needs_input

    @property
    def eof(self):
        return self.engine.eof

    @property
    def unused_data(self):
        """What it was given past the end of its stream (lz4's says None for nothing)."""
        return self.engine.unused_data or b""

    def step(self, data):
        return self.engine.decompress(data, STEP)


class _ZlibSteps(_Steps):
    """zlib's decompressor hands back the input it has not used (``unconsumed_tail``), and may hold output when a
    step ends full."""

    def __init__(self):
        _Steps.__init__(self, zlib.decompressobj(wbits=31))
        self.full = False

    @property
    def wants_input(self):
        return not self.engine.unconsumed_tail and not self.full

    def step(self, data):
        out = self.engine.decompress(self.engine.unconsumed_tail + data, STEP)
        self.full = len(out) == STEP
        return out


class _ZstdSteps(_Steps):
    """python-zstandard's decompressor makes all it can of the input it is given: it is given ``FEED`` bytes a step.
    Its smallest block is 4 bytes and makes at most 128 KiB, so a step makes at most 8 MiB. (A call costs about a
    microsecond: 256 bytes a call add about 1% to reading a capture compressed five times.)"""

    FEED = 256

    def __init__(self, engine):
        _Steps.__init__(self, engine)
        self.data, self.at = b"", 0

    @property
    def wants_input(self):
        return self.at >= len(self.data)

    @property
    def unused_data(self):
        return self.engine.unused_data + self.data[self.at:]

    def step(self, data):
        if data:
            self.data, self.at = data, 0
        piece = self.data[self.at:self.at + self.FEED]
        self.at += len(piece)
        return self.engine.decompress(piece)


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
    ``cat a.gz b.gz`` makes) are read in turn. Compressed input is read a small chunk at a time, and each
    step of decompression makes at most STEP bytes (8 MiB for zstd), however far the input inflates."""

    CHUNK = 16384
    # Compressed bytes a decompressor is given a step: where the stream is damaged, the step that meets the damage
    # loses what it would have made, so what the bytes before it made comes out first. (A step costs about a
    # microsecond: a gzip capture inflates at half the speed it did in 16 KiB steps, 10.7 MB in 67 ms rather than 34,
    # which is about 3% of dissecting it.)
    FEED = 256

    def __init__(self, raw, factory, what):
        self.raw = raw
        self.factory = factory
        self.what = what
        self.engine = factory()
        self.started = False  # whether the current engine has been given any input
        self.out = b""
        self.at = 0
        self.held = b""       # compressed bytes read, from held_at not given to a decompressor yet
        self.held_at = 0

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
        """One step of decompression into ``out`` (it may make nothing); False at the end of the data."""
        data = b""
        if self.engine.eof:  # the next member or frame begins with what this one was given past its end
            self.held, self.held_at = self.engine.unused_data + self.held[self.held_at:], 0
            self.engine, self.started = self.factory(), False
        if self.engine.wants_input:  # (a fresh engine always does)
            if self.held_at >= len(self.held):
                self.held, self.held_at = self.raw.read(self.CHUNK), 0
                if not self.held:
                    if self.started:
                        raise CaptureError(f"{self.what} is cut short: the compressed stream ends before its end "
                                           f"marker")
                    return False
            data = self.held[self.held_at:self.held_at + self.FEED]
            self.held_at += len(data)
            self.started = True
        try:
            self.out, self.at = self.engine.step(data), 0
        except Exception as exc:  # zlib.error, OSError, lzma.LZMAError, zstandard.ZstdError, RuntimeError
            if "memory" in str(exc).lower():  # xz: "Memory usage limit was reached"; zstd: "... too much memory ..."
                raise CaptureError(f"{self.what} asks for a window larger than the {MAX_WINDOW >> 20} MiB a "
                                   f"decompressor may keep ({type(exc).__name__}: {exc})") from None
            raise CaptureError(f"{self.what} is damaged ({type(exc).__name__}: {exc})") from None
        return True

    def close(self):
        self.raw.close()
        super().close()


class _Borrowed(io.RawIOBase):
    """The caller's file object (the API's) or standard input as a raw stream: read, and left open when the capture
    is closed, as gzip.GzipFile leaves the file object it is given. A BufferedReader (standard input's, a pipe's) is
    read with ``read1``, which returns what it has rather than wait for a full buffer: records come as written."""

    def __init__(self, stream, name):
        self.stream = stream
        self.name = name
        self.read_some = stream.read1 if isinstance(stream, io.BufferedReader) else stream.read

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            data = self.read_some(len(buffer))
        except io.UnsupportedOperation:
            raise CaptureError(f"{self.name}: cannot read: it is not open for reading") from None
        except ValueError as exc:  # closed
            raise CaptureError(f"{self.name}: cannot read: {exc}") from None
        except OSError as exc:  # a socket reset, a disk's I/O error
            raise CaptureError(f"{self.name}: cannot read: {exc.strerror or exc}") from None
        if not isinstance(data, (bytes, bytearray)):
            raise CaptureError(f"{self.name}: cannot read: its read() gave {type(data).__name__}, not bytes")
        if len(data) > len(buffer):
            raise CaptureError(f"{self.name}: cannot read: its read() gave more bytes than asked for")
        buffer[:len(data)] = data
        return len(data)


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
        self.starts = []  # per input read so far, the number of its first frame (inputs without any: the next's)
        self.read_any = False  # an input was known for a capture (its header read): -w's file may be written

    def __iter__(self):
        base = 0
        left = self.limit
        if left is not None and left <= 0:
            return
        for self.index, source in enumerate(self.paths):
            frame = None
            self.starts.append(base + 1)
            try:
                self.raw = _open_raw(source)
                for frame in read_capture(_decompressing(self.raw, source), source_name(source), self._opened):
                    if base:  # the first input's numbers stand: no attribute written for each of its frames
                        frame.number += base
                    yield frame
                    if left is not None:
                        left -= 1
                        if left <= 0:  # stop now: on a pipe, the next frame may be long in coming
                            return
            except CaptureError as exc:
                self.errors.append(str(exc))
            except OSError as exc:  # a file's I/O error part-way (one opened by path)
                self.errors.append(f"{source_name(source)}: cannot read: {exc.strerror or exc}")
            if frame is not None:
                base = frame.number  # the last frame's number, the inputs before it counted in

    def _opened(self):
        self.read_any = True

    def source_of(self, number):
        """The input that frame ``number`` came from (None: the one being read)."""
        if number is None or not self.starts:
            return self.paths[self.index]
        return self.paths[max(bisect_right(self.starts, number) - 1, 0)]

    def position(self):
        """(index of the input being read, bytes of it read so far, compressed bytes for a compressed
        one), for a progress line."""
        try:
            return self.index, self.raw.tell()
        except (AttributeError, OSError, ValueError):  # not opened, closed at its end, or a pipe
            return self.index, 0
