"""os.fork without the warning that lprof's own threads would make it give.

From 3.12, CPython warns at os.fork and os.forkpty when the process has more
than one OS thread ("This process (pid=N) is multi-threaded, use of fork()
may lead to deadlocks in the child."), and it counts lprof's threads (the
drain, the fault watcher, the clocks): a single-threaded program forking in
__main__ printed a DeprecationWarning under lprof only. install() replaces
both with C stand-ins (_lprof.fork_stand_in: no frame of lprof's on the
stack during the fork). While the program, lprof's threads left out, has one
thread, the fork runs inside warnings.catch_warnings() with that one warning
ignored (the program's one thread is the caller: no other thread of it sees
the filters change); otherwise it runs as it is (the program's own threads:
the same warning, on the program's line). Installed when lprof starts its
first thread, kept after (harmless with no thread of lprof's left)."""

import os
import sys
import warnings

from .. import _lprof

_PATTERN = r"This process \(pid=\d+\) is multi-threaded, use of fork(pty)?\(\) may lead to deadlocks"


def _os_threads():
    """The process's OS threads, as CPython counts them on Linux (field 20
    of /proc/self/stat); 0 where it cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[17])
    except (OSError, ValueError, IndexError):
        return 0


def program_alone():
    """Whether the program has one thread, lprof's left out."""
    n = _os_threads()
    return 0 < n - len(_lprof.own_thread_tids()) <= 1


def _quiet():
    """Before a fork: a catch_warnings() entered, with the one warning
    ignored, where the program is alone; None otherwise."""
    if not program_alone():
        return None
    catcher = warnings.catch_warnings()
    catcher.__enter__()
    warnings.filterwarnings("ignore", _PATTERN, DeprecationWarning)
    return catcher


def _loud(catcher):
    """After the fork, in the parent and in the child."""
    if catcher is not None:
        catcher.__exit__(None, None, None)


_stand_ins = []  # what install() put in os (a C function takes no attribute to mark it)


def install():
    """Once per process (a forked child keeps its parent's); nothing before
    3.12 (no such warning)."""
    if sys.version_info < (3, 12):
        return
    for name in ("fork", "forkpty"):
        real = getattr(os, name, None)
        if real is not None and not any(real is s for s in _stand_ins):
            stand_in = _lprof.fork_stand_in(real, _quiet, _loud)
            _stand_ins.append(stand_in)
            setattr(os, name, stand_in)
