# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

from dissect.core.model cimport Message

# feed is cpdef: the pipeline calls it in C (a protocol's analyzer overrides it, in C or in Python).
cdef class Analyzer:
    cdef public bint stats_off
    cpdef feed(self, record, Message msg, tree)
