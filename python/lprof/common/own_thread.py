"""lprof's own background threads (the sampler's drain, the periodic
writer, the fault watcher). Started in C (_lprof.own_thread_start), not by
threading, so the program never sees them (threading.active_count(),
threading.enumerate(), _thread._count()), and left out of
sys._current_frames() and sys._current_exceptions() (wrapped once, when the
first one starts: they list every thread that runs Python code); never
registered with the sampler, so never sampled; and their allocations are
never recorded, from the first one (the C start sets the hook guard before
the thread allocates anything). Code run on them must not call
threading.current_thread(), which would register a dummy thread.

They block every asynchronous signal, so a signal sent to the process
(os.kill(os.getpid(), ...), Ctrl-C, SIGTERM) is always taken by one of the
program's threads, as without lprof, never by one of lprof's."""

import _thread
import functools
import os
import signal
import sys

from .. import _lprof
from . import fork_warning


# synchronous signals (faults) cannot be blocked meaningfully; KILL/STOP cannot be at all
_ASYNC_SIGNALS = set(signal.valid_signals()) - {
    signal.SIGSEGV,
    signal.SIGBUS,
    signal.SIGFPE,
    signal.SIGILL,
    signal.SIGTRAP,
    signal.SIGSYS,
    signal.SIGKILL,
    signal.SIGSTOP,
}


# ident -> pid of lprof's threads alive now; the pid, because a forked child
# has none of its parent's threads, and a thread of its own may get the ident
_alive = {}


def _hide_from_sys():
    """Wraps sys._current_frames and sys._current_exceptions (once) so that
    what they return leaves lprof's threads out (a program checking that a
    forked child has one thread, or dumping every thread, sees its own)."""
    for name in ("_current_frames", "_current_exceptions"):
        real = getattr(sys, name, None)
        if real is None or getattr(real, "_lprof_hides", False):
            continue

        def listing(real=real):
            got = real()
            pid = os.getpid()
            for ident, owner in list(_alive.items()):
                if owner == pid:
                    got.pop(ident, None)
            return got

        functools.update_wrapper(listing, real)
        listing._lprof_hides = True
        setattr(sys, name, listing)


def on_own_thread():
    """Whether the calling thread is one of lprof's (a pending call may run
    on any thread of the interpreter from 3.12: lprof's too)."""
    return _alive.get(_thread.get_ident()) == os.getpid()


class OwnThread:
    def __init__(self, target):
        self._target = target
        self._done = _thread.allocate_lock()
        self.ident = None
        self.native_id = None

    def start(self):
        _hide_from_sys()
        fork_warning.install()
        self._done.acquire()
        # the new thread inherits the mask in force when it is created
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS)
        try:
            self.ident = _lprof.own_thread_start(self._run)
            _alive[self.ident] = os.getpid()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _run(self):
        ident = _thread.get_ident()
        _alive[ident] = os.getpid()  # before the start above returns, too
        self.native_id = _thread.get_native_id()
        try:
            self._target()
        except BaseException:  # never break the program for the profiler
            pass
        finally:
            _alive.pop(ident, None)
            self._done.release()

    def join(self, timeout):
        if self._done.acquire(timeout=timeout):
            self._done.release()

    def is_current(self):
        return _thread.get_ident() == self.ident
