"""Display filters (``-Y``) on field keys, parsed by hand and never evaluated as Python.

Grammar (Wireshark's, in small)::

    expr    := or
    or      := and (("or" | "||") and)*
    and     := unary (("and" | "&&") unary)*
    unary   := ("not" | "!") unary | "(" expr ")" | test
    test    := KEY [OP LITERAL]
    OP      := == != > < >= <= eq ne gt lt ge le contains matches

A bare KEY is true when the field is present. A comparison is true when any
value of the key satisfies it (``!=``: when none equals the literal).

Neither the parser nor the evaluator recurses, so no filter can exhaust the stack: the parser
keeps its operators on a list (shunting-yard) and the filter compiles to a flat program of
tests, each with the step to go to when it holds and when it does not (short-circuit jumps
with ``not`` folded in). Parentheses may nest ``MAX_NESTING`` deep; chains of ``||`` and
``&&`` are unlimited.
"""

import difflib
import operator
import re

from .core.tables import NUMBER_TYPES, TEXT_TYPES
from .registry import UsageError

MAX_NESTING = 256

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<lparen>\() | (?P<rparen>\)) |
      (?P<op>==|!=|>=|<=|>|<|&&|\|\||!) |
      (?P<string>"(?:[^"\\]|\\.)*") |
      (?P<word>[A-Za-z0-9_.:\-/+]+)
    )""", re.VERBOSE)

_WORD_OPS = {"eq": "==", "ne": "!=", "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "contains": "contains",
             "matches": "matches", "and": "&&", "or": "||", "not": "!"}
_COMPARISONS = {"==", "!=", ">", "<", ">=", "<=", "contains", "matches"}
_ORDERING = {">", "<", ">=", "<="}
_OPERATORS = {"==": operator.eq, ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")
_END = (None, None, None, None)

# Binding strength of the operators on the parser's stack; "(" never reduces.
_PRECEDENCE = {"!": 3, "&&": 2, "||": 1, "(": -1}

# Parse tree nodes: (_TEST, program index, test), (_NOT, entry, child), (_AND|_OR, entry, [children]).
# ``entry`` is the program index of the node's first test: where control goes to evaluate it.
_TEST, _NOT, _AND, _OR = range(4)

# Program steps jump to these when the filter's result is known.
_ACCEPT, _REJECT = -1, -2


class _Present:
    """The value frame_values gives a field present without a value of its own (a subtree, an
    unreadable number): a bare key test sees it, no comparison matches it."""

    __slots__ = ()

    def __repr__(self):
        return "<present>"


_PRESENT = _Present()

_SEARCHABLE = TEXT_TYPES | {"bytes"}
_DESCRIBED = {"address": "an address field", "none": "a field without a value", "protocol": "a protocol"}

_NUMBERS = (int, float, bool)
_BYTES = (bytes, bytearray)


def _shown(text):
    """The filter as an error message quotes it: long ones cut, so that the message stays readable."""
    return repr(text) if len(text) <= 80 else repr(text[:72]) + "..."


def _tokenize(text):
    """Tokens as (kind, value, as written, position)."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            at = len(text) - len(text[pos:].lstrip())
            raise UsageError(f"bad filter {_shown(text)}: unexpected character at position {at + 1}")
        pos = match.end()
        kind = match.lastgroup
        raw = value = match.group(kind)
        if kind == "word" and value.lower() in _WORD_OPS:
            kind, value = "op", _WORD_OPS[value.lower()]
        elif kind == "string":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append((kind, value, raw, match.start(kind) + 1))
    return tokens


class _Parser:
    """Shunting-yard over the tokens: operands and operators wait on lists, never on the call stack."""

    def __init__(self, text, fields):
        self.text = text
        self.fields = fields
        self.tokens = _tokenize(text)
        self.pos = 0
        self.count = 0  # tests made so far: source order is program order
        self.depth = 0  # parentheses open

    def fail(self, why):
        raise UsageError(f"bad filter {_shown(self.text)}: {why}")

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else _END

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def parse(self):
        if not self.tokens:
            self.fail("empty expression")
        operands, operators = [], []
        while True:
            self.operand(operands, operators)
            kind, value, _, pos = self.take()
            while kind == "rparen":
                _reduce(operands, operators, 0)
                if not operators:
                    self.fail(f"unexpected ')' at position {pos}")
                operators.pop()
                self.depth -= 1
                kind, value, _, pos = self.take()
            if kind is None:
                break
            if kind != "op" or value not in ("&&", "||"):
                self.fail(f"unexpected {value!r} at position {pos}")
            _reduce(operands, operators, _PRECEDENCE[value])
            operators.append(value)
        _reduce(operands, operators, 0)
        if operators:
            self.fail("missing ')'")
        return operands[0]

    def operand(self, operands, operators):
        """Read prefix ``!`` and ``(`` up to a test; push the test."""
        while True:
            kind, value, _, pos = self.take()
            if kind == "op" and value == "!":
                operators.append("!")
            elif kind == "lparen":
                operators.append("(")
                self.depth += 1
                if self.depth > MAX_NESTING:
                    raise UsageError(f"bad filter: nested deeper than {MAX_NESTING}")
            elif kind == "word":
                operands.append(self.test(value, pos))
                return
            else:
                self.fail(f"expected a field key, found {value!r} at position {pos}" if kind else
                          "expression ends too early")

    def test(self, key, pos):
        if not _KEY.match(key):
            self.fail(f"expected a field key, found {key!r} at position {pos}")
        field_type = self.field_type(key)
        kind, op = self.peek()[:2]
        if kind == "op" and op in _COMPARISONS:
            self.take()
            lkind, value, raw = self.take()[:3]
            if lkind not in ("word", "string"):
                self.fail(f"expected a value after {op!r}")
            test = self.comparison(key, field_type, op, lkind, value, raw)
        else:
            test = _exists(key)
        self.count += 1
        return (_TEST, self.count - 1, test)

    def field_type(self, key):
        """The declared type of ``key`` (None without a field list); an unknown key is an error."""
        if self.fields is None:
            return None
        if key not in self.fields:
            best = difflib.get_close_matches(key, list(self.fields), n=1)
            hint = f" (did you mean {best[0]}?)" if best else ""
            raise UsageError(f"bad filter: {key!r} is not a field{hint}")
        return self.fields[key]

    def comparison(self, key, field_type, op, lkind, value, raw):
        if op in ("contains", "matches"):
            if field_type is not None and field_type not in _SEARCHABLE:
                raise UsageError(f"bad filter: {key} is {_described(field_type)}: {op!r} applies to string, "
                                 f"address and bytes fields only")
            return _contains(key, value) if op == "contains" else _matches(key, self.regex(value))
        literal = _literal(value) if field_type is None else _typed_literal(key, field_type, op, lkind, value, raw)
        if op == "!=":
            return _none_equal(key, literal)
        return _any(key, _OPERATORS[op], literal)

    def regex(self, pattern):
        try:
            return re.compile(pattern)
        except Exception as exc:  # re.error, OverflowError, RecursionError ...: all say the pattern is bad
            self.fail(f"bad regular expression: {exc}")


def _reduce(operands, operators, precedence):
    """Apply the waiting operators that bind at least as strongly as ``precedence`` (0: all, to a "(")."""
    while operators and _PRECEDENCE[operators[-1]] >= precedence:
        op = operators.pop()
        if op == "!":
            operands[-1] = _negate(operands[-1])
        else:
            right = operands.pop()
            operands[-1] = _join(_AND if op == "&&" else _OR, operands[-1], right)


def _negate(node):
    return node[2] if node[0] == _NOT else (_NOT, node[1], node)


def _join(kind, left, right):
    """``left op right``, flattened into one node per chain so that a long chain stays shallow."""
    if left[0] == kind:
        left[2].append(right)
        return left
    return (kind, left[1], [left, right])


def _program(root, count):
    """The tree as a list of (test, step if true, step if false), started at step 0 (the first test)."""
    steps = [None] * count
    work = [(root, _ACCEPT, _REJECT)]
    while work:
        node, if_true, if_false = work.pop()
        kind = node[0]
        if kind == _TEST:
            steps[node[1]] = (node[2], if_true, if_false)
        elif kind == _NOT:
            work.append((node[2], if_false, if_true))
        else:
            children = node[2]
            last = len(children) - 1
            for i, child in enumerate(children):
                follow = children[i + 1][1] if i < last else None
                if kind == _AND:
                    work.append((child, if_true if follow is None else follow, if_false))
                else:
                    work.append((child, if_true, if_false if follow is None else follow))
    return tuple(steps)


def _described(field_type):
    if field_type in NUMBER_TYPES:
        return f"a number field ({field_type})"
    return _DESCRIBED.get(field_type, f"a {field_type} field")


def _typed_literal(key, field_type, op, lkind, value, raw):
    """The literal to compare a field of this type with; a literal that cannot match its type is an error."""
    if field_type in ("list", "none", "protocol"):
        raise UsageError(f"bad filter: {key} is {_described(field_type)}: test only whether it is present "
                         f"(write just {key})")
    if field_type == "bytes":
        return value.replace(":", "").lower()  # compared with the value in hex, as 01:ab or 01ab
    literal = _literal(value)
    if field_type in NUMBER_TYPES:
        if isinstance(literal, bool) or not isinstance(literal, (int, float)):
            raise UsageError(f"bad filter: {key} is {_described(field_type)}: compare it with a number, "
                             f"not {raw}")
        return literal
    if field_type == "bool":
        if isinstance(literal, str) or literal not in (0, 1):
            raise UsageError(f"bad filter: {key} is a bool field: compare it with true, false, 1 or 0, not {raw}")
        return literal
    if field_type in TEXT_TYPES:
        if lkind == "string" or isinstance(literal, bool):
            return value
        if op in _ORDERING and isinstance(literal, (int, float)):
            raise UsageError(f"bad filter: {key} is {_described(field_type)}: compare it with a quoted string, "
                             f"not {raw}")
    return literal


def _literal(text):
    lower = text.lower()
    if lower in ("true", "false"):
        return lower == "true"
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    return text


def compile_filter(text, fields=None):
    """Compile a display filter to a program for ``evaluate``; a bad filter raises UsageError.

    ``fields`` maps every key a filter may name to its type name (as in core.tables); with it an
    unknown key or a literal that cannot match the key's type is an error. Without it every key is
    accepted and literals compare loosely."""
    parser = _Parser(text, fields)
    return _program(parser.parse(), parser.count)


def evaluate(program, values):
    """True when a frame (or analysis record) with these values (key -> list of values) passes the filter."""
    step = 0
    while step >= 0:
        test, if_true, if_false = program[step]
        step = if_true if test(values) else if_false
    return step == _ACCEPT


def _exists(key):
    def test(values):
        return key in values
    return test


def _any(key, compare, literal):
    """True when some value of ``key`` compares true with the literal."""
    fast = _NUMBERS if isinstance(literal, (int, float)) else (str,)

    def test(values):
        for value in values.get(key, ()):
            if value.__class__ in fast:
                if compare(value, literal):
                    return True
            elif _loose(value, compare, literal):
                return True
        return False
    return test


def _none_equal(key, literal):
    equal = _any(key, operator.eq, literal)

    def test(values):
        return key in values and not equal(values)
    return test


def _loose(value, compare, literal):
    """A comparison across types: bytes as hex, text as a number where the literal is one."""
    if value is _PRESENT:
        return False
    if isinstance(value, _BYTES):
        value = value.hex()
    if isinstance(literal, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                literal = str(literal)
    else:
        value = str(value)
    try:
        return compare(value, literal)
    except TypeError:
        return False


def _contains(key, needle):
    needle_bytes = needle.encode()

    def test(values):
        for value in values.get(key, ()):
            if value.__class__ is str:
                if needle in value:
                    return True
            elif isinstance(value, _BYTES):
                if needle_bytes in value:
                    return True
            elif value is not _PRESENT and needle in str(value):
                return True
        return False
    return test


def _matches(key, regex):
    search = regex.search

    def test(values):
        for value in values.get(key, ()):
            if value.__class__ is str:
                if search(value) is not None:
                    return True
            elif isinstance(value, _BYTES):
                if search(value.decode("latin-1")) is not None:  # one character per byte
                    return True
            elif value is not _PRESENT and search(str(value)) is not None:
                return True
        return False
    return test


def frame_values(record):
    """Every key a filter may name for this frame."""
    values = {}

    def put(key, value):
        if value is not None:
            values.setdefault(key, []).append(value)

    put("frame.number", record.number)
    put("frame.len", record.wirelen)
    put("frame.cap_len", record.caplen)
    put("frame.time", record.ts)
    put("frame.protocol", record.protocol)
    packet = record.packet
    for layer in packet.layers:
        put(layer.key, True)
    if packet.src is not None:
        ip = "ipv6" if ":" in packet.src else "ip"
        put(f"{ip}.src", packet.src)
        put(f"{ip}.dst", packet.dst)
        put(f"{ip}.addr", packet.src)
        put(f"{ip}.addr", packet.dst)
    transport = record.transport
    if transport:
        put(f"{transport}.srcport", packet.sport)
        put(f"{transport}.dstport", packet.dport)
        put(f"{transport}.port", packet.sport)
        put(f"{transport}.port", packet.dport)
        put("tcp.stream", packet.tcp_stream)
    for msg in record.messages:
        put(msg.protocol, True)
        put(f"{msg.protocol}.message", msg.name)
        for field in msg.walk():
            put(field.key, _PRESENT if field.value is None else field.value)
    for finding in record.all_findings():
        put("expert.code", finding.code)
        put("expert.severity", finding.severity)
    return values
