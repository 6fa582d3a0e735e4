# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-frame path's methods are cpdef with typed
# locals: they call each other as C functions and read the frame, packet and record as C structs.

cimport cython
from dissect.capture.files cimport Frame
from dissect.capture.layers cimport Packet, decode_frame, tcp_flag_text
from dissect.analysis.abuse cimport TrafficAnalyzer
from dissect.analysis.base cimport Analyzer
from dissect.registry cimport Registry, dissect_message
from dissect.capture.reassembly cimport Delivery, TcpReassembler, TcpStream
from dissect.core.fmt cimport endpoint
from dissect.core.model cimport Message

cdef class FrameRecord:
    cdef public object number, ts, caplen, wirelen, linktype, data, packet, protocol, info
    cdef public list messages, findings
    cdef public object first_ts

cpdef FrameRecord new_record(Frame frame, Packet packet, first_ts)
cdef _fill_record(FrameRecord record, Frame frame, Packet packet, first_ts)

cdef class Pipeline:
    cdef public Registry registry
    cdef public dict analyzers
    cdef public frozenset observing
    cdef public object tree, defrag, carried, first_ts, last_ts
    cdef public TcpReassembler tcp
    cdef public TrafficAnalyzer traffic
    cpdef frame(self, frame, packet=*)
    cpdef skip(self, frame)
    @cython.locals(frame=Frame, packet=Packet, record=FrameRecord)
    cpdef _frame(self, frame, packet)
    @cython.locals(record=FrameRecord, packet=Packet, msg=Message)
    cpdef _datagram(self, record, packet, payload, offset, frames)
    @cython.locals(analyzer=Analyzer)
    cpdef _add_message(self, FrameRecord record, Message msg)
    @cython.locals(record=FrameRecord, packet=Packet, delivery=Delivery, stream=TcpStream)
    cpdef _tcp(self, record, Packet packet)
    cpdef _stream_message(self, FrameRecord record, TcpStream stream, direction, Message msg)

@cython.locals(values=dict, ends=tuple)
cdef _tag(TcpStream stream, direction, Message msg)
cdef _other(key, side)

@cython.locals(packet=Packet)
cpdef _wire_length(FrameRecord record, Message msg)
cpdef bint _carried_bytes(Delivery delivery) except -1
cdef bint _COMPILED
@cython.locals(tcp=bint)
cpdef str _transport_info(Packet packet, payload)

cdef extern from *:
    """
    /* _transport_info's text, "<sport> → <dport> Len=<length>" with "<flags> Seq=<seq> " before "Len" for TCP
       (``flags`` not None), written into a C buffer (with capture/layers.pxd's writers) and made a str once; None
       where a number is no int from 0 to 2**64 - 1 or the flags' text is not ASCII, for the f-string to write. */
    static inline PyObject *dissect_transport_info(PyObject *sport, PyObject *dport, PyObject *flags, PyObject *seq,
                                                   Py_ssize_t length) {
        char text[DISSECT_LAYER_TEXT], *out = text;
        Py_ssize_t arrow, size, i;
        PyObject *result;
        Py_UCS2 *wide;
        int digits;
        if ((out = dissect_layer_number(out, sport)) == NULL)
            return dissect_layer_none();
        arrow = out + 1 - text;
        out = dissect_layer_raw(out, " > ");
        if ((out = dissect_layer_number(out, dport)) == NULL)
            return dissect_layer_none();
        if (flags != Py_None) {
            *out++ = ' ';
            if ((out = dissect_layer_ascii(out, flags)) == NULL)
                return dissect_layer_none();
            out = dissect_layer_raw(out, " Seq=");
            if ((out = dissect_layer_number(out, seq)) == NULL)
                return dissect_layer_none();
        }
        out = dissect_layer_raw(out, " Len=");
        digits = dissect_decimal_size((unsigned long long)length);
        dissect_decimal_back(out + digits, (unsigned long long)length, digits);
        out += digits;
        size = out - text;
        result = PyUnicode_New(size, 0x2192);  /* the arrow makes it a text of two bytes a character */
        if (result == NULL)
            return NULL;
        wide = PyUnicode_2BYTE_DATA(result);
        for (i = 0; i < size; i++)
            wide[i] = (unsigned char)text[i];
        wide[arrow] = 0x2192;
        return result;
    }
    """
    object _transport_text "dissect_transport_info" (object sport, object dport, object flags, object seq,
                                                     Py_ssize_t length)
