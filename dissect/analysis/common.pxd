# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cdef class Timing:
    cdef public object count, total_ns, low, high

cdef class ServersSeen:
    cdef public object rows
