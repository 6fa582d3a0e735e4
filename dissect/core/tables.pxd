# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. A FieldSpec is an extension type: the Cursor reads
# its key, name and fmt for every field it adds, and a class with __getattr__ makes each such read a
# slow generic lookup.

cdef class FieldSpec:
    cdef public object key, name, type, description, fmt, children
    cdef dict __dict__
