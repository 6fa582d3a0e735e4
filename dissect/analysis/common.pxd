# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython

cdef class Timing:
    cdef public object count, total_ns, low, high

cdef class ServersSeen:
    cdef public object rows
    @cython.locals(row=tuple, entry=dict, stamps=dict)
    cpdef update(self, server, frame, dict fields)
