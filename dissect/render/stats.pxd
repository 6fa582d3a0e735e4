# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cdef class StatsCollector:
    cdef public object frames, bytes, first_ts, last_ts, min_ts, max_ts, protocols, messages, findings
    cdef public object severity_of, analyses
