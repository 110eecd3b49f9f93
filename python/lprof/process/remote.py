"""Asking another Python process to run a file: sys.remote_exec (PEP 768,
Python 3.14+), called from an interpreter of the target's own version.

sys.remote_exec only talks to its own major.minor version ("Can't send
commands from a Python 3.15 process to a Python 3.14 process"), so the call
is made by the target's own executable (/proc/PID/exe, run isolated and
without site: it needs nothing but sys), whatever Python runs lprof; a target
whose executable is no Python (an embedding application) is asked by this
interpreter, which must then be its version. Every failure is an LprofError
with one line that says what to do."""

import os
import subprocess
import sys

from ..common.errors import LprofError

# run by the target's executable: exit status 3 = no sys.remote_exec (its
# version on stdout), 4 = not permitted, 5 = refused otherwise (the reason)
_CALLER = r"""
import sys
if not hasattr(sys, "remote_exec"):
    print("%d.%d" % sys.version_info[:2]); sys.exit(3)
try:
    sys.remote_exec(int(sys.argv[1]), sys.argv[2])
except PermissionError as exc:
    print(exc); sys.exit(4)
except Exception as exc:
    print(exc); sys.exit(5)
"""


def executable_of(pid):
    """The target's executable, or raises LprofError when there is no such
    process (or it cannot be read)."""
    try:
        return os.path.realpath(os.readlink(f"/proc/{pid}/exe"))
    except FileNotFoundError:
        raise LprofError(f"attach: no process {pid}", 2) from None
    except PermissionError:
        if os.geteuid() == 0:
            raise LprofError(
                f"attach: cannot inspect process {pid} (permission denied even to "
                f"root: another namespace or a restricted /proc)",
                2,
            ) from None
        raise LprofError(
            f"attach: process {pid} belongs to another user (run lprof as that user, or as root)", 2
        ) from None
    except OSError as exc:
        raise LprofError(f"attach: cannot inspect process {pid}: {exc.strerror}", 2) from None


def _looks_like_python(exe):
    return os.path.basename(exe).startswith("python")


def run_file(pid, path, timeout=30):
    """Asks process `pid` to run the Python file `path` on its main thread at
    its next Python instruction there; returns once asked (not run)."""
    exe = executable_of(pid)
    if _looks_like_python(exe):
        try:
            r = subprocess.run(
                [exe, "-I", "-S", "-c", _CALLER, str(pid), path],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LprofError(f"attach: could not run {exe}: {exc}", 1) from None
        said = (r.stdout.strip() or r.stderr.strip()).splitlines()
        said = said[-1] if said else f"exit status {r.returncode}"
        if r.returncode == 0:
            return
        if r.returncode == 3:
            raise LprofError(
                f"attach: process {pid} runs Python {said}; attaching needs "
                f"Python 3.14 or later in the process (sys.remote_exec)",
                2,
            )
        if r.returncode == 4:
            raise LprofError(
                f"attach: not permitted to attach to process {pid} ({said}); "
                f"run lprof as root, or as its user with "
                f"/proc/sys/kernel/yama/ptrace_scope at 0",
                1,
            )
        if "find the main thread" in said:
            said += (
                " (it was forked from a thread other than its main one, as a "
                "multiprocessing pool with the fork method starts its replacement "
                "workers: sys.remote_exec cannot reach such a process)"
            )
        raise LprofError(f"attach: process {pid} refused: {said}", 1)
    # an embedding program: only this interpreter's own version can reach it
    embedded = (
        f"attach: process {pid} runs {exe}, no Python executable (for a Python 3.14+ "
        f"embedded in it, run lprof under that Python version)"
    )
    if not hasattr(sys, "remote_exec"):
        raise LprofError(embedded, 2)
    try:
        sys.remote_exec(pid, path)
    except PermissionError as exc:
        raise LprofError(f"attach: not permitted to attach to process {pid} ({exc})", 1) from None
    except Exception as exc:  # RuntimeError, OSError: no Python in it, another version, disabled
        raise LprofError(f"{embedded}: {exc}", 2) from None
