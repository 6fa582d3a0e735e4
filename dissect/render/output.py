"""The command's standard output: what the views write, collected and written in batches."""

from ..core.interrupt import defer_interrupt

try:
    from os import writev as _writev
except ImportError:  # Windows: a batch of UTF-8 is joined and written through the stream's buffer
    _writev = None


class OutputError(Exception):
    """Standard output cannot take what is written (a full disk): reported as one line, exit status 2."""


BATCH = 512             # writes collected before one goes to the stream
BATCH_BYTES = 1 << 17   # or fewer, once they hold this many characters or bytes (a -V or JSON record is large)
_BATCH, _BATCH_BYTES = BATCH, BATCH_BYTES  # compiled, C integers (output.pxd): compared for every write


class BatchedOutput:
    """Collects output and writes it in batches: one write call per line costs more than the line.

    ``write`` takes text; ``write_bytes`` (None where the stream has no binary buffer) takes UTF-8 that is
    ready to go, as JSON records, summary lines and ``-V`` frames are; ``add_utf8`` is the same as a method,
    which the compiled views call in C. Each batch is of one kind, so that the output keeps its order; text
    written once UTF-8 has been joins it as UTF-8 (views that write both, ``-V`` with ``-x``, would otherwise
    flush the batch at every change of kind)."""

    __slots__ = ("stream", "parts", "size", "binary", "buffer", "write_bytes", "fd")

    def __init__(self, stream):
        self.stream = stream
        self.parts = []
        self.size = 0
        self.binary = False
        self.buffer = getattr(stream, "buffer", None)
        self.write_bytes = self.add_utf8 if self.buffer is not None else None
        self.fd = _descriptor(self.buffer)

    def write(self, text):
        if self.binary:
            self.add_utf8(text.encode("utf-8", "replace"))
            return
        self.parts.append(text)
        self.size += len(text)
        if len(self.parts) >= _BATCH or self.size >= _BATCH_BYTES:
            self.flush()

    def add_utf8(self, data):
        """Only where ``write_bytes`` is not None: the stream has a binary buffer."""
        if not self.binary:
            self.flush()
            self.binary = True
        self.parts.append(data)
        self.size += len(data)
        if len(self.parts) >= _BATCH or self.size >= _BATCH_BYTES:
            self.flush()

    def flush(self):
        """Write what is collected. A Ctrl-C that comes while a batch is written is raised once the batch is written
        and taken off the list: raised between the write and the bookkeeping, it would leave the batch to be written
        again when the interrupted run closes its output (twice, or from the middle of a line). A second Ctrl-C is
        raised at once, so that a reader that holds the output up cannot hold dissect."""
        deferred = defer_interrupt()
        try:
            self._flush()
        finally:
            if deferred is not None:
                deferred.uninstall()

    def _flush(self):
        try:
            if self.parts:
                if self.binary and self.fd >= 0:
                    self.stream.flush()  # what the stream holds was written before these
                    write_all(self.fd, self.parts, self.size)
                elif self.binary:
                    self.buffer.write(b"".join(self.parts))
                else:
                    self.stream.write("".join(self.parts))
                self.parts.clear()
                self.size = 0
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"standard output: cannot write: {exc.strerror or exc}") from None

    def discard(self):
        self.parts.clear()
        self.size = 0

    def isatty(self):
        return self.stream.isatty()

    def fileno(self):
        return self.stream.fileno()


def _descriptor(buffer):
    """The file descriptor under a stream's binary buffer, which a batch of UTF-8 goes to in one writev call (the
    parts are not joined first: a JSON or -V batch is 128 KiB); -1 where there is none or no writev."""
    if _writev is None or buffer is None:
        return -1
    try:
        return buffer.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: an in-memory stream
        return -1


def write_all(fd, parts, size):
    """Write ``parts`` (bytes, ``size`` of them in all) to ``fd`` in writev calls, going on after a call that wrote
    fewer (a terminal, a socket or a pipe may take part of a batch)."""
    written = _writev(fd, parts)
    while written < size:
        size -= written
        index = 0
        while written >= len(parts[index]):
            written -= len(parts[index])
            index += 1
        parts = [memoryview(parts[index])[written:]] + parts[index + 1:]
        written = _writev(fd, parts)


def utf8_output(out):
    """``out`` where it is a BatchedOutput that takes UTF-8 (``add_utf8``), else None: the compiled views keep it
    typed and call it in C."""
    return out if type(out) is BatchedOutput and out.write_bytes is not None else None
