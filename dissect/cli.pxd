# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. The loop that reads a capture's frames is session.read_frames, in C.

from dissect.core.interrupt cimport DeferredInterrupt, defer_interrupt
from dissect.session cimport Session, read_frames

cpdef _read_files(files, Session session, DeferredInterrupt guard)
