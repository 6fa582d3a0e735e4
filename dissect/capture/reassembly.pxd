# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cdef class Chunk:
    cdef public object data, frame, frame_offset

cdef class Delivery:
    cdef public object stream, direction, pieces, findings, closed, evicted

cdef class Gap:
    cdef public object size, frame

cdef class IPv4Defragmenter:
    cdef public object pending, max_bytes, total

cdef class _Datagram:
    cdef public object pieces, starts, ends, frames, end, cost

cdef class TcpReassembler:
    cdef public object streams, max_pending, max_total, total_pending, next_index, recently_closed

cdef class TcpStream:
    cdef public object index, key, client, directions, dissector, parsers, ignored, probed

cdef class _Direction:
    cdef public object index, next_seq, next_off, pending, heap, pending_bytes, history, fin_seq
    cdef public object closed
