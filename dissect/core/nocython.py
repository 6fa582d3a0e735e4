"""The names of Cython's pure-Python mode that the sources use, for where Cython is not installed.

A few classes made for every frame (a frame's Fields, its Message, Cursor, Packet) carry ``@cython.freelist(n)``:
the compiled build keeps up to n freed objects of the class and makes the next ones from them, without an
allocation. The abuse analysis's table entries carry ``@cython.no_gc``: the compiled build leaves them out of the
cyclic garbage collector. Plain Python has no use for these decorators: where Cython is installed, its own
``cython`` module makes them no-ops; where it is not, these do."""


def cclass(cls):
    """``cython.cclass``: the class is an extension type (its .pxd declares it; needed here for ``freelist``)."""
    return cls


def freelist(size):
    """``cython.freelist``: keep up to ``size`` freed objects of the class for reuse."""
    return lambda cls: cls


def no_gc(cls):
    """``cython.no_gc``: the extension type's objects are not followed by the cyclic garbage collector."""
    return cls
