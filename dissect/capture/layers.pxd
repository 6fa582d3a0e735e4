# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython

cdef class Layer:
    cdef public object key, offset, length, _describe, _args

cdef class Packet:
    cdef public object layers, top, src, dst, sport, dport, transport, ip_proto, payload, payload_offset, ip_id
    cdef public object fragment, tcp_seq, tcp_flags, tcp_stream, problem

cdef _ethernet(Packet packet, data)
cdef _ipv4(Packet packet, data, offset)
cdef _udp(Packet packet, data, offset, end)
cdef _tcp(Packet packet, data, offset, end)
