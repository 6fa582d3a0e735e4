# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every frame shown passes through Printer.frame: an
# extension type's C method, which calls the summary view in C when it is the only view.

from dissect.render.text cimport SummaryRenderer

cdef class Printer:
    cdef public object out, json, writer
    cdef public list views
    cdef public SummaryRenderer summary
    cpdef frame(self, record)
    cpdef analysis(self, rec)
