"""A dictionary with a size limit that evicts its least recently put entry."""

from collections import OrderedDict


class BoundedDict(OrderedDict):
    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def __reduce__(self):  # pickled to carry a -j worker's state to the parent
        return self.__class__, (self.limit,), None, None, iter(self.items())

    def put(self, key, value):
        """Insert or refresh; return the (key, value) evicted to make room, or None."""
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.limit:
            return self.popitem(last=False)
        return None
