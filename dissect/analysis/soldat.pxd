# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

from dissect.analysis.base cimport Analyzer

cdef class SoldatAnalyzer(Analyzer):
    cdef public object exchanges, servers, timing, requests, answered, held_entries, held_bytes

cdef class _Exchange:
    cdef public object client, lobby, filters, announced, servers, received, cost, frames, start_ts, elapsed
    cdef public object ended, lost
