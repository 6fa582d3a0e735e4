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
    cdef public object tree, defrag, first_ts, last_ts
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
cpdef str _transport_info(Packet packet, payload)
