# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

from dissect.analysis.base cimport Analyzer

cdef class NetQuakeAnalyzer(Analyzer):
    cdef public object conversations, timings, requests, answered, servers

cdef class _Conversation:
    cdef public object pending, players_pending, rule_walk, player_walk, last_rule, current_players

cdef class _Walk:
    cdef public object kind, client, server, frames, items, requested, ended
