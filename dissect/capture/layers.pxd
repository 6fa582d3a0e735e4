# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from libc.stdint cimport int64_t, uint64_t
from dissect.core.bounded cimport kept
from dissect.core.cursor cimport cut
from dissect.core.fmt cimport decimal_text

# The constants that the per-frame path compares with C integers, as C integers themselves: C globals,
# so not attributes of the compiled module (nothing imports them).
cdef int ETHERTYPE_IPV4, ETHERTYPE_IPV6
cdef int VLAN_TPIDS[3]
cdef int IPV6_EXTENSIONS[4]
cdef Py_ssize_t ADDRESS_SLOTS
cdef int64_t[::1] _numbers
cdef list _texts
cdef Py_ssize_t V6_SLOTS
cdef uint64_t[::1] _v6_high, _v6_low
cdef list _v6_texts
cdef Py_ssize_t ETHERNET_TEXTS
cdef dict _ethernet_texts
@cython.locals(text=str)
cpdef str _ethernet_summary(bytes data)
cpdef str _ip_summary(version, src, dst)
cpdef str _udp_summary(sport, dport)
cpdef str _tcp_summary(sport, dport, seq, flags)
cdef dict IP_TITLES
cdef Py_ssize_t PORT_SLOTS
cdef int[::1] _port_numbers
cdef list _ports
@cython.locals(slot=Py_ssize_t)
cdef object _port(int number)

cdef class Layer:
    cdef public object key, offset, length, _describe, _args

@cython.locals(args=tuple)
cpdef str layer_summary(Layer layer)

cdef class Packet:
    cdef public object _layers, top, src, dst, sport, dport, transport, ip_proto, payload, payload_offset, ip_id
    cdef public object fragment, tcp_seq, tcp_flags, tcp_stream, problem, _frame, cut

cdef _empty(Packet packet)
@cython.locals(packet=Packet)
cpdef Packet decode_frame(data, linktype, bint keep_layers=*)
cpdef tuple ethernet_ip_pair(data)
@cython.locals(size=Py_ssize_t)
cdef tuple _ethernet_ip_pair(bytes data)
@cython.locals(index=Py_ssize_t)
cdef bytes _ordered_pair(bytes data, Py_ssize_t at, Py_ssize_t width)
cdef bint _is_extension(int next_header)

@cython.locals(layer=Layer)
cdef _add_layer(Packet packet, key, offset, length, describe, tuple args=*)

@cython.locals(offset=Py_ssize_t, ethertype=int)
cdef _ethernet(Packet packet, bytes data)
cdef _network(Packet packet, bytes data, Py_ssize_t offset, int ethertype)
@cython.locals(ver_ihl=int, ihl=Py_ssize_t, total=Py_ssize_t, ident=int, frag=int, proto=int, end=Py_ssize_t,
               frag_offset=Py_ssize_t)
cdef _ipv4(Packet packet, bytes data, Py_ssize_t offset)
@cython.locals(a=cython.uint, b=cython.uint, c=cython.uint, d=cython.uint, number=cython.uint, slot=Py_ssize_t)
cdef _ipv4_text(bytes data, Py_ssize_t offset)
@cython.locals(plen=Py_ssize_t, nxt=int, end=Py_ssize_t, pos=Py_ssize_t, frag=int, size=Py_ssize_t)
cdef _ipv6(Packet packet, bytes data, Py_ssize_t offset)
@cython.locals(high=uint64_t, low=uint64_t, slot=Py_ssize_t)
cdef _ipv6_text(bytes data, Py_ssize_t offset)
@cython.locals(number=uint64_t, index=Py_ssize_t)
cdef uint64_t _u64(bytes data, Py_ssize_t offset)
cdef _transport(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end, int proto)
@cython.locals(sport=object, dport=object, ulen=Py_ssize_t, stop=Py_ssize_t)  # the ports boxed once, for two uses
cdef _udp(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end)
@cython.locals(sport=object, dport=object, hlen=Py_ssize_t, start=Py_ssize_t)
cdef _tcp(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end)

cdef list TCP_FLAG_TEXTS
cpdef str tcp_flag_text(flags)
