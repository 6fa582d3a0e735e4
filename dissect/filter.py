"""Display filters (``-Y``) on field keys, parsed by hand and never evaluated as Python.

Grammar (Wireshark's, in small)::

    expr    := or
    or      := and (("or" | "||") and)*
    and     := unary (("and" | "&&") unary)*
    unary   := ("not" | "!") unary | "(" expr ")" | test
    test    := KEY [OP LITERAL | ["not"] "in" SET]
    OP      := == != > < >= <= eq ne gt lt ge le contains matches
    SET     := "{" MEMBER ([","] MEMBER)* "}"
    MEMBER  := LITERAL [".." LITERAL]

A bare KEY is true when the field is present; a bare word that is a protocol key but for case
(``NetQuake``) is that key. A comparison is true when any value of the key satisfies it (``!=``:
when none equals the literal); ``in`` when any value equals a member or lies in a member range
(both ends included). An address field compares with an address or, with ``==``, ``!=`` and
``in``, a network (``ip.addr == 10.0.0.0/8``). ``frame.protocol`` compares without regard to case,
as the summary shows a protocol's title (NetQuake) and JSON its key (netquake).

Neither the parser nor the evaluator recurses, so no filter can exhaust the stack: the parser
keeps its operators on a list (shunting-yard) and the filter compiles to a flat program of
tests, each with the step to go to when it holds and when it does not (short-circuit jumps
with ``not`` folded in). Parentheses may nest ``MAX_NESTING`` deep; chains of ``||`` and
``&&`` are unlimited.
"""

import functools
import operator
import re
import sys

from .core.tables import NUMBER_TYPES, TEXT_TYPES
from .registry import UsageError

MAX_NESTING = 256

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<lparen>\() | (?P<rparen>\)) | (?P<lbrace>\{) | (?P<rbrace>\}) | (?P<comma>,) | (?P<range>\.\.) |
      (?P<op>==|!=|>=|<=|>|<|&&|\|\||!) |
      (?P<string>"(?:[^"\\]|\\.)*") |
      (?P<word>(?:[A-Za-z0-9_:\-/+]|\.(?!\.))+)
    )""", re.VERBOSE)

_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", '"': '"', "\\": "\\"}
_BYTE_ESCAPES = {0xDC80 + byte: 0x80 + byte for byte in range(128)}  # \xHH past 7F in a string -> Latin-1
_HEX_BYTES = re.compile(r"[0-9A-Fa-f]{2}(?:[:.\-]?[0-9A-Fa-f]{2})*")
_WORD_OPS = {"eq": "==", "ne": "!=", "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "contains": "contains",
             "matches": "matches", "and": "&&", "or": "||", "not": "!", "in": "in"}
_COMPARISONS = {"==", "!=", ">", "<", ">=", "<=", "contains", "matches"}
_ORDERING = {">", "<", ">=", "<="}
_OPERATORS = {"==": operator.eq, ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")
_END = (None, None, None, None)

# Keys whose text compares without regard to case: the summary shows a protocol's title, JSON its key.
_CASELESS = frozenset({"frame.protocol"})

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
# Number literals as tshark reads them (no Python forms: 1_000 and " 5" are not numbers).
_INTEGER = re.compile(r"([+-]?)(?:0[xX]([0-9A-Fa-f]+)|0[bB]([01]+)|(0[0-7]*)|([1-9][0-9]*))")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FRACTION_TYPES = frozenset({"float", "time"})
_INTEGER_RANGES = {f"{sign}int{bits}": ((0, 2**bits - 1) if sign else (-2**(bits - 1), 2**(bits - 1) - 1))
                   for sign in ("u", "") for bits in (8, 16, 32, 64)}
_BYTES = (bytes, bytearray)


def _shown(text):
    """The filter as an error message quotes it: long ones cut, so that the message stays readable."""
    return repr(text) if len(text) <= 80 else repr(text[:72]) + "..."


def _did_you_mean(key, fields):
    """`` (did you mean <closest key>?)``, or nothing when no key is close."""
    import difflib  # only for an error message: not imported with this module (start-up)

    best = difflib.get_close_matches(key, list(fields), n=1)
    return f" (did you mean {best[0]}?)" if best else ""


def check_keys(keys, fields):
    """Raise UsageError for the first of ``keys`` (``-T fields -e``) that is not one of ``fields``."""
    for key in keys:
        if key not in fields:
            raise UsageError(f"bad field {key!r}: not a field{_did_you_mean(key, fields)}")


def _tokenize(text):
    """Tokens as (kind, value, as written, position)."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            at = len(text) - len(text[pos:].lstrip())
            if text[at:at + 1] == '"':
                raise UsageError(f"bad filter {_shown(text)}: the string at position {at + 1} has no closing quote")
            raise UsageError(f"bad filter {_shown(text)}: unexpected character at position {at + 1}")
        pos = match.end()
        kind = match.lastgroup
        start = match.start(kind) + 1
        raw = value = match.group(kind)
        if kind == "word" and value.lower() in _WORD_OPS:
            kind, value = "op", _WORD_OPS[value.lower()]
        elif kind == "string":
            value = _ESCAPE.sub(lambda escape: _escaped(escape.group(1), text), value[1:-1])
        tokens.append((kind, value, raw, start))
    return tokens


def _escaped(code, text):
    """The character of a string's escape ``\\code``, as tshark reads them: \\a \\b \\f \\n \\r \\t \\v, \\" and
    \\\\, \\xHH and octal \\ooo (a byte past 7F stands for itself: it matches that byte of a bytes field). Any other is
    an error, as in tshark: a regular expression's \\d is written \\\\d in a string."""
    if code in _ESCAPES:
        return _ESCAPES[code]
    if code[0] in "01234567" or code[0] == "x" and len(code) > 1:
        number = int(code[1:], 16) if code[0] == "x" else int(code, 8)
        if number > 0xFF:
            raise UsageError(f"bad filter {_shown(text)}: \\{code} is past \\377: not a byte")
        return chr(number) if number < 0x80 else chr(0xDC00 + number)  # surrogateescape's byte
    raise UsageError(f"bad filter {_shown(text)}: \\{code} is not a valid character escape sequence (in a regular "
                     f"expression, write \\\\{code})")


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

    def peek(self, ahead=0):
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else _END

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
            kind, value, raw, pos = self.take()
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
                self.fail(f"expected a field key, found {raw!r} at position {pos}" if kind else
                          "expression ends too early")

    def test(self, key, pos):
        if not _KEY.match(key):
            self.fail(f"expected a field key, found {key!r} at position {pos}")
        key = self.resolve(key)
        field_type = self.field_type(key)
        kind, op, raw = self.peek()[:3]
        if kind == "op" and op == "!" and raw.lower() == "not" and self.peek(1)[:2] == ("op", "in"):
            self.take()
            self.take()
            test = _negated(self.membership(key, field_type))
        elif kind == "op" and op == "in":
            self.take()
            test = self.membership(key, field_type)
        elif kind == "op" and op in _COMPARISONS:
            self.take()
            lkind, value, raw = self.take()[:3]
            if lkind not in ("word", "string"):
                self.fail(f"expected a value after {op!r}")
            test = self.comparison(key, field_type, op, lkind, value, raw)
        else:
            test = _exists(key)
        self.count += 1
        return (_TEST, self.count - 1, test)

    def resolve(self, key):
        """The key a bare word names: a protocol key written in other case (NetQuake) is that key."""
        if "." in key or key.islower():
            return key
        if self.fields is None:
            return key.lower()  # protocol keys are lower case (the registry checks)
        if key not in self.fields and self.fields.get(key.lower()) == "protocol":
            return key.lower()
        return key

    def field_type(self, key):
        """The declared type of ``key`` (None without a field list); an unknown key is an error."""
        if self.fields is None:
            return None
        if key not in self.fields:
            raise UsageError(f"bad filter: {key!r} is not a field{_did_you_mean(key, self.fields)}")
        return self.fields[key]

    def comparison(self, key, field_type, op, lkind, value, raw):
        if op in ("contains", "matches"):
            if field_type is not None and field_type not in _SEARCHABLE:
                raise UsageError(f"bad filter: {key} is {_described(field_type)}: {op!r} applies to string, "
                                 f"address and bytes fields only")
            if op == "contains" and field_type == "bytes" and lkind == "word":
                return _over_values(key, _contains_bytes(self.byte_string(key, value, raw)))
            if op == "contains":
                return _over_values(key, _contains(value.lower() if key in _CASELESS else value))
            # tshark's matches ignores case; a byte escape past 7F matches that byte, one character per byte
            return _over_values(key, _matches(self.regex(value.translate(_BYTE_ESCAPES), re.IGNORECASE)))
        if op == "!=":
            return _none_of(key, self.value_test(key, field_type, "==", (lkind, value, raw)))
        return _over_values(key, self.value_test(key, field_type, op, (lkind, value, raw)))

    def membership(self, key, field_type):
        """``in {...}``: true when some value equals a member or lies in a member range."""
        members = self.set_members()
        literals = []
        tests = []
        for low, high in members:
            if high is None:
                literal = self.literal(key, field_type, "==", *low)
                literals.append(literal)
                tests.append(_value_test("==", literal))
            else:
                tests.append(self.range_test(key, field_type, low, high))
        if all(high is None for _, high in members):
            return _over_values(key, _member_of(literals, tests))
        return _over_values(key, _any_of(tests))

    def set_members(self):
        """The members of ``{...}`` as (low token, high token or None); tokens are (kind, value, raw)."""
        kind, value, _, pos = self.take()
        if kind != "lbrace":
            self.fail(f"expected '{{' after 'in', found {value!r} at position {pos}" if kind else
                      "expected '{' after 'in'")
        members = []
        separated = True  # a member may follow: at the start or after a comma
        while True:
            kind, value, raw, pos = self.take()
            if kind in ("word", "string"):
                members.append(((kind, value, raw), self.range_end()))
                separated = False
                continue
            if kind is None:
                self.fail("missing '}'")
            if kind == "rbrace" and members and not separated:
                return members
            if kind == "comma" and members and not separated:
                separated = True
                continue
            self.fail("empty set {} at position " + str(pos) if kind == "rbrace" and not members else
                      f"unexpected {value!r} at position {pos}")

    def range_end(self):
        """The upper end of a member range (``..`` and a literal), or None when the member is one literal."""
        if self.peek()[0] != "range":
            return None
        self.take()
        kind, value, raw, pos = self.take()
        if kind not in ("word", "string"):
            self.fail(f"expected a value after '..' at position {pos}" if kind else "expected a value after '..'")
        return kind, value, raw

    def range_test(self, key, field_type, low, high):
        lowest = self.literal(key, field_type, ">=", *low)
        highest = self.literal(key, field_type, "<=", *high)
        try:
            empty = lowest > highest
        except TypeError:  # ends of different kinds (loose text and number): left to the comparisons
            empty = False
        if empty:
            self.fail(f"the range {low[2]}..{high[2]} is empty")
        return _both(_value_test(">=", lowest), _value_test("<=", highest))

    def value_test(self, key, field_type, op, token):
        """A test of one value against the literal in ``token`` with ``op`` (one of _OPERATORS)."""
        return _value_test(op, self.literal(key, field_type, op, *token))

    def literal(self, key, field_type, op, lkind, value, raw):
        """The literal to compare values of ``key`` with by ``op``; one that cannot match the key's type is
        an error. Addresses and networks become ipaddress objects."""
        if field_type == "address" or (field_type is None and op == "==" and "/" in value):
            address = _address_literal(value, op)
            if address is not None:
                return address
            if field_type == "address":
                wanted = "an address" if op in _ORDERING else "an address or a network (10.0.0.0/8)"
                raise UsageError(f"bad filter: {key} is an address field: compare it with {wanted}, not {raw}")
        if field_type is None:
            literal = _literal(value)
        else:
            literal = _typed_literal(key, field_type, op, lkind, value, raw)
        return literal.lower() if key in _CASELESS and isinstance(literal, str) else literal

    def byte_string(self, key, value, raw):
        """An unquoted literal for a bytes field: its bytes, written in hex (01:ab, 01-ab, 01.ab or 01ab)."""
        if not _HEX_BYTES.fullmatch(value):
            self.fail(f"{key} is a bytes field: 'contains' takes bytes in hex (01:ab or 01ab) or a quoted string, "
                      f"not {raw}")
        return bytes.fromhex(re.sub(r"[:.\-]", "", value))

    def regex(self, pattern, flags=0):
        try:
            return re.compile(pattern, flags)
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
    if field_type in NUMBER_TYPES:
        return _number_of(key, field_type, value, raw)
    if field_type == "bool":
        literal = _literal(value)
        if isinstance(literal, str) or literal not in (0, 1):
            raise UsageError(f"bad filter: {key} is a bool field: compare it with true, false, 1 or 0, not {raw}")
        return literal
    if field_type in TEXT_TYPES:  # an unquoted word is text, as in tshark: name == 10 is the text "10"
        if op in _ORDERING and lkind != "string" and _number(value) is not None:
            raise UsageError(f"bad filter: {key} is {_described(field_type)}: compare it with a quoted string, "
                             f"not {raw}")
        return value
    return _literal(value)


def _number_of(key, field_type, text, raw):
    """The number literal ``text`` for a number field, read as tshark reads it: an integer field takes an
    integer (decimal, 0x hex, 0b binary, 0 octal: 066 is 54) within its type's range; a float field a
    decimal fraction (066 is 66.0) or a hex or binary integer."""
    if field_type in _FRACTION_TYPES:
        number = float(text) if _DECIMAL.fullmatch(text) else _integer(text)
        if number is None:
            raise UsageError(f"bad filter: {key} is {_described(field_type)}: compare it with a number, not {raw}")
        if not -_FLOAT_MAX <= number <= _FLOAT_MAX:  # 1e400, 0xfff...: no float is, as inf is refused
            raise UsageError(f"bad filter: {raw} is out of range for {key}, a {field_type} field")
        return number
    number = _integer(text)
    if number is None:
        raise UsageError(f"bad filter: {key} is {_described(field_type)}: compare it with an integer, not {raw}")
    low, high = _INTEGER_RANGES.get(field_type, (number, number))
    if not low <= number <= high:
        raise UsageError(f"bad filter: {raw} is out of range for {key}, a {field_type} field ({low} to {high})")
    return number


_FLOAT_MAX = sys.float_info.max


def _integer(text):
    """tshark's integer literal (a sign, then decimal, 0x hex, 0b binary or 0 octal) as an int; None if not one."""
    match = _INTEGER.fullmatch(text)
    if match is None:
        return None
    sign, hexadecimal, binary, octal, decimal = match.groups()
    if hexadecimal:
        number = int(hexadecimal, 16)
    elif binary:
        number = int(binary, 2)
    else:
        number = int(octal, 8) if octal else int(decimal)
    return -number if sign == "-" else number


def _number(text):
    """An integer as _integer reads it, else a decimal fraction (1.5, 2e-3) as a float; None if neither."""
    number = _integer(text)
    if number is None and _DECIMAL.fullmatch(text):
        number = float(text)
    return number


def _literal(text):
    """A literal compared with a field of no known type: true or false, a number (see _number), or text."""
    lower = text.lower()
    if lower in ("true", "false"):
        return lower == "true"
    number = _number(text)
    return text if number is None else number


def _address_literal(text, op):
    """An address (ordering) or a network (``==``: a bare address is a network of one), or None."""
    import ipaddress

    try:
        return ipaddress.ip_network(text, strict=False) if op == "==" else ipaddress.ip_address(text)
    except ValueError:
        return None


def compile_filter(text, fields=None):
    """Compile a display filter to a program for ``evaluate``; a bad filter (or one that is not a string) raises
    UsageError.

    ``fields`` maps every key a filter may name to its type name (as in core.tables); with it an
    unknown key or a literal that cannot match the key's type is an error. Without it every key is
    accepted and literals compare loosely."""
    if not isinstance(text, str):
        raise UsageError(f"bad filter: a display filter is a string, not {type(text).__name__}")
    parser = _Parser(text, fields)
    return _program(parser.parse(), parser.count)


def evaluate(program, values):
    """True when a frame (or analysis record) with these values (key -> list of values) passes the filter."""
    step = 0
    while step >= 0:
        test, if_true, if_false = program[step]
        step = if_true if test(values) else if_false
    return step == _ACCEPT


# Tests of a frame's values (key -> list of values) are built from tests of one value.

def _exists(key):
    def test(values):
        return key in values
    return test


def _over_values(key, match):
    """True when some value of ``key`` passes ``match``."""
    if key in _CASELESS:
        match = _folded(match)

    def test(values):
        for value in values.get(key, ()):
            if match(value):
                return True
        return False
    return test


def _none_of(key, match):
    """True when ``key`` is present and none of its values passes ``match`` (``!=``)."""
    if key in _CASELESS:
        match = _folded(match)

    def test(values):
        found = values.get(key)
        if found is None:
            return False
        for value in found:
            if match(value):
                return False
        return True
    return test


def _negated(test):
    def negated(values):
        return not test(values)
    return negated


def _folded(match):
    def folded(value):
        return match(value.lower() if value.__class__ is str else value)
    return folded


def _value_test(op, literal):
    """A test of one value by ``op`` against a literal that _Parser.literal made."""
    import ipaddress  # imported where a filter compares addresses, not with this module (start-up)

    if isinstance(literal, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return _in_network(literal)
    if isinstance(literal, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return _address_order(_OPERATORS[op], literal)
    return _compared(_OPERATORS[op], literal)


def _compared(compare, literal):
    """True when a value compares true with the literal; across types as _loose says."""
    fast = _NUMBERS if isinstance(literal, (int, float)) else (str,)

    def match(value):
        if value.__class__ in fast:
            return compare(value, literal)
        return _loose(value, compare, literal)
    return match


def _loose(value, compare, literal):
    """A comparison across types: bytes as hex, text as a number where the literal is one."""
    if value is _PRESENT:
        return False
    if isinstance(value, _BYTES):
        if isinstance(literal, (int, float)):  # a number field cut short holds its bytes: no number
            return False
        value = value.hex()
    if isinstance(literal, (int, float)):
        if isinstance(value, str):
            number = _number(value)
            if number is None:
                literal = str(literal)
            else:
                value = number
    else:
        value = str(value)
    try:
        return compare(value, literal)
    except TypeError:
        return False


def _member_of(literals, tests):
    """Equality with one of the literals (``tests``: one per literal): a set lookup for a value of the
    literals' own type, the comparisons one by one for any other."""
    if all(literal.__class__ in _NUMBERS for literal in literals):
        native = _NUMBERS
    elif all(literal.__class__ is str for literal in literals):
        native = (str,)
    else:
        return _any_of(tests)
    exact = frozenset(literals)
    slow = _any_of(tests)

    def match(value):
        if value.__class__ in native:
            return value in exact
        return slow(value)
    return match


def _any_of(tests):
    def match(value):
        for test in tests:
            if test(value):
                return True
        return False
    return match


def _both(first, second):
    def match(value):
        return first(value) and second(value)
    return match


_LONGEST_ADDRESS = 64  # an IPv6 address with a zone; longer text is no address, and is not cached


@functools.lru_cache(maxsize=4096)
def _parsed_address(value):
    import ipaddress

    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _address_of(value):
    """The address a value holds: text, or 4 or 16 bytes as on the wire; None for anything else."""
    if value.__class__ is str:
        return _parsed_address(value) if len(value) <= _LONGEST_ADDRESS else None
    if isinstance(value, _BYTES) and len(value) in (4, 16):
        return _parsed_address(bytes(value))
    return None


def _in_network(network):
    def match(value):
        address = _address_of(value)
        return address is not None and address.version == network.version and address in network
    return match


def _address_order(compare, literal):
    def match(value):
        address = _address_of(value)
        return address is not None and address.version == literal.version and compare(address, literal)
    return match


def _contains(needle):
    needle_bytes = needle.encode("utf-8", "surrogateescape")  # a byte \xHH past 7F, or one not UTF-8 in argv

    def match(value):
        if value.__class__ is str:
            return needle in value
        if isinstance(value, _BYTES):
            return needle_bytes in value
        return value is not _PRESENT and needle in str(value)
    return match


def _contains_bytes(needle):
    def match(value):
        return isinstance(value, _BYTES) and needle in value
    return match


def _matches(regex):
    search = regex.search

    def match(value):
        if value.__class__ is str:
            return search(value) is not None
        if isinstance(value, _BYTES):
            return search(value.decode("latin-1")) is not None  # one character per byte
        return value is not _PRESENT and search(str(value)) is not None
    return match


def frame_values(record):
    """Every key a filter may name for this frame."""
    values = {}

    def put(key, value):
        if value is not None:
            values.setdefault(key, []).append(value)

    put("frame", True)
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
    if "expert.code" in values:
        put("expert", True)
    return values
