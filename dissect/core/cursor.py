"""A cursor over a message's bytes that records the offset and length of what it reads.

Dissectors read through a Cursor and never compute offsets by hand. With ``tree``
off (the summary path) the cursor only decodes values: no Field is built.
"""

import struct

from .model import Field

U8 = struct.Struct("B")
I8 = struct.Struct("b")
U16BE = struct.Struct(">H")
U16LE = struct.Struct("<H")
I16LE = struct.Struct("<h")
U32BE = struct.Struct(">I")
U32LE = struct.Struct("<I")
I32LE = struct.Struct("<i")

# Decimal text longer than this (sign included) is not read as a number: int() refuses more than 4300
# digits (and slows with the square of the length), and no field of these protocols holds one that long.
MAX_DECIMAL_DIGITS = 4000


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


class _Subtree:
    __slots__ = ("cursor", "node")

    def __init__(self, cursor, node):
        self.cursor = cursor
        self.node = node

    def __enter__(self):
        return self.node

    def __exit__(self, *exc):
        cursor = self.cursor
        if cursor.tree:
            node = self.node
            end = cursor.pos
            for child in node.children:  # a field cut short by the end of the data may reach past pos
                end = max(end, child.offset + child.length)
            node.length = end - node.offset
            cursor._stack.pop()
        return False


class _NoSubtree:
    """The summary path's subtree: nothing to nest, nothing to measure."""

    __slots__ = ()

    def __enter__(self):
        return _NO_NODE

    def __exit__(self, *exc):
        return False


_NO_SUBTREE = _NoSubtree()


class Cursor:
    __slots__ = ("data", "pos", "end", "tree", "msg", "_stack", "last_offset", "last_length", "last_raw", "spans")

    def __init__(self, msg, data, tree=True, pos=0):
        self.msg = msg
        self.data = data
        self.pos = pos
        self.end = len(data)
        self.tree = tree
        self._stack = [msg.fields]
        self.last_offset = pos
        self.last_length = 0
        self.last_raw = b""
        self.spans = []

    # -- state ---------------------------------------------------------------
    def remaining(self):
        return self.end - self.pos

    def at_end(self):
        return self.pos >= self.end

    # -- adding nodes --------------------------------------------------------
    # ``spec`` is the field's entry in its protocol's FieldTable; ``name`` overrides the entry's name
    # where one entry serves several nodes (the players of a list).
    def add(self, spec, offset, length, value, display=None, generated=False, name=None):
        """Add a field for bytes already read (or a computed field over them)."""
        if not self.tree:
            return None
        node = Field(spec.key, name or spec.name, offset, length, value, spec.fmt, display, generated)
        self._stack[-1].append(node)
        return node

    def add_child(self, spec, offset, length, value, display=None):
        """Add a field under the last field added (bit fields, parts of a value)."""
        if not self.tree:
            return None
        node = Field(spec.key, spec.name, offset, length, value, spec.fmt, display, True)
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
        if not self.tree:
            return _NO_SUBTREE
        node = Field(spec.key, name or spec.name, self.pos, 0, value, spec.fmt)
        self._stack[-1].append(node)
        node.children = []
        self._stack.append(node.children)
        return _Subtree(self, node)

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
            if available > 0:
                self.add(spec, self.pos, available, self.data[self.pos:self.end], name=spec.name + " [truncated]")
            raise Truncated(spec.key, spec.name, self.pos, n, available)

    def number(self, st, spec):
        pos = self.pos
        size = st.size
        if pos + size > self.end:
            self._need(size, spec)
        value = st.unpack_from(self.data, pos)[0]
        self.pos = pos + size
        self.last_offset = pos
        self.last_length = size
        if self.tree:
            self._stack[-1].append(Field(spec.key, spec.name, pos, size, value, spec.fmt))
        return value

    def u8(self, spec):
        return self.number(U8, spec)

    def raw(self, spec, n):
        pos = self.pos
        self._need(n, spec)
        value = bytes(self.data[pos:pos + n])
        self.pos = pos + n
        self.last_offset = pos
        self.last_length = n
        self.add(spec, pos, n, value)
        return value

    def cstring(self, spec, encoding="utf-8"):
        """A null-terminated string; the field covers the terminator too.

        ``last_raw`` keeps the bytes before the terminator, for byte-limit checks.
        """
        pos = self.pos
        nul = self.data.find(b"\0", pos, self.end)
        if nul < 0:
            available = self.end - pos
            self.last_raw = bytes(self.data[pos:self.end])
            self.last_offset = pos
            self.last_length = available
            self.add(spec, pos, available, self.last_raw.decode(encoding, "replace"),
                     name=spec.name + " [unterminated]")
            raise Unterminated(spec.key, spec.name, pos, available)
        raw = bytes(self.data[pos:nul])
        value = raw.decode(encoding, "replace")
        self.pos = nul + 1
        self.last_raw = raw
        self.last_offset = pos
        self.last_length = nul + 1 - pos
        if self.tree:
            self._stack[-1].append(Field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt))
        return value

    def cdecimal(self, spec):
        """A null-terminated decimal number: the int, or None where the text is not one (the field then shows
        the text). ``last_raw`` keeps the bytes before the terminator."""
        pos = self.pos
        nul = self.data.find(b"\0", pos, self.end)
        if nul < 0:
            self.cstring(spec, "latin-1")  # records the cut text and raises Unterminated
        raw = self.data[pos:nul]
        digits = raw[1:] if raw[:1] == b"-" else raw
        value = int(raw) if len(raw) <= MAX_DECIMAL_DIGITS and digits.isdigit() else None
        self.pos = nul + 1
        self.last_raw = raw
        self.last_offset = pos
        self.last_length = nul + 1 - pos
        if self.tree:
            display = None if value is not None else f'"{raw.decode("latin-1")}" (not a decimal number)'
            self._stack[-1].append(Field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt, display))
        return value

    def cstrings(self, specs):
        """Consecutive null-terminated fields in one call: ``specs`` holds (field spec, kind) with kind
        "text" (UTF-8) or "decimal" (the int, or None where the text is not one). Returns the values;
        ``spans`` keeps (offset, length, raw bytes) of each, for checks and findings."""
        data, pos, end = self.data, self.pos, self.end
        find = data.find
        parent = self._stack[-1] if self.tree else None
        values = []
        spans = self.spans = []
        for spec, kind in specs:
            nul = find(b"\0", pos, end)
            if nul < 0:
                self.pos = pos
                self.cstring(spec)  # records the cut field and raises Unterminated
            raw = data[pos:nul]
            if kind == "text":
                value = raw.decode("utf-8", "replace")
            elif len(raw) <= MAX_DECIMAL_DIGITS and (raw.isdigit() or (raw[:1] == b"-" and raw[1:].isdigit())):
                value = int(raw)
            else:
                value = None
            if parent is not None:
                display = f'"{raw.decode("latin-1")}" (not a decimal number)' if value is None else None
                parent.append(Field(spec.key, spec.name, pos, nul + 1 - pos, value, spec.fmt, display))
            spans.append((pos, nul + 1 - pos, raw))
            values.append(value)
            pos = nul + 1
        self.pos = pos
        if spans:
            self.last_offset, self.last_length, self.last_raw = spans[-1]
        return values

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
