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
"""

import re

from .registry import UsageError

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<lparen>\() | (?P<rparen>\)) |
      (?P<op>==|!=|>=|<=|>|<|&&|\|\||!) |
      (?P<string>"(?:[^"\\]|\\.)*") |
      (?P<word>[A-Za-z0-9_.:\-/+]+)
    )""", re.VERBOSE)

_WORD_OPS = {"eq": "==", "ne": "!=", "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "contains": "contains",
             "matches": "matches"}
_COMPARISONS = {"==", "!=", ">", "<", ">=", "<=", "contains", "matches"}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")


def _tokenize(text):
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise UsageError(f"bad filter {text!r}: unexpected character at position {pos + 1}")
        pos = match.end()
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "word":
            lower = value.lower()
            if lower in ("and", "or", "not"):
                kind, value = "op", {"and": "&&", "or": "||", "not": "!"}[lower]
            elif lower in _WORD_OPS:
                kind, value = "op", _WORD_OPS[lower]
        elif kind == "string":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append((kind, value))
    return tokens


class _Parser:
    def __init__(self, text):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def fail(self, why):
        raise UsageError(f"bad filter {self.text!r}: {why}")

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def parse(self):
        if not self.tokens:
            self.fail("empty expression")
        node = self.or_()
        if self.pos != len(self.tokens):
            self.fail(f"unexpected {self.peek()[1]!r}")
        return node

    def or_(self):
        node = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self):
        node = self.unary()
        while self.peek() == ("op", "&&"):
            self.take()
            node = ("and", node, self.unary())
        return node

    def unary(self):
        kind, value = self.take()
        if (kind, value) == ("op", "!"):
            return ("not", self.unary())
        if kind == "lparen":
            node = self.or_()
            if self.take()[0] != "rparen":
                self.fail("missing ')'")
            return node
        if kind != "word" or not _KEY.match(value):
            self.fail(f"expected a field key, found {value!r}" if value else "expression ends too early")
        kind2, op = self.peek()
        if kind2 == "op" and op in _COMPARISONS:
            self.take()
            lkind, literal = self.take()
            if lkind not in ("word", "string"):
                self.fail(f"expected a value after {op!r}")
            if op == "matches":
                try:
                    literal = re.compile(literal)
                except re.error as exc:
                    self.fail(f"bad regular expression: {exc}")
            return ("cmp", value, op, _literal(literal) if op != "matches" else literal)
        return ("exists", value)


def _literal(text):
    if isinstance(text, str):
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


def compile_filter(text):
    """Return a predicate over a dict of key -> list of values."""
    return _Parser(text).parse()


def _compare(value, op, literal):
    if op == "matches":
        return literal.search(str(value)) is not None
    if op == "contains":
        if isinstance(value, (bytes, bytearray)):
            return str(literal).encode() in value
        return str(literal) in str(value)
    if isinstance(value, (bytes, bytearray)):
        value = value.hex()
    if isinstance(literal, (int, float)) and not isinstance(value, str):
        left, right = value, literal
    elif isinstance(literal, (int, float)) and isinstance(value, str):
        try:
            left, right = float(value), literal
        except ValueError:
            left, right = value, str(literal)
    else:
        left, right = str(value), str(literal)
    try:
        return {"==": left == right, "!=": left != right, ">": left > right, "<": left < right,
                ">=": left >= right, "<=": left <= right}[op]
    except TypeError:
        return False


def evaluate(node, values):
    kind = node[0]
    if kind == "and":
        return evaluate(node[1], values) and evaluate(node[2], values)
    if kind == "or":
        return evaluate(node[1], values) or evaluate(node[2], values)
    if kind == "not":
        return not evaluate(node[1], values)
    if kind == "exists":
        return node[1] in values
    _, key, op, literal = node
    found = values.get(key, ())
    if op == "!=":
        return bool(found) and not any(_compare(v, "==", literal) for v in found)
    return any(_compare(v, op, literal) for v in found)


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
            put(field.key, field.value)
    for finding in record.all_findings():
        put("expert.code", finding.code)
        put("expert.severity", finding.severity)
    return values
