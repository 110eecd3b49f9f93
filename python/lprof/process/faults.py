"""Keeping the profile when the program does not end normally.

- SIGTERM from outside (its default action in force): the C handler wakes
  lprof's watcher thread (through a semaphore: lprof holds no file
  descriptor the program could list, close or reuse), which saves and prints
  the profile as at the end of a run, then the process dies by SIGTERM as it
  would have. The program's own SIGTERM handler (signal.signal) replaces
  lprof's, as without lprof; signal.getsignal() reports what Python set,
  SIG_DFL untouched.
- Fatal signals (a segfault in a C extension, abort()): no Python can run
  safely then. The watcher hands an encoded profile to C every few seconds
  (or -i's periodic file does); the C handler writes the last one, says so,
  and the signal goes on to the previous handler (default: death by it).
- An exec (lprof.collect.exec_guard runs this module's save before it) and
  os._exit: the profile is saved and printed first, in the process that lprof
  started only (a forked child's os._exit saves nothing).

`arm()` is called once, before the program starts; `Guard.end()` at the end
of the run, around the normal save."""

import _thread
import os
import signal
import sys
import time

from .. import _lprof
from ..collect import exec_guard
from ..common.own_thread import OwnThread, on_own_thread

# first in-memory checkpoint after this many seconds, then at least this
# often, and never more than 2% of the time (a checkpoint's cost x 50)
FIRST_CHECKPOINT_S = 0.5
CHECKPOINT_EVERY_S = 2.0
CHECKPOINT_COST_FACTOR = 50
# how long the main thread sleeps on SIGTERM to let lprof's watcher have
# the GIL for the save (which ends the process)
TERM_YIELD_S = 5.0


class Guard:
    def __init__(self, finish, encode, path, checkpoints, wrap_os=True, quiet=False, term=True, note=None):
        """finish(how, exit_code): saves and prints the profile (the runner's
        end of run); encode(): the current profile, encoded; checkpoints:
        False where -i's writer hands its own (see checkpoint()); wrap_os:
        save before os.exec*/os._exit (a followed child wraps os._exit
        itself); quiet: the C handlers write nothing on stderr (-q, a
        followed child); term: take SIGTERM (a followed child whose program
        set its own handler leaves it alone); note: a file where a fatal
        signal also writes which signal, and how old the profile it wrote
        is (a followed child's death, told to the lprof command)."""
        self._finish, self._encode, self._checkpoints = finish, encode, checkpoints
        self._lock = _thread.allocate_lock()  # one ending: normal, SIGTERM, exec or _exit
        self._cp_lock = _thread.allocate_lock()  # a checkpoint being encoded
        self._cp_off = False
        self._pid = os.getpid()
        tmp = os.path.join(os.path.dirname(path), f".lprof-{os.getpid()}-dying.tmp")
        _lprof.emergency_note(note)
        _lprof.emergency_arm(term, quiet, path, tmp, 0o666 & ~_umask())
        self._exit_hook = (
            exec_guard.before_os_exit(lambda _status: self.before_leaving("os._exit")) if wrap_os else None
        )
        self._exec_hook = exec_guard.before_exec(lambda: self.before_leaving("exec")) if wrap_os else None
        self._thread = OwnThread(self._watch)
        self._thread.start()

    # ---- the watcher thread (an OwnThread: never sampled, never seen) ----
    def _watch(self):
        due = time.monotonic() + FIRST_CHECKPOINT_S
        while True:
            wait = max(0.0, due - time.monotonic()) if self._checkpoints else -1.0
            woken_by = _lprof.emergency_wait(wait, self._terminated_elsewhere)
            if woken_by > 0:
                self._terminated(woken_by)
                return
            if woken_by < 0:
                return  # released: the run ended
            began = time.monotonic()
            with self._cp_lock:
                if self._cp_off:
                    continue
                try:
                    _lprof.emergency_checkpoint(self._encode())
                except Exception:  # a failed checkpoint must not end the program
                    pass
            cost = time.monotonic() - began
            due = time.monotonic() + max(CHECKPOINT_EVERY_S, CHECKPOINT_COST_FACTOR * cost)

    def _terminated(self, signum):
        if not self._lock.acquire(blocking=True):
            return
        self._die_saved(signum)

    def _terminated_elsewhere(self, signum):
        """The same SIGTERM, as a pending call (queued by emergency_wait
        before the watcher waits for the GIL, or at once by lprof's C relay
        thread when the watcher is busy in a checkpoint), run by the thread that holds
        the GIL at its next instruction: the main thread before 3.12, any
        thread from 3.12. A program that releases and retakes the GIL
        thousands of times a second kept the watcher from it, and the save
        took 4-26 s. This thread only sleeps a while, which hands the
        watcher the GIL; it never saves: a pending call runs at any
        instruction, also inside lprof's own save on this thread, whose
        locks it would wait for forever (a pool worker's save before
        os._exit hung so). Nor does it sleep there: that save ends the
        process itself; nor on lprof's own threads (the watcher itself
        saves next)."""
        if _thread.get_ident() in _saving or on_own_thread():
            return
        end = time.monotonic() + TERM_YIELD_S
        while time.monotonic() < end:
            time.sleep(0.01)

    def _die_saved(self, signum):
        try:
            self._finish(f"killed by {signal.Signals(signum).name}", -signum)
        finally:
            _flush()
            _lprof.emergency_die(signum)

    # ---- called by the program's threads ----
    def checkpoint(self, data):
        """-i's writer hands its encoded profile over (no second encoding)."""
        _lprof.emergency_checkpoint(data)

    def stop_checkpoints(self):
        """No checkpoint from here on; one being encoded ends first (before
        the collectors stop for the save). What was handed over stays what
        a fatal signal writes."""
        with self._cp_lock:
            self._cp_off = True
            self._checkpoints = False  # the watcher waits for SIGTERM or the end alone

    def before_leaving(self, how):
        """exec or os._exit: save and print now (lprof's process only)."""
        if os.getpid() != self._pid or not self._lock.acquire(blocking=False):
            return
        with saving_here():
            try:
                self._finish(how, None)
            except Exception:
                pass
            _flush()
        self._lock.release()

    def end(self, join=True):
        """Before the normal save: no other ending runs from here on. Returns
        the SIGTERM received meanwhile (0: none): the caller saves, then dies
        by it (die()). join=False: the watcher, woken, ends while the
        caller saves (reap() waits for it then): two thread wake-ups of
        this VM's milliseconds off the end of the run."""
        self._lock.acquire()
        _saving.add(_thread.get_ident())  # the caller saves next, then the process ends
        self.stop_checkpoints()  # one being encoded ends first: the caller builds next
        _lprof.emergency_disarm()
        for remove in (self._exit_hook, self._exec_hook):
            if remove is not None:
                remove()
        _lprof.emergency_release()  # the watcher wakes and returns
        if join:
            self.reap()
        return _lprof.emergency_pending()

    def reap(self):
        """Waits for the watcher woken by end() to be over."""
        self._thread.join(timeout=5)

    @staticmethod
    def die(signum):
        _flush()
        _lprof.emergency_die(signum)


# threads inside one of lprof's saves (saving_here, Guard.end's caller): a
# SIGTERM's pending call does not stop them
_saving = set()


class saving_here:
    """Around a save of lprof's on the calling thread (a followed child's
    before os._exit or at exit)."""

    def __enter__(self):
        self._me = _thread.get_ident()
        self._added = self._me not in _saving
        _saving.add(self._me)

    def __exit__(self, *exc):
        if self._added:
            _saving.discard(self._me)


def arm(finish, encode, path, checkpoints=True, wrap_os=True, quiet=False, term=True, note=None):
    return Guard(finish, encode, path, checkpoints, wrap_os, quiet, term, note)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _umask():
    from ..common.files import umask as read

    return read()
