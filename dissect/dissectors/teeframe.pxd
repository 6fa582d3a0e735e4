# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The replies' fields and client records are read by
# C calls to each other and to the Cursor's methods.

cimport cython
from dissect.core.cursor cimport Cursor

cpdef _token(Cursor cur, msg)
cpdef _server_fields(Cursor cur, msg, ident)
cpdef _check_reserved(Cursor cur, value)
cpdef _check_counts(Cursor cur, msg, records, token)
cpdef _string(Cursor cur, spec)
cpdef _decimal(Cursor cur, spec, allow_negative=*)

@cython.locals(records=list, legacy=bint)
cpdef _client_records(Cursor cur, msg, fields)
@cython.locals(values=list, starts=list, name=unicode, clan=unicode)
cpdef dict _client_record(Cursor cur, fields, node)
cpdef dict _legacy_record(Cursor cur, fields, node)
cpdef list _record_values(Cursor cur, fields, node)
cpdef _check_text(Cursor cur, spec, value, offset, length, raw)
