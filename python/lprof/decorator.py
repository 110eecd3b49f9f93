"""The `profile` object: `@profile`, `profile(func)`, `with profile:`.

Tracing works per code object, so decorating never wraps: the very same
function (or descriptor, or class) is returned, and it behaves exactly as
before (return values, exceptions, signature, `inspect` results). Outside
`lprof -l` nothing is enabled, so a decorated function costs nothing."""
import functools
import sys
import types

from .linetrace import collector


def _code_objects(obj, seen):
    """Code objects behind a decoratable object (functions, methods, classes...)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, types.CodeType):
        yield obj
    elif isinstance(obj, (types.FunctionType, types.LambdaType)):
        yield obj.__code__
        wrapped = getattr(obj, "__wrapped__", None)  # functools.wraps chains
        if wrapped is not None:
            yield from _code_objects(wrapped, seen)
    elif isinstance(obj, (classmethod, staticmethod, types.MethodType)):
        yield from _code_objects(obj.__func__, seen)
    elif isinstance(obj, property):
        for part in (obj.fget, obj.fset, obj.fdel):
            if part is not None:
                yield from _code_objects(part, seen)
    elif isinstance(obj, functools.partial):
        yield from _code_objects(obj.func, seen)
    elif isinstance(obj, functools.cached_property):
        yield from _code_objects(obj.func, seen)
    elif isinstance(obj, type):
        for value in vars(obj).values():
            yield from _code_objects(value, seen)
    elif isinstance(obj, types.ModuleType):
        for value in vars(obj).values():
            if getattr(value, "__module__", None) == obj.__name__:
                yield from _code_objects(value, seen)


class LineProfiler:
    """The `profile` decorator and context manager (kernprof-compatible)."""

    def __call__(self, obj):
        self.add(obj)
        return obj

    def add(self, obj):
        """Registers obj's code; returns how many code objects were found."""
        count = 0
        for code in _code_objects(obj, set()):
            collector.add_code(code)
            count += 1
        return count

    add_function = add
    add_module = add

    def enable(self):
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

    def snapshot(self):
        """The profile dict of what was traced so far (see docs/formats.md)."""
        from .model import assemble
        return assemble.profile(["lines"], [collector])

    def print_stats(self, stream=None, output_unit=None, stripzeros=False):
        from .render.listing import render_lines
        stream = stream or sys.stdout
        stream.write(render_lines(self.snapshot(), unit=output_unit, skip_zero=stripzeros))

    def dump_stats(self, path):
        from .model import profile_file
        profile_file.save(self.snapshot(), path)

    def __repr__(self):
        state = "enabled" if collector.enabled else "disabled"
        return f"<lprof.profile ({state}, {collector.registered_count()} code objects)>"


profile = LineProfiler()
