"""The two ways a process leaves without atexit: exec and os._exit. This
module is the only one that wraps them; the others register what must run
first (before_exec, before_os_exit).

The sampling signal must not reach a program that replaced this one.

exec resets every caught signal to its default action, and the default of
lprof's sampling signal (a real-time signal) ends the process. A signal
generated while a thread is inside execve (its CPU timer expiring, the wall
thread signalling it) is delivered to the new program, which dies of it
before its first instruction: `lprof --wall` killed about one `os.execv` in
three this way, and one child in four that subprocess started with a
`preexec_fn`.

Two guards:
- install() wraps os.execv and os.execve (os.execl, execle, execlp, execlpe,
  execvp and execvpe all end in one of them): the sampler pauses before the
  real call (no timer armed, no wall thread; a signal already pending is
  delivered to the handler first) and resumes if the exec fails. The one
  wrapper also runs what before_exec() registered (the run's save,
  lprof.process.faults), so this module is the only one that wraps exec.
- before_os_exit() registers what runs before os._exit, which skips atexit
  (multiprocessing's forked workers end by it): the run's save
  (lprof.process.faults), a followed child's (lprof.process.follow), an
  attached process's (lprof.process.attach_agent). os._exit is wrapped while
  anything is registered and given back when the last one is removed.
- forked_for_exec() tells the fork hooks that this child is subprocess's
  fork for a `preexec_fn`, which runs that function and then execs in C:
  nothing is started there (no timers, no threads), and the program it
  execs is followed as any child is.
"""

import functools
import os
import sys
import threading

from .. import _lprof


_before = []  # run before every exec, in the order registered


def _guarded(real):
    @functools.wraps(real)
    def exec_guarded(*args, **kwargs):
        _lprof.sampler_pause()
        try:
            for fn in list(_before):
                fn()
            return real(*args, **kwargs)
        finally:  # reached only when the exec failed
            _lprof.sampler_resume()

    exec_guarded._lprof_exec_guard = True
    return exec_guarded


def install():
    """Wraps os.execv and os.execve (once: a second call finds the wrappers);
    harmless while nothing samples and nothing is registered."""
    for name in ("execv", "execve"):
        real = getattr(os, name, None)
        if real is not None and not getattr(real, "_lprof_exec_guard", False):
            setattr(os, name, _guarded(real))


def before_exec(fn):
    """Runs fn() before every exec of this process from now on (it must not
    raise); returns the function that stops that."""
    install()
    _before.append(fn)

    def remove():
        if fn in _before:
            _before.remove(fn)

    return remove


_before_exit = []  # run before os._exit, in the order registered
_real_exit = None  # os._exit as it was when wrapped
# This thread is running the hooks: a wrapper of lprof's inside another one
# (the program wrapped lprof's, lprof wrapped the program's) runs them once.
_in_hooks = threading.local()


def _exit_guarded(real):
    @functools.wraps(real)
    def exit_guarded(*args, **kwargs):
        if getattr(_in_hooks, "on", False):
            return real(*args, **kwargs)
        status = args[0] if len(args) == 1 and not kwargs else None
        _in_hooks.on = True
        try:
            for fn in list(_before_exit):
                try:
                    fn(status)
                except BaseException:  # the exit happens whatever a hook did
                    pass
            return real(*args, **kwargs)
        finally:  # reached only when os._exit was called wrongly and raised
            _in_hooks.on = False

    exit_guarded._lprof_exit_guard = True
    return exit_guarded


def before_os_exit(fn):
    """Runs fn(status) before os._exit(status) from now on (status is None
    when os._exit was called wrongly: the real one then raises); returns the
    function that stops that. A forked child inherits what is registered."""
    global _real_exit
    if not getattr(os._exit, "_lprof_exit_guard", False):
        _real_exit = os._exit
        os._exit = _exit_guarded(_real_exit)
    _before_exit.append(fn)

    def remove():
        if fn in _before_exit:
            _before_exit.remove(fn)
        # the last one gone: os._exit as it was, unless the program has put
        # its own wrapper over lprof's since (that one keeps calling ours)
        if not _before_exit and getattr(os._exit, "_lprof_exit_guard", False) and _real_exit is not None:
            os._exit = _real_exit

    return remove


def forked_for_exec():
    """True in a fork hook of the child that subprocess forks to run a
    preexec_fn and exec (the frame that forked is subprocess's
    _execute_child; lprof's own hook frames are skipped)."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").startswith("lprof."):
        f = f.f_back
    return (
        f is not None and f.f_code.co_name == "_execute_child" and f.f_globals.get("__name__") == "subprocess"
    )
