# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The loop that reads a capture's frames runs in C.

cimport cython
from dissect.capture.files cimport Frame
from dissect.core.interrupt cimport DeferredInterrupt, defer_interrupt, take_signals
from dissect.session cimport Session

@cython.locals(frame=Frame)
cpdef _read_files(files, Session session, DeferredInterrupt guard)
