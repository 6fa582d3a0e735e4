# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. The null-terminated readers work on ``data`` as
# bytes at C positions: finding the terminator, slicing and decoding compile to C.

cimport cython
from dissect.core.model cimport Field, Message, new_field
from dissect.core.tables cimport FieldSpec

cdef class Cursor

cdef class _Subtree:
    cdef public Cursor cursor
    cdef public Field node

cdef class Cursor:
    # The position and the last item's place as C integers: every field read moves them.
    cdef public bytes data
    cdef public Py_ssize_t pos, end, last_offset, last_length, missing
    cdef public bint tree
    cdef public Message msg
    cdef public list _stack
    cdef public object _raw
    # where last_raw's bytes are while _raw is None
    cdef public Py_ssize_t _raw_start, _raw_stop
    cdef Py_ssize_t _starts[33]  # MAX_CSTRINGS + 1 (cursor.py): the offsets of the last cstrings's fields
    cdef public Py_ssize_t _fields

    cpdef remaining(self)
    cpdef at_end(self)
    @cython.locals(pos=Py_ssize_t, size=Py_ssize_t)
    cpdef number(self, st, FieldSpec spec)
    @cython.locals(pos=Py_ssize_t)
    cpdef u8(self, FieldSpec spec)
    cpdef add(self, FieldSpec spec, offset, length, value, display=*, generated=*, name=*)
    cpdef subtree(self, FieldSpec spec, value=*, name=*)
    cpdef Field open_subtree(self, FieldSpec spec, value=*, name=*)
    cpdef close_subtree(self, Field node)
    @cython.locals(node=Field)
    cpdef set_last(self, value, display=*)
    cpdef finding(self, spec, detail, offset=*, length=*)
    cpdef flag_last(self, spec, detail)
    @cython.locals(data=bytes, pos=Py_ssize_t, n=Py_ssize_t)
    cpdef raw(self, FieldSpec spec, n)
    @cython.locals(data=bytes, pos=Py_ssize_t, nul=Py_ssize_t)
    cpdef cstring(self, FieldSpec spec, encoding=*)
    @cython.locals(pos=Py_ssize_t, available=Py_ssize_t)
    cpdef _unterminated(self, FieldSpec spec, encoding)
    @cython.locals(data=bytes, pos=Py_ssize_t, nul=Py_ssize_t)
    cpdef cdecimal(self, FieldSpec spec)
    @cython.locals(data=bytes, pos=Py_ssize_t, end=Py_ssize_t, nul=Py_ssize_t, last=Py_ssize_t, values=list,
                   count=Py_ssize_t, spec=FieldSpec, kind=str)
    cpdef list cstrings(self, specs)
    cpdef Py_ssize_t start(self, Py_ssize_t index) except -1
    @cython.locals(start=Py_ssize_t, stop=Py_ssize_t)
    cpdef tuple span(self, Py_ssize_t index)

@cython.locals(child=Field, end=Py_ssize_t, offset=Py_ssize_t, length=Py_ssize_t)
cdef _close_subtree(Cursor cursor, Field node)
cpdef Cursor new_cursor(msg, data, tree, Py_ssize_t pos)
cdef _start(Cursor cur, Message msg, data, tree, Py_ssize_t pos)

cdef str _decoded(bytes data, Py_ssize_t start, Py_ssize_t stop, str encoding)
cdef Py_ssize_t _width(st) except -1
cpdef bytes as_bytes(data)
@cython.locals(size=Py_ssize_t, raw=cython.p_char)
cpdef bytes cut(bytes data, Py_ssize_t start, Py_ssize_t stop)
@cython.locals(value=cython.longlong)
cpdef unpack(st, bytes data, Py_ssize_t pos)

@cython.locals(stop=Py_ssize_t, raw=cython.p_char)
cdef Py_ssize_t _terminator(bytes data, Py_ssize_t pos, Py_ssize_t end)

cdef Py_ssize_t MAX_EXACT_DIGITS
cdef str TEXT, DECIMAL
cdef bint _COMPILED
cdef object _U8, _U16LE, _I16LE, _U16BE, _U32LE, _I32LE, _U32BE, _I32BE

@cython.locals(first=Py_ssize_t, index=Py_ssize_t, digit=int, exact=bint, value=cython.longlong, raw=cython.p_char)
cdef object _decimal(bytes data, Py_ssize_t start, Py_ssize_t stop)
