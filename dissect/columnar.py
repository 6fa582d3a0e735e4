"""Columnar output: a capture's records as Arrow tables and Parquet files (``--to-parquet DIR``).

Four tables, each a Parquet dataset under DIR (``DIR/frames/part-00000.parquet``, one part per
capture file):

- ``frames``: one row per frame: file, frame number, time (timestamp[ns, UTC]), lengths, addresses,
  ports, transport, protocol, info, message count, finding count and worst severity.
- ``messages``: one row per message: file, frame, the message's frames, its frame's addresses and
  ports, protocol, name, offset, length, info, then one typed column per field key of every
  protocol's field table (named by the dotted key: ``teeframe.num_players``), then the field tree as
  JSON (``fields_json``).
- ``findings``: one row per finding of a frame, a message or an analysis record.
- ``analysis``: one row per analysis record, with typed columns for the results most records share
  (server, client, server name, map, players, response time) and the whole result as JSON.

The schema comes from the field tables, so a plugin's keys become columns too; ``schema_version``
in each file's metadata changes when a column changes meaning. Rows wait in a buffer per table
and go out as a row group every ``ROWS[table]`` rows (or ``TEXT_BYTES`` of JSON), so memory does not
grow with the capture. A value that does not fit its column's type (a damaged message) becomes null;
the JSON column still holds it. pyarrow is needed (the extra ``scale``).
"""

import itertools
import math
import os

from . import __version__
from .capture.sources import source_name
from .core.model import worst_severity
from .core.tables import NUMBER_TYPES
from .registry import UsageError, load_protocols
from .render.jsonout import JsonRenderer, field_dict
from .session import finish_order

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the optional extra "scale"
    pa = pq = None

SCHEMA_VERSION = "1"
EXTRA = "scale"
TABLES = ("frames", "messages", "findings", "analysis")
# Rows per row group: a message or analysis row holds its JSON and its values twice while the group is
# made (as Python objects and as Arrow arrays), so those groups are smaller.
ROWS = {"frames": 32768, "findings": 32768, "messages": 8192, "analysis": 8192}
TEXT_BYTES = 16 << 20     # JSON text per row group (a reply's field tree can be tens of kB)
COMPRESSION = "zstd"
_encode = JsonRenderer(None).encode  # never raises: what -T json writes for the same object


class MissingExtra(UsageError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def require_arrow(what):
    """Raise MissingExtra (one line, naming the extra) unless pyarrow can be imported."""
    if pa is None:
        raise MissingExtra(f"{what} needs pyarrow: pip install 'dissect-gameq[{EXTRA}]'")


# -- columns -------------------------------------------------------------------------------------
class Column:
    """One column: its name, Arrow type and metadata, and how a Python list becomes an Arrow array."""

    __slots__ = ("name", "type", "metadata", "fix", "kinds", "nested")

    def __init__(self, name, type, metadata=None):
        self.name = name
        self.type = type
        self.metadata = metadata
        self.fix = _fixer(type)
        self.nested = pa.types.is_list(type)
        self.kinds = _KINDS[_kind(type.value_type if self.nested else type)]

    def field(self):
        return pa.field(self.name, self.type, metadata=self.metadata)

    def array(self, values):
        """The values as an array of this column's type; a value that does not fit becomes null.

        Values of the Python types the column takes go to Arrow in one call (Arrow still refuses a
        number out of range); otherwise each value is checked, as Arrow would take 2.5 into an integer
        column as 2, or bytes into a text column as text."""
        items = itertools.chain.from_iterable(v for v in values if v.__class__ is list) if self.nested else values
        if self.kinds.issuperset(map(type, items)) and \
                (not self.nested or all(v.__class__ is list for v in values if v is not None)):
            try:
                return pa.array(values, type=self.type)
            except Exception:  # noqa: BLE001 - a number out of range, a lone surrogate: fix them one by one
                pass
        try:
            return pa.array([None if value is None else self.fix(value) for value in values], type=self.type)
        except Exception:  # noqa: BLE001 - never expected; a column of nulls beats a lost capture
            return pa.nulls(len(values), self.type)


def _kind(arrow_type):
    types = pa.types
    for kind, test in (("int", types.is_integer), ("float", types.is_floating), ("bool", types.is_boolean),
                       ("bytes", types.is_binary), ("text", types.is_string)):
        if test(arrow_type):
            return kind
    return "int" if types.is_timestamp(arrow_type) else "other"


# The Python types (besides None) that each kind of column takes as they are.
_KINDS = {"int": frozenset({int, type(None)}), "float": frozenset({float, int, type(None)}),
          "bool": frozenset({bool, type(None)}), "bytes": frozenset({bytes, type(None)}),
          "text": frozenset({str, type(None)}), "other": frozenset()}


def _fixer(arrow_type):
    """The function that makes one value fit ``arrow_type``, or gives None."""
    types = pa.types
    if types.is_list(arrow_type):
        inner = _fixer(arrow_type.value_type)
        return lambda value: [None if item is None else inner(item) for item in value] \
            if isinstance(value, (list, tuple)) else None
    if types.is_integer(arrow_type):
        bits = arrow_type.bit_width
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if types.is_signed_integer(arrow_type) \
            else (0, (1 << bits) - 1)
        return lambda value: _integer(value, low, high)
    if types.is_floating(arrow_type):
        return _float
    if types.is_timestamp(arrow_type):
        return nanoseconds
    if types.is_boolean(arrow_type):
        return lambda value: bool(value) if isinstance(value, int) and value in (0, 1) else None
    if types.is_binary(arrow_type):
        return _bytes
    return _text


def _integer(value, low, high):
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        value = int(value)
        return value if low <= value <= high else None
    return None


def _float(value):
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def _bytes(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace")
    return None


def _text(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if not isinstance(value, str):
        value = str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: Arrow strings are UTF-8
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def nanoseconds(seconds):
    """Seconds since 1970 as whole nanoseconds, rounded to the microsecond (a float time holds about a
    quarter of a microsecond at today's dates: the digits below are noise), or None outside what
    timestamp[ns] holds."""
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds):
        whole = math.floor(seconds)
        value = whole * 1_000_000_000 + round((seconds - whole) * 1_000_000) * 1000
        if -(1 << 63) <= value < (1 << 63):
            return value
    return None


# Field-table types to Arrow types; "none" and "protocol" keys have no value of their own.
_FIELD_TYPES = {"uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "int8": "int8",
                "int16": "int16", "int32": "int32", "int64": "int64", "int": "int64", "float": "float64",
                "string": "string", "address": "string", "bool": "bool_", "bytes": "binary", "list": "string"}


def arrow_type(field_type):
    if field_type == "time":
        return pa.timestamp("ns", tz="UTC")
    return getattr(pa, _FIELD_TYPES[field_type])()


def _common(*columns):
    """Columns from (name, type) pairs."""
    return [Column(name, _type(kind)) for name, kind in columns]


def _type(kind):
    """An Arrow type, from a field-table type (``string``, ``time``), an Arrow type's name (``int32``), or
    itself."""
    if not isinstance(kind, str):
        return kind
    if kind in _FIELD_TYPES or kind == "time":
        return arrow_type(kind)
    return getattr(pa, kind)()


def frames_columns():
    return _common(("file", "string"), ("frame", "int64"), ("time", "time"), ("caplen", "int64"),
                   ("length", "int64"), ("src", "string"), ("sport", "int32"), ("dst", "string"),
                   ("dport", "int32"), ("transport", "string"), ("protocol", "string"), ("info", "string"),
                   ("message_count", "int32"), ("finding_count", "int32"), ("worst_severity", "string"))


def findings_columns():
    return _common(("file", "string"), ("frame", "int64"), ("source", "string"), ("message_index", "int32"),
                   ("analysis_index", "int32"), ("protocol", "string"), ("code", "string"),
                   ("severity", "string"), ("message", "string"), ("offset", "int64"), ("length", "int64"))


def analysis_columns():
    return _common(("file", "string"), ("analysis_index", "int32"), ("frame", "int64"),
                   ("frames", pa.list_(pa.int64())), ("protocol", "string"), ("name", "string"),
                   ("summary", "string"), ("finding_count", "int32"), ("server", "string"), ("client", "string"),
                   ("server_name", "string"), ("map", "string"), ("players", "int64"), ("max_players", "int64"),
                   ("response_time", "float64"), ("result_json", "string"))


def message_head_columns():
    return _common(("file", "string"), ("frame", "int64"), ("message_index", "int32"),
                   ("frames", pa.list_(pa.int64())), ("src", "string"), ("sport", "int32"), ("dst", "string"),
                   ("dport", "int32"), ("protocol", "string"), ("message", "string"), ("offset", "int64"),
                   ("length", "int64"), ("info", "string"), ("finding_count", "int32"))


class FieldColumn(Column):
    """A messages column for one field key: the key's first value, or (``repeated``) all its values."""

    __slots__ = ("key", "repeated")

    def __init__(self, spec, repeated):
        value_type = arrow_type(spec.type)
        super().__init__(spec.key, pa.list_(value_type) if repeated else value_type,
                         {"name": spec.name, "type": spec.type, "description": spec.description})
        self.key = spec.key
        self.repeated = repeated


def field_columns(table):
    """A protocol's field columns, in its table's order: every key with a value of its own."""
    repeated = repeated_keys(table)
    skip = {f"{table.protocol}.message", f"{table.protocol}.analysis"}  # the name columns say these
    return [FieldColumn(spec, spec.key in repeated) for spec in table
            if spec.type not in ("none", "protocol") and spec.key not in skip]


def repeated_keys(table):
    """The keys that may occur more than once in one message: list columns.

    A field that says so (``spec.repeated``) is one. So is every key of a record group: a field of
    type none, or a field with keys declared beneath it whose own value is not a number (a
    TeeFrame client, an Odamex player, team or server entry, the Odamex extension block), and every
    key beneath such a field. A number with keys beneath it (a colors byte and its halves) is one
    value."""
    groups = [spec.key for spec in table
              if spec.type == "none" or (spec.children and spec.type not in NUMBER_TYPES)]
    keys = set()
    for spec in table:
        declared = _declared_repeated(spec)
        if declared or (declared is None and any(spec.key == group or spec.key.startswith(group + ".")
                                                 for group in groups)):
            keys.add(spec.key)
    return keys


def _declared_repeated(spec):
    """``spec.repeated`` when the table declares it (True or False), else None. Read past FieldSpec's
    __getattr__, which would find a field declared under the key as ``<key>.repeated``."""
    try:
        value = object.__getattribute__(spec, "repeated")
    except AttributeError:
        return None
    return value if isinstance(value, bool) else None


class Layout:
    """The four tables' columns and schemas, from the registered protocols' field tables."""

    def __init__(self, protocols=None):
        protocols = load_protocols() if protocols is None else protocols
        self.protocols = tuple(sorted(protocols))
        self.fields = {key: field_columns(protocols[key].fields) for key in self.protocols}
        self.columns = {
            "frames": frames_columns(),
            "messages": [*message_head_columns(), *(c for key in self.protocols for c in self.fields[key]),
                         *_common(("fields_json", "string"))],
            "findings": findings_columns(),
            "analysis": analysis_columns(),
        }
        self.schemas = {name: self._schema(name, columns) for name, columns in self.columns.items()}

    def _schema(self, name, columns):
        metadata = {"schema_version": SCHEMA_VERSION, "table": name, "dissect_version": __version__,
                    "protocols": ",".join(self.protocols)}
        return pa.schema([column.field() for column in columns], metadata=metadata)


# -- rows ----------------------------------------------------------------------------------------
class TableSink:
    """A Session sink: each record becomes rows of the four tables, which go to ``emit(table, batch)``
    a row group at a time. ``file`` names the capture file the records come from."""

    def __init__(self, emit, layout=None, file=""):
        self.layout = layout or Layout()
        self.file = file
        self.analyses = 0
        self.buffers = {"frames": _Buffer("frames", self.layout, emit),
                        "messages": _MessageBuffer("messages", self.layout, emit),
                        "findings": _Buffer("findings", self.layout, emit),
                        "analysis": _Buffer("analysis", self.layout, emit)}

    def frame(self, record):
        file, number = self.file, record.number
        findings = self.buffers["findings"]
        every = list(record.all_findings())
        self.buffers["frames"].add((
            file, number, nanoseconds(record.ts), record.caplen, record.wirelen, record.src, record.sport,
            record.dst, record.dport, record.transport, record.protocol, record.info, len(record.messages),
            len(every), worst_severity(every)))
        for finding in record.findings:
            findings.add(_finding_row(file, number, "frame", None, None, record.protocol, finding))
        for index, msg in enumerate(record.messages):
            self._message(file, record, index, msg)
            for finding in msg.findings:
                findings.add(_finding_row(file, number, "message", index, None, msg.protocol, finding))

    def _message(self, file, record, index, msg):
        values = {}
        _collect(msg.fields, values)
        tree = _encode([field_dict(field) for field in msg.fields])
        self.buffers["messages"].add((file, record.number, index, list(msg.frames), record.src, record.sport,
                                      record.dst, record.dport, msg.protocol, msg.name, msg.offset, msg.length,
                                      msg.info, len(msg.findings), values, tree), len(tree))

    def analysis(self, rec):
        index, first = self.analyses, finish_order(rec)
        self.analyses += 1
        result = rec.result
        text = _encode(result)
        self.buffers["analysis"].add((self.file, index, first, list(rec.frames), rec.protocol, rec.name, rec.summary,
                                      len(rec.findings), *common_results(result), text), len(text))
        for finding in rec.findings:
            self.buffers["findings"].add(_finding_row(self.file, first, "analysis", None, index, rec.protocol,
                                                      finding))

    def close(self):
        """Write what the buffers still hold."""
        for buffer in self.buffers.values():
            buffer.flush()


def _collect(fields, values):
    """Each key's values, in tree order (plain loops: a generator per node costs a third more)."""
    for field in fields:
        found = values.get(field.key)
        if found is None:
            values[field.key] = [field.value]
        else:
            found.append(field.value)
        if field.children:
            _collect(field.children, values)


def _finding_row(file, frame, source, message_index, analysis_index, protocol, finding):
    return (file, frame, source, message_index, analysis_index, protocol, finding.code, finding.severity,
            finding.message, finding.offset, finding.length)


# Where the common results stand: in the result itself, or in its "info" (a server's reply).
_RESULT_KEYS = (("server", ("server", "master", "lobby"), ()), ("client", ("client", "launcher"), ()),
                ("server_name", (), ("name", "host_name")), ("map", (), ("map", "level_name")),
                ("players", (), ("num_players", "players", "current_players")), ("max_players", (), ("max_players",)),
                ("response_time", ("response_time", "time"), ()))  # "time": a Soldat list's, request to h


def common_results(result):
    """(server, client, server name, map, players, max players, response time) of an analysis
    result, each None where the result does not have it."""
    if not isinstance(result, dict):
        return (None,) * len(_RESULT_KEYS)
    info = result.get("info")
    info = info if isinstance(info, dict) else {}
    return tuple(_first(result, own) if own else _first(info, inner) for _, own, inner in _RESULT_KEYS)


def _first(source, names):
    for name in names:
        value = source.get(name)
        if value is not None:
            return value
    return None


class _Buffer:
    """One table's rows (tuples in column order) until a row group is full."""

    def __init__(self, name, layout, emit):
        self.name = name
        self.columns = layout.columns[name]
        self.schema = layout.schemas[name]
        self.emit = emit
        self.limit = ROWS[name]
        self.rows = []
        self.text = 0

    def add(self, row, text=0):
        self.rows.append(row)
        self.text += text
        if len(self.rows) >= self.limit or self.text >= TEXT_BYTES:
            self.flush()

    def flush(self):
        if self.rows:
            batch = pa.RecordBatch.from_arrays(self._arrays(), schema=self.schema)
            self.rows = []
            self.text = 0
            self.emit(self.name, batch)

    def _arrays(self):
        return [column.array(list(values)) for column, values in zip(self.columns, zip(*self.rows))]


class _MessageBuffer(_Buffer):
    """Messages: the head columns from the row, each protocol's field columns from its rows' values."""

    def __init__(self, name, layout, emit):
        super().__init__(name, layout, emit)
        self.head = self.columns[:len(message_head_columns())]
        self.protocol_at = [column.name for column in self.head].index("protocol")
        self.fields = layout.fields
        self.protocols = layout.protocols
        self.repeated = {key: {column.key for column in columns if column.repeated}
                         for key, columns in layout.fields.items()}
        self.keys = {key: {column.key for column in columns} for key, columns in layout.fields.items()}

    def _arrays(self):
        count = len(self.head)
        columns = list(zip(*self.rows))
        arrays = [column.array(list(values)) for column, values in zip(self.head, columns[:count])]
        protocols, found = columns[self.protocol_at], columns[count]
        for key in self.protocols:
            arrays.extend(self._field_arrays(key, [i for i, p in enumerate(protocols) if p == key], found,
                                             len(protocols)))
        arrays.append(self.columns[-1].array(list(columns[count + 1])))
        return arrays

    def _field_arrays(self, key, rows, found, count):
        """Protocol ``key``'s field columns: filled from the values of its ``rows``, null elsewhere.

        Rows are walked once for the keys they hold, not once per column: a protocol has a hundred
        columns and a message fills a few."""
        columns = self.fields[key]
        if not rows:
            return [pa.nulls(count, column.type) for column in columns]
        values = {}
        repeated, keys = self.repeated[key], self.keys[key]
        for at, row in enumerate(rows):
            for name, items in found[row].items():
                if name in keys:
                    column = values.get(name)
                    if column is None:
                        column = values[name] = [None] * len(rows)
                    column[at] = items if name in repeated else items[0]
        if len(rows) == count:
            return [column.array(values[column.key]) if column.key in values else pa.nulls(count, column.type)
                    for column in columns]
        positions = [None] * count
        for at, row in enumerate(rows):
            positions[row] = at
        spread = pa.array(positions, pa.int64())  # a null position gives a null value
        return [column.array(values[column.key]).take(spread) if column.key in values
                else pa.nulls(count, column.type) for column in columns]


# -- in memory: the API --------------------------------------------------------------------------
def arrow_tables(records, file_of):
    """The records as the four tables, name -> pyarrow.Table; ``file_of(number)`` names the file that frame
    ``number`` came from, None the one being read (the API's ``capture.to_arrow``, where several files are one
    capture: an analysis record concluded in a later file names the file of its first frame)."""
    require_arrow("to_arrow()")
    layout = Layout()
    batches = {name: [] for name in TABLES}
    sink = TableSink(lambda name, batch: batches[name].append(batch), layout)
    for record in records:
        sink.file = source_name(file_of(_first_frame(record)))
        if record.kind == "frame":
            sink.frame(record)
        else:
            sink.analysis(record)
    sink.close()
    return {name: pa.Table.from_batches(batches[name], schema=layout.schemas[name]) for name in TABLES}


def _first_frame(record):
    if record.kind == "frame":
        return record.number
    return next((number for number in record.frames if number is not None), None)


def pandas_frames(tables):
    """The tables as pandas DataFrames (needs pandas)."""
    try:
        import pandas  # noqa: F401 - pyarrow's to_pandas needs it
    except ImportError:
        raise MissingExtra("to_pandas() needs pandas: pip install pandas") from None
    return {name: table.to_pandas() for name, table in tables.items()}


# -- on disk: --to-parquet -----------------------------------------------------------------------
class ParquetParts:
    """One capture file's part of each table's dataset: ``DIR/<table>/<part>.parquet``.

    The parts are written under hidden names (that readers skip) and get their own names in
    ``commit``, so a dataset never shows a part cut short by a failed task; ``abort`` removes them."""

    def __init__(self, out_dir, part, layout):
        self.paths = {name: (os.path.join(out_dir, name, f".{part}.parquet.tmp"),
                             os.path.join(out_dir, name, f"{part}.parquet")) for name in TABLES}
        self.writers = {}
        try:
            for name in TABLES:
                self.writers[name] = pq.ParquetWriter(self.paths[name][0], layout.schemas[name],
                                                      compression=COMPRESSION)
        except BaseException:
            self.abort()
            raise

    def write(self, name, batch):
        self.writers[name].write_batch(batch)

    def commit(self):
        for writer in self.writers.values():
            writer.close()
        for temporary, final in self.paths.values():
            os.replace(temporary, final)

    def abort(self):
        for writer in self.writers.values():
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the part is removed anyway
                pass
        for temporary, _ in self.paths.values():
            try:
                os.remove(temporary)
            except OSError:
                pass


def prepare_dir(out_dir):
    """Make DIR and its four table folders; refuse a DIR whose table folders hold parts of an earlier run (they
    would mix with these), before any folder is made."""
    folders = [os.path.join(out_dir, name) for name in TABLES]
    try:
        for folder in folders:
            taken = os.path.isdir(folder) and any(entry.endswith(".parquet") and not entry.startswith(".")
                                                  for entry in os.listdir(folder))
            if taken:
                raise UsageError(f"--to-parquet {out_dir}: {folder} already holds Parquet files; "
                                 f"give a new or empty directory")
        for folder in folders:
            os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--to-parquet {out_dir}: cannot write there: {exc.strerror or exc}") from None


def part_name(index, count):
    """The part of the ``index``-th file: names sort in file order (``part-00003``)."""
    return f"part-{index:0{max(5, len(str(max(count - 1, 0))))}d}"
