# cython: annotation_typing=False
# (the annotations document the API; the compiled build must accept what the pure one does: a str subclass, a bytearray)
"""The Python API: open a capture and loop over its records, dissect one payload, list the protocols.

    import dissect
    with dissect.open("cap.pcapng", filter="teeframe.num_players >= 3") as capture:
        for record in capture:
            print(record.kind, record.number, record.protocol, record.info)
        print(capture.stats()["frames"])

The records are those ``dissect -T jsonl`` writes, in the same order, and ``record.to_dict()`` is
the object it writes for each.
"""

from __future__ import annotations

import io
import operator
import os
from collections import deque
from typing import BinaryIO, Iterable, Iterator, Sequence, Union

from .capture.files import CaptureError
from .capture.sources import STDIN, CaptureFiles, open_input
from .core.model import AnalysisRecord, Message
from .pipeline import FrameRecord
from .registry import Dissector, UsageError, load_protocols, protocol_key
from .session import Session

Source = Union[str, "os.PathLike[str]", BinaryIO]
PATH_MAX = 4096  # bytes longer than any path (Linux's limit) are a capture's, given where a path goes
Record = Union[FrameRecord, AnalysisRecord]


class Capture:
    """The records of one capture (one or several files read in turn), as an iterator.

    Use it in a ``with`` block or call ``close()``. Files that cannot be opened raise CaptureError
    from ``open``; a file that cannot be read to its end stops there, the next one is read, and the
    reason is kept in ``errors`` (the command prints these and exits 2). A file object given is read, not
    closed, and so is standard input. Like a generator, a Capture is read by one thread at a time (two
    captures need no lock)."""

    def __init__(self, sources: Sequence[Source], filter: str | None = None,
                 decode_as: Iterable[str] = (), tree: bool = True, count: int | None = None):
        decode_as = _decode_as_list(decode_as)
        count = _checked_count(count)
        if filter is not None and not isinstance(filter, str):
            raise TypeError(f"filter is a display filter string (as -Y), not {type(filter).__name__}")
        inputs = [_input(source) for source in sources]
        if sum(isinstance(source, str) and source == STDIN for source in inputs) > 1:
            raise UsageError("standard input can be read once: give \"-\" once")
        self._queue: deque = deque()
        self._files = CaptureFiles(inputs, limit=count)
        self._session = Session(_Collector(self._queue), decode_as=decode_as, display_filter=filter,
                                tree=tree, stats=True)
        self._records = self._run()
        self._done = False
        self._closed = False

    @property
    def errors(self) -> list[str]:
        """Why a file stopped early (one line each), as far as the capture has been read."""
        return list(self._files.errors)

    def __iter__(self) -> Iterator[Record]:
        return self._records

    def _run(self) -> Iterator[Record]:
        queue, session = self._queue, self._session
        for frame in self._files:
            session.frame(frame)
            while queue:
                yield queue.popleft()
        session.finish()
        self._done = True
        while queue:
            yield queue.popleft()

    def stats(self) -> dict:
        """The ``--stats`` result, as the ``-T json`` stats record: frames, bytes, duration, protocols,
        messages, analyses, findings, transactions. Reads the rest of the capture first, if the loop
        has not (those records are not kept)."""
        if not self._done:
            if self._closed:
                raise ValueError("stats() of a closed capture that was not read to its end: call it before close() "
                                 "or the end of the with block (it reads the rest of the capture)")
            for _ in self._records:
                pass
        return self._session.stats_dict()

    def to_arrow(self) -> dict:
        """The records the loop has not taken, as the tables ``--to-parquet`` writes: a dict of
        ``pyarrow.Table`` (frames, messages, findings, analysis). Needs pyarrow (the extra ``scale``)."""
        from .columnar import arrow_tables
        return arrow_tables(self, self._files.source_of)

    def to_pandas(self) -> dict:
        """``to_arrow()`` as pandas DataFrames (needs pandas too)."""
        from .columnar import pandas_frames
        return pandas_frames(self.to_arrow())

    def close(self) -> None:
        self._records.close()
        self._closed = True

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _input(source):
    """A source as CaptureFiles reads it: a binary file object as it is, any other as its path, opened once now so
    that a file that cannot be opened raises CaptureError here, not in the middle of the loop."""
    if hasattr(source, "read"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("a capture file object reads bytes: open it in binary mode ('rb')")
        return source
    path = _path(source)
    if path != STDIN:
        open_input(path).close()
    return path


def _path(source):
    """A source that is no file object, as a path; TypeError for anything else, CaptureError for bytes that are a
    capture's rather than a path's."""
    if isinstance(source, (bytearray, memoryview)) or isinstance(source, bytes) and (b"\0" in source or
                                                                                      len(source) > PATH_MAX):
        raise CaptureError(f"{bytes(source[:16])!r}...: capture bytes, not a path: give them as a file object, "
                           f"io.BytesIO(data)")
    try:
        return os.fspath(source)
    except TypeError:
        raise TypeError(f"a capture source is a path, \"-\" or a binary file object, not "
                        f"{type(source).__name__}") from None


def _decode_as_list(decode_as):
    """``decode_as`` as a list of ``-d`` strings: one string stands for itself (not for its characters)."""
    if isinstance(decode_as, str):
        return [decode_as]
    try:
        if isinstance(decode_as, (bytes, bytearray)):
            raise TypeError
        entries = list(decode_as)
    except TypeError:
        raise TypeError(f"decode_as is a -d string such as \"udp.port==9000,teeframe\" or a list of them, not "
                        f"{type(decode_as).__name__}") from None
    for entry in entries:
        if not isinstance(entry, str):
            raise TypeError(f"decode_as takes strings such as \"udp.port==9000,teeframe\", not "
                            f"{type(entry).__name__}")
    return entries


def _checked_count(count):
    """``count`` as an int (any integer type: a numpy one too), or None; TypeError for anything else, UsageError for
    a count below 1 (as ``-c`` refuses it)."""
    if count is None:
        return None
    try:
        if isinstance(count, bool):
            raise TypeError
        count = operator.index(count)
    except TypeError:
        raise TypeError(f"count is a whole number of frames, not {type(count).__name__}") from None
    if count < 1:
        raise UsageError(f"count must be at least 1 frame, not {count}")
    return count


class _Collector:
    """The Session's sink for the API: records wait in a queue until the loop takes them."""

    __slots__ = ("queue",)

    def __init__(self, queue):
        self.queue = queue

    def frame(self, record):
        self.queue.append(record)

    def analysis(self, record):
        self.queue.append(record)


def open(source: Union[Source, Sequence[Source]], filter: str | None = None,  # noqa: A001 - like io.open
         decode_as: Iterable[str] = (), tree: bool = True, count: int | None = None) -> Capture:
    """Open a capture: a path, several paths (read in turn as one capture, as the command does), ``"-"``
    (standard input), or a binary file object; pcap or pcapng, plain or compressed (gzip, bzip2, xz,
    zstd, lz4). ``filter`` is a display filter (``-Y``); ``decode_as`` takes ``-d`` strings such as
    ``"udp.port==9000,teeframe"``; ``tree=False`` skips the field trees (faster; then ``msg[key]``
    finds nothing); ``count`` stops after that many frames (``-c``). Raises UsageError for a bad
    filter, decode-as or count (or ``"-"`` given twice), CaptureError for a file that cannot be opened,
    TypeError for an argument of the wrong type."""
    if isinstance(source, (str, bytes, bytearray, memoryview, os.PathLike)) or hasattr(source, "read"):
        sources = [source]
    else:
        try:
            sources = list(source)
        except TypeError:
            raise TypeError(f"a capture source is a path, \"-\", a binary file object or a list of them, not "
                            f"{type(source).__name__}") from None
    return Capture(sources, filter=filter, decode_as=decode_as, tree=tree, count=count)


def dissect_payload(payload: bytes | bytearray | memoryview, protocol: str, tree: bool = True) -> Message:
    """Decode one bare message of ``protocol`` (as ``dissect --payload HEX --protocol P``). TypeError for a
    payload that is not bytes-like or a protocol that is not a string; UsageError for an unknown protocol."""
    try:
        if isinstance(payload, (int, str)):  # bytes(10 ** 12) would make a terabyte of zeros
            raise TypeError
        memoryview(payload)
    except TypeError:
        raise TypeError(f"payload is bytes-like (bytes, a bytearray, any buffer), not {type(payload).__name__}") \
            from None
    if not isinstance(protocol, str):
        raise TypeError(f"protocol is a protocol's key or title (a string), not {type(protocol).__name__}")
    key = protocol_key(protocol)
    if key is None:
        raise UsageError(f"unknown protocol {protocol!r} (known: {', '.join(sorted(load_protocols()))})")
    session = Session(_Collector(deque()), tree=tree)
    return session.payload(bytes(payload), key).messages[0]


def protocols() -> dict[str, type[Dissector]]:
    """The registered protocols, key -> class: each has ``title``, ``transports``, ``ports``, ``fields``
    (a FieldTable: iterate it for FieldSpecs with key, name, type, description) and ``findings`` (a
    FindingTable of FindingSpecs with code, severity, rule)."""
    return dict(sorted(load_protocols().items()))


__all__ = ["Capture", "CaptureError", "open", "dissect_payload", "protocols"]
