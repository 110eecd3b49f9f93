"""The `profile` object: `@profile`, `profile(func)`, `with profile:`.

Tracing works per code object, so decorating never wraps: the very same
function (or descriptor, or class) is returned, and it behaves exactly as
before (return values, exceptions, signature, `inspect` results). Outside
`lprof -l` nothing is enabled, so a decorated function costs nothing."""
import atexit
import functools
import os
import sys
import types

from .collect.linetrace import code_key, collector
from .collect.trace_targets import code_objects


class LineStats:
    """line_profiler's result shape: timings {(file, first line, function):
    [(line, hits, time in `unit` seconds)]}. Picklable like line_profiler's."""

    def __init__(self, timings, unit):
        self.timings, self.unit = timings, unit

    def __repr__(self):
        return f"<lprof.LineStats {len(self.timings)} functions, unit {self.unit:g} s>"


_TRUE_WORDS = ("1", "on", "true", "t", "yes", "y")
# CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR (inspect's values, without
# importing inspect at start-up)
_SUSPENDING = 0x20 | 0x80 | 0x200


class LineProfiler:
    """The `profile` decorator and context manager, and line_profiler's
    LineProfiler class (kernprof-compatible).

    All instances share lprof's one tracer; each shows only the functions it
    was given (the global `profile` shows every traced function). Decorating
    with the global `profile` returns the very same object (tracing is
    switched on by lprof -l, `with profile:` or LINE_PROFILE=1); another
    instance wraps plain functions so that calling them traces, as
    line_profiler does."""

    def __init__(self, *functions):
        self._keys = set()
        self._everything = False
        for f in functions:
            self.add(f)

    def __call__(self, obj):
        if self._everything:
            _maybe_line_profile_env(self)
            self.add(obj)
            return obj
        self.add(obj)
        if isinstance(obj, types.FunctionType) and not obj.__code__.co_flags & _SUSPENDING:
            return self._traced_call(obj)
        return obj

    def _traced_call(self, func):
        @functools.wraps(func)
        def traced(*args, **kwargs):
            self.enable()
            try:
                return func(*args, **kwargs)
            finally:
                self.disable()
        return traced

    def add(self, obj):
        """Registers obj's code; returns how many code objects were found."""
        count = 0
        for code in code_objects(obj):
            collector.add_code(code)
            self._keys.add(code_key(code))
            count += 1
        return count

    add_function = add_module = add_class = add_callable = add

    def enable(self):
        # the global profile's enable is a whole run's (LINE_PROFILE=1, or the
        # program's own profile.enable()): native threads are traced too
        if self._everything:
            collector.start()
        else:
            collector.enable()

    def disable(self):
        collector.disable()

    enable_by_count = enable
    disable_by_count = disable

    def __enter__(self):
        self.enable()
        return self

    def __exit__(self, *exc):
        self.disable()
        return False

    @property
    def enabled(self):
        return collector.enabled

    # -- running code under the profiler (line_profiler's names) ---------
    def runcall(self, func, /, *args, **kwargs):
        self.enable()
        try:
            return func(*args, **kwargs)
        finally:
            self.disable()

    def runctx(self, cmd, globals, locals):
        self.enable()
        try:
            exec(cmd, globals, locals)
        finally:
            self.disable()
        return self

    def run(self, cmd):
        import __main__
        namespace = __main__.__dict__
        return self.runctx(cmd, namespace, namespace)

    # -- results -----------------------------------------------------------
    def snapshot(self):
        """The profile dict of what was traced so far (see docs/formats.md)."""
        from .model import assemble
        prof = assemble.profile(["lines"], [collector])
        if not self._everything:
            prof["functions"] = [f for f in prof["functions"]
                                 if (f["file"], f["name"], f["first_line"]) in self._keys]
        return prof

    def get_stats(self):
        """line_profiler's LineStats of this profiler's functions (times in
        units of lprof's timer)."""
        from . import _lprof
        unit = _lprof.timer_unit()
        timings = {}
        for f in self.snapshot()["functions"]:
            timings[(f["file"], f["first_line"], f["name"])] = [
                (ln, hits, int(round(t / unit))) for ln, hits, t in f["lines"]]
        return LineStats(timings, unit)

    def print_stats(self, stream=None, output_unit=None, stripzeros=False, details=True,
                    summarize=False, sort=False, rich=False):
        from .render.listing import render_lines
        stream = stream or sys.stdout
        stream.write(render_lines(self.snapshot(), unit=output_unit, skip_zero=stripzeros,
                                  summarize=summarize, sort="time" if sort else "file"))

    def dump_stats(self, path):
        """Writes an lprof profile file (`lprof view` reads it)."""
        from .model import profile_file
        profile_file.save(self.snapshot(), path)

    def __repr__(self):
        state = "enabled" if collector.enabled else "disabled"
        n = collector.registered_count() if self._everything else len(self._keys)
        return f"<lprof.LineProfiler ({state}, {n} code objects)>"


_env_started = []


def _maybe_line_profile_env(prof):
    """LINE_PROFILE=1 python script.py (line_profiler's switch): the first
    @profile outside lprof -l starts tracing; at exit the listing is printed
    and written to profile_output.txt and profile_output.lprof."""
    if _env_started or collector.enabled:
        return
    if os.environ.get("LINE_PROFILE", "").strip().casefold() not in _TRUE_WORDS:
        return
    if os.environ.get("LPROF_BUILTIN_PROFILE"):  # lprof -l runs the show
        return
    _env_started.append(True)
    prof.enable()
    atexit.register(_line_profile_env_report, prof)


def _line_profile_env_report(prof):
    from .render.listing import render_lines
    collector.stop()
    snap = prof.snapshot()
    text = render_lines(snap)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        from .model import profile_file
        with open("profile_output.txt", "w", encoding="utf-8") as fh:
            fh.write(text)
        profile_file.save(snap, "profile_output.lprof")
        sys.stderr.write("lprof: wrote profile_output.txt and profile_output.lprof "
                         "(view it again: lprof view profile_output.lprof)\n")
    except OSError as exc:
        sys.stderr.write(f"lprof: could not write profile_output.*: {exc.strerror or exc}\n")


def _global_profile():
    p = LineProfiler()
    p._everything = True
    return p


profile = _global_profile()
