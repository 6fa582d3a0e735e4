# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. The table stays an OrderedDict (its users need its
# API); put and refreshed are cpdef functions that compiled callers cimport and call in C.

cpdef put(table, key, value)
cpdef refreshed(table, key)
