"""Field and finding tables: every key a protocol can emit and every finding it can raise, declared once.

As Wireshark's ``hf[]`` and ``ei[]`` arrays: a protocol module lists its fields (key, name, type,
description) and its findings (code, severity, the rule it checks), and everything else reads these
tables: the decoders (``cur.u8(F.control.command)``), display filters (unknown keys are errors),
``dissect -G fields`` / ``-G findings``, the README's finding table and the API's ``protocols()``.

A field key is spelled once, in its table; decoders reach an entry by the key's own dotted path
under the protocol (``F.control.colors.shirt`` is ``netquake.control.colors.shirt``).
"""

from .model import SEVERITY_RANK, Finding, finding_text

# Value types, as Wireshark's FT_ names in small. Numbers compare with numbers, text with text.
NUMBER_TYPES = frozenset({"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "int",
                          "float", "time"})
TEXT_TYPES = frozenset({"string", "address"})
TYPES = NUMBER_TYPES | TEXT_TYPES | frozenset({"bool", "bytes", "list", "none", "protocol"})


class FieldSpec:
    """One declared field: its filter ``key``, the ``name`` a tree shows, value ``type``, ``description``.

    ``fmt`` turns a value into what a person reads (None: the default display). Attributes other than
    these reach the entries declared under this key: ``spec.shirt`` for ``<key>.shirt``. A child whose
    last part is one of the attribute names (``<key>.name``) is reached as ``spec.children["name"]``."""

    # __dict__: the entries below this one become plain attributes (see FieldTable._publish), so the
    # decoders' F.a.b reads cost dictionary lookups, not __getattr__ calls.
    __slots__ = ("key", "name", "type", "description", "fmt", "children", "__dict__")

    def __init__(self, key, name, type, description, fmt=None):
        if type not in TYPES:
            raise ValueError(f"field {key}: unknown type {type!r} (one of {', '.join(sorted(TYPES))})")
        self.key = key
        self.name = name
        self.type = type
        self.description = description
        self.fmt = fmt
        self.children = {}

    def __getattr__(self, name):
        try:
            return self.children[name]
        except KeyError:
            raise AttributeError(f"no field {self.key}.{name} is declared") from None

    def as_dict(self):
        return {"key": self.key, "name": self.name, "type": self.type, "description": self.description}

    def __repr__(self):
        return f"FieldSpec({self.key!r}, {self.type})"


class FindingSpec:
    """One declared finding: ``code``, ``severity`` and the spec ``rule`` it checks (quoted in messages)."""

    __slots__ = ("code", "severity", "rule")

    def __init__(self, code, severity, rule):
        if severity not in SEVERITY_RANK:
            raise ValueError(f"finding {code}: unknown severity {severity!r}")
        self.code = code
        self.severity = severity
        self.rule = rule

    def message(self, detail):
        """The finding's text: what was seen, then the rule in parentheses."""
        return finding_text(self.rule, detail)

    def at(self, detail, offset=None, length=None, severity=None):
        """A Finding of this kind (for findings that belong to no message: frames, streams, analysis).
        ``severity`` lowers or raises the declared one where a milder case of the same rule needs it."""
        return Finding(self.code, severity or self.severity, self.message(detail), offset, length)

    def as_dict(self):
        return {"code": self.code, "severity": self.severity, "rule": self.rule}

    def __repr__(self):
        return f"FindingSpec({self.code!r}, {self.severity})"


class _Namespace:
    """A dotted path that is not itself a field (``F.control`` of ``netquake.control.command``)."""

    __slots__ = ("path", "children", "__dict__")

    def __init__(self, path):
        self.path = path
        self.children = {}

    def __getattr__(self, name):
        try:
            return self.children[name]
        except KeyError:
            raise AttributeError(f"no field {self.path}.{name} is declared") from None


class _Entries:
    """What both tables offer: iteration over their entries, their count, membership and lookup by key."""

    entries = {}  # key -> entry, given by each table

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self):
        return len(self.entries)

    def __contains__(self, key):
        return key in self.entries

    def get(self, key):
        return self.entries.get(key)


class FieldTable(_Entries):
    """A protocol's fields. ``FieldTable("netquake", [(suffix, name, type, description[, fmt]), ...])``.

    The protocol key itself is a field too (true when the protocol is present), as in Wireshark. A
    protocol's table (``messages=True``) also holds the keys every protocol has: ``<key>.message`` (the
    message's name) and ``<key>.analysis`` (the name of an analysis record of the protocol)."""

    def __init__(self, protocol, entries, title=None, messages=False, root_type="protocol",
                 root_description=None):
        self.protocol = protocol
        self.root = _Namespace(protocol)
        self.by_key = {}
        self._declare(FieldSpec(protocol, title or protocol, root_type,
                                root_description or f"the {title or protocol} protocol"))
        if messages:
            self._declare(FieldSpec(f"{protocol}.message", "Message", "string", "the message's name"))
            self._declare(FieldSpec(f"{protocol}.analysis", "Analysis", "string",
                                    "the name of an analysis record (server_info, rule_walk ...)"))
        for entry in entries:
            suffix, rest = entry[0], entry[1:]
            self._declare(FieldSpec(f"{protocol}.{suffix}" if suffix else protocol, *rest))
        self._publish()

    def _publish(self):
        """Make every entry reachable as a plain attribute of its parent (after all are declared)."""
        stack = [(self, self.root.children)]
        while stack:
            owner, children = stack.pop()
            for name, child in children.items():
                if name not in type(owner).__dict__ and name not in owner.__dict__:
                    owner.__dict__[name] = child
                stack.append((child, child.children))

    def _declare(self, spec):
        if spec.key in self.by_key:
            raise ValueError(f"field {spec.key} is declared twice")
        self.by_key[spec.key] = spec
        parts = spec.key.split(".")[1:]
        node = self.root
        for depth, part in enumerate(parts):
            child = node.children.get(part)
            if depth == len(parts) - 1:
                if isinstance(child, _Namespace):  # a field over a path already used by deeper keys
                    spec.children.update(child.children)
                node.children[part] = spec
            else:
                if child is None:
                    child = node.children[part] = _Namespace(".".join(spec.key.split(".")[:depth + 2]))
                node = child

    def __getattr__(self, name):
        return getattr(self.root, name)

    @property
    def entries(self):
        return self.by_key


class FindingTable(_Entries):
    """A protocol's findings. ``FindingTable("netquake", [(suffix, severity, rule), ...])``;
    ``T.length_mismatch`` is the entry for ``netquake.length_mismatch``. A protocol's table
    (``messages=True``) also holds ``<key>.dissector_error``, which every dissector may raise."""

    def __init__(self, protocol, entries, messages=False):
        self.protocol = protocol
        self.by_code = {}
        if messages:
            entries = [("dissector_error", "error", "a bug in the protocol's own code (decoder, stream parser or "
                                                    "analyzer), caught: what it made before is kept and the capture "
                                                    "goes on"), *entries]
        for suffix, severity, rule in entries:
            spec = FindingSpec(f"{protocol}.{suffix}", severity, rule)
            if spec.code in self.by_code:
                raise ValueError(f"finding {spec.code} is declared twice")
            self.by_code[spec.code] = spec
            if not hasattr(type(self), suffix):
                self.__dict__[suffix] = spec  # T.suffix is a plain attribute read, as FieldTable's entries are

    def __getattr__(self, name):
        try:
            return self.by_code[f"{self.protocol}.{name}"]
        except KeyError:
            raise AttributeError(f"no finding {self.protocol}.{name} is declared") from None

    @property
    def entries(self):
        return self.by_code
