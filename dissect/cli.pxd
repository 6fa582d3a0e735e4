# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every line of text output goes through _Batched.write.

cdef class _Batched:
    cdef public object stream, buffer, write_bytes
    cdef public list parts
    cdef public bint binary
    cdef public Py_ssize_t size
    cpdef write(self, text)
