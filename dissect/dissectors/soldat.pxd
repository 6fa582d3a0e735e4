# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The field loop and its helpers are C functions with
# typed locals: a line's fields cost no Python call each where the value is plain.

cimport cython

cdef class Column:
    cdef public object spec, short, rule, texts
    cdef public bint numeric
    cdef public Py_ssize_t low, high

cpdef bint _ascii_digits(text)
cpdef clip(text, limit=*)

@cython.locals(fields=list)
cpdef split_fields(data, Py_ssize_t start, Py_ssize_t end, bytes separator, Py_ssize_t limit=*)
@cython.locals(value=Py_ssize_t, byte=cython.uchar)
cpdef Py_ssize_t ascii_number(bytes raw) except? -2
cpdef str decoded(bytes raw, bint utf8)
@cython.locals(values=dict, i=Py_ssize_t, length=Py_ssize_t, number=Py_ssize_t, raw=bytes, column=Column, text=str)
cpdef layout_fields(cur, msg, list fields, Py_ssize_t offset, Py_ssize_t step, list layout, bint utf8)
cpdef ruled_field(cur, msg, Column column, Py_ssize_t start, Py_ssize_t length, str text)
@cython.locals(size=Py_ssize_t)
cpdef _bound(cur, line, separator)
@cython.locals(fields=list, step=Py_ssize_t, first=Py_ssize_t, offset=Py_ssize_t, utf8=bint, raw=bytes)
cpdef _fields(cur, msg, separator, encoding, type_byte)
cpdef _check_count(cur, msg, type_byte, count, layout)
@cython.locals(data=dict)
cpdef _cross_checks(cur, msg)
@cython.locals(data=dict)
cpdef info_line(msg, count)

cdef class LineParser:
    cdef public object dissector, buffer, spans, counted, skipping, after_gap, lost, encoding
    @cython.locals(start=Py_ssize_t, end=Py_ssize_t, stop=Py_ssize_t, newline=Py_ssize_t, room=Py_ssize_t,
                   messages=list)
    cpdef feed(self, chunk, tree, packet)
    cpdef Py_ssize_t _resume(self, data, Py_ssize_t pos) except -1
    cpdef _append(self, data, Py_ssize_t start, Py_ssize_t stop, frame, offset)
    cpdef _hold(self)
    cpdef _release(self)
    cpdef _cut(self, tree, packet)
    cpdef _line(self, tree, packet)
    cpdef _note_separator(self, msg)
