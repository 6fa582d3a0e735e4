# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The field loop and its helpers are C functions with
# typed locals: they find each field's separator in the line's bytes and read a plain value there, so a
# line's fields cost no Python call and no bytes object each. PLAIN_DIGITS, TYPES, LINE_TYPES and SERVER_KEYS_AT
# are C globals (not attributes of the compiled module): only this module reads them.

cimport cython
from dissect.capture.layers cimport Packet
from dissect.core.cursor cimport Cursor, as_bytes, cut
from dissect.core.fmt cimport counted, decimal_text, or_unknown
from dissect.core.model cimport Message, new_message
from dissect.registry cimport dissect_message

cdef class Column:
    cdef public object spec, short, rule, texts
    cdef public bint numeric
    cdef public Py_ssize_t low, high

cdef class LineType:
    cdef public str name, title
    cdef public list layout
    cdef public dict utf8_values, latin1_values

cdef Py_ssize_t PLAIN_DIGITS
cdef dict TYPES, LINE_TYPES

cpdef bint _ascii_digits(text)
@cython.locals(dots=Py_ssize_t, digits=Py_ssize_t, octet=Py_ssize_t, char=cython.Py_UCS4)
cpdef bint dotted_quad(str text)
cpdef clip(text, limit=*)

cdef class DottedQuads:
    pass

@cython.locals(chars=cython.p_uchar, step=Py_ssize_t, lead=cython.uchar, tail=cython.uchar, count=Py_ssize_t,
               pos=Py_ssize_t, last=Py_ssize_t)
cdef Py_ssize_t field_count(bytes data, Py_ssize_t start, Py_ssize_t end, bytes separator) except -1
@cython.locals(chars=cython.p_uchar, step=Py_ssize_t, lead=cython.uchar, tail=cython.uchar, last=Py_ssize_t)
cdef Py_ssize_t field_end(bytes data, Py_ssize_t pos, Py_ssize_t end, bytes separator) except -1
@cython.locals(step=Py_ssize_t, pos=Py_ssize_t)
cdef Py_ssize_t fields_end(bytes data, Py_ssize_t start, Py_ssize_t end, bytes separator, Py_ssize_t count) except -1
@cython.locals(chars=cython.p_uchar, value=Py_ssize_t, pos=Py_ssize_t, byte=cython.uchar)
cdef Py_ssize_t ascii_number(bytes data, Py_ssize_t start, Py_ssize_t stop) except? -2
cdef str decoded(bytes data, Py_ssize_t start, Py_ssize_t stop, bint utf8)
@cython.locals(data=bytes, values=dict, tree=bint, step=Py_ssize_t, i=Py_ssize_t, stop=Py_ssize_t, length=Py_ssize_t,
               number=Py_ssize_t, column=Column, text=str)
cpdef layout_fields(Cursor cur, Message msg, Py_ssize_t offset, Py_ssize_t end, bytes separator, Py_ssize_t count,
                    list layout, bint utf8)
cpdef ruled_field(Cursor cur, Message msg, Column column, Py_ssize_t start, Py_ssize_t length, str text)
cdef Py_ssize_t SERVER_KEYS_AT
cpdef tuple server_values(dict values)
cdef tuple UTF8_SEPARATED, LATIN1_SEPARATED, NOT_SEPARATED
cpdef tuple separator_of(bytes line)
@cython.locals(line=bytes, type_byte=Py_ssize_t, kind=LineType, utf8=bint, line_end=Py_ssize_t, count=Py_ssize_t,
               layout=list)
cpdef _decode(Cursor cur, Message msg)
@cython.locals(line=bytes, kept=tuple)
cpdef _decode_remembered(dict remembered, Cursor cur, Message msg)
cdef bint _rememberable(bytes line, bint cut) except -1
@cython.locals(values=dict)
cdef _recall(Message msg, tuple kept)
@cython.locals(size=Py_ssize_t, terminated=bint, line_end=Py_ssize_t)
cpdef Py_ssize_t _bound(Cursor cur, bytes line, separator) except -1
cdef _line_end(Cursor cur, Py_ssize_t size, Py_ssize_t length)
@cython.locals(data=bytes, start=Py_ssize_t, end=Py_ssize_t, step=Py_ssize_t, first=Py_ssize_t,
               split=Py_ssize_t, offset=Py_ssize_t, stop=Py_ssize_t, last=Py_ssize_t)
cpdef _fields(Cursor cur, Message msg, bytes separator, bint utf8, Py_ssize_t type_byte, Py_ssize_t count,
              list layout)
cdef _start_values(Message msg, LineType kind, Py_ssize_t type_byte, encoding, bint utf8, Py_ssize_t count)
cpdef _check_count(Cursor cur, Message msg, Py_ssize_t type_byte, count, layout)
@cython.locals(data=dict)
cpdef _cross_checks(Cursor cur, Message msg, Py_ssize_t start, bytes separator)
@cython.locals(data=dict)
cpdef str info_line(Message msg, count)

cdef bint _COMPILED
cdef Py_ssize_t _find_newline(bytes data, Py_ssize_t start, Py_ssize_t stop) except -2

cdef extern from *:
    """
    /* The index of the first ``byte`` in data[start:stop], or -1; 0 <= start and stop <= len(data). */
    static inline Py_ssize_t dissect_memchr_index(PyObject *data, int byte, Py_ssize_t start, Py_ssize_t stop) {
        const char *base = PyBytes_AS_STRING(data);
        const char *found;
        if (stop <= start)
            return -1;
        found = memchr(base + start, byte, (size_t)(stop - start));
        return found ? (Py_ssize_t)(found - base) : -1;
    }
    """
    Py_ssize_t _memchr_index "dissect_memchr_index" (bytes data, int byte, Py_ssize_t start, Py_ssize_t stop)

cdef extern from *:
    """
    /* The values of ``dict`` at its positions ``at`` to ``at + len(keys) - 1``, in its order, as a tuple, where
       the keys there are the objects of ``keys``, in order; else None (for the caller to look them up). */
    static PyObject *dissect_values_in_order(PyObject *dict, PyObject *keys, Py_ssize_t at) {
        Py_ssize_t count = PyList_GET_SIZE(keys), pos = 0, index = -at;
        PyObject *key, *value, *row;
        if (!PyDict_CheckExact(dict) || PyDict_GET_SIZE(dict) < at + count)
            Py_RETURN_NONE;
        row = PyTuple_New(count);
        if (row == NULL)
            return NULL;
        while (index < count && PyDict_Next(dict, &pos, &key, &value)) {
            if (index >= 0) {
                if (key != PyList_GET_ITEM(keys, index)) {
                    Py_DECREF(row);
                    Py_RETURN_NONE;
                }
                Py_INCREF(value);
                PyTuple_SET_ITEM(row, index, value);
            }
            index++;
        }
        return row;
    }
    """
    object _values_in_order "dissect_values_in_order" (dict values, list keys, Py_ssize_t at)

cdef class LineParser:
    cdef public dict remembered
    cdef public object dissector, pieces, size, spans, counted, skipping, after_gap, lost, uncaptured_bytes, encoding
    @cython.locals(data=bytes, start=Py_ssize_t, end=Py_ssize_t, stop=Py_ssize_t, newline=Py_ssize_t,
                   room=Py_ssize_t, messages=list)
    cpdef feed(self, chunk, tree, packet)
    cpdef Py_ssize_t _resume(self, data, Py_ssize_t pos) except -1
    cpdef _append(self, data, Py_ssize_t start, Py_ssize_t stop, frame, offset)
    cpdef _hold(self)
    cpdef _release(self)
    cpdef _cut(self, tree, packet)
    cpdef _line(self, tree, packet)
    @cython.locals(msg=Message)
    cpdef Message _dissect(self, bytes line, list frames, offset, tree, packet)
    @cython.locals(decoded=Packet, kept=tuple, msg=Message)
    cpdef Message _remembered(self, bytes line, packet, offset)
    cpdef _note_separator(self, Message msg)
