"""A dictionary with a size limit that evicts its oldest entry and counts evictions."""

from collections import OrderedDict


class BoundedDict(OrderedDict):
    def __init__(self, limit):
        super().__init__()
        self.limit = limit
        self.evicted = 0

    def __reduce__(self):  # pickled to carry a -j worker's state to the parent
        return self.__class__, (self.limit,), {"evicted": self.evicted}, None, iter(self.items())

    def put(self, key, value):
        """Insert or refresh; return the (key, value) evicted to make room, or None."""
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.limit:
            self.evicted += 1
            return self.popitem(last=False)
        return None
