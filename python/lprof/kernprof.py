"""lprof as kernprof's module: `main(args)` runs lprof's command line in the
caller's process, as kernprof.main does, as kernprof (its defaults too:
commands/kernprof_mode.py), and kernprof's `ContextualProfile` (its cProfile
profiler) and `execfile` are here too. `python -m lprof.kernprof` is kernprof.

As kernprof's, main() gives the caller back its process: sys.path,
sys.argv and sys.modules["__main__"] as they were, and the program's own
exception raised to the caller (after the profile is saved)."""

import sys

from .cli import main as _cli_main

# kernprof's module has these: its cProfile profiler and execfile
from .commands.contextual_profile import ContextualProfile  # noqa: F401 (kernprof's API)
from .commands.kernprof_cprofile import execfile  # noqa: F401 (kernprof's API)
from .process import runner


def main(args=None, *, exit_on_error=True):
    saved_path, saved_argv = list(sys.path), list(sys.argv)
    had_main, saved_main = "__main__" in sys.modules, sys.modules.get("__main__")
    runner.hand_exceptions_to_caller, runner.last_outcome = True, None
    if "lprof.collect.linetrace" in sys.modules:  # an earlier call's lines: a new profile
        sys.modules["lprof.collect.linetrace"].collector.clear()
    try:
        code = _cli_main(list(sys.argv[1:] if args is None else args), as_kernprof=True)
        outcome = runner.last_outcome
    finally:
        runner.hand_exceptions_to_caller = False
        sys.path[:], sys.argv[:] = saved_path, saved_argv
        if had_main:
            sys.modules["__main__"] = saved_main
        else:
            sys.modules.pop("__main__", None)
    if outcome is not None and outcome.exc is not None:
        raise outcome.exc
    if code and exit_on_error:
        raise SystemExit(code)
    return code


if __name__ == "__main__":  # `python -m lprof.kernprof`: lprof as kernprof
    from .common import libdirs

    libdirs.note_command_callers()  # runpy's frames
    # the command's own exit: the program's exception printed as python prints it
    sys.exit(_cli_main(as_kernprof=True))
