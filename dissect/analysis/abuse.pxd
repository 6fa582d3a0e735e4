# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The abuse analysis is fed every message: its
# classes become extension types, so their methods read and write their attributes as C struct members.

cdef class TrafficAnalyzer:
    cdef public object kinds, limits, token_keys, token_findings, rate, window
    cdef public object threshold, top, amplification, unsolicited
    cdef public object hosts, servers, pairs, open, floods, evicted

cdef class _Query:
    cdef public object kind, frame, size, wire, replies, reply_bytes, reply_wire, frames

cdef class _Kind:
    cdef public object requests, request_bytes, request_wire, answered, replies
    cdef public object reply_bytes, reply_wire, factor_micro
    cdef public object factors, worst

cdef class _Unsolicited:
    cdef public object count, size, wire, oversize

cdef class _Rate:
    cdef public object bins, folded

cdef class _Host:
    cdef public object requests, request_bytes, others, answered, caused_bytes
    cdef public object caused_wire, received, received_bytes
    cdef public object unsolicited, oversize, servers_asked_fast, servers_replying_fast, first
    cdef public object last, first_frame, last_frame
    cdef public object rates, replies, suspects, queried, repliers, tokens

cdef class _Server:
    cdef public object protocol, requests, replies, bytes_out, wire_out
    cdef public object unsolicited, oversize, requesters, last_frame

cdef class _Pair:
    cdef public object protocol, first_frame, last_frame, total, asked_recent
    cdef public object asked_count, replied_recent, replied_count
    cdef public object asked_fast, replied_fast, flood

cdef class _Flood:
    cdef public object protocol, first_frame, frame, peak, requests
