# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The server-info reply's fields are read by C calls to
# each other and to the Cursor; the layout walk reads its bytes in C.

cimport cython
from dissect.core.cursor cimport Cursor, as_bytes, new_cursor
from dissect.core.fmt cimport counted, decimal_text, hex_text, or_unknown
from dissect.core.model cimport Field, Message, add_prepared, new_field, new_message, prepared_finding
from dissect.core.tables cimport FieldSpec
from dissect.core.bounded cimport BoundedDict, peek, put
from dissect.capture.layers cimport Packet

# the formatters of the fields -V and JSON show most
@cython.locals(texts=dict)
cpdef _bool_text(value)
@cython.locals(texts=dict)
cpdef _tag_text(tag)
cpdef _marker_text(value)
cpdef _milliseconds(value)

cdef class _Candidate:
    cdef public object layout, teams, echo, extension, lenient

cdef class _ServerInfo:
    cdef public Cursor cur
    cdef public dict values
    cdef public object layout, teams, echo, extension
    cdef public dict team_names
    cdef public bint lenient

    cpdef read(self)
    @cython.locals(players=list)
    cpdef body(self)
    @cython.locals(count=Py_ssize_t)
    cpdef head(self)
    cpdef modes(self)
    cpdef _spec_modes(self)
    cpdef _spec_ctf(self)
    cpdef _real_modes(self)
    cpdef _teams_on(self)
    cpdef _bool(self, spec)
    cpdef _enum(self, spec, names)
    cpdef _out_of_range(self, detail)
    @cython.locals(node=Field, player=dict)
    cpdef _player(self, allowed)
    cpdef dict _player_fields(self, allowed)
    cpdef _team(self, allowed)
    cpdef _team_context(self)
    cpdef _team_name(self, team)
    @cython.locals(low=Py_ssize_t, high=Py_ssize_t)
    cpdef list _allowed_teams(self)
    cpdef _hash(self)
    cpdef _team_block(self)
    cpdef _teams(self, names, with_limit, scored)
    @cython.locals(players=Py_ssize_t, patches=Py_ssize_t, ext=dict)
    cpdef _extension(self)
    @cython.locals(cur=Cursor, start=Py_ssize_t, stop=Py_ssize_t, index=Py_ssize_t, flags=dict, data=bytes,
                   value=bint, spec=FieldSpec)
    cpdef dict _flags(self)
    @cython.locals(node=Field)
    cpdef _player_stats(self, Py_ssize_t index)
    cpdef _marker(self, expected)

# The layout trials: C calls to each other.
cpdef tuple _choose_layout(bytes data, keyed)
cpdef str echo_order(bytes data, keyed)
cpdef bint _short_name(bytes data) except -1
@cython.locals(candidate=_Candidate, heads=dict, bodies=dict)
cpdef tuple _tried_layout(bytes data, tuple candidates)

# The layout walk: C loops over the bytes.
cdef Py_ssize_t BROKE, LAST_GAME_TYPE, LAST_SKILL, LAST_SPEC_TEAM, LAST_REAL_SKILL
@cython.locals(index=Py_ssize_t)
cpdef Py_ssize_t _clean_fit(bytes data, tuple candidates) except? -3
@cython.locals(end=Py_ssize_t, pos=Py_ssize_t, players=Py_ssize_t, pwads=Py_ssize_t, start=Py_ssize_t,
               each=Py_ssize_t, teamplay=bint, ctf=bint, real=bint)
cdef bint _walk(bytes data, _Candidate candidate) except -1
cdef (Py_ssize_t, Py_ssize_t) _team_bounds(object layout, Py_ssize_t teams, bint teamplay, bint ctf)
@cython.locals(low=Py_ssize_t, high=Py_ssize_t, team_byte=bint, each=Py_ssize_t)
cdef Py_ssize_t _walk_players(bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t players, _Candidate candidate,
                              bint teamplay, bint ctf) except? -3
@cython.locals(each=Py_ssize_t, in_play=bint)
cdef Py_ssize_t _walk_teams(bytes data, Py_ssize_t pos, Py_ssize_t end, object layout, Py_ssize_t teams,
                            bint teams_on) except? -3
@cython.locals(flags=Py_ssize_t)
cdef Py_ssize_t _walk_extension(bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t players) except? -3
@cython.locals(raw=cython.p_const_uchar)
cdef Py_ssize_t _after_string(bytes data, Py_ssize_t pos, Py_ssize_t end) except? -3
@cython.locals(each=Py_ssize_t)
cdef Py_ssize_t _after_strings(bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count) except? -3
cdef bint _bools(bytes data, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t end) except -1
cdef bint _is_marker(bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t marker) except -1
@cython.locals(raw=cython.p_const_uchar, index=Py_ssize_t, digit=Py_ssize_t)
cdef bint _hex_digits(bytes data, Py_ssize_t start, Py_ssize_t stop) except -1
@cython.locals(index=Py_ssize_t)
cpdef bint _has_control_byte(bytes data, Py_ssize_t start, Py_ssize_t stop) except -1
@cython.locals(count=Py_ssize_t)
cpdef Py_ssize_t _severe_count(list findings) except -1
cpdef tuple _partial_rank(reach, Message trial)
@cython.locals(msg=Message, cur=Cursor)
cpdef tuple _head_trial(bytes data, _Candidate candidate)
@cython.locals(body=tuple, end=Cursor, msg=Message, cur=Cursor)
cpdef tuple _trial(bytes data, _Candidate candidate, tuple head, dict bodies)
@cython.locals(msg=Message, cur=Cursor)
cpdef tuple _body_trial(bytes data, _Candidate candidate, tuple head)
@cython.locals(msg=Message)
cpdef Message _fork(bytes data, Message shared)
@cython.locals(raw=cython.p_const_uchar, index=Py_ssize_t)
cpdef bint _zeros_and_ones(bytes data, Py_ssize_t start, Py_ssize_t stop) except -1

@cython.locals(reader=_ServerInfo, values=dict, real=bint, data=bytes, end=Py_ssize_t, pos=Py_ssize_t)
cpdef _summary_read(Cursor cur, Message msg, _Candidate choice)
cpdef str real_mode(bint deathmatch, bint teamplay, bint ctf)
@cython.locals(values=dict, read=Message)
cpdef dict full_values(Message msg)
@cython.locals(reader=_ServerInfo)
cpdef _ServerInfo _reader(Cursor cur, Message msg, _Candidate candidate)
cpdef dict _stats_fields(Cursor cur)

# The tags, compared with C integers in claims.
cdef Py_ssize_t LAUNCHER_TAG, SERVER_INFO_TAG, MASTER_UPDATE_SIZE
@cython.locals(size=Py_ssize_t, tag=Py_ssize_t)
cpdef bint _claims(bytes payload, bint on_port) except -1
@cython.locals(address=str, entry=str, node=Field)
cpdef str _master_entry(Cursor cur)

@cython.locals(data=bytes, start=Py_ssize_t, stop=Py_ssize_t, size=Py_ssize_t, count=Py_ssize_t,
               index=Py_ssize_t, texts=list)
cpdef MasterEntries _master_entries(Cursor cur)

# A master list's entries, read by the analysis in C: their keys without their texts.
cdef Py_ssize_t ENTRY_SIZE
@cython.final
cdef class MasterEntries:
    cdef public bytes data
    cdef public list texts
    @cython.locals(data=bytes, keys=list, index=Py_ssize_t, pos=Py_ssize_t, each=Py_ssize_t,
                   key=cython.longlong)
    cpdef list keys(self)
    @cython.locals(texts=list, data=bytes, index=Py_ssize_t)
    cpdef list texts_made(self)
cpdef str entry_text(long long key)
@cython.locals(address=str, entry=str, port=Py_ssize_t, node=Field)
cpdef str _entry_with_fields(Cursor cur, bytes data, Py_ssize_t pos)
cpdef str _entry_text(bytes data, Py_ssize_t pos)
# A master list's entry fields, read in C for each of its hundreds of entries (a FieldSpec's attributes are C
# members; an untyped one's go through its __getattr__ class).
cdef FieldSpec LISTED_SERVER, LISTED_IP, LISTED_PORT
@cython.locals(octets=list)
cpdef str _dotted(bytes data, Py_ssize_t pos)
cdef list OCTETS
cdef bint _COMPILED

# An entry's texts written in C: a master list's hundreds of entries each have two in the tree views.
cdef extern from *:
    """
    /* "a.b.c.d" from the 4 bytes at data[pos], then ":port" from the 2 after them (little-endian) when with_port:
       the texts of _dotted and _entry_text. IndexError where data ends before them, as data[index] raises. */
    static PyObject *odamex_entry_text(PyObject *data, Py_ssize_t pos, int with_port) {
        char text[24], *out = text;
        const unsigned char *raw;
        unsigned port;
        PyObject *result;
        int digits;
        if (pos < 0 || PyBytes_GET_SIZE(data) - pos < (with_port ? 6 : 4)) {
            PyErr_SetString(PyExc_IndexError, "index out of range");
            return NULL;
        }
        raw = (const unsigned char *)PyBytes_AS_STRING(data) + pos;
        out += dissect_dotted_quad_at(out, raw);  /* core/fmt.pxd, as the packet decoder's addresses */
        if (with_port) {
            port = raw[4] | raw[5] << 8;
            digits = dissect_decimal_size(port);
            *out++ = ':';
            dissect_decimal_back(out + digits, port, digits);
            out += digits;
        }
        result = PyUnicode_New(out - text, 127);
        if (result != NULL)
            memcpy(PyUnicode_1BYTE_DATA(result), text, out - text);
        return result;
    }
    """
    str _c_entry_text "odamex_entry_text" (bytes data, Py_ssize_t pos, bint with_port)

# The dissector's steps with their cursor, message and packet typed.
@cython.locals(tag=cython.longlong)
cpdef _decode(BoundedDict keyed, Cursor cur, Message msg, Packet packet)
@cython.locals(values=dict, roles=dict)
cpdef _request(Cursor cur, Message msg, Packet packet)
cpdef _master_list(Cursor cur, Message msg)
cpdef _master_update(Cursor cur, Message msg)
cpdef _observe(BoundedDict keyed, Packet packet, Message msg)
@cython.locals(choice=_Candidate, start=Py_ssize_t, left=Py_ssize_t, values=dict)
cpdef _server_info(BoundedDict keyed, Cursor cur, Message msg, Packet packet)
cpdef _layout_findings(Message msg, _Candidate choice, broken)
cpdef _truncated(Cursor cur, Message msg, exc)
