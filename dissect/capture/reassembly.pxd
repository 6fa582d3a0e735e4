# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. A segment's path through the reassembler is cpdef with
# its stream, direction, delivery and packet typed: its steps call each other and read them in C.

cimport cython
from dissect.capture.layers cimport Packet
from dissect.core.bounded cimport BoundedDict, popped, put, refreshed

cdef class Chunk:
    cdef public object data, frame, frame_offset

cdef class Delivery:
    cdef public object stream, direction, pieces, findings, closed, finished, evicted

cdef class Gap:
    cdef public object size, frame, cut

cdef class IPv4Defragmenter:
    cdef public object pending, max_bytes, total

cdef class _Datagram:
    cdef public object pieces, starts, ends, frames, end, cut, cost

cdef class _Direction

cdef class TcpReassembler:
    cdef public BoundedDict streams, recently_closed
    cdef public object max_pending, max_total, total_pending, next_index
    @cython.locals(stream=TcpStream, delivery=Delivery, direction=int)
    cpdef segment(self, Packet packet, frame_number)
    cpdef _end_early(self, TcpStream old, Delivery delivery, finding)
    @cython.locals(side=_Direction, other=_Direction)
    cpdef _close_if_done(self, TcpStream stream, Packet packet, key, Delivery delivery, frame=*)
    cpdef _segment(self, _Direction side, Packet packet, frame, Delivery delivery)
    cpdef _segment_bytes(self, _Direction side, Packet packet, frame, Delivery delivery)
    cpdef _data(self, _Direction side, seq, data, frame, offset, Delivery delivery)
    cpdef _deliver(self, _Direction side, data, frame, offset, Delivery delivery)
    cpdef _drain(self, _Direction side, Delivery delivery)

cdef class _Closed:
    cdef public object index, client, ends, starts, dissected
    cpdef int direction_of(self, src, sport) except -1

cdef class TcpStream:
    cdef public object index, key, client, dissector, parsers, ignored, probed, probe_held
    cdef public tuple directions, ends
    cpdef int direction_of(self, src, sport) except -1

cpdef tuple _key(Packet packet)
@cython.locals(side=_Direction, direction=int)
cpdef bint _new_connection(TcpStream stream, Packet packet) except -1
cpdef bint _holds_bytes(TcpStream stream) except -1
@cython.locals(side=_Direction)
cpdef bint _unsynced_connection(TcpStream stream, Packet packet) except -1
cdef bint _unsynced_after_close(_Closed closed, Packet packet) except -1
cdef bint _outside(seq, next_seq, delivered) except -1
cdef _beyond_fin(_Direction side, seq)
cdef _pass_fin(_Direction side)
cdef _sum_gaps(Delivery delivery, Py_ssize_t first_finding, Py_ssize_t first_piece)
cpdef tuple _client(Packet packet)
@cython.locals(side=_Direction, count=int)
cpdef int _finished_sides(tuple directions) except -1

cdef class _Direction:
    cdef public object index, next_seq, next_off, pending, heap, pending_bytes, history, fin_seq
    cdef public object closed
    cdef public dict cuts
    cdef public list cut_heap
