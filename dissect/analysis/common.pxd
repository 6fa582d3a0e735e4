# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. What the analyzers call per message is cpdef: they
# cimport it and call it in C.

cimport cython
from dissect.core.bounded cimport BoundedDict, put, refreshed
from dissect.core.model cimport Message, new_field
from dissect.core.tables cimport FieldSpec

cdef class Timing:
    cdef public object count, total_ns, low, high
    cpdef add(self, seconds)

@cython.locals(micros=double)
cpdef double elapsed_seconds(double start, double end)
@cython.locals(spec=FieldSpec)
cpdef annotate_response(record, Message msg, tree, request_frame, request_ts, fields)

cdef class _Row

cdef class ServersSeen:
    cdef public BoundedDict rows
    cdef public object columns, name_order, epoch, forgotten
    @cython.locals(row=_Row, newest=bint, i=Py_ssize_t)
    cpdef update(self, server, frame, tuple values)
    @cython.locals(entry=dict, i=Py_ssize_t)
    cpdef dict _entry(self, server, _Row row)

cdef class _Row:
    cdef public object responses, last_frame, epoch
    cdef public list values, frames

@cython.locals(row=_Row, i=Py_ssize_t, newer=_Row)
cpdef _Row _merged(_Row a, _Row b, bint later)
