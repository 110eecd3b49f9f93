"""lprof run as kernprof: what changes when lprof stands in kernprof's place.

lprof is kernprof when it runs under that name: a link or copy of the
`lprof` console script named `kernprof`, `python -m kernprof` where the
`kernprof` module is lprof.kernprof, or lprof.kernprof.main() in a
caller's process. A kernprof user then keeps kernprof's defaults, where
lprof's own command has others:
- without -l, kernprof's cProfile run and `<script>.prof` (kernprof_cprofile.py),
  unless an lprof-only collector (--wall, --memory, --gpu, ...) is asked for;
- -p modules imported before the program runs (kernprof's --preimports);
- a `--` right after the script is dropped, as kernprof's parser drops it;
- the functions of -c / - code leave the written file with kernprof's
  temporary file (a -v listing still shows them);
- LINE_PROFILER_DEBUG (or -vv) logs the calls the cProfile run makes.
Run as `lprof`, none of these apply."""

import os
import sys
import time

# set by lprof for the `python -m lprof` it re-executes (--memory), read once
ENV = "LPROF_AS_KERNPROF"

_DEBUG_WORDS = {"1", "on", "true", "yes"}


def named_kernprof(argv0):
    """Whether the console script was started under kernprof's name."""
    return os.path.basename(argv0 or "") in ("kernprof", "kernprof.py")


def chosen(as_kernprof):
    """The personality of this process; the variable a re-exec set is
    dropped so that the program's own children do not inherit it."""
    inherited = os.environ.pop(ENV, None) == "1"
    return bool(as_kernprof or inherited)


# what only lprof collects: asked for, lprof samples even under kernprof's name
_LPROF_COLLECTORS = ("wall", "cpu", "memory", "gpu", "native", "sample", "stacks", "flamegraph", "html")


def runs_cprofile(args):
    """kernprof without -l: cProfile, unless one of lprof's own collectors is asked for."""
    return not args.line_by_line and not any(getattr(args, name, None) for name in _LPROF_COLLECTORS)


def debugging(args):
    """kernprof's diagnostics: LINE_PROFILER_DEBUG set true, or -vv."""
    env = os.environ.get("LINE_PROFILER_DEBUG", "").strip().casefold()
    return env in _DEBUG_WORDS or getattr(args, "verbosity", 0) >= 2


def debug(message, stream=None):
    """One diagnostic line in kernprof's shape, on stdout as kernprof's go."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now % 1 * 1000):03d}"
    out = stream or sys.stdout
    try:
        out.write(f"[kernprof {stamp} DEBUG] {message}\n")
        out.flush()
    except (OSError, ValueError):
        pass


CODE_FILES = ("<string>", "<stdin>")


def without_code_functions(prof):
    """The profile as kernprof writes it: -c / - code's functions leave with
    its temporary file (line_profiler's part of the file drops them anyway)."""
    functions = prof.get("functions")
    if not functions or not any(f.get("file") in CODE_FILES for f in functions):
        return prof
    return dict(prof, functions=[f for f in functions if f.get("file") not in CODE_FILES])
