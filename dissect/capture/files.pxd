# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from libc.stdint cimport int64_t
from dissect.core.cursor cimport cut

cdef class Frame:
    cdef public object number, ts, caplen, wirelen, linktype, data, iface, error

cpdef Frame new_frame(number, ts, caplen, wirelen, linktype, data, iface, error)
cdef _fill(Frame frame, number, ts, caplen, wirelen, linktype, data, iface, error)


cdef class _PcapRecords:
    cdef object handle, read1, name, linktype, record
    cdef bint little
    cdef double scale
    cdef Py_ssize_t snaplen, pos
    cdef bytes data
    cdef int64_t position, number
    @cython.locals(data=bytes, pos=Py_ssize_t, number=cython.longlong, position=cython.longlong, little=bint,
                   sec=cython.uint, frac=cython.uint, caplen=Py_ssize_t, wirelen=cython.uint)
    cdef Frame _next(self)
    @cython.locals(rest=bytes)
    cdef _refill(self, Py_ssize_t need)

cdef bint _COMPILED
cdef Py_ssize_t READ_CHUNK
cdef unsigned int _u32(bytes data, Py_ssize_t pos, bint little)
