"""The progress line on stderr: frames read and how far into the file, for large files on a terminal."""

import os
import sys
import time


def on_terminal():
    """Whether standard error is a terminal (False where there is none: ``2>&-``)."""
    return sys.stderr is not None and sys.stderr.isatty()


class Progress:
    """``show`` redraws the line at most twice a second; ``done`` clears it. Files under MIN_SIZE get none."""

    MIN_SIZE = 20 * 1024 * 1024

    def __init__(self, sources, stream=None):
        self.stream = stream or sys.stderr
        self.sizes = [_size(source) for source in sources]
        self.shown = False
        self.last = time.monotonic()

    def show(self, frames, index, position):
        """``position``: how many bytes of file ``index`` have been read."""
        size = self.sizes[index] if index < len(self.sizes) else 0
        if size < self.MIN_SIZE or time.monotonic() - self.last < 0.5:
            return
        self.last = time.monotonic()
        self.stream.write(f"\r{frames:,} frames, {100.0 * position / size:5.1f}%")
        self.stream.flush()
        self.shown = True

    def done(self):
        if self.shown:
            self.stream.write("\r" + " " * 40 + "\r")
            self.stream.flush()


def _size(source):
    try:
        return os.path.getsize(source) if isinstance(source, (str, bytes, os.PathLike)) else 0
    except OSError:
        return 0
