# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-server path's methods are cpdef, their
# locals typed: within this module they call each other as C functions.

cimport cython
from dissect.analysis.base cimport Analyzer
from dissect.analysis.common cimport ServersSeen, Timing, elapsed_seconds
from dissect.core.bounded cimport BoundedDict, peek, popped, put
from dissect.core.fmt cimport counted, decimal_text, or_unknown
from dissect.core.model cimport Message
from dissect.dissectors.soldat cimport clip, server_values

cdef class SoldatAnalyzer(Analyzer):
    cdef public BoundedDict exchanges
    cdef public object requests, answered
    cdef public Py_ssize_t held_entries, held_bytes
    cdef public ServersSeen servers
    cdef public Timing timing
    cdef public dict rows
    @cython.locals(values=dict, exchange=_Exchange, request=bint)
    cpdef feed(self, record, Message msg, tree)
    cpdef _Exchange _open(self, stream, Message msg, list out)
    @cython.locals(values=tuple, cost=Py_ssize_t, seen=tuple)
    cpdef _server(self, stream, _Exchange exchange, Message msg, list out)
    @cython.locals(keep=bint, row=tuple, values=tuple)
    cpdef tuple _row(self, Message msg)
    cpdef _make_room(self, stream, Py_ssize_t cost, list out)
    cpdef _hold(self, _Exchange exchange, Py_ssize_t entries, Py_ssize_t cost)
    @cython.locals(columns=tuple)
    cpdef _seen(self, _Exchange exchange, tuple seen, list frames)

cdef class _Exchange:
    cdef public object client, lobby, filters, announced, frames, start_ts, elapsed
    cdef public list servers
    cdef public Py_ssize_t received, cost
    cdef public object ended, lost, uncaptured, cut_server
    cdef public bint begun

cdef dict GAME_STYLES  # imported from the dissector: a C global, read as a dict
cdef Py_ssize_t IP, PORT, PASSWORDED, NAME, MAP, PLAYERS, MAXPLAYERS, GAMESTYLE, VERSION
cdef Py_ssize_t EMPTY_TUPLE_BYTES, TUPLE_SLOT_BYTES
@cython.locals(cost=Py_ssize_t, size=Py_ssize_t)
cpdef Py_ssize_t _cost(tuple values) except -1
cpdef tuple _seen_columns(tuple values)
cpdef _add_frames(list frames, list more)
cpdef _text(value)
@cython.locals(out=dict, index=Py_ssize_t)
cpdef dict _keyed(list keys, tuple values)
