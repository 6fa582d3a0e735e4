# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The abuse analysis is fed every message: its
# classes become extension types, so their methods read and write their attributes as C struct members.
# The per-message path's methods are cpdef, their locals typed: within this module they call each other
# as C functions. The counters they add to are C integers (sizes are typed where they come in): only the
# end of the capture reads them from Python. Its tables are BoundedDicts, read and refreshed through the
# C functions of core/bounded.

cimport cython
from libc.stdint cimport int64_t
from dissect.core.model cimport Message
from dissect.capture.layers cimport Packet
from dissect.core.bounded cimport BoundedDict, held_at, kept, newest, peek, put, refreshed, refreshed_at

cdef dict _DIGITS, _ENDPOINTS
cdef int64_t _EXACT_REPLY_BYTES
cdef object _ABSENT

cdef class _Protocol
cdef class _QueryMessage
cdef class _Query
cdef class _Kind
cdef class _Unsolicited
cdef class _Rate
cdef class _Host
cdef class _Server
cdef class _Pair

cdef class TrafficAnalyzer:
    cdef public dict protocols
    cdef public object token_findings, rate, window
    cdef public object threshold, top
    cdef public dict amplification, unsolicited
    cdef public BoundedDict hosts, servers, pairs, open
    cdef public object floods
    cdef public int64_t evicted_hosts, evicted_servers, evicted_pairs, evicted_queries, evicted_floods
    cdef public Py_ssize_t host_peers, server_peers, peer_limit, rate_bins, bin_limit
    cdef public list events
    cdef public object clock, window_start
    cdef public double clock_whole
    cdef public bint stats_off
    cdef public tuple stream_texts, stream_ends
    cdef public list found
    @cython.locals(values=dict, declared=_Protocol)
    cpdef feed(self, frame, ts, Packet packet, Message msg, size, wire)
    @cython.locals(texts=tuple, ends=tuple)
    cpdef tuple _stream_ends(self, dict values)
    cpdef count(self, frame, ts, protocol, name, sender, receiver, token, size, wire)
    @cython.locals(message=_QueryMessage)
    cpdef _count(self, frame, ts, protocol, _Protocol declared, name, sender, receiver, token, size, wire)
    @cython.locals(whole=double)
    cpdef _tick(self, double ts)
    @cython.locals(kind=_Kind, host=_Host, query=_Query, entry=_Server, pair=_Pair, held=Py_ssize_t)
    cpdef _request(self, frame, second, protocol, _QueryMessage message, client, server, token, int64_t size,
                   int64_t wire)
    @cython.locals(answering=_Server, host=_Host, pair=_Pair, query=_Query, kind=_Kind, entry=_Unsolicited,
                   held=Py_ssize_t)
    cpdef _reply(self, frame, second, protocol, limit, request, client, server, int64_t size, int64_t wire)
    cpdef _asked(self, _Host host, _Pair pair, source, server, frame, second)
    @cython.locals(pair=_Pair)
    cpdef _Pair _pair(self, source, _Server entry, protocol, frame)
    @cython.locals(pair=_Pair)
    cpdef _Pair _paired(self, source, server, protocol, frame)
    @cython.locals(query=_Query)
    cpdef _Query _answered(self, _Pair pair, protocol, request, client, server)
    cpdef _flooding(self, key, _Pair pair, frame, count)
    cpdef _close(self, _Query query)
    @cython.locals(kind=_Kind)
    cpdef _Kind _kind(self, protocol, request)
    @cython.locals(entry=_Unsolicited)
    cpdef _Unsolicited _unsolicited(self, protocol)
    @cython.locals(host=_Host)
    cpdef _Host _host(self, address)
    @cython.locals(entry=_Server)
    cpdef _Server _server(self, server, protocol)
    cpdef _trim_peers(self)
    cpdef _forget_host(self, _Host host)
    cpdef _forget_server(self, _Server server)

cdef class _Protocol:
    cdef public dict messages
    cdef public object limit, token_key

cdef class _QueryMessage:
    cdef public bint request
    cdef public object type
    cdef public _Kind kind

cdef class _Query:
    cdef public _Kind kind
    cdef public tuple key
    cdef public Py_ssize_t slot
    cdef public object frame, frames
    cdef public int64_t size, wire
    cdef public int64_t replies, reply_bytes, reply_wire
    cpdef add(self, frame, int64_t size, int64_t wire)

@cython.locals(query=_Query)
cdef _Query _new_query(_Kind kind, tuple key, frame, int64_t size, int64_t wire)

cdef class _Kind:
    cdef public int64_t requests, request_bytes, request_wire, answered, replies
    cdef public int64_t reply_bytes, reply_wire
    cdef public object factor_micro, worst
    cdef public dict factors
    @cython.locals(key=tuple)
    cpdef conclude(self, _Query query)

cdef class _Unsolicited:
    cdef public int64_t count, size, wire, oversize
    cpdef add(self, int64_t size, int64_t wire)

cdef class _Rate:
    cdef public dict bins
    cdef public object folded, latest
    cdef public int64_t latest_count
    @cython.locals(bins=dict, added=int)
    cpdef int add(self, second, window, int64_t count=*) except -1
    cpdef _settle(self)
    cpdef _fold(self, second, window)

cdef class _Host:
    cdef public int64_t requests, request_bytes, others, answered, caused_bytes
    cdef public int64_t caused_wire, received, received_bytes
    cdef public int64_t unsolicited, oversize, servers_asked_fast, servers_replying_fast
    cdef public object first, last, first_frame, last_frame
    cdef public object queried, repliers, tokens
    cdef public _Rate rates, replies, suspects
    cpdef int request(self, frame, second, server, int64_t size, window) except -1
    cpdef int receive(self, frame, second, server, int64_t size, window) except -1
    cpdef int suspect(self, second, window) except -1
    cpdef token(self, protocol, token, server, frame)
    cpdef other(self, frame)
    cpdef _seen(self, frame)

cdef class _Server:
    cdef public object protocol, endpoint, requesters, last_frame
    cdef public _Pair pair
    cdef public int64_t requests, replies, bytes_out, wire_out, unsolicited, oversize
    cpdef request(self, address, frame)
    cpdef reply(self, frame, int64_t size, int64_t wire)

cdef class _Pair:
    cdef public object protocol, source, first_frame, last_frame, flood
    cdef public Py_ssize_t slot
    cdef public _Query query
    cdef public list asked_recent, replied_recent
    cdef public int64_t total, asked_count, replied_count
    cdef public bint asked_fast, replied_fast
    cpdef bint asked(self, second, start, window) except -1
    cpdef bint replied(self, second, start, window) except -1

cdef class _Flood:
    cdef public object protocol, first_frame, frame, peak, requests

@cython.locals(pair=_Pair)
cdef _Pair _new_pair(protocol, source, frame)
@cython.locals(scale=int64_t)
cdef object _factor(int64_t reply_bytes, int64_t request_bytes)
@cython.locals(gone=Py_ssize_t)
cpdef Py_ssize_t _slide(list recent, second, start) except -1
cdef bint _beats(micro, frame, tuple worst) except -1
cpdef _add_peer(peers, peer)
cpdef Py_ssize_t _peer_count(peers)
cpdef _three_digits(micro)
cpdef _split(text)
