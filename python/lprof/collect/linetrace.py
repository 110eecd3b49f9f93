"""The exact line tracer seen from Python: registration, on/off, results.

The timing itself is C (src/tracer_core.c, src/pytracer.c); this module keeps
the list of registered functions (so functions that never ran still appear)
and turns the C results into the profile's "functions" section."""
import os
import threading
import types

from .. import _lprof


COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")


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

    def start(self):
        self.enable()

    def stop(self):
        """Turns tracing fully off, whatever the nesting."""
        with self._lock:
            if self._depth:
                self._depth = 0
                _lprof.tracer_disable()

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
        functions = []
        for (path, name, first), (total, lines) in merged.items():
            functions.append({
                "file": path, "name": name, "first_line": first,
                "total_s": total * unit,
                "lines": [[ln, h, t * unit] for ln, (h, t) in sorted(lines.items())],
            })
        functions.sort(key=lambda f: (f["file"], f["first_line"], f["name"]))
        return {"functions": functions}


# The process-wide collector behind `lprof.profile` and `lprof -l`.
collector = LineCollector()
