# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-message path is module functions that read
# the Cursor and the Message as C structs and call each other and the Cursor's methods in C.

cimport cython
from dissect.core.cursor cimport Cursor, as_bytes, cut
from dissect.core.fmt cimport dec_hex, decimal_text, hex_text, or_unknown
from dissect.core.model cimport Field, Message

cdef Py_ssize_t NAME_LIMIT, CLAN_LIMIT, QUICK_DIGITS, PACKET_LIMIT, REQUEST_LENGTH

# the formatters of the fields -V and JSON show most
@cython.locals(texts=dict)
cpdef _is_player_text(value)
cpdef _token_text(value)
cpdef _crc_text(value)
@cython.locals(texts=dict)
cpdef _flags_text(value)
@cython.locals(ident=bytes, names=dict)
cpdef _identifier_display(value)

cdef bytes FF4, FF6, XE
cdef dict ROLES
cpdef bint _claims(bytes payload, bint on_port) except -1
cdef dict NAMES
cdef str IEXT, GIE3
@cython.locals(data=bytes, ident=bytes, size=Py_ssize_t)
cpdef _decode(Cursor cur, Message msg)
@cython.locals(name=str)
cdef str _name(bytes ident)
@cython.locals(values=dict, extended=bint)
cpdef _gie3(Cursor cur, Message msg)
cpdef _check_request_length(Cursor cur, Message msg)
cpdef _header_ff6(Cursor cur, what)
cpdef _padding_and_identifier(Cursor cur, size)
cpdef _response_header(Cursor cur)
@cython.locals(pos=Py_ssize_t)
cpdef bint _skipped(Cursor cur, bytes expected, Py_ssize_t size) except -1
@cython.locals(info=dict)
cpdef _iext(Cursor cur, Message msg)
cpdef _iex_plus(Cursor cur, Message msg)
@cython.locals(info=dict)
cpdef _inf3(Cursor cur, Message msg)

cpdef _token(Cursor cur, Message msg)
cdef class ServerField:
    cdef public str key
    cdef public object spec
    cdef public bint number, signed
    cdef public Py_ssize_t limit
    cdef public bint own

cdef dict SERVER_LAYOUTS
@cython.locals(layout=tuple, values=dict, read=list, keys=tuple, index=Py_ssize_t, field=ServerField,
               offset=Py_ssize_t, length=Py_ssize_t, value=object)
cpdef _server_fields(Cursor cur, Message msg, bytes ident)
@cython.locals(data=bytes, pos=Py_ssize_t, end=Py_ssize_t, values=dict, findings=list, kept=Py_ssize_t,
               field=ServerField, nul=Py_ssize_t, number=cython.longlong, text=unicode)
cpdef bint _server_fields_quickly(Cursor cur, Message msg, bytes ident, tuple fields) except -1
cdef bint _text_worth_checking(ServerField field, unicode text, Py_ssize_t size) except -1
@cython.locals(raw=cython.p_const_uchar)
cdef Py_ssize_t _null_at(bytes data, Py_ssize_t pos, Py_ssize_t end)
@cython.locals(start=Py_ssize_t, kept=Py_ssize_t, read=list, index=Py_ssize_t, field=ServerField)
cpdef list _server_values(Cursor cur, Message msg, tuple layout)
@cython.locals(values=dict)
cpdef _server_fields_slowly(Cursor cur, Message msg, bytes ident)
@cython.locals(text=unicode)
cpdef _check_server_field(Cursor cur, bytes ident, spec, value, Py_ssize_t offset, Py_ssize_t length)
cpdef _reserved(Cursor cur)
cpdef _check_reserved(Cursor cur, value)
@cython.locals(data=dict)
cpdef _check_counts(Cursor cur, Message msg, records, token)
cpdef _string(Cursor cur, spec)
cpdef _decimal(Cursor cur, spec, allow_negative=*)

@cython.locals(records=ClientRecords, legacy=bint, quick=bint, count=Py_ssize_t, node=Field)
cpdef _client_records(Cursor cur, Message msg, tuple fields)
@cython.locals(start=Py_ssize_t)
cpdef list _read_record(Cursor cur, Message msg, tuple fields, bint legacy, node)
cpdef _title(Field node, list values)
@cython.locals(values=list, name=unicode, clan=unicode, name_size=Py_ssize_t, clan_size=Py_ssize_t)
cpdef list _client_record(Cursor cur, tuple fields, node)
@cython.locals(values=list)
cpdef list _legacy_record(Cursor cur, tuple fields, node)
cpdef list _record_values(Cursor cur, tuple fields, node)
@cython.locals(limits=dict, size=Py_ssize_t)
cpdef _check_text(Cursor cur, spec, unicode value, Py_ssize_t offset, Py_ssize_t length)

cdef class ClientRecords:
    cdef public bytes data
    cdef public Py_ssize_t origin, base, stop
    cdef public list items
    cdef public Py_ssize_t players
    cdef public bint checked
    cpdef add(self, list values)
    cpdef keep_bytes(self)
    cpdef list dicts(self)
    @cython.locals(index=Py_ssize_t)
    cdef _make_all(self)
    cdef _made(self, Py_ssize_t index)

@cython.locals(data=bytes, pos=Py_ssize_t, end=Py_ssize_t, start=Py_ssize_t, player=cython.longlong, index=Py_ssize_t,
               stop=Py_ssize_t)
cpdef bint _quick_record(Cursor cur, Py_ssize_t count, ClientRecords records) except -1
@cython.locals(raw=cython.p_const_uchar, stop=Py_ssize_t, high=cython.uchar, byte=cython.uchar)
cdef Py_ssize_t _text_end(bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t limit) except -2
@cython.locals(raw=cython.p_const_uchar, pos=Py_ssize_t, lead=cython.uchar, size=Py_ssize_t, low=cython.uchar,
               high=cython.uchar, index=Py_ssize_t)
cpdef bint utf8_valid(bytes data, Py_ssize_t start, Py_ssize_t stop) except -1
@cython.locals(raw=cython.p_const_uchar, first=Py_ssize_t, stop=Py_ssize_t)
cdef Py_ssize_t _decimal_end(bytes data, Py_ssize_t pos, Py_ssize_t end)
@cython.locals(raw=cython.p_const_uchar, first=Py_ssize_t, index=Py_ssize_t, value=cython.longlong)
cdef long long _small_decimal(bytes data, Py_ssize_t start, Py_ssize_t stop)
@cython.locals(values=list, pos=Py_ssize_t, stop=Py_ssize_t, index=Py_ssize_t)
cpdef dict _record_dict(bytes data, Py_ssize_t start)
cpdef dict _values_dict(list values)
