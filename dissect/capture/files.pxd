# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them.

cdef class Frame:
    cdef public object number, ts, caplen, wirelen, linktype, data, iface, error

cpdef Frame new_frame(number, ts, caplen, wirelen, linktype, data, iface, error)
cdef _fill(Frame frame, number, ts, caplen, wirelen, linktype, data, iface, error)
