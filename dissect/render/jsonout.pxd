# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.core.model cimport Field, Message, display_of
from dissect.pipeline cimport FrameRecord

@cython.locals(data=dict)
cpdef dict field_dict(Field field)
cdef dict _FIELD_DICT
cpdef dict message_dict(Message msg)
cpdef dict frame_dict(FrameRecord record)
