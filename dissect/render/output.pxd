# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every line of output goes through BatchedOutput: the
# compiled views call write and add_utf8 in C.

cdef class BatchedOutput:
    cdef public object stream, buffer, write_bytes
    cdef public list parts
    cdef public bint binary
    cdef public Py_ssize_t size
    cpdef write(self, text)
    cpdef add_utf8(self, data)

cpdef BatchedOutput utf8_output(out)
