"""Under `lprof -l`, line_profiler's own `profile` (`from line_profiler
import profile`, what line_profiler 4.1+ recommends) is lprof's: the
functions it decorates are traced by lprof, as kernprof -l traces them.

line_profiler is never imported by lprof: when the program imports it, its
module `line_profiler.explicit_profiler` is given lprof's `profile` right
after its code ran, before `line_profiler/__init__.py` copies the name.
Run as kernprof without -l, that `profile` is the cProfile run's profiler,
as kernprof makes it (kernprof_cprofile.py)."""

import importlib.abc
import importlib.machinery
import sys

MODULE = "line_profiler.explicit_profiler"


_given = []  # the profiler handed over: lprof's decorator unless install() named another


def _hand_over(module):
    if _given:
        profile = _given[0]
    else:
        from ..decorator import profile
    module.profile = profile
    package = sys.modules.get("line_profiler")
    if package is not None and hasattr(package, "profile"):
        package.profile = profile


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _Loader(spec.loader.name, spec.loader.path)
            return spec
        return None


class _Loader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module):
        super().exec_module(module)
        _hand_over(module)


def install(profile=None):
    if profile is not None:
        _given[:] = [profile]
    if MODULE in sys.modules:  # imported before the program (a --setup, sitecustomize)
        _hand_over(sys.modules[MODULE])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
