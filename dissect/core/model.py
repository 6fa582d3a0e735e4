"""The result model every dissector fills and every renderer reads.

A Message holds a tree of Fields (each with an offset and length relative to the
first byte of the message) and a list of Findings (Wireshark's expert items).
"""

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from . import nocython as cython

from .fmt import ValueTexts, decimal_text

SEVERITIES = ("chat", "note", "warning", "error")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


@cython.freelist(1024)
@cython.cclass
class Field:
    """One node of a field tree. ``display`` is computed on demand from ``fmt``."""

    __slots__ = ("key", "name", "offset", "length", "value", "fmt", "_display", "children", "generated")

    def __init__(self, key, name, offset, length, value, fmt=None, display=None, generated=False):
        _fill(self, key, name, offset, length, value, fmt, display, generated)

    @property
    def display(self):
        return display_of(self)

    @display.setter
    def display(self, text):
        self._display = text

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def __repr__(self):
        return f"Field({self.key!r}, {self.offset}:{self.length}, {self.value!r})"


def new_field(key, name, offset, length, value, fmt, display=None, generated=False):
    """A Field, made without the argument parsing of a constructor call (one per field a tree shows)."""
    field = Field.__new__(Field)
    _fill(field, key, name, offset, length, value, fmt, display, generated)
    return field


def _fill(field, key, name, offset, length, value, fmt, display, generated):
    field.key = key
    field.name = name
    field.offset = offset
    field.length = length
    field.value = value
    field.fmt = fmt
    field._display = display
    field.children = ()  # a list once a child is added: most fields are leaves
    field.generated = generated


def display_of(field):
    """``field.display``: the text a person reads, computed once from the value and the field's ``fmt``."""
    if field._display is None:
        fmt = field.fmt
        try:
            if type(fmt) is ValueTexts:
                texts = fmt
                field._display = texts.text(field.value)  # a C call when compiled, the texts read in C
            elif fmt is str and type(field.value) is str:
                field._display = field.value  # what str() of a str gives
            else:
                field._display = fmt(field.value) if fmt else default_display(field.value)
        except (TypeError, ValueError, KeyError):  # a value cut short may not suit its formatter
            field._display = default_display(field.value)
    return field._display


def default_display(value):
    if type(value) is int:
        return decimal_text(value)
    if type(value) is str:
        return f'"{value}"'  # one text made, where '"' + value + '"' makes two
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (bytes, bytearray)):
        return value.hex(" ") if value else "(empty)"
    if value is None:
        return ""
    return str(value)


@cython.freelist(64)
@cython.cclass
class Finding:
    __slots__ = ("code", "severity", "message", "offset", "length")

    def __init__(self, code, severity, message, offset=None, length=None):
        assert severity in SEVERITY_RANK, severity
        self.code = code
        self.severity = severity
        self.message = message
        self.offset = offset
        self.length = length

    def as_dict(self):
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "offset": self.offset, "length": self.length}

    def __repr__(self):
        return f"Finding({self.code!r}, {self.severity!r}, @{self.offset}:{self.length})"


def finding_text(rule, detail):
    """A finding's text: what was seen (``detail``), then the rule it breaks in parentheses."""
    if not detail:
        return rule
    return f"{detail} ({rule})" if rule else detail


def prepared_finding(spec, detail):
    """A finding whose text never changes, made ready once: (code, severity, message) of FindingTable entry ``spec``
    as ``Message.report`` writes them, for ``add_prepared``."""
    return spec.code, spec.severity, finding_text(spec.rule, detail)


def add_prepared(msg, prepared, offset, length):
    """``msg.report`` of a ``prepared_finding``, without the text made again."""
    code, severity, message = prepared
    msg.findings.append(_declared_finding(code, severity, message, offset, length))


def _declared_finding(code, severity, message, offset, length):
    """A Finding of a FindingTable entry, whose severity the table checked: made without a constructor call's
    argument parsing (in C when compiled)."""
    finding = Finding.__new__(Finding)
    finding.code, finding.severity, finding.message = code, severity, message
    finding.offset, finding.length = offset, length
    return finding


@cython.freelist(64)
@cython.cclass
class Message:
    """One decoded protocol message.

    ``offset`` is where the message starts in its frame (None when reassembled from
    several frames); ``frames`` lists the frame numbers it came from. ``values`` holds
    the decoded values that analysis needs, filled whether or not a tree is built; ``fields``
    holds the field tree, built only when a view asks for it (the API does by default).

    ``msg["netquake.control.host_name"]`` is the first field with that key (KeyError when there is
    none); ``msg.get(key)`` gives None instead.
    """

    __slots__ = ("protocol", "name", "offset", "length", "fields", "findings", "info", "values", "frames",
                 "payload")

    def __init__(self, protocol, name=None, payload=b"", offset=0, frames=None):
        _start(self, protocol, name, payload, offset)
        if frames is not None:
            self.frames = frames if type(frames) is list else list(frames)  # a list (model.pxd types it)

    def add_finding(self, code, severity, message, offset=None, length=None):
        self.findings.append(Finding(code, severity, message, offset, length))

    def report(self, spec, detail, offset=None, length=None):
        """A finding declared in a FindingTable: its code and severity, ``detail`` then the rule."""
        self.findings.append(_declared_finding(spec.code, spec.severity, finding_text(spec.rule, detail), offset,
                                               length))

    def walk(self):
        for field in self.fields:
            yield from field.walk()

    def get(self, key, default=None):
        """The first field with this key, or ``default``."""
        for field in self.walk():
            if field.key == key:
                return field
        return default

    def __getitem__(self, key):
        field = self.get(key)
        if field is None:
            hint = "" if self.fields else " (the message has no field tree: it was decoded with tree=False)"
            raise KeyError(f"{self.protocol} {self.name} has no field {key!r}{hint}")
        return field

    def __contains__(self, key):
        return self.get(key) is not None

    def fields_with(self, key):
        return [f for f in self.walk() if f.key == key]

    def __repr__(self):
        return f"Message({self.protocol}/{self.name}, {len(self.findings)} findings)"


def new_message(protocol, payload, offset):
    """A Message, made without the argument parsing of a constructor call (one a message)."""
    msg = Message.__new__(Message)
    _start(msg, protocol, None, payload, offset)
    return msg


def _start(msg, protocol, name, payload, offset):
    msg.protocol = protocol
    msg.name = name
    msg.payload = payload
    msg.offset = offset
    msg.length = len(payload)
    msg.fields = []
    msg.findings = []
    msg.info = ""
    msg.values = {}
    msg.frames = []


@cython.freelist(64)
@cython.cclass
class AnalysisRecord:
    """A conclusion reached across packets (a transaction, an assembled response, a walk).

    ``result`` may be given as a function: it is then built only when a view reads it (JSON does,
    the summary line does not).
    """

    __slots__ = ("protocol", "name", "frames", "_result", "findings", "summary")

    def __init__(self, protocol, name, frames, result, findings=None, summary=""):
        self.protocol = protocol
        self.name = name
        self.frames = list(frames)
        self._result = result
        self.findings = findings or []
        self.summary = summary

    @property
    def result(self):
        if callable(self._result):
            self._result = self._result()
        return self._result

    # What the API's loop reads of every record, frame or analysis: an analysis record has no frame
    # number of its own (``frames`` lists those it spans), no messages, and its summary as info.
    kind = "analysis"
    number = None
    messages = ()

    @property
    def info(self):
        return self.summary

    def to_dict(self):
        """The object ``-T jsonl`` writes for this record."""
        return {"kind": "analysis", "protocol": self.protocol, "name": self.name, "frames": list(self.frames),
                "result": self.result, "findings": [f.as_dict() for f in self.findings]}


def worst_severity(findings):
    rank = -1
    for finding in findings:
        rank = max(rank, SEVERITY_RANK[finding.severity])
    return SEVERITIES[rank] if rank >= 0 else None
