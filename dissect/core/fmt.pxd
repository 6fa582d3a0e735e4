# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. endpoint is cpdef: the summary line calls it in C.

cimport cython

@cython.locals(ports=dict)
cpdef endpoint(ip, port)
cdef Py_ssize_t ENDPOINT_TEXTS, _kept
cdef dict _TEXTS
