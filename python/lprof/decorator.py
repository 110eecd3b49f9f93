"""The `profile` object: `@profile`, `profile(func)`, `with profile:`.

Tracing works per code object, so decorating never wraps: the very same
function (or descriptor, or class) is returned, and it behaves exactly as
before (return values, exceptions, signature, `inspect` results). Outside
`lprof -l` nothing is enabled, so a decorated function costs nothing."""

import atexit
import functools
import os
import sys
import threading
import types

from . import _lprof
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

    All instances share lprof's one tracer. An instance counts, as
    line_profiler's does, only what its functions ran while it was enabled,
    from zero when made: the tracer's counts of its code objects are read
    when its enabling begins (enable from 0) and ends (disable to 0), and
    it keeps the sums of those differences (with the running one while
    enabled). The global `profile` shows everything the tracer counted (it
    is lprof -l's). Decorating with the global `profile` returns the very
    same object (tracing is switched on by lprof -l, `with profile:` or
    LINE_PROFILE=1); another instance wraps plain functions so that calling
    them traces, as line_profiler does."""

    def __init__(self, *functions):
        self._keys = set()
        self._codes = []  # this instance's code objects (the tracer keeps them alive)
        self._code_ids = set()
        self._everything = False
        self._depth = 0  # enable nesting of this instance
        self._lock = threading.RLock()  # RLock: a finalizer run meanwhile may call a wrapper
        # the counts of _codes (_lprof.tracer_counts: packed, item k = _codes[k]) when
        # this enabling began, and the sums over the enablings that ended
        self._base = ()
        self._sums = ()
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
        new = []
        for code in code_objects(obj):
            collector.add_code(code)
            self._keys.add(code_key(code))
            if id(code) not in self._code_ids:
                new.append(code)
            count += 1
        if new:
            with self._lock:
                self._code_ids.update(id(code) for code in new)
                self._codes.extend(new)
                if self._depth:  # added while enabled: counts from now on
                    self._base = self._base + _lprof.tracer_counts(new)
        return count

    add_function = add_module = add_class = add_callable = add

    def enable(self):
        # the global profile's enable is a whole run's (LINE_PROFILE=1, or the
        # program's own profile.enable()): native threads are traced too
        if self._everything:
            collector.start()
            return
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._base = _lprof.tracer_counts(self._codes)
        # every call, nested too: a thread that has no tracer yet joins
        collector.enable()

    def disable(self):
        if self._everything:
            collector.disable()
            return
        with self._lock:
            if self._depth == 0:  # not enabled: another instance's tracing goes on
                return
            self._depth -= 1
            if self._depth == 0:
                self._sums = _lprof.tracer_counts_add(
                    self._sums, _lprof.tracer_counts(self._codes), self._base
                )
                self._base = ()
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
        return collector.enabled if self._everything else self._depth > 0

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

        return assemble.profile(["lines"], [collector if self._everything else _Counted(self)])

    def _functions(self):
        """The "functions" section of this instance's counts (collector.snapshot's
        shape): its functions, each once, those that never ran too."""
        with self._lock:
            counts = self._sums
            if self._depth:
                counts = _lprof.tracer_counts_add(counts, _lprof.tracer_counts(self._codes), self._base)
            codes = list(self._codes)
        unit = _lprof.timer_unit()
        merged = {}  # key -> [total ticks, {line: [hits, ticks, wait ticks]}]
        for k, code in enumerate(codes):
            entry = merged.setdefault(code_key(code), [0, {}])
            values = memoryview(counts[k] if k < len(counts) else b"").cast("Q")
            if not len(values):
                continue
            entry[0] += values[1]  # (values[0]: the tracer_clear count)
            for i in range(2, len(values), 3):
                row = values[i : i + 3]
                if row[0] or row[1] or row[2]:
                    into = entry[1].setdefault(code.co_firstlineno + (i - 2) // 3, [0, 0, 0])
                    for j in range(3):
                        into[j] += row[j]
        functions = []
        for (path, name, first), (total, lines) in merged.items():
            fn = {
                "file": path,
                "name": name,
                "first_line": first,
                "total_s": total * unit,
                "lines": [[ln, h, t * unit] for ln, (h, t, _w) in sorted(lines.items()) if h or t],
            }
            waits = [[ln, w * unit] for ln, (_h, _t, w) in sorted(lines.items()) if w]
            if waits:
                fn["wait"] = waits
            functions.append(fn)
        functions.sort(key=lambda f: (f["file"], f["first_line"], f["name"]))
        return {"functions": functions}

    def get_stats(self):
        """line_profiler's LineStats of this profiler's functions (times in
        units of lprof's timer)."""
        from . import _lprof

        unit = _lprof.timer_unit()
        timings = {}
        for f in self.snapshot()["functions"]:
            timings[(f["file"], f["first_line"], f["name"])] = [
                (ln, hits, int(round(t / unit))) for ln, hits, t in f["lines"]
            ]
        return LineStats(timings, unit)

    def print_stats(
        self,
        stream=None,
        output_unit=None,
        stripzeros=False,
        details=True,
        summarize=False,
        sort=False,
        rich=False,
    ):
        from .render.listing import render_lines

        stream = stream or sys.stdout
        stream.write(
            render_lines(
                self.snapshot(),
                unit=output_unit,
                skip_zero=stripzeros,
                summarize=summarize,
                sort="time" if sort else "file",
            )
        )

    def dump_stats(self, path):
        """Writes an lprof profile file (`lprof view` reads it)."""
        from .model import profile_file

        profile_file.save(self.snapshot(), path)

    def __repr__(self):
        state = "enabled" if self.enabled else "disabled"
        n = collector.registered_count() if self._everything else len(self._keys)
        return f"<lprof.LineProfiler ({state}, {n} code objects)>"


class _Counted:
    """An instance's counts as assemble.profile takes a line collector's."""

    def __init__(self, prof):
        self._prof = prof

    def snapshot(self):
        out = self._prof._functions()
        evicted = _lprof.tracer_waits()[1]  # the tracer's, as collector.snapshot says it
        if evicted:
            out["waits_evicted"] = evicted
        return out


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
        sys.stderr.write(
            "lprof: wrote profile_output.txt and profile_output.lprof "
            "(view it again: lprof view profile_output.lprof)\n"
        )
    except OSError as exc:
        sys.stderr.write(f"lprof: could not write profile_output.*: {exc.strerror or exc}\n")


def _global_profile():
    p = LineProfiler()
    p._everything = True
    return p


profile = _global_profile()
