# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-message path's methods are cpdef, the
# response a typed local: within this module they call each other as C functions.

cimport cython
from dissect.analysis.base cimport Analyzer
from dissect.analysis.common cimport ServersSeen, Timing, annotate_response, elapsed_seconds
from dissect.core.bounded cimport BoundedDict, peek, popped, put
from dissect.core.fmt cimport decimal_text, endpoint, or_unknown
from dissect.core.model cimport Message
from dissect.dissectors.teeframe cimport ClientRecords
from dissect.capture.layers cimport Packet

cdef class _Response

cdef class TeeFrameAnalyzer(Analyzer):
    cdef public BoundedDict pending, requests, latest_token, done
    cdef public Py_ssize_t request_count, answered
    cdef public ServersSeen servers
    cdef public Timing timing
    cdef public Py_ssize_t held
    cdef public dict holders
    @cython.locals(values=dict, packet=Packet)
    cpdef feed(self, record, Message msg, tree)
    cpdef _request(self, record, Packet packet, Message msg)
    @cython.locals(response=_Response)
    cpdef _response(self, record, Packet packet, Message msg, tree, ident, token)
    cpdef _hold(self, _Response response, bint new)
    cpdef _match_request(self, _Response response, record, Message msg, tree)
    @cython.locals(values=dict)
    cpdef _add_packet(self, _Response response, record, Message msg, ident, number, out)
    @cython.locals(count=Py_ssize_t, budget=Py_ssize_t, room=Py_ssize_t)
    cpdef _keep(self, _Response response, records, out)
    @cython.locals(findings=list, info=dict)
    cpdef _conclude(self, _Response response, superseded_by=*, str evicted=*)
    cpdef _release(self, _Response response)
    @cython.locals(players=Py_ssize_t)
    cpdef _check_complete(self, _Response response, findings)
    cpdef _server_seen(self, _Response response, dict info, elapsed)

cdef class _Response:
    cdef public object server, client, token, first_ts, request, num_clients, num_players
    cdef public tuple key
    cdef public dict info, records
    cdef public list frames, findings
    cdef public bint clients_omitted, vanilla, cut
    cdef public Py_ssize_t held, dropped_records
    cpdef Py_ssize_t collected(self)
    cpdef bint complete(self) except -1
    cpdef bint truncated_list(self) except -1
    cpdef elapsed(self)

cdef list PACKET_NUMBERS
cdef tuple INFO_KEYS
cdef dict INFO_TEMPLATE
cpdef str _packet_list(dict records)
@cython.locals(info=dict)
cpdef dict _info(dict values)
cpdef Py_ssize_t _players(records) except -1
cdef tuple ONLY_PACKET_0
cpdef tuple _packet_numbers(dict records)
cpdef list _clients(_Response response)
cpdef _oldest_holder(holders, key)
cpdef _packet_number(ident, dict values)
