"""``-T json`` and ``-T jsonl``: the record format of DESIGN.md's JSON contract.

Records are encoded with orjson (ten times faster than the standard library here) when it is
installed, else with ``json``; both write UTF-8 text that any JSON reader takes.

An integer outside the 64-bit range (below -2**63 or above 2**64-1) is written as its decimal string,
which every JSON reader keeps exact. No record's content stops the output: a record that cannot be
encoded even so is written as a minimal record of the same kind carrying a ``dissect.internal_error``
finding.

JSON may hold any character raw inside a string; the few that a terminal acts on or that change how text
around them displays (DEL and the C1 controls, bidi marks, overrides and isolates, zero-width characters, the line
and paragraph separators, the byte-order mark) are written as \\u escapes instead, so that a hostile name in
a capture cannot reach a terminal raw. A JSON reader gets the same string. (The compiled writer of frame
records escapes them in C, jsonout.pxd; what orjson writes is escaped here.)
"""

import re

from ..capture.tables import DISSECT_FINDINGS
from ..core.model import display_of
from .output import utf8_output


def _orjson():
    """orjson, or None where it is missing. Imported by the first JSON view, not with this module: its import
    brings datetime, uuid, dataclasses and inspect, tens of milliseconds that the other views would pay."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a declared dependency
        return None
    return orjson

INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # what orjson writes as a number

# The characters written escaped (see the module's docstring). In UTF-8 each is DEL or begins with one of the lead
# bytes C2, D8, E2 and EF, looked for first: most records hold none.
_ESCAPED = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def terminal_safe_utf8(data):
    """JSON text as UTF-8 with the characters of the module's docstring escaped."""
    # One byte each, with find: a memchr (longer needles are slow), and no TypeError raised and cleared inside, as
    # ``in`` does (bytes.__contains__ first tries its operand as an int).
    if data.find(b"\x7f") < 0 and (data.isascii() or (data.find(b"\xc2") < 0 and data.find(b"\xe2") < 0
                                                       and data.find(b"\xd8") < 0 and data.find(b"\xef") < 0)):
        return data
    return terminal_safe_text(data.decode("utf-8")).encode("utf-8")


def terminal_safe_text(text):
    """``terminal_safe_utf8`` for JSON text as a str."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _ESCAPED.sub(lambda found: _u_escape(found.group()), text)


def _u_escape(char):
    return f"\\u{ord(char):04x}"


# What identifies a record, kept in the minimal record that stands in for one that cannot be encoded.
_IDENTITY = ("kind", "frame", "time", "protocol", "name")


def _value(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return value


def field_dict(field):
    value = field.value
    if type(value) is not int and type(value) is not str:
        value = _value(value)
    # A copy of the keys' table, then the values: compiled, a third of what building the dict key by key costs
    # (a field is the commonest record part).
    data = _FIELD_DICT.copy()
    data["key"] = field.key
    data["name"] = field.name
    data["offset"] = field.offset
    data["length"] = field.length
    data["value"] = value
    data["display"] = display_of(field)
    data["children"] = [field_dict(child) for child in field.children] if field.children else []
    return data


_FIELD_DICT = dict.fromkeys(("key", "name", "offset", "length", "value", "display", "children"))


def message_dict(msg):
    return {"protocol": msg.protocol, "message": msg.name, "frames": list(msg.frames), "offset": msg.offset,
            "length": msg.length, "fields": [field_dict(f) for f in msg.fields],
            "findings": [f.as_dict() for f in msg.findings]}


def frame_dict(record):
    return {"kind": "frame", "frame": record.number, "time": record.ts, "caplen": record.caplen,
            "length": record.wirelen, "src": record.src, "sport": record.sport, "dst": record.dst,
            "dport": record.dport, "transport": record.transport, "protocol": record.protocol,
            "info": record.info, "messages": [message_dict(m) for m in record.messages],
            "findings": [f.as_dict() for f in record.findings]}


# Compiled, where the output takes UTF-8 (the command's, -j's workers), a frame record is written as JSON by a
# writer in C (jsonout.pxd): building a dict for each field, message and finding and orjson's walk over them
# took half of a JSON run on query traffic. The writer writes the values it can write as orjson does (a str, an
# int of 64 bits, a float from 1e-4 to 1e16, None, a bool, bytes as hex); a record with another value (a list,
# a str with a lone surrogate, a float below 1e-4) is built as dicts for orjson.
_COMPILED = not __file__.endswith(".py")


def _frame_json(record, newline):
    """``frame_dict(record)`` as orjson writes it (with a newline after it where ``newline``); None where a value
    is one the writer leaves to orjson."""
    packet = record.packet
    _json_start()
    if not (_json_member(b'{"kind":"frame","frame":', 24, record.number) and _json_member(b',"time":', 8, record.ts)
            and _json_member(b',"caplen":', 10, record.caplen) and _json_member(b',"length":', 10, record.wirelen)
            and _json_member(b',"src":', 7, packet.src) and _json_member(b',"sport":', 9, packet.sport)
            and _json_member(b',"dst":', 7, packet.dst) and _json_member(b',"dport":', 9, packet.dport)
            and _json_member(b',"transport":', 13, packet.transport)
            and _json_member(b',"protocol":', 12, record.protocol) and _json_member(b',"info":', 8, record.info)
            and _list_member(b',"messages":[', 13, record.messages, MESSAGES)
            and _list_member(b',"findings":[', 13, record.findings, FINDINGS)):
        return None
    _json_raw(b"}\n", 2 if newline else 1)
    return _json_take()


# The writers below return whether they wrote their part; each ends with the _json_raw that closes it (1: written).
FIELDS, MESSAGES, FINDINGS = 0, 1, 2  # what _list_member writes


def _list_member(name, size, items, kind):
    """A member whose value is a list of fields, messages or findings (``kind``), as orjson writes their dicts;
    ``name`` its text up to the list's opening bracket."""
    _json_raw(name, size)
    for index in range(len(items)):
        if index:
            _json_raw(b",", 1)
        item = items[index]
        if not (_write_field(item) if kind == FIELDS else _write_message(item) if kind == MESSAGES else
                _write_finding(item)):
            return False
    return _json_raw(b"]", 1)


def _write_message(msg):
    if not (_json_member(b'{"protocol":', 12, msg.protocol) and _json_member(b',"message":', 11, msg.name)
            and _json_raw(b',"frames":[', 11)):
        return False
    frames = msg.frames
    for index in range(len(frames)):
        if not _json_member(b",", 1 if index else 0, frames[index]):
            return False
    return (_json_member(b'],"offset":', 11, msg.offset) and _json_member(b',"length":', 10, msg.length)
            and _list_member(b',"fields":[', 11, msg.fields, FIELDS)
            and _list_member(b',"findings":[', 13, msg.findings, FINDINGS) and _json_raw(b"}", 1))


def _write_finding(finding):
    return (_json_member(b'{"code":', 8, finding.code) and _json_member(b',"severity":', 12, finding.severity)
            and _json_member(b',"message":', 11, finding.message) and _json_member(b',"offset":', 10, finding.offset)
            and _json_member(b',"length":', 10, finding.length) and _json_raw(b"}", 1))


def _write_field(field):
    return (_json_key_name(field.key, field.name) and _json_member(b',"offset":', 10, field.offset)
            and _json_member(b',"length":', 10, field.length) and _json_member(b',"value":', 9, field.value)
            and _write_display(field)
            and (_list_member(b',"children":[', 13, field.children, FIELDS) and _json_raw(b"}", 1) if field.children
                 else _json_raw(b',"children":[]}', 15)))  # most fields: no call for an empty list


def _write_display(field):
    """The display member. A field without a formatter and without a display of its own (most: numbers, names) has
    default_display's text written from its value in C, the text itself not made."""
    if field._display is None and not field.fmt and _json_default_display(b',"display":', 11, field.value):
        return True
    return _json_member(b',"display":', 11, display_of(field))


def analysis_dict(rec):
    return {"kind": "analysis", "protocol": rec.protocol, "name": rec.name, "frames": list(rec.frames),
            "result": rec.result, "findings": [f.as_dict() for f in rec.findings]}


class JsonRenderer:
    """One record per line (jsonl), or the same records as one array (json)."""

    __slots__ = ("out", "lines", "count", "dumps_bytes", "dumps", "write_bytes", "newline", "compiled", "batched")

    def __init__(self, out, lines=True):
        self.out = out
        self.lines = lines
        self.count = 0
        orjson = _orjson()
        if orjson is not None:
            self.dumps_bytes = orjson.dumps
            self.dumps = lambda obj: orjson.dumps(obj, default=_fallback).decode()
        else:
            self.dumps_bytes = None
            import json  # where orjson is missing: not imported with this module (start-up)
            encode = json.JSONEncoder(ensure_ascii=False, default=_fallback).encode
            self.dumps = lambda obj: encode(_plain(obj))  # json writes any integer as a number
        # An output that takes bytes (the command's) gets orjson's UTF-8 as it is: a record of a few
        # kilobytes is then not decoded to text, joined and encoded again on its way out.
        self.write_bytes = getattr(out, "write_bytes", None) if orjson is not None else None
        self.newline = orjson.OPT_APPEND_NEWLINE if orjson is not None and lines else 0
        self.compiled = _COMPILED and self.write_bytes is not None
        self.batched = utf8_output(out) if self.write_bytes is not None else None  # its add_utf8 called in C

    def _emit(self, obj):
        if self.write_bytes is None:
            self.encoded(terminal_safe_text(self.encode(obj)))
            return
        try:
            data = self.dumps_bytes(obj, default=_fallback, option=self.newline)
        except Exception:  # what encode does when orjson cannot: the same text
            data = (self.encode(obj) + ("\n" if self.lines else "")).encode()
        self._write(terminal_safe_utf8(data))

    def _write(self, data):
        if not self.lines:
            self.write_bytes(b"[\n" if self.count == 0 else b",\n")
        if self.batched is not None:
            self.batched.add_utf8(data)
        else:
            self.write_bytes(data)
        self.count += 1

    def _emit_built(self, build, kind, source):
        try:
            obj = build(source)
        except Exception as exc:  # one record's fault must not cost the records after it
            obj = _minimal({"kind": kind, "frame": getattr(source, "number", None),
                            "time": getattr(source, "ts", None), "protocol": getattr(source, "protocol", None),
                            "name": getattr(source, "name", None)}, exc)
        self._emit(obj)

    def encode(self, obj):
        """One record as a line of JSON; never raises."""
        try:
            return self.dumps(obj)
        except Exception:  # orjson: an integer beyond 64 bits, a key that is not a string, a lone surrogate
            pass
        try:
            return self.dumps(_plain(obj))
        except Exception as exc:
            return self.dumps(_minimal(obj, exc))

    def encoded(self, text):
        """Write one record already encoded as a line of JSON (``-j`` workers send these)."""
        if self.lines:
            self.out.write(text + "\n")
        else:
            self.out.write(("[\n" if self.count == 0 else ",\n") + text)
        self.count += 1

    def encoded_utf8(self, line):
        """``encoded`` for a record's UTF-8 without its newline, written as it is where the output takes bytes."""
        if self.write_bytes is None:
            self.encoded(line.decode())
        else:
            self._write(line + b"\n" if self.lines else line)

    def frame(self, record):
        if self.compiled:
            try:
                data = _frame_json(record, self.lines)
            except Exception:  # built again as dicts: what cannot be written, and how, is decided there
                data = None
            if data is not None:
                self._write(data)
                return
        self._emit_built(frame_dict, "frame", record)

    def analysis(self, rec):
        self._emit_built(analysis_dict, "analysis", rec)

    def extra(self, obj):
        self._emit(obj)

    def close(self):
        if not self.lines:
            self.out.write("[]\n" if self.count == 0 else "\n]\n")


def _plain(value):
    """``value`` with only what every JSON encoder writes alike: integers beyond 64 bits as decimal
    strings, keys as strings, text without lone surrogates, bytes as hex, anything else as its text."""
    cls = value.__class__
    if cls is str:
        return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")
    if cls is bool or cls is float or value is None:
        return value
    if isinstance(value, int):
        return int(value) if INT_MIN <= value <= INT_MAX else str(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {_plain_key(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [_plain(item) for item in sorted(value, key=repr)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return _plain(str(value))


def _plain_key(key):
    return _plain(key if key.__class__ is str else str(key))


def _minimal(obj, exc):
    """What stands in for a record that cannot be encoded: its identity, and the reason as a finding."""
    record = {}
    if isinstance(obj, dict):
        for key in _IDENTITY:
            value = obj.get(key)
            if (value.__class__ is str and value.isascii()) or value.__class__ is float or \
                    (value.__class__ is int and INT_MIN <= value <= INT_MAX):
                record[key] = value
    finding = DISSECT_FINDINGS.internal_error.at(
        f"this record could not be written as JSON: {type(exc).__name__}: {exc}")
    record["findings"] = [_plain(finding.as_dict())]
    return record


def _fallback(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, set):
        return sorted(value)
    return str(value)
