"""Re-executes the interpreter with lprof's allocator shim preloaded, so that
`lprof --memory` sees native allocations (numpy, torch, C/C++ extensions).

The shim must be in place before the first allocation: loading it later
would hand it blocks that another allocator owns. So `maybe_reexec` execs
the same lprof command again (the console script, or `python -m lprof`,
with the interpreter's options and the same arguments) with LD_PRELOAD
prepended and a marker variable. Children of the profiled program inherit
LD_PRELOAD (their native allocations go through the shim too; they are
attributed only if they run lprof themselves)."""

import os
import sys

from .. import _lprof

MARKER = "LPROF_SHIM_PRELOADED"
SHIM_NAME = "liblprof_shim.so"


def shim_path():
    """Path of liblprof_shim.so: $LPROF_SHIM, the installed package, or the
    source tree's build folder; None when not found."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # lprof/
    candidates = [
        os.environ.get("LPROF_SHIM"),
        os.path.join(package, SHIM_NAME),
        os.path.join(package, "..", "..", "src", "collect", "shim", "build", SHIM_NAME),
    ]
    for c in candidates:
        if c and os.path.isfile(c):
            return os.path.realpath(c)
    return None


def shim_loaded():
    """True when the shim is in this process (preloaded)."""
    return bool(_lprof.memory_native_covered())


def reexec_env(path, env=None):
    """The environment for the re-executed interpreter."""
    env = dict(os.environ if env is None else env)
    old = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = path + (":" + old if old else "")
    env[MARKER] = "1"
    # the child must import this same lprof package
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pp = env.get("PYTHONPATH")
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + pp if pp else "")
    return env


def maybe_reexec(argv, extra_env=None):
    """Execs `python -m lprof <argv>` with the shim preloaded unless it is
    already loaded. Returns (without exec) when the shim is loaded, missing,
    or a previous attempt failed to load it; then memory profiling covers
    Python objects only and says so."""
    if shim_loaded():
        return
    if os.environ.get(MARKER):
        sys.stderr.write(
            "lprof: the allocator shim did not load (LD_PRELOAD ignored?); "
            "native allocations are not covered\n"
        )
        return
    path = shim_path()
    if path is None:
        sys.stderr.write(
            f"lprof: {SHIM_NAME} not found (run `make build`); native allocations are not covered\n"
        )
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    env = reexec_env(path)
    env.update(extra_env or {})  # what the command must still know after the exec
    os.execve(sys.executable, reexec_args(argv), env)


def reexec_args(argv, orig_argv=None, process_argv=None):
    """The command line that runs this lprof command again with argv: the
    process's own (sys.orig_argv: the interpreter's options, then the console
    script's path, `-m lprof` or `-c CODE`) when its arguments are argv, so
    a `-m` of the program among them is never taken for the interpreter's;
    else `python <interpreter's flags> -m lprof argv` (lprof's main called
    with other arguments than the process's, or a program read from stdin)."""
    if orig_argv is None:
        orig_argv = getattr(sys, "orig_argv", None) or []
    orig = list(orig_argv)
    process = list(sys.argv if process_argv is None else process_argv)
    argv = list(argv)
    tail = process[1:]
    start = len(orig) - len(tail)  # where the process's arguments begin in orig
    if process and tail == argv and start >= 2 and orig[start:] == tail and orig[start - 1] != "-":
        return [sys.executable] + orig[1:start] + argv
    return [sys.executable] + _interpreter_flags() + ["-m", "lprof"] + argv


def _interpreter_flags():
    """The interpreter's options (-X, -W, -E, ...) as sys.flags says them."""
    try:
        import subprocess

        return subprocess._args_from_interpreter_flags()
    except (ImportError, AttributeError):
        return []
