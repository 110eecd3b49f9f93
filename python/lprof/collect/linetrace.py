"""The exact line tracer seen from Python: registration, on/off, results.

The timing itself is C (src/collect/tracer_core.c, src/collect/cpython/tracer.c); this module keeps
the list of registered functions (so functions that never ran still appear)
and turns the C results into the profile's "functions" section."""

import os
import sys
import threading
import types

from .. import _lprof
from . import exec_guard


COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")

# CPython 3.10/3.11 runs no hook when a native thread (a C library's pool, a
# ctypes callback, a QThread) makes its thread state, and threading.settrace
# reaches only threads that threading starts: a run's tracing looks this often
# for new thread states, without the GIL, and gives those threads the tracer
# (3.12+ traces every thread). Waking at 100 Hz cost ~0.7 % of a core here (an
# idle program, 3.11); at 20 Hz, below what time(1) resolves.
SWEEP_PERIOD_S = 0.05
NEEDS_SWEEP = sys.version_info < (3, 12)


def _qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def code_key(code):
    """(file, function, first line): how the profile names a traced function."""
    name = code.co_filename
    # "<string>" (-c), "<stdin>": not a path; abspath would hide it from linecache
    path = name if name.startswith("<") else os.path.abspath(name)
    return (path, _qualname(code), code.co_firstlineno)


class LineCollector:
    """Owns the registry of traced code objects and the enable nesting."""

    def __init__(self):
        self._lock = threading.Lock()
        self._registered = {}  # key -> code (first one seen)
        self._depth = 0
        self._sweeping = False  # the C sweeper runs (3.10/3.11)

    # -- registration ---------------------------------------------------
    def add_code(self, code):
        if not isinstance(code, types.CodeType):
            raise TypeError(f"expected a code object, got {type(code).__name__}")
        with self._lock:
            self._registered.setdefault(code_key(code), code)
        _lprof.tracer_add_code(code)

    def add_code_tree(self, code, include_self=False):
        """Registers the functions defined (at any depth) inside `code`."""
        if include_self:
            self.add_code(code)
        for const in code.co_consts:
            # comprehensions count in their enclosing line (see tracer.c)
            if isinstance(const, types.CodeType) and const.co_name not in COMPREHENSIONS:
                self.add_code(const)

    def registered_count(self):
        return len(self._registered)

    # -- on / off (nesting: enable twice, disable twice) -----------------
    def enable(self):
        with self._lock:
            self._depth += 1
            # when already on, the call lets a thread that has no tracer yet
            # join: a native thread (ctypes callback, C extension pool) that
            # entered Python after enable calling an @profile function
            _lprof.tracer_enable()

    def disable(self):
        with self._lock:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth == 0:
                _lprof.tracer_disable()
        if self._depth == 0:
            self._stop_sweeper()

    def start(self):
        """Tracing for a whole run (lprof -l, LINE_PROFILE=1): on, and on
        3.10/3.11 native threads get the tracer too (SWEEP_PERIOD_S).
        LineProfiler wrappers use enable/disable, which start no thread."""
        self.enable()
        self._start_sweeper()

    def stop(self):
        """Turns tracing fully off, whatever the nesting."""
        with self._lock:
            if self._depth:
                self._depth = 0
                _lprof.tracer_disable()
        self._stop_sweeper()

    # -- the native-thread sweeper (3.10/3.11) ----------------------------
    # (a C thread, src/collect/cpython/tracer_settrace.c, that takes the GIL
    # only when a thread state appeared; start and stop check a flag of their
    # own with the GIL held, so two threads starting or stopping runs are safe)
    def _start_sweeper(self):
        if not NEEDS_SWEEP or self._sweeping or not self._depth:
            return
        try:
            _lprof.tracer_sweeper_start(SWEEP_PERIOD_S)
        except RuntimeError as exc:  # no thread to be had: tracing goes on without
            sys.stderr.write(
                f"lprof: {exc}; native threads are traced only through LineProfiler() wrappers\n"
            )
            return
        self._sweeping = True
        _install_hooks()

    def _stop_sweeper(self):
        if self._sweeping:
            self._sweeping = False
            _lprof.tracer_sweeper_stop()

    def _after_fork_child(self):
        # only the forking thread lives on here: a lock another thread held at
        # the fork would stay taken. The parent's sweeper does not exist here
        # either; a child that goes on tracing (a followed fork) gets its own.
        self._lock = threading.Lock()
        if self._sweeping:
            self._sweeping = False
            if not exec_guard.forked_for_exec():  # (a child that only execs needs none)
                self._start_sweeper()

    @property
    def enabled(self):
        return self._depth > 0

    def clear(self):
        _lprof.tracer_clear()

    # -- results ----------------------------------------------------------
    def snapshot(self):
        unit = _lprof.timer_unit()
        merged = {}  # key -> [total_ticks, {line: [hits, ticks]}]
        for code, total, lines in _lprof.tracer_stats():
            entry = merged.setdefault(code_key(code), [0, {}])
            entry[0] += total
            for lineno, hits, ticks in lines:
                row = entry[1].setdefault(lineno, [0, 0])
                row[0] += hits
                row[1] += ticks
        with self._lock:
            for key in self._registered:
                merged.setdefault(key, [0, {}])
        wait_rows, evicted = _lprof.tracer_waits()
        waits = {}  # key -> {line: ticks suspended there}
        for code, lineno, ticks in wait_rows:
            per_line = waits.setdefault(code_key(code), {})
            per_line[lineno] = per_line.get(lineno, 0) + ticks
        idle = {}  # key -> {line: idle ticks} (lprof -l --gpu)
        for code, lineno, _n, _ticks, idle_ticks in _lprof.tracer_gpu_idle():
            per_line = idle.setdefault(code_key(code), {})
            per_line[lineno] = per_line.get(lineno, 0) + idle_ticks
        functions = []
        for key, (total, lines) in merged.items():
            path, name, first = key
            fn = {
                "file": path,
                "name": name,
                "first_line": first,
                "total_s": total * unit,
                "lines": [[ln, h, t * unit] for ln, (h, t) in sorted(lines.items())],
            }
            if key in waits:  # a generator or coroutine: time suspended per line
                fn["wait"] = [[ln, w * unit] for ln, w in sorted(waits[key].items())]
            if key in idle:  # lprof --gpu: wall time of the line's intervals with no GPU work
                fn["gpu_idle"] = [[ln, t * unit] for ln, t in sorted(idle[key].items())]
            functions.append(fn)
        functions.sort(key=lambda f: (f["file"], f["first_line"], f["name"]))
        out = {"functions": functions}
        if evicted:
            out["waits_evicted"] = evicted
        return out


# The process-wide collector behind `lprof.profile` and `lprof -l`.
collector = LineCollector()

_hooks_installed = []


def _install_hooks():
    """A forked child restarts the sweeper; the interpreter's end stops it
    before the interpreter is torn down (it reads the thread list)."""
    if _hooks_installed:
        return
    _hooks_installed.append(True)
    import atexit

    atexit.register(collector._stop_sweeper)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=collector._after_fork_child)
