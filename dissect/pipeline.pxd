# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cdef class FrameRecord:
    cdef public object number, ts, caplen, wirelen, linktype, data, packet, protocol, info, messages, findings
    cdef public object first_ts

cdef class Pipeline:
    cdef public object registry, tree, analyzers, traffic, tcp, defrag, first_ts, last_ts
