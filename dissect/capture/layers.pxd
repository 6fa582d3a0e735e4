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
cdef bint _COMPILED
@cython.locals(text=str)
cpdef str _ethernet_summary(bytes data)
cpdef str _ip_summary(version, src, dst)
cpdef str _udp_summary(sport, dport)
cpdef str _tcp_summary(sport, dport, seq, flags)

cdef extern from *:
    """
    /* The lower layers' summary lines (layer_summary: -V writes three or four a frame) written into a C buffer and
       made a str once, where an f-string makes a str of each number and joins the parts. Each returns None where a
       part is not what the decoder puts there (a number that is no int from 0 to 2**64 - 1, an address that is no
       str of ASCII characters, data shorter than its addresses), for the f-string to write. */
    #define DISSECT_LAYER_TEXT 256

    static inline PyObject *dissect_layer_str(const char *text, Py_ssize_t size) {
        PyObject *result = PyUnicode_New(size, 127);
        if (result != NULL)
            memcpy(PyUnicode_1BYTE_DATA(result), text, size);
        return result;
    }

    static inline PyObject *dissect_layer_none(void) {
        Py_INCREF(Py_None);
        return Py_None;
    }

    static inline char *dissect_layer_raw(char *out, const char *text) {
        size_t size = strlen(text);
        memcpy(out, text, size);
        return out + size;
    }

    /* An int's digits (what f"{value}" writes); NULL for anything else. */
    static inline char *dissect_layer_number(char *out, PyObject *value) {
        unsigned long long magnitude;
        int negative, digits;
        if (!dissect_magnitude(value, &magnitude, &negative) || negative)  /* core/fmt.pxd */
            return NULL;
        digits = dissect_decimal_size(magnitude);
        dissect_decimal_back(out + digits, magnitude, digits);
        return out + digits;
    }

    /* A str of at most 64 ASCII characters, as it is; NULL for anything else. */
    static inline char *dissect_layer_ascii(char *out, PyObject *text) {
        Py_ssize_t size;
        if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text) || (size = PyUnicode_GET_LENGTH(text)) > 64)
            return NULL;
        memcpy(out, PyUnicode_1BYTE_DATA(text), size);
        return out + size;
    }

    /* "<title>, Src Port: <sport>, Dst Port: <dport>", the head of the UDP and TCP lines; NULL where a port is no
       such int. */
    static inline char *dissect_layer_ports(char *out, const char *title, PyObject *sport, PyObject *dport) {
        out = dissect_layer_raw(out, title);
        out = dissect_layer_raw(out, ", Src Port: ");
        if ((out = dissect_layer_number(out, sport)) == NULL)
            return NULL;
        out = dissect_layer_raw(out, ", Dst Port: ");
        return dissect_layer_number(out, dport);
    }

    static inline PyObject *dissect_udp_summary(PyObject *sport, PyObject *dport) {
        char text[DISSECT_LAYER_TEXT], *out = text;
        if ((out = dissect_layer_ports(out, "User Datagram Protocol", sport, dport)) == NULL)
            return dissect_layer_none();
        return dissect_layer_str(text, out - text);
    }

    static inline PyObject *dissect_tcp_summary(PyObject *sport, PyObject *dport, PyObject *seq, PyObject *flags) {
        char text[DISSECT_LAYER_TEXT], *out = text;
        if ((out = dissect_layer_ports(out, "Transmission Control Protocol", sport, dport)) == NULL)
            return dissect_layer_none();
        out = dissect_layer_raw(out, ", Seq: ");
        if ((out = dissect_layer_number(out, seq)) == NULL)
            return dissect_layer_none();
        out = dissect_layer_raw(out, ", Flags: ");
        if ((out = dissect_layer_ascii(out, flags)) == NULL)
            return dissect_layer_none();
        return dissect_layer_str(text, out - text);
    }

    /* ``title``, then the two addresses. */
    static inline PyObject *dissect_ip_summary(PyObject *title, PyObject *src, PyObject *dst) {
        char text[DISSECT_LAYER_TEXT], *out = text;
        if ((out = dissect_layer_ascii(out, title)) == NULL)
            return dissect_layer_none();
        out = dissect_layer_raw(out, ", Src: ");
        if ((out = dissect_layer_ascii(out, src)) == NULL)
            return dissect_layer_none();
        out = dissect_layer_raw(out, ", Dst: ");
        if ((out = dissect_layer_ascii(out, dst)) == NULL)
            return dissect_layer_none();
        return dissect_layer_str(text, out - text);
    }

    /* Six bytes as bytes.hex(":") writes them. */
    static inline char *dissect_layer_mac(char *out, const unsigned char *mac) {
        static const char hex[] = "0123456789abcdef";
        int i;
        for (i = 0; i < 6; i++) {
            if (i)
                *out++ = ':';
            *out++ = hex[mac[i] >> 4];
            *out++ = hex[mac[i] & 15];
        }
        return out;
    }

    static inline PyObject *dissect_ethernet_summary(PyObject *data) {
        char text[DISSECT_LAYER_TEXT], *out = text;
        const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(data);
        if (PyBytes_GET_SIZE(data) < 12)
            return dissect_layer_none();
        out = dissect_layer_raw(out, "Ethernet II, Src: ");
        out = dissect_layer_mac(out, bytes + 6);
        out = dissect_layer_raw(out, ", Dst: ");
        out = dissect_layer_mac(out, bytes);
        return dissect_layer_str(text, out - text);
    }
    """
    object _udp_text "dissect_udp_summary" (object sport, object dport)
    object _tcp_text "dissect_tcp_summary" (object sport, object dport, object seq, object flags)
    object _ip_text "dissect_ip_summary" (object title, object src, object dst)
    object _ethernet_text "dissect_ethernet_summary" (bytes data)

cdef extern from *:
    """
    /* An IPv4 address's dotted quad (_ipv4_text), its four numbers' digits written in place. */
    static inline PyObject *dissect_dotted_quad(unsigned a, unsigned b, unsigned c, unsigned d) {
        char text[16];
        const unsigned char quad[4] = {(unsigned char)a, (unsigned char)b, (unsigned char)c, (unsigned char)d};
        return dissect_layer_str(text, dissect_dotted_quad_at(text, quad));  /* core/fmt.pxd */
    }
    """
    str _dotted_quad "dissect_dotted_quad" (unsigned a, unsigned b, unsigned c, unsigned d)
cdef dict IP_TITLES
cdef Py_ssize_t UNSTATED
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
    cdef public object fragment, tcp_seq, tcp_flags, tcp_stream, problem, _frame, cut, bad_lengths, reassembled

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
               limit=Py_ssize_t, frag_offset=Py_ssize_t)
cdef _ipv4(Packet packet, bytes data, Py_ssize_t offset)
cdef Py_ssize_t _odd_ip_length(Packet packet, Py_ssize_t offset, Py_ssize_t total, Py_ssize_t ihl) except -1
cdef _bad_length(Packet packet, tuple check)
@cython.locals(proto=int)
cpdef bint decode_reassembled(Packet packet, bytes data) except -1
@cython.locals(a=cython.uint, b=cython.uint, c=cython.uint, d=cython.uint, number=cython.uint, slot=Py_ssize_t)
cdef _ipv4_text(bytes data, Py_ssize_t offset)
@cython.locals(plen=Py_ssize_t, nxt=int, end=Py_ssize_t, limit=Py_ssize_t, pos=Py_ssize_t, frag=int, size=Py_ssize_t)
cdef _ipv6(Packet packet, bytes data, Py_ssize_t offset)
@cython.locals(high=uint64_t, low=uint64_t, slot=Py_ssize_t)
cdef _ipv6_text(bytes data, Py_ssize_t offset)
@cython.locals(number=uint64_t, index=Py_ssize_t)
cdef uint64_t _u64(bytes data, Py_ssize_t offset)
cdef _transport(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end, Py_ssize_t limit, int proto)
@cython.locals(sport=object, dport=object, ulen=Py_ssize_t, stop=Py_ssize_t)  # the ports boxed once, for two uses
cdef _udp(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end, Py_ssize_t limit)
cdef Py_ssize_t _odd_udp_length(Packet packet, Py_ssize_t offset, Py_ssize_t ulen, Py_ssize_t end,
                                Py_ssize_t limit) except -1
@cython.locals(sport=object, dport=object, seq=cython.uint, hlen=Py_ssize_t, start=Py_ssize_t)
cdef _tcp(Packet packet, bytes data, Py_ssize_t offset, Py_ssize_t end)

cdef list TCP_FLAG_TEXTS
cpdef str tcp_flag_text(flags)
