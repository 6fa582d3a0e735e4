# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from libc.stdint cimport int64_t
from dissect.core.fmt cimport decimal_text, or_unknown
from dissect.core.model cimport AnalysisRecord, Finding, Message
from dissect.pipeline cimport FrameRecord
from dissect.render.text cimport protocol_title, safe

cdef class StatsCollector:
    cdef public int64_t frames, bytes
    cdef public object first_ts, last_ts, min_ts, max_ts
    cdef public dict protocols, messages, findings, analyses
    @cython.locals(msg=Message, wirelen=int64_t)
    cpdef frame(self, FrameRecord record)
    cpdef analysis(self, AnalysisRecord rec)
    cpdef _clock(self, low, high)
    cpdef _finding(self, Finding finding)

cdef class Tally:
    cdef public int64_t count

@cython.locals(tally=Tally)
cdef _count(dict counts, key, int64_t count)
@cython.locals(names=dict)
cdef dict _names(dict tables, protocol)
cdef bint _sets_clock(FrameRecord record) except -1
@cython.locals(parts=list, label=str)
cpdef str server_line(dict server)
