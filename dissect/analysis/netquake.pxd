# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The per-message path's methods are cpdef: within this
# module they call each other as C functions and read the message and the conversation as C structs.

cimport cython
from dissect.analysis.base cimport Analyzer
from dissect.analysis.common cimport ServersSeen, Timing, annotate_response
from dissect.core.bounded cimport BoundedDict, peek, put
from dissect.core.model cimport Message
from dissect.capture.layers cimport Packet

cdef class _Walk:
    cdef public object kind, client, server, ended
    cdef public list frames, items, requested
    cpdef add_frame(self, number)

cdef class _Conversation:
    cdef public dict pending, players_pending
    cdef public object rule_walk, player_walk, last_rule, current_players

cdef class NetQuakeAnalyzer(Analyzer):
    cdef public BoundedDict conversations
    cdef public dict timings
    cdef public object requests, answered
    cdef public ServersSeen servers
    @cython.locals(values=dict, packet=Packet)
    cpdef feed(self, record, Message msg, tree)
    @cython.locals(conv=_Conversation)
    cpdef _request(self, record, Packet packet, Message msg, command)
    @cython.locals(walk=_Walk)
    cpdef _player_request(self, record, Packet packet, Message msg, _Conversation conv, list out)
    cpdef _rule_request(self, record, Packet packet, Message msg, _Conversation conv, list out)
    @cython.locals(conv=_Conversation, timing=Timing)
    cpdef _reply(self, record, Packet packet, Message msg, command, tree)
    cpdef _match(self, _Conversation conv, Message msg, command)
    @cython.locals(values=dict, walk=_Walk)
    cpdef _rule_reply(self, record, Message msg, _Conversation conv, list out)
    @cython.locals(values=dict, walk=_Walk)
    cpdef _player_reply(self, record, Message msg, _Conversation conv, list out, bint requested)
    @cython.locals(data=dict)
    cpdef _server_seen(self, server, record, Message msg)
    @cython.locals(conv=_Conversation)
    cpdef _Conversation _conversation(self, key, list out)
    cpdef _conclude(self, _Walk walk, expected=*, evicted=*)

cdef dict REPLY_TO, TIMED_AS

cpdef bint _past_last_player(number, current_players) except -1
