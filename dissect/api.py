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

import os
from collections import deque
from typing import BinaryIO, Iterable, Iterator, Sequence, Union

from .capture.files import CaptureError
from .capture.sources import CaptureFiles, open_input
from .core.model import AnalysisRecord, Message
from .pipeline import FrameRecord
from .registry import Dissector, UsageError, load_protocols, protocol_key
from .session import Session

Source = Union[str, "os.PathLike[str]", BinaryIO]
Record = Union[FrameRecord, AnalysisRecord]


class Capture:
    """The records of one capture (one or several files read in turn), as an iterator.

    Use it in a ``with`` block or call ``close()``. Files that cannot be opened raise CaptureError
    from ``open``; a file that cannot be read to its end stops there, the next one is read, and the
    reason is kept in ``errors`` (the command prints these and exits 2)."""

    def __init__(self, sources: Sequence[Source], filter: str | None = None,
                 decode_as: Iterable[str] = (), tree: bool = True, count: int | None = None):
        for source in sources:
            if not hasattr(source, "read") and source != "-":
                open_input(os.fspath(source)).close()  # CaptureError now, not in the middle of the loop
        self._queue: deque = deque()
        self._files = CaptureFiles([s if hasattr(s, "read") else os.fspath(s) for s in sources], limit=count)
        self._session = Session(_Collector(self._queue), decode_as=list(decode_as), display_filter=filter,
                                tree=tree, stats=True)
        self._records = self._run()
        self._done = False

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
            for _ in self._records:
                pass
        return self._session.stats_dict()

    def to_arrow(self) -> dict:
        """The records the loop has not taken, as the tables ``--to-parquet`` writes: a dict of
        ``pyarrow.Table`` (frames, messages, findings, analysis). Needs pyarrow (the extra ``scale``)."""
        from .columnar import arrow_tables
        return arrow_tables(self, lambda: self._files.paths[self._files.index])

    def to_pandas(self) -> dict:
        """``to_arrow()`` as pandas DataFrames (needs pandas too)."""
        from .columnar import pandas_frames
        return pandas_frames(self.to_arrow())

    def close(self) -> None:
        self._records.close()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
    filter or decode-as, CaptureError for a file that cannot be opened."""
    if isinstance(source, (str, bytes, os.PathLike)) or hasattr(source, "read"):
        sources = [source]
    else:
        sources = list(source)
    return Capture(sources, filter=filter, decode_as=decode_as, tree=tree, count=count)


def dissect_payload(payload: bytes | bytearray | memoryview, protocol: str, tree: bool = True) -> Message:
    """Decode one bare message of ``protocol`` (as ``dissect --payload HEX --protocol P``)."""
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
