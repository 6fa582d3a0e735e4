"""A cursor over a message's bytes that records the offset and length of what it reads.

Dissectors read through a Cursor and never compute offsets by hand. With ``tree``
off (the summary path) the cursor only decodes values: no Field is built.
"""

try:
    import cython
except ImportError:  # no Cython: its class decorators below as no-ops (see core/nocython.py)
    from . import nocython as cython

import struct

from .model import new_field

U8 = struct.Struct("B")
I8 = struct.Struct("b")
U16BE = struct.Struct(">H")
U16LE = struct.Struct("<H")
I16LE = struct.Struct("<h")
U32BE = struct.Struct(">I")
U32LE = struct.Struct("<I")
I32LE = struct.Struct("<i")
I32BE = struct.Struct(">i")
# The same formats under names the compiled build holds in C (cursor.pxd): _width and unpack compare a format with
# them as pointers, where a module global is looked up at each use.
_U8, _U16LE, _I16LE, _U16BE, _U32LE, _I32LE, _U32BE, _I32BE = U8, U16LE, I16LE, U16BE, U32LE, I32LE, U32BE, I32BE

# Decimal text longer than this (sign included) is not read as a number: int() refuses more than 4300
# digits (and slows with the square of the length), and no field of these protocols holds one that long.
MAX_DECIMAL_DIGITS = 4000
# Numbers of up to this many digits fit a 64-bit integer: _decimal adds them up itself, int() reads longer ones.
MAX_EXACT_DIGITS = 18
# Fields one cstrings call reads at most: their offsets are kept in a fixed array (cursor.pxd: a C array of
# MAX_CSTRINGS + 1), not as a list of integer objects.
MAX_CSTRINGS = 32
# cstrings's kinds of field. Literals that read as names are interned, in the dissectors' modules as here:
# a kind is nearly always one of these very objects.
TEXT, DECIMAL = "text", "decimal"
_COMPILED = not __file__.endswith(".py")
_NO_STARTS = [0] * (MAX_CSTRINGS + 1)


class Truncated(Exception):
    """A field runs off the end of the message."""

    def __init__(self, key, name, offset, needed, available):
        super().__init__(f"{name} needs {needed} bytes at offset {offset}, {available} left")
        self.key = key
        self.name = name
        self.offset = offset
        self.needed = needed
        self.available = available


class Unterminated(Truncated):
    """A null-terminated string reaches the end of the message without its terminator."""

    def __init__(self, key, name, offset, available):
        Exception.__init__(self, f"{name} at offset {offset} has no null terminator "
                                 f"in the {available} bytes left")
        self.key = key
        self.name = name
        self.offset = offset
        self.needed = available + 1
        self.available = available


class _NoNode:
    """Stands in for a subtree node on the summary path; accepts and forgets everything."""

    __slots__ = ()

    def __setattr__(self, name, value):
        pass


_NO_NODE = _NoNode()


@cython.freelist(64)
@cython.cclass
class _Subtree:
    __slots__ = ("cursor", "node")

    def __init__(self, cursor, node):
        self.cursor = cursor
        self.node = node

    def __enter__(self):
        return self.node

    def __exit__(self, exc_type, exc, traceback):
        if self.cursor.tree:
            _close_subtree(self.cursor, self.node)
        return False


def _close_subtree(cursor, node):
    """The subtree ends: its node spans its children (a field cut short by the end of the data may reach past
    pos), and the fields read next go to its parent."""
    end = cursor.pos
    for child in node.children:
        offset, length = child.offset, child.length  # compiled: C integers (cursor.pxd), no int object a child
        if offset + length > end:
            end = offset + length
    node.length = end - node.offset
    cursor._stack.pop()


class _NoSubtree:
    """The summary path's subtree: nothing to nest, nothing to measure."""

    __slots__ = ()

    def __enter__(self):
        return _NO_NODE

    def __exit__(self, exc_type, exc, traceback):
        return False


_NO_SUBTREE = _NoSubtree()


@cython.freelist(64)
@cython.cclass
class Cursor:
    """Reads a message's fields from ``data``. ``missing`` counts the bytes of the message that the capture did not
    keep (snap length): they would follow ``end``, and a protocol's length checks count them."""

    __slots__ = ("data", "pos", "end", "tree", "msg", "_stack", "last_offset", "last_length", "_raw", "_raw_start",
                 "_raw_stop", "_starts", "_fields", "missing")

    def __init__(self, msg, data, tree=True, pos=0):
        _start(self, msg, data, tree, pos)

    # -- state ---------------------------------------------------------------
    def remaining(self):
        return self.end - self.pos

    def at_end(self):
        return self.pos >= self.end

    @property
    def last_raw(self):
        """The bytes of the last string read, without its terminator (for byte-limit checks)."""
        if self._raw is None:  # a terminated string's: sliced when asked for, numbers read since or not
            self._raw = self.data[self._raw_start:self._raw_stop]
        return self._raw

    @last_raw.setter
    def last_raw(self, raw):
        self._raw = raw

    # -- adding nodes --------------------------------------------------------
    # ``spec`` is the field's entry in its protocol's FieldTable; ``name`` overrides the entry's name
    # where one entry serves several nodes (the players of a list).
    def add(self, spec, offset, length, value, display=None, generated=False, name=None):
        """Add a field for bytes already read (or a computed field over them)."""
        if not self.tree:
            return None
        node = new_field(spec.key, name or spec.name, offset, length, value, spec.fmt, display, generated)
        self._stack[-1].append(node)
        return node

    def add_child(self, spec, offset, length, value, display=None):
        """Add a field under the last field added (bit fields, parts of a value)."""
        if not self.tree:
            return None
        node = new_field(spec.key, spec.name, offset, length, value, spec.fmt, display, True)
        parent = self._stack[-1][-1]
        if not parent.children:
            parent.children = []
        parent.children.append(node)
        return node

    def set_last(self, value, display=None):
        """Replace the value (and display) of the last field added, e.g. text parsed into a number."""
        if self.tree and self._stack[-1]:
            node = self._stack[-1][-1]
            node.value = value
            if display is not None:
                node.display = display

    def subtree(self, spec, value=None, name=None):
        """``with cursor.subtree(...) as node:`` nests the fields read inside it."""
        node = self.open_subtree(spec, value, name)
        return _NO_SUBTREE if node is None else _Subtree(self, node)

    def open_subtree(self, spec, value=None, name=None):
        """``subtree``'s node without the context manager, for the loops that read many (a context manager costs
        two Python calls): the fields read until ``close_subtree(node)``, which a ``finally`` calls, are its
        children. None without a tree."""
        if not self.tree:
            return None
        node = new_field(spec.key, name or spec.name, self.pos, 0, value, spec.fmt)
        self._stack[-1].append(node)
        node.children = []
        self._stack.append(node.children)
        return node

    def close_subtree(self, node):
        """The subtree ``open_subtree`` gave ends (nothing to do for its None)."""
        if node is not None and self.tree:
            _close_subtree(self, node)

    def finding(self, spec, detail, offset=None, length=None):
        """A finding from the protocol's FindingTable: ``detail`` says what was seen, the entry the rule."""
        self.msg.report(spec, detail, offset, length)

    def flag_last(self, spec, detail):
        """A finding over the last item read."""
        self.msg.report(spec, detail, self.last_offset, self.last_length)

    # -- reading ---------------------------------------------------------------
    def _need(self, n, spec):
        if self.pos + n > self.end:
            available = self.end - self.pos
            if available > 0:  # its bytes, which a view shows as bytes whatever the field's type: not its value
                part = self.data[self.pos:self.end]
                self.add(spec, self.pos, available, part, display=f"{part.hex(' ')} ({available} of {n} bytes)",
                         name=spec.name + " [truncated]")
            raise Truncated(spec.key, spec.name, self.pos, n, available)

    def number(self, st, spec):
        pos = self.pos
        size = _width(st)
        if pos + size > self.end:
            self._need(size, spec)
        value = unpack(st, self.data, pos)
        self.pos = pos + size
        self.last_offset = pos
        self.last_length = size
        if self.tree:
            self._stack[-1].append(new_field(spec.key, spec.name, pos, size, value, spec.fmt))
        return value

    def u8(self, spec):
        """``number(U8, spec)``, read here: a byte is the commonest field (flags, counts, bools)."""
        pos = self.pos
        if pos >= self.end:
            self._need(1, spec)
        value = self.data[pos]
        self.pos = pos + 1
        self.last_offset = pos
        self.last_length = 1
        if self.tree:
            self._stack[-1].append(new_field(spec.key, spec.name, pos, 1, value, spec.fmt))
        return value

    def raw(self, spec, n):
        data, pos = self.data, self.pos
        if pos + n > self.end:
            self._need(n, spec)
        value = cut(data, pos, pos + n)
        self.pos = pos + n
        self.last_offset = pos
        self.last_length = n
        self.add(spec, pos, n, value)
        return value

    def cstring(self, spec, encoding="utf-8"):
        """A null-terminated string; the field covers the terminator too.

        ``last_raw`` keeps the bytes before the terminator, for byte-limit checks.
        """
        data, pos = self.data, self.pos
        nul = _terminator(data, pos, self.end)
        if nul < 0:
            self._unterminated(spec, encoding)
        value = _decoded(data, pos, nul, encoding)
        self.pos = nul + 1
        self._raw, self._raw_start, self._raw_stop = None, pos, nul  # last_raw slices it if read
        self.last_offset = pos
        self.last_length = nul + 1 - pos
        if self.tree:
            self._stack[-1].append(new_field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt))
        return value

    def _unterminated(self, spec, encoding):
        """Records the text from here to the end as a cut field, then raises Unterminated."""
        pos = self.pos
        available = self.end - pos
        raw = self._raw = self.data[pos:self.end]
        self.last_offset = pos
        self.last_length = available
        self.add(spec, pos, available, raw.decode(encoding, "replace"), name=spec.name + " [unterminated]")
        raise Unterminated(spec.key, spec.name, pos, available)

    def cdecimal(self, spec):
        """A null-terminated decimal number: the int, or None where the text is not one (the field then shows
        the text). ``last_raw`` keeps the bytes before the terminator."""
        data, pos = self.data, self.pos
        nul = _terminator(data, pos, self.end)
        if nul < 0:
            self._unterminated(spec, "latin-1")
        value = _decimal(data, pos, nul)
        self.pos = nul + 1
        self._raw, self._raw_start, self._raw_stop = None, pos, nul  # last_raw slices it if read
        self.last_offset = pos
        self.last_length = nul + 1 - pos
        if self.tree:
            display = None if value is not None else f'"{data[pos:nul].decode("latin-1")}" (not a decimal number)'
            self._stack[-1].append(new_field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt, display))
        return value

    def cstrings(self, specs):
        """Consecutive null-terminated fields in one call: ``specs`` holds (field spec, kind) with kind
        "text" (UTF-8) or "decimal" (the int, or None where the text is not one); at most MAX_CSTRINGS of them.
        Returns the values; ``start(i)`` gives the offset of field i (and ``start(len(values))`` the offset after
        the last), ``span`` and ``spans`` the (offset, length, raw bytes) of the fields, for checks and findings."""
        if type(specs) is not tuple and type(specs) is not list:
            specs = tuple(specs)  # any iterable, as before the offsets had a fixed array
        if len(specs) > MAX_CSTRINGS:
            raise OverflowError(f"cstrings reads at most {MAX_CSTRINGS} fields at once, not {len(specs)}")
        data, pos, end = self.data, self.pos, self.end
        parent = self._stack[-1] if self.tree else None
        values = []
        self._starts[0] = pos
        self._fields = count = 0
        last = pos
        for spec, kind in specs:
            nul = _terminator(data, pos, end)
            if nul < 0:
                self.pos = pos
                self._unterminated(spec, "utf-8")
            if kind is TEXT or (kind is not DECIMAL and kind == "text"):  # compared as pointers, mostly
                value = data[pos:nul].decode("utf-8", "replace")
            else:
                value = _decimal(data, pos, nul)
            if parent is not None:
                display = f'"{data[pos:nul].decode("latin-1")}" (not a decimal number)' if value is None else None
                parent.append(new_field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt, display))
            values.append(value)
            last = pos
            pos = nul + 1
            count += 1
            self._starts[count] = pos
            self._fields = count
        self.pos = pos
        if values:  # the last field's place: span(len(values) - 1); last_raw slices its bytes if read
            self.last_offset, self.last_length = last, pos - last
            self._raw, self._raw_start, self._raw_stop = None, last, pos - 1
        return values

    def start(self, index):
        """The offset of field ``index`` of the last ``cstrings``; of its end for ``index`` = the fields read."""
        if index < 0 or index > self._fields:
            raise IndexError(f"cstrings read {self._fields} fields: no offset {index}")
        return self._starts[index]

    @property
    def starts(self):
        """The offset of each field of the last ``cstrings``, then the offset after the last."""
        return [self._starts[index] for index in range(self._fields + 1)]

    @starts.setter
    def starts(self, offsets):
        if len(offsets) > MAX_CSTRINGS + 1:
            raise OverflowError(f"at most {MAX_CSTRINGS} fields' offsets are kept, not {len(offsets) - 1}")
        for index, offset in enumerate(offsets):
            self._starts[index] = offset
        self._fields = len(offsets) - 1

    def span(self, index):
        """(offset, length, raw bytes) of field ``index`` of the last ``cstrings``: the length counts the
        terminator, the raw bytes do not."""
        start, stop = self.start(index), self.start(index + 1)
        return start, stop - start, self.data[start:stop - 1]

    @property
    def spans(self):
        """(offset, length, raw bytes) of each field of the last ``cstrings``."""
        return [self.span(index) for index in range(self._fields)]

    def separated(self, separator, encoding="utf-8"):
        """Fields each preceded by ``separator``, from here to the end: [(offset, length, text)].

        Separators get no field; the caller adds typed fields from the offsets."""
        data, pos, end = self.data, self.pos, self.end
        step = len(separator)
        if not data.startswith(separator, pos, end):
            return []
        fields = []
        offset = pos + step
        for raw in data[offset:end].split(separator):
            fields.append((offset, len(raw), raw.decode(encoding, "replace")))
            offset += len(raw) + step
        self.pos = end
        return fields

    def rest(self, spec):
        return self.raw(spec, self.end - self.pos)


def new_cursor(msg, data, tree, pos):
    """A Cursor, made without the argument parsing of a constructor call (one a message)."""
    cur = Cursor.__new__(Cursor)
    _start(cur, msg, data, tree, pos)
    return cur


def _start(cur, msg, data, tree, pos):
    cur.msg = msg
    cur.data = as_bytes(data)  # slices of it are the fields' bytes
    cur.pos = pos
    cur.end = len(data)
    cur.missing = 0
    cur.tree = tree
    cur._stack = [msg.fields]
    cur.last_offset = pos
    cur.last_length = 0
    cur._raw = b""
    cur._raw_start = cur._raw_stop = pos
    if not _COMPILED:  # compiled, _starts is a C array in the Cursor itself
        cur._starts = list(_NO_STARTS)
    cur._fields = -1  # no cstrings yet


def _decoded(data, start, stop, encoding):
    """``data[start:stop].decode(encoding, "replace")``; the encodings the dissectors use are named as literals,
    which the compiled build decodes from the bytes in place with a C call: no slice, no method call."""
    if encoding == "latin-1":
        return data[start:stop].decode("latin-1", "replace")
    if encoding == "utf-8":
        return data[start:stop].decode("utf-8", "replace")
    return data[start:stop].decode(encoding, "replace")


def _width(st):
    """``st.size``, known without an attribute lookup for the formats unpack() puts together."""
    if st is _U8:
        return 1
    if st is _U16LE or st is _I16LE or st is _U16BE:
        return 2
    if st is _I32LE or st is _U32LE or st is _I32BE or st is _U32BE:
        return 4
    return st.size


def as_bytes(data):
    """``data`` as bytes, the object itself where it is bytes: what the compiled readers read in C (a payload may
    come as a bytearray or memoryview from an API caller)."""
    return data if type(data) is bytes else bytes(data)


def cut(data, start, stop):
    """``data[start:stop]`` for ``start`` not negative. Compiled, the bytes are cut through a char pointer
    (cursor.pxd): one C call, where slicing a bytes object goes through a slice object; ``stop`` past the end
    and ``start`` past ``stop`` are brought in first, as slicing does."""
    size = len(data)
    if stop > size:
        stop = size
    if start > stop:
        start = stop
    raw = data
    return raw[start:stop]


def unpack(st, data, pos):
    """The number the struct ``st`` reads at ``pos`` (its bytes are all there). The formats the dissectors read
    most are put together from their bytes: compiled, that is C arithmetic instead of a call into struct."""
    if st is _U8:
        return data[pos]
    if st is _U16LE or st is _I16LE:
        value = data[pos] | data[pos + 1] << 8
        return value - 0x10000 if st is _I16LE and value >= 0x8000 else value
    if st is _U16BE:
        return data[pos] << 8 | data[pos + 1]
    if st is _I32LE or st is _U32LE:
        value = data[pos + 3]  # first, so that the top byte's shift is done in 64 bits
        value = value << 24 | data[pos + 2] << 16 | data[pos + 1] << 8 | data[pos]
        return value - 0x100000000 if st is _I32LE and value >= 0x80000000 else value
    if st is _I32BE or st is _U32BE:
        value = data[pos]
        value = value << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]
        return value - 0x100000000 if st is _I32BE and value >= 0x80000000 else value
    return st.unpack_from(data, pos)[0]


def _terminator(data, pos, end):
    """The offset of the first null byte in data[pos:end], or -1."""
    stop = min(end, len(data))
    while pos < 0 and pos < stop:  # a position before the data: indexing counts it from the end
        if data[pos] == 0:
            return pos
        pos += 1
    raw = data  # compiled: a char pointer (cursor.pxd), each byte compared in C without a bounds check
    while pos < stop:
        if raw[pos] == 0:
            return pos
        pos += 1
    return -1


def _decimal(data, start, stop):
    """The number data[start:stop] writes in decimal (ASCII digits, a minus sign first where negative), or None
    where it writes none."""
    first = start + 1 if stop - start > 1 and data[start] == 0x2D else start  # 0x2D: "-"
    if first == stop:
        return None
    exact = stop - first <= MAX_EXACT_DIGITS
    if not exact and stop - start > MAX_DECIMAL_DIGITS:  # an exact number is shorter than the limit
        return None
    raw = data  # compiled: a char pointer (cursor.pxd), read without a bounds check where start is not negative
    value = 0
    for index in range(first, stop):
        digit = (raw[index] if index >= 0 else data[index]) - 0x30
        if digit < 0 or digit > 9:
            return None
        if exact:
            value = value * 10 + digit
    if not exact:
        return int(data[start:stop])  # raises ValueError beyond int()'s limit of digits
    return -value if first > start else value
