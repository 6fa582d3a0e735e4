"""Ctrl-C where a KeyboardInterrupt must not cut work in two: a batch of output written, a frame dissected.

A KeyboardInterrupt raised in the middle of a frame would leave the frame unwritten and an analysis's
tables half updated, which the conclusions written after Ctrl-C then read; raised between a batch's
write and its bookkeeping, it would leave the batch to be written again. ``DeferredInterrupt`` takes
SIGINT while such work runs and raises the Ctrl-C once the work is done.
"""

# _signal, not signal: the C module, loaded at start-up; signal's enum classes would cost a millisecond of every run.
from _signal import SIGINT, default_int_handler, getsignal, signal

_forced = False  # a second Ctrl-C came: it and every one after it are raised at once


class DeferredInterrupt:
    """SIGINT's handler in place of the one that raises KeyboardInterrupt. While it is ``holding``, the first Ctrl-C
    is noted (``pending``), for the holder to raise once its work is done; while it is not (a read that waits for
    frames, which could wait for ever), a Ctrl-C is raised at once. A second Ctrl-C is raised at once, and from
    then on every one, with nothing deferred: so that a reader that holds the output up cannot hold dissect."""

    __slots__ = ("pending", "holding")

    def __init__(self, holding):
        self.pending = False
        self.holding = holding

    def __call__(self, signum, frame):
        global _forced
        if self.pending:
            _forced = True
            raise KeyboardInterrupt
        if not self.holding:
            raise KeyboardInterrupt
        self.pending = True

    def restore(self):
        """Put the handler that raises KeyboardInterrupt back."""
        signal(SIGINT, default_int_handler)

    def uninstall(self):
        """Put the handler back, and raise the Ctrl-C that came while it held."""
        self.restore()
        if self.pending:
            raise KeyboardInterrupt


def defer_interrupt(holding=True):
    """A DeferredInterrupt installed as SIGINT's handler; None where SIGINT does not raise KeyboardInterrupt (ignored,
    or another handler: a live capture's, or a DeferredInterrupt that holds already), after a second Ctrl-C, or in a
    thread other than the main one (which Python runs signal handlers in)."""
    if _forced or getsignal(SIGINT) is not default_int_handler:
        return None
    deferred = DeferredInterrupt(holding)
    try:
        signal(SIGINT, deferred)
    except ValueError:  # not the main thread
        return None
    return deferred


def take_signals():
    """Run the handlers of the signals that came while compiled code ran. The interpreter runs them when it next runs
    Python code, or where a blocking call is interrupted, and compiled code may do neither for a long time: called
    between frames, this makes that the point where a Ctrl-C is taken. (Pure Python runs them as it goes.)"""
    if _COMPILED:
        PyErr_CheckSignals()  # cimported by interrupt.pxd: a name only the compiled build has


_COMPILED = not __file__.endswith(".py")
