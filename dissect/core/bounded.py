"""A dictionary with a size limit that evicts its least recently put entry."""

from collections import OrderedDict

_move_to_end = OrderedDict.move_to_end  # called unbound: no look-up of the method on each table
_popitem = OrderedDict.popitem          # likewise, and its argument given by position: no keyword parsing


class BoundedDict(OrderedDict):
    __slots__ = ("limit",)

    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def __reduce__(self):  # pickled to carry a -j worker's state to the parent
        return self.__class__, (self.limit,), None, None, iter(self.items())

    def put(self, key, value):
        """Insert or refresh; return the (key, value) evicted to make room, or None."""
        return put(self, key, value)


def put(table, key, value):
    """``table.put(key, value)``, which compiled callers call as a C function."""
    size = len(table)
    table[key] = value
    if len(table) == size:  # the key was there: it becomes the most recent
        _move_to_end(table, key)
    if len(table) > table.limit:
        return _popitem(table, False)  # the oldest
    return None


def refreshed(table, key):
    """The value of ``key`` in ``table``, now its most recent entry; None without it (or if its value is None,
    which then stays where it is)."""
    value = dict.get(table, key)  # an OrderedDict keeps its values in its dict: a C call when compiled
    if value is not None:
        _move_to_end(table, key)
    return value
