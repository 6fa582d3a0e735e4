# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.capture.layers cimport Packet
from dissect.core.cursor cimport new_cursor
from dissect.core.model cimport new_message

cdef class Registry:
    cdef public object dissectors, forced, by_port, order
    cdef public dict plans
    @cython.locals(plans=tuple, plan_by_port=dict, plan=tuple)
    cpdef select(self, Packet packet, payload)
