"""-p/--prof-mod: choose code to trace without decorators.

A target is a path (the script itself: every function defined in it; another
file: every function in it once it is imported), a module name (every function
and method defined in it), or a function/class/method as `pkg.mod.name`,
`pkg.mod:Class.method`."""
import importlib
import importlib.abc
import importlib.machinery
import os
import sys

from .decorator import profile
from .errors import LprofError
from .linetrace import collector


def split_targets(values):
    return [t.strip() for v in values for t in v.split(",") if t.strip()]


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class _FileTracingFinder(importlib.abc.MetaPathFinder):
    """Registers the functions of chosen source files when they are imported."""

    def __init__(self, paths):
        self.paths = {os.path.realpath(p) for p in paths}

    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if (spec is not None and spec.origin and os.path.realpath(spec.origin) in self.paths
                and isinstance(spec.loader, importlib.machinery.SourceFileLoader)):
            spec.loader = _TracingLoader(spec.loader.name, spec.loader.path)
        return spec


class _TracingLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        code = super().get_code(fullname)
        if code is not None:
            collector.add_code_tree(code)
        return code


def _resolve_name(target):
    modname, _, attr = target.partition(":")
    parts = modname.split(".")
    # longest importable module prefix, then attributes
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        rest = parts[i:] + (attr.split(".") if attr else [])
        for name in rest:
            try:
                obj = getattr(obj, name)
            except AttributeError:
                raise LprofError(f"-p {target}: '{name}' not found", 2) from None
        return obj
    raise LprofError(f"-p {target}: no module named '{parts[0]}'", 2)


def register(targets, script_path, script_code):
    """Registers every -p target; returns how many code objects were added."""
    files = []
    count = 0
    for target in split_targets(targets):
        if script_path and (_same_file(target, script_path) or target == script_path):
            before = collector.registered_count()
            collector.add_code_tree(script_code)
            count += collector.registered_count() - before
        elif target.endswith(".py") or os.sep in target:
            if not os.path.isfile(target):
                raise LprofError(f"-p {target}: no such file", 2)
            files.append(target)
        else:
            count += profile.add(_resolve_name(target))
    if files:
        sys.meta_path.insert(0, _FileTracingFinder(files))
    return count
