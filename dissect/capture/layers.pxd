# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython

cdef class Layer:
    cdef public object key, offset, length, _describe, _args

cdef class Packet:
    cdef public object layers, top, src, dst, sport, dport, transport, ip_proto, payload, payload_offset, ip_id
    cdef public object fragment, tcp_seq, tcp_flags, tcp_stream, problem

@cython.locals(layer=Layer)
cdef _add_layer(Packet packet, key, offset, length, describe, tuple args=*)

@cython.locals(offset=Py_ssize_t, ethertype=int)
cdef _ethernet(Packet packet, bytes data)
@cython.locals(ver_ihl=int, ihl=Py_ssize_t, total=Py_ssize_t, ident=int, frag=int, proto=int, end=Py_ssize_t,
               frag_offset=Py_ssize_t)
cdef _ipv4(Packet packet, bytes data, Py_ssize_t offset)
@cython.locals(sport=int, dport=int, ulen=Py_ssize_t, stop=Py_ssize_t)
cdef _udp(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end)
cdef _tcp(Packet packet, data, offset, end)
