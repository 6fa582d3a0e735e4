"""``-T json`` and ``-T jsonl``: the record format of DESIGN.md's JSON contract.

Records are encoded with orjson (ten times faster than the standard library here) when it is
installed, else with ``json``; both write UTF-8 text that any JSON reader takes.
"""

import json

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None


def _value(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return value


def field_dict(field):
    value = field.value
    if value.__class__ is not int and value.__class__ is not str:
        value = _value(value)
    return {"key": field.key, "name": field.name, "offset": field.offset, "length": field.length,
            "value": value, "display": field.display,
            "children": [field_dict(child) for child in field.children] if field.children else []}


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


def analysis_dict(rec):
    return {"kind": "analysis", "protocol": rec.protocol, "name": rec.name, "frames": list(rec.frames),
            "result": rec.result, "findings": [f.as_dict() for f in rec.findings]}


class JsonRenderer:
    """One record per line (jsonl), or the same records as one array (json)."""

    def __init__(self, out, lines=True):
        self.out = out
        self.lines = lines
        self.count = 0
        if orjson is not None:
            self.dumps = lambda obj: orjson.dumps(obj, default=_fallback).decode()
        else:
            self.dumps = json.JSONEncoder(ensure_ascii=False, default=_fallback).encode

    def _emit(self, obj):
        self.encoded(self.dumps(obj))

    def encoded(self, text):
        """Write one record already encoded as a line of JSON (``-j`` workers send these)."""
        if self.lines:
            self.out.write(text + "\n")
        else:
            self.out.write(("[\n" if self.count == 0 else ",\n") + text)
        self.count += 1

    def frame(self, record):
        self._emit(frame_dict(record))

    def analysis(self, rec):
        self._emit(analysis_dict(rec))

    def extra(self, obj):
        self._emit(obj)

    def close(self):
        if not self.lines:
            self.out.write("[]\n" if self.count == 0 else "\n]\n")


def _fallback(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, set):
        return sorted(value)
    return str(value)
