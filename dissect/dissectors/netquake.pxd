# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-message path is module functions that read
# the Cursor and the Message as C structs and call the Cursor's C methods.

cimport cython
from dissect.core.cursor cimport Cursor, as_bytes, unpack
from dissect.core.model cimport Message, add_prepared, prepared_finding
from dissect.core.bounded cimport BoundedDict, put
from dissect.capture.layers cimport Packet
from dissect.core.fmt cimport hex16, hex_text

@cython.locals(names=dict)
cpdef _command_text(command)  # the formatter of every message's command

@cython.locals(size=Py_ssize_t, length=Py_ssize_t, commands=dict)
cpdef bint _claims(dissector, bytes payload, packet, bint on_port) except -1
cpdef _decode(Cursor cur, Message msg)
cpdef _data(Cursor cur, Message msg, flags)
@cython.locals(names=dict)
cpdef _control(Cursor cur, Message msg, flags)


cpdef _game_request(Cursor cur, Message msg)
cpdef _check_version(Cursor cur, version)
cpdef _player_request(Cursor cur, Message msg)
cpdef _rule_request(Cursor cur, Message msg)
cpdef _accept(Cursor cur, Message msg)
cpdef _reject(Cursor cur, Message msg)
@cython.locals(values=dict)
cpdef _server_info(Cursor cur, Message msg)
@cython.locals(values=dict)
cpdef _player_info(Cursor cur, Message msg)
@cython.locals(values=dict)
cpdef _rule_info(Cursor cur, Message msg)
@cython.locals(pos=Py_ssize_t, little=cython.longlong, big=cython.longlong, big_endian=bint, data=bytes)
cpdef _long_order(Cursor cur, long long low, long long high, Py_ssize_t settle_at=*)
@cython.locals(frags=cython.longlong, connected=cython.longlong)
cpdef int _plausible_player(bytes data, Py_ssize_t pos, Py_ssize_t settle_at, order) except -1

cdef class _Seen:
    cdef public BoundedDict table
    cdef public object last

@cython.locals(values=dict)
cpdef _observe(_Seen seen, Packet packet, Message msg)
cpdef _remember(_Seen seen, tuple conversation)
cpdef tuple _conversation(src, sport, dst, dport)
