# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. The read loop sets ``holding`` twice a frame and
# takes signals between frames: in C.

from cpython.exc cimport PyErr_CheckSignals

cdef class DeferredInterrupt:
    cdef public bint pending, holding

cpdef DeferredInterrupt defer_interrupt(bint holding=*)
cpdef take_signals()
cdef bint _forced, _COMPILED
