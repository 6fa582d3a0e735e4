"""A mapping with a size limit that evicts its least recently used entry.

Each entry has a slot: its key and value are kept in two lists, and the order of use in two arrays of slot
numbers, the entry used before it (``older``) and the one used after it (``newer``). Slot 0 is the ring's
sentinel: its newer entry is the oldest, its older entry the newest. Making an entry the most recent
(``refreshed``, ``put``) is one look-up of the key and four slot numbers changed; ``collections.OrderedDict``,
which the tables were before, looks the key up twice to do it. No entry is a Python object of its own, so the
tables add nothing for the garbage collector to walk and hold no reference cycles.

The mapping offers what the tables' users took from the ``OrderedDict``: ``get``, ``pop``, ``popitem(last=)``,
``move_to_end(key, last=)``, iteration oldest first, ``keys``, ``values`` and ``items`` (lists, oldest first),
``update``, ``clear``, pickling; and ``newest_first``, which reads the entries newest first one at a time.
A caller that uses an entry again and again may keep its slot (``newest``) and reach it without hashing the key.
"""

from array import array

_MISSING = object()
_SLOT = "i"  # the arrays' type: a C int slot number
# The slot numbers as Python integers, shared by every table: an entry holds a reference to one of these in
# its table's dict, not an integer object of its own. As long as the most slots any table has had.
_NUMBERS = [0]


class BoundedDict:
    """At most ``limit`` entries once ``put`` has made room; ``table[key] = value`` adds without evicting, as
    a dictionary would, and leaves a present key where it is."""
    __slots__ = ("limit", "_slots", "_keys", "_values", "_older", "_newer", "_free")

    def __init__(self, limit):
        self.limit = limit
        _empty(self)

    def __len__(self):
        return len(self._slots)

    def __contains__(self, key):
        return key in self._slots

    def __getitem__(self, key):
        return self._values[self._slots[key]]

    def __setitem__(self, key, value):
        slot = self._slots.get(key)
        if slot is None:
            _add(self, key, value)
        else:
            self._values[slot] = value

    def __delitem__(self, key):
        _release(self, self._slots.pop(key))

    def __iter__(self):
        return iter(self.keys())

    def __eq__(self, other):
        if isinstance(other, BoundedDict):
            return self.items() == other.items()
        try:
            return len(self) == len(other) and all(key in other and other[key] == value
                                                   for key, value in self.items())
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return f"BoundedDict({self.limit}, {dict(self.items())!r})"

    def __reduce__(self):  # pickled to carry a -j worker's state to the parent
        return BoundedDict, (self.limit,), None, None, iter(self.items())

    def keys(self):
        keys = self._keys
        return [keys[slot] for slot in _in_order(self)]

    def values(self):
        values = self._values
        return [values[slot] for slot in _in_order(self)]

    def items(self):
        keys, values = self._keys, self._values
        return [(keys[slot], values[slot]) for slot in _in_order(self)]

    def newest_first(self):
        """(key, value) pairs from the newest entry back, made one at a time: a reader that stops early pays only for
        what it read (``reversed(table.items())`` lists them all first). The table must not change meanwhile."""
        slot = self._older[0]
        while slot != 0:
            yield self._keys[slot], self._values[slot]
            slot = self._older[slot]

    def get(self, key, default=None):
        slot = self._slots.get(key)
        return default if slot is None else self._values[slot]

    def pop(self, key, default=_MISSING):
        if key in self._slots:
            return popped(self, key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def popitem(self, last=True):
        """The newest (key, value), or with ``last=False`` the oldest, taken out."""
        slot = self._older[0] if last else self._newer[0]
        if slot == 0:
            raise KeyError("popitem(): the table is empty")
        return _take(self, slot)

    def move_to_end(self, key, last=True):
        slot = self._slots[key]
        _unlink(self, slot)
        if last:
            _insert(self, slot, self._older[0], 0)
        else:
            _insert(self, slot, 0, self._newer[0])

    def update(self, entries=()):
        """Add or replace, in the order given (a mapping's or (key, value) pairs'), without evicting."""
        if hasattr(entries, "keys"):
            entries = [(key, entries[key]) for key in entries.keys()]
        for key, value in entries:
            self[key] = value

    def clear(self):
        _empty(self)

    def put(self, key, value):
        """Insert or refresh; return the (key, value) evicted to make room, or None."""
        return put(self, key, value)


def put(table, key, value):
    """``table.put(key, value)``: ``key`` becomes the most recent entry; past the limit the oldest goes, and
    is returned as (key, value). The key is looked up and, when new, added by one ``setdefault`` with the slot
    a new entry takes (a key hashed once: most keys put are new); a present key hands that slot back."""
    slot = _vacant(table)
    number = _NUMBERS[slot]
    try:
        found = table._slots.setdefault(key, number)
    except BaseException:  # a key that cannot be hashed or compared: the slot goes back, the table is as it was
        _give_back(table, slot)
        raise
    if found is number:
        _occupy(table, slot, key, value)
    else:
        _give_back(table, slot)
        slot = found
        table._values[slot] = value
        _refresh(table, slot)
    if len(table._slots) > table.limit:
        return _take(table, table._newer[0])  # the oldest
    return None


def refreshed(table, key):
    """The value of ``key`` in ``table``, now its most recent entry; None without it."""
    found = table._slots.get(key)
    if found is None:
        return None
    slot = found
    _refresh(table, slot)
    return table._values[slot]


def peek(table, key):
    """The value of ``key`` in ``table``, its place unchanged; None without it."""
    found = table._slots.get(key)
    return None if found is None else table._values[found]


def newest(table):
    """The slot of the newest entry of ``table`` (0: none), after ``put`` or ``refreshed`` the one they used: a handle
    on that entry for ``held_at`` and ``refreshed_at``, which hash no key. An entry keeps its slot while it stays."""
    return table._older[0]


def held_at(table, slot, value):
    """Whether the entry in ``slot`` is still ``value``, under the key it had when ``slot`` was taken (``newest``): a
    value is put under one key only."""
    return 0 < slot < len(table._values) and table._values[slot] is value


def refreshed_at(table, slot, value):
    """``held_at``, the entry then made the most recent: ``refreshed`` of its key, through a handle."""
    if not held_at(table, slot, value):
        return False
    _refresh(table, slot)
    return True


def popped(table, key):
    """``table.pop(key, None)``: the value of ``key``, taken out of ``table``; None without it."""
    found = table._slots.pop(key, None)
    if found is None:
        return None
    slot = found
    value = table._values[slot]
    _release(table, slot)
    return value


def kept(table, key, value, limit):
    """``value``, kept in ``table`` (a plain dict) under ``key`` while the table holds fewer than ``limit`` entries:
    a table of the first values made, for texts and tuples that repeat. Past the limit values are made afresh."""
    if len(table) < limit:
        table[key] = value
    return value


def _empty(table):
    table._slots = {}      # key -> slot
    table._keys = [None]   # slot -> key; slot 0 is the ring's sentinel
    table._values = [None]
    table._older = array(_SLOT, [0])
    table._newer = array(_SLOT, [0])
    table._free = 0        # the first free slot, the next one its newer; 0: none


def _add(table, key, value):
    """A new entry, the newest."""
    slot = _vacant(table)
    table._slots[key] = _NUMBERS[slot]
    _occupy(table, slot, key, value)


def _occupy(table, slot, key, value):
    """A vacant slot, its key already in ``_slots``, filled and made the newest entry."""
    table._keys[slot] = key
    table._values[slot] = value
    _insert(table, slot, table._older[0], 0)


def _vacant(table):
    """A slot for a new entry, taken from the free ones, or past the last one used."""
    slot = table._free
    if slot:
        table._free = table._newer[slot]
        return slot
    return _new_slot(table)


def _give_back(table, slot):
    """A vacant slot ``put`` did not fill, made free again."""
    table._newer[slot] = table._free
    table._free = slot


def _new_slot(table):
    """A slot past the last one used, the arrays twice as long when they are full."""
    slot = len(table._keys)
    if slot == len(_NUMBERS):  # a table's next slot is never past the most slots a table has had
        _NUMBERS.append(slot)
    if slot == len(table._older):
        capacity = 2 * slot
        table._older = _grown(table._older, capacity)
        table._newer = _grown(table._newer, capacity)
    table._keys.append(None)
    table._values.append(None)
    return slot


def _grown(links, capacity):
    out = array(_SLOT, [0]) * capacity
    out[:len(links)] = links
    return out


def _take(table, slot):
    """(key, value) of an entry, taken out of the table."""
    key, value = table._keys[slot], table._values[slot]
    del table._slots[key]
    _release(table, slot)
    return key, value


def _release(table, slot):
    """The slot of an entry gone from ``_slots`` unlinked, emptied and made free."""
    _unlink(table, slot)
    table._keys[slot] = table._values[slot] = None
    table._newer[slot] = table._free
    table._free = slot


def _in_order(table):
    """The slots of the entries, oldest first."""
    out = []
    slot = table._newer[0]
    while slot != 0:
        out.append(slot)
        slot = table._newer[slot]
    return out


def _refresh(table, slot):
    """The entry in ``slot`` made the newest."""
    if table._older[0] != slot:
        _unlink(table, slot)
        _insert(table, slot, table._older[0], 0)


def _unlink(table, slot):
    before, after = table._older[slot], table._newer[slot]
    table._newer[before] = after
    table._older[after] = before


def _insert(table, slot, before, after):
    """``slot`` linked between two neighbours: ``_insert(table, slot, table._older[0], 0)`` makes it the
    newest, ``_insert(table, slot, 0, table._newer[0])`` the oldest."""
    table._older[slot] = before
    table._newer[slot] = after
    table._newer[before] = slot
    table._older[after] = slot
