"""Which code a target names, for the line tracer: the code objects behind
a function, method, class or module (`@profile`, `-p`, `lprof attach -l`),
and a `pkg.mod.name` / `pkg.mod:Class.method` target resolved in the modules
already imported, never importing anything; and the collector that traces
named code in a process lprof attached to."""

import functools
import os
import sys
import types

from .linetrace import code_key, collector


def code_objects(obj, seen=None):
    """Code objects behind a decoratable object (functions, methods, classes,
    modules: the functions and classes defined in them)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, types.CodeType):
        yield obj
    elif isinstance(obj, (types.FunctionType, types.LambdaType)):
        yield obj.__code__
        wrapped = getattr(obj, "__wrapped__", None)  # functools.wraps chains
        if wrapped is not None:
            yield from code_objects(wrapped, seen)
    elif isinstance(obj, (classmethod, staticmethod, types.MethodType)):
        yield from code_objects(obj.__func__, seen)
    elif isinstance(obj, property):
        for part in (obj.fget, obj.fset, obj.fdel):
            if part is not None:
                yield from code_objects(part, seen)
    elif isinstance(obj, functools.partial):
        yield from code_objects(obj.func, seen)
    elif isinstance(obj, functools.cached_property):
        yield from code_objects(obj.func, seen)
    elif isinstance(obj, type):
        for value in vars(obj).values():
            yield from code_objects(value, seen)
    elif isinstance(obj, types.ModuleType):
        for value in vars(obj).values():
            if getattr(value, "__module__", None) == obj.__name__:
                yield from code_objects(value, seen)


def module_of(target):
    """(module path parts, attribute parts) of `pkg.mod.name` / `pkg.mod:Cls.m`;
    which prefix is the module is only known once it is imported."""
    modname, _, attr = target.partition(":")
    return modname.split("."), (attr.split(".") if attr else [])


def resolve_loaded(target):
    """The target's object if its module is already imported, else None;
    never imports."""
    parts, attrs = module_of(target)
    for i in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is None:
            continue
        obj = module
        try:
            for name in parts[i:] + attrs:
                obj = getattr(obj, name)
        except AttributeError:
            return None  # perhaps a submodule not imported yet
        return obj
    return None


def find_loaded(target):
    """resolve_loaded, and a source file's path: the module imported from it."""
    if target.endswith(".py") or os.sep in target:
        want = os.path.realpath(target)
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if path and os.path.realpath(path) == want:
                return module
        return None
    return resolve_loaded(target)


class NamedCodeCollector:
    """The exact line tracer on code named by targets, all resolved at once
    in what the process has already imported (`lprof attach -l -p ...`);
    section "functions", only those functions."""

    name = "lines"

    def __init__(self, targets):
        self.codes = []
        for target in targets:
            obj = find_loaded(target)
            if obj is None:
                raise LookupError(
                    f"-p {target}: not found in the process (only what it has imported can be traced)"
                )
            found = list(code_objects(obj))
            if not found:
                raise LookupError(f"-p {target}: no Python function there")
            self.codes += found
        self.keys = {code_key(code) for code in self.codes}

    def start(self):
        if collector.enabled:
            raise RuntimeError("lprof's line tracer is already on in this process")
        collector.clear()
        for code in self.codes:
            collector.add_code(code)
        collector.enable()

    def stop(self):
        collector.disable()

    def snapshot(self):
        section = collector.snapshot()
        section["functions"] = [
            f for f in section["functions"] if (f["file"], f["name"], f["first_line"]) in self.keys
        ]
        return section
