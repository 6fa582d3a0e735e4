# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-message path's methods are cpdef: within this
# module they call each other as C functions.

cimport cython
from dissect.analysis.base cimport Analyzer
from dissect.analysis.common cimport ServersSeen, Timing, annotate_response
from dissect.core.bounded cimport BoundedDict, popped, put, refreshed
from dissect.core.fmt cimport endpoint, or_unknown
from dissect.core.model cimport Message
from dissect.dissectors.odamex cimport MasterEntries
from dissect.capture.layers cimport Packet

cdef class _Listing

cdef class OdamexAnalyzer(Analyzer):
    cdef public BoundedDict pending, listed
    cdef public object timings, requests, answered, listings_forgotten
    cdef public tuple latest_list
    cdef public ServersSeen servers
    @cython.locals(result=dict, frames=list, timing=Timing, packet=Packet, request=tuple)
    cpdef feed(self, record, Message msg, tree)
    @cython.locals(servers=MasterEntries)
    cpdef _master_list(self, master, Message msg, dict result, list frames)
    @cython.locals(latest=tuple, listings=list, listing=_Listing)
    cpdef _list(self, master, MasterEntries servers, frame)
    @cython.locals(listed=BoundedDict, listings=list, listing=_Listing, index=Py_ssize_t)
    cpdef list _listings(self, list keys, frame)
    @cython.locals(data=dict)
    cpdef _server_info(self, server, Message msg, dict result, list frames)

cdef class _Listing:
    cdef public list masters, firsts
    cdef public object last_frame, index

# What a server-info record's result reads, when a view reads it: its values as a dict in C.
@cython.locals(info=dict, out=dict)
cpdef dict _server_result(dict data, unread, dict result)
@cython.locals(names=dict, named=list, entry=dict, player=dict)
cpdef list _named_teams(dict data)
