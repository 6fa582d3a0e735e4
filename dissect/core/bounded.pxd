# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. The table is an extension type whose slot arrays
# are typed memoryviews, read and written in C; put, refreshed, peek and the slot handles (newest, held_at,
# refreshed_at) are cpdef functions that compiled callers cimport and call in C.

cimport cython

cdef list _NUMBERS

@cython.final
cdef class BoundedDict:
    cdef public Py_ssize_t limit
    cdef dict _slots
    cdef list _keys, _values
    cdef int[::1] _older, _newer
    cdef int _free
    cpdef put(self, key, value)

@cython.locals(slot=Py_ssize_t, number=object, found=object)
cpdef put(BoundedDict table, key, value)
@cython.locals(slot=Py_ssize_t)
cpdef refreshed(BoundedDict table, key)
cpdef peek(BoundedDict table, key)
cpdef Py_ssize_t newest(BoundedDict table) noexcept
cpdef bint held_at(BoundedDict table, Py_ssize_t slot, value) except -1
cpdef bint refreshed_at(BoundedDict table, Py_ssize_t slot, value) except -1
@cython.locals(slot=Py_ssize_t)
cpdef popped(BoundedDict table, key)
cpdef kept(dict table, key, value, Py_ssize_t limit)
cdef _empty(BoundedDict table)
@cython.locals(slot=Py_ssize_t)
cdef _add(BoundedDict table, key, value)
@cython.locals(slot=Py_ssize_t)
cdef Py_ssize_t _vacant(BoundedDict table) except -1
cdef void _give_back(BoundedDict table, Py_ssize_t slot) noexcept
cdef _occupy(BoundedDict table, Py_ssize_t slot, key, value)
@cython.locals(slot=Py_ssize_t, capacity=Py_ssize_t)
cdef Py_ssize_t _new_slot(BoundedDict table) except -1
@cython.locals(out=int[::1])
cdef int[::1] _grown(int[::1] links, Py_ssize_t capacity)
cdef tuple _take(BoundedDict table, Py_ssize_t slot)
cdef _release(BoundedDict table, Py_ssize_t slot)
@cython.locals(out=list, slot=Py_ssize_t)
cdef list _in_order(BoundedDict table)
cdef void _refresh(BoundedDict table, Py_ssize_t slot) noexcept
@cython.locals(before=int, after=int)
cdef void _unlink(BoundedDict table, Py_ssize_t slot) noexcept
cdef void _insert(BoundedDict table, Py_ssize_t slot, int before, int after) noexcept
