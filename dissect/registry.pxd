# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.capture.layers cimport Packet
from dissect.core.cursor cimport Cursor, new_cursor
from dissect.core.model cimport Message, new_message

cdef class Registry:
    cdef public object dissectors, forced, by_port, order
    cdef public dict plans
    cdef public list faults
    @cython.locals(plans=tuple, plan_by_port=dict, plan=tuple)
    cpdef select(self, Packet packet, payload)
    cpdef list take_faults(self)

@cython.locals(msg=Message, cur=Cursor, decoded=Packet, snapped=bint)
cpdef Message dissect_message(dissector, payload, tree, packet, offset)
