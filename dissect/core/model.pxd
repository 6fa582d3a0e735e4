# Compile-time declarations for the Cython build (see setup.py); model.py is the source and runs
# as it is without them. The classes become extension types: their attributes, the same as each
# class's __slots__ (tests/test_build.py checks), are read and written as C struct members.

cimport cython
from dissect.core.fmt cimport ValueTexts, decimal_text

cdef class Field:
    cdef public object key, name, offset, length, value, fmt, _display, children, generated

@cython.locals(field=Field)
cpdef Field new_field(key, name, offset, length, value, fmt, display=*, generated=*)
cdef inline _fill(Field field, key, name, offset, length, value, fmt, display, generated)
@cython.locals(texts=ValueTexts)
cpdef display_of(Field field)
cpdef default_display(value)

cdef class Finding:
    cdef public object code, severity, message, offset, length

cdef class Message:
    # Typed containers: compiled readers of msg.values and msg.findings call the dict and list directly.
    cdef public object protocol, name, offset, length, info, payload
    cdef public list fields, findings, frames
    cdef public dict values
    cpdef report(self, spec, detail, offset=*, length=*)

cdef class AnalysisRecord:
    cdef public object protocol, name, frames, _result, findings, summary

cpdef finding_text(rule, detail)
cpdef tuple prepared_finding(spec, detail)
cpdef add_prepared(Message msg, tuple prepared, offset, length)
@cython.locals(finding=Finding)
cdef Finding _declared_finding(code, severity, message, offset, length)

cpdef Message new_message(protocol, payload, offset)
cdef _start(Message msg, protocol, name, payload, offset)
