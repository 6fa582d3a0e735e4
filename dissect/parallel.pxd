# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every worker asks the Partition for every frame's
# owner: it is an extension type, its tables C struct members.

cimport cython
from libc.stdint cimport uint64_t
from dissect.capture.files cimport Frame
from dissect.capture.layers cimport Packet, decode_frame, ethernet_ip_pair
from dissect.core.interrupt cimport take_signals
from dissect.analysis.abuse cimport TrafficAnalyzer
from dissect.session cimport Session

cdef class PairTable:
    cdef public Py_ssize_t limit, count
    cdef uint64_t[::1] numbers
    cdef int[::1] owners
    @cython.locals(number=uint64_t, slot=Py_ssize_t, owner=int)
    cpdef get(self, bytes pair)
    @cython.locals(mask=Py_ssize_t, slot=Py_ssize_t)
    cdef Py_ssize_t _slot(self, uint64_t number)

@cython.locals(number=uint64_t, index=Py_ssize_t)
cdef uint64_t _folded(bytes pair)
cdef uint64_t FNV_BASIS, FNV_PRIME, MASK64

cdef class Partition:
    cdef public Py_ssize_t jobs
    cdef public double merge
    cdef public PairTable pairs
    cdef public double[::1] load
    cdef public double fixed
    cdef public object bounds
    @cython.locals(load="double[::1]", best=Py_ssize_t, worker=Py_ssize_t)
    cpdef Py_ssize_t _least_loaded(self) except -1
    @cython.locals(cost=double, worker=Py_ssize_t, found=object)
    cpdef Py_ssize_t owner(self, Frame frame, pair) except -1
    @cython.locals(cost=double, fixed=double)
    cpdef double _fixed_load(self, Frame frame, bint pinned) except? -1
    cpdef Py_ssize_t _place(self, pair) except -1

cpdef _zeros(Py_ssize_t count)

@cython.locals(found=tuple, packet=Packet)
cpdef tuple address_pair(Frame frame)
@cython.locals(first=bytes, second=bytes)
cpdef bytes pair_key(src, dst)
cdef bytes _packed(str address)

# The parent counts every message of the run (the abuse analysis), a worker asks every frame's owner: in C.
@cython.locals(traffic=TrafficAnalyzer, flats=list, at="long long[::1]", worker=Py_ssize_t, flat=list,
               index=Py_ssize_t)
cpdef _count(traffic, list messages)
@cython.locals(best=Py_ssize_t, worker=Py_ssize_t, flat=list, frame="long long", lowest="long long")
cdef Py_ssize_t _next_worker(list flats, long long[::1] at) except -2
@cython.locals(slot=Py_ssize_t, kept=tuple, endpoint=tuple)
cdef tuple _shared(address, port)
cdef Py_ssize_t EVENT_FIELDS
@cython.locals(flat=list, sender=tuple, receiver=tuple)
cpdef list _flat(list events)
cdef list _endpoints
cdef Py_ssize_t SHARED_SLOTS

cdef class _Ring:
    cdef public Py_ssize_t size, head, released
    cdef public object memory, view
    cdef public int acks, ack_sender
    @cython.locals(length=Py_ssize_t, start=Py_ssize_t)
    cpdef Py_ssize_t place(self, text) except -2
    @cython.locals(start=Py_ssize_t, skip=Py_ssize_t)
    cdef Py_ssize_t _room(self, Py_ssize_t length) except -2

cdef class _Text:
    cdef public list parts
    cdef public object write_bytes
    cpdef bytes take(self)

cdef Py_ssize_t RING_TEXT
@cython.locals(session=Session, partition=Partition, frame=Frame, start=Py_ssize_t, sink=_Text, ring=_Ring, marked=bint,
               text=bytes, frames=Py_ssize_t, size=Py_ssize_t)
cpdef _work(index, args, partition, send, ring, stop)
