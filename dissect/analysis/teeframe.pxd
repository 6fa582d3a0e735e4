# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

from dissect.analysis.base cimport Analyzer

cdef class TeeFrameAnalyzer(Analyzer):
    cdef public object pending, requests, latest_token, done, servers, timing, request_count, answered
    cdef public object held, holders

cdef class _Response:
    cdef public object server, client, token, info, records, frames, first_ts, request, findings
    cdef public object clients_omitted, held, dropped_records
