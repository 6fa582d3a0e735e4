# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.core.model cimport Field

@cython.locals(field=Field)
cdef _field_lines(fields, depth, append)
