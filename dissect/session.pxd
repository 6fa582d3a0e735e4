# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every frame passes through Session.frame: it calls
# the pipeline and its own record path in C.

cimport cython
from dissect.capture.files cimport Frame
from dissect.core.interrupt cimport DeferredInterrupt, take_signals
from dissect.pipeline cimport FrameRecord, Pipeline
from dissect.render.printer cimport Printer
from dissect.render.stats cimport StatsCollector

cdef class Session:
    cdef public object sink, filter, fail_rank, failed, phase, current
    cdef public StatsCollector stats
    cdef public Pipeline pipeline
    cdef public Printer printer
    cpdef frame(self, frame, packet=*)
    cpdef skip(self, frame)
    @cython.locals(record=FrameRecord)
    cpdef _frame(self, record)
    cpdef analysis(self, rec)

@cython.locals(frame=Frame)
cpdef read_frames(files, Session session, DeferredInterrupt guard, progress=*)
