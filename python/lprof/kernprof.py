"""lprof as kernprof's module: `main(args)` runs lprof's command line in the
caller's process, as kernprof.main does, and kernprof's `ContextualProfile`
(its cProfile profiler) is here too.

As kernprof's, main() gives the caller back its process: sys.path,
sys.argv and sys.modules["__main__"] as they were, and the program's own
exception raised to the caller (after the profile is saved)."""
import cProfile
import functools
import inspect
import sys

from .cli import main as _cli_main
from .process import runner


def main(args=None, *, exit_on_error=True):
    saved_path, saved_argv = list(sys.path), list(sys.argv)
    had_main, saved_main = "__main__" in sys.modules, sys.modules.get("__main__")
    runner.hand_exceptions_to_caller, runner.last_outcome = True, None
    if "lprof.collect.linetrace" in sys.modules:  # an earlier call's lines: a new profile
        sys.modules["lprof.collect.linetrace"].collector.clear()
    try:
        code = _cli_main(list(sys.argv[1:] if args is None else args))
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


class ContextualProfile(cProfile.Profile):
    """cProfile.Profile switched on and off by count, usable as a decorator
    and a context manager, as kernprof's own is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.enable_count = 0

    def enable_by_count(self, subcalls=True, builtins=True):
        if self.enable_count == 0:
            self.enable(subcalls=subcalls, builtins=builtins)
        self.enable_count += 1

    def disable_by_count(self):
        if self.enable_count > 0:
            self.enable_count -= 1
            if self.enable_count == 0:
                self.disable()

    def __enter__(self):
        self.enable_by_count()
        return self

    def __exit__(self, *exc):
        self.disable_by_count()
        return False

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                value = None
                while True:
                    with self:
                        try:
                            item = gen.send(value)
                        except StopIteration as stop:
                            return stop.value
                    value = yield item
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper
