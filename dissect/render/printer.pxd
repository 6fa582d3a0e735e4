# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every frame shown passes through Printer.frame: an
# extension type's C method, which calls the summary view in C when it is the only view.

from dissect.render.text cimport SummaryRenderer
from dissect.render.jsonout cimport JsonRenderer

cdef class Printer:
    cdef public object out, writer
    cdef public list views
    cdef public SummaryRenderer summary
    cdef public JsonRenderer json, json_only
    cpdef frame(self, record)
    cpdef analysis(self, rec)
