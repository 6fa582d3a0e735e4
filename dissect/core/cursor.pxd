# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

from dissect.core.model cimport Field, Message

cdef class Cursor:
    cdef public object data, pos, end, tree, msg, _stack, last_offset, last_length, last_raw, spans
