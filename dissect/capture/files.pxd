# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from libc.stdint cimport int64_t
from dissect.core.cursor cimport cut

cdef class Frame:
    cdef public object number, ts, caplen, wirelen, linktype, data, iface, error

cpdef Frame new_frame(number, ts, caplen, wirelen, linktype, data, iface, error)
cdef _fill(Frame frame, number, ts, caplen, wirelen, linktype, data, iface, error)


cdef class _Chunks:
    cdef object handle, read1, name
    cdef Py_ssize_t pos
    cdef bytes data
    cdef int64_t position, number
    cdef Frame _next(self)
    @cython.locals(rest=bytes, parts=list, have=Py_ssize_t, missing=Py_ssize_t)
    cdef _refill(self, Py_ssize_t need)

cdef class _PcapRecords(_Chunks):
    cdef object linktype, record
    cdef bint little
    cdef double scale
    cdef unsigned int snaplen
    # The header's u32 lengths stay unsigned: read into Py_ssize_t on a 32-bit build, a length of 2**31 or more
    # would turn negative and pass the checks that bound it.
    @cython.locals(data=bytes, pos=Py_ssize_t, number=cython.longlong, position=cython.longlong, little=bint,
                   sec=cython.uint, frac=cython.uint, caplen=cython.uint, wirelen=cython.uint)
    cdef Frame _next(self)

cdef class _PcapngBlocks(_Chunks):
    cdef bint little
    cdef list interfaces
    cdef Py_ssize_t notes
    cdef object last_ts
    @cython.locals(frame=Frame)
    cdef Frame _next(self)
    @cython.locals(data=bytes, pos=Py_ssize_t, position=cython.longlong, have=Py_ssize_t, little=bint,
                   block_type=cython.uint, total=cython.uint, trailer=cython.uint, frame=Frame)
    cdef Frame _block(self)
    @cython.locals(little=bint, interfaces=list, iface_id=cython.uint, caplen=cython.uint, high=cython.ulonglong,
                   low=cython.ulonglong, ts_units=cython.ulonglong)
    cdef Frame _enhanced(self, bytes data, Py_ssize_t pos, Py_ssize_t total)
    @cython.locals(head=bytes)
    cdef Frame _skip_oversized(self, unsigned int block_type, Py_ssize_t total)
    @cython.locals(kept=bytes)
    cdef _pass_block(self, unsigned int block_type, Py_ssize_t total)
    @cython.locals(kept=bytes, trailer=bytes, left=Py_ssize_t, end=cython.uint)
    cdef bytes _read_past(self, Py_ssize_t total, Py_ssize_t keep)
    cdef _tell_note(self, Frame frame)
    cdef str _order(self)
    cdef bytes _take(self, Py_ssize_t size)
    @cython.locals(have=Py_ssize_t, step=Py_ssize_t)
    cdef Py_ssize_t _skip(self, Py_ssize_t size)

cdef bint _COMPILED
cdef Py_ssize_t READ_CHUNK
cdef unsigned int _RECORD_LIMIT
cdef unsigned int SHB_TYPE
cdef unsigned int _u32(bytes data, Py_ssize_t pos, bint little)
cdef bint _holds_packet(unsigned int block_type)
