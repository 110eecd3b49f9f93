"""-p/--prof-mod: choose code to trace without decorators.

A target is a path (the script itself: every function defined in it; another
file: every function in it once it is imported), a module name (every function
and method defined in it), or a function/class/method as `pkg.mod.name`,
`pkg.mod:Class.method`.

Named targets are registered when the program imports their module, never
imported by lprof ahead of the program (that changed programs whose script
sets state a module reads at import); a module the program already imported
is registered at once. kernprof's --preimports asks for the eager import."""

import importlib
import importlib.abc
import importlib.machinery
import os
import pkgutil
import sys
import types

from ..decorator import profile
from ..common.errors import LprofError
from ..collect.linetrace import collector
from ..collect.trace_targets import module_of, resolve_loaded


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
        if (
            spec is not None
            and spec.origin
            and os.path.realpath(spec.origin) in self.paths
            and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
        ):
            spec.loader = _TracingLoader(spec.loader.name, spec.loader.path)
        return spec


class _TracingLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        code = super().get_code(fullname)
        if code is not None:
            collector.add_code_tree(code)
        return code


PREIMPORTS_FILE = "<lprof --preimports>"


def _preimport(name):
    """`import name` as code of its own, as kernprof's generated pre-import
    module runs it: a module that raises shows that line in its traceback."""
    if not all(part.isidentifier() for part in name.split(".")):
        return importlib.import_module(name)  # no import statement can name it
    import linecache

    source = f"import {name}\n"
    linecache.cache[PREIMPORTS_FILE] = (len(source), None, [source], PREIMPORTS_FILE)
    exec(compile(source, PREIMPORTS_FILE, "exec"), {})
    return sys.modules[name]


def _resolve_name(target):
    modname, _, attr = target.partition(":")
    parts = modname.split(".")
    # longest importable module prefix, then attributes
    for i in range(len(parts), 0, -1):
        try:
            obj = _preimport(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name and not ".".join(parts[:i]).startswith(exc.name):
                raise _failed_import(target, exc) from None  # it imports a missing module
            continue
        except ImportError:
            continue
        except Exception as exc:  # the module's own code failed: as python shows it
            raise _failed_import(target, exc) from None
        rest = parts[i:] + (attr.split(".") if attr else [])
        for name in rest:
            try:
                obj = getattr(obj, name)
            except AttributeError:
                raise LprofError(f"-p {target}: '{name}' not found", 2) from None
        return obj
    raise LprofError(f"-p {target}: no module named '{parts[0]}'", 2)


def _failed_import(target, exc):
    """--preimports: the target's module raised while imported: its traceback
    as Python prints it, then one line; the program does not run."""
    from ..process import runner

    runner.print_exception(exc)
    return LprofError(
        f"-p {target}: importing it failed (see above); "
        f"without --preimports it is imported when the program imports it",
        1,
    )


def _still_importing(target, done=None):
    """True while the module a target lives in is half-built: its code is
    running (it imports something first), its functions not all defined.
    done: a module whose code has just finished (importlib clears its flag
    only after the loader returns)."""
    parts, _attrs = module_of(target)
    for i in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is not None:
            if module is done:
                return False
            spec = getattr(module, "__spec__", None)
            return bool(getattr(spec, "_initializing", False))
    return False


def add_target(obj, exact=False):
    """Registers a target's code; returns how many code objects were added.
    A module is added as kernprof adds one: the functions and classes in its
    namespace defined in it, or in a module of its own package (kernprof's
    "siblings" scope: `from .util import helper` is timed too; what it
    imports from elsewhere is not). exact (kernprof's explicit
    --no-preimports): only what is defined in it."""
    count = profile.add(obj)
    if exact or not isinstance(obj, types.ModuleType):
        return count
    name = obj.__name__
    scope = name.rpartition(".")[0] or name
    for value in list(vars(obj).values()):
        home = getattr(value, "__module__", None)
        if (
            isinstance(value, (types.FunctionType, type))
            and isinstance(home, str)
            and home != name
            and (home == scope or home.startswith(scope + "."))
        ):
            count += profile.add(value)
    return count


def _is_package(obj):
    return isinstance(obj, types.ModuleType) and hasattr(obj, "__path__")


class _NameTargets(importlib.abc.MetaPathFinder):
    """Registers named targets right after the program imports their module
    (the module's code has run, its functions exist, none has been called
    from outside it yet). A package's target covers its submodules, as
    kernprof's does: each is registered when imported."""

    def __init__(self, targets, exact=False, whole_only=()):
        self.pending = list(targets)
        self.exact = exact  # add_target's exact
        self.whole_only = set(whole_only)  # packages named as pkg.__init__: not their submodules
        self.packages = []  # names of target packages: their submodules are wanted too
        self._busy = False

    def _wanted(self, name):
        return any(t == name or t.startswith((name + ".", name + ":")) for t in self.pending) or any(
            name.startswith(p + ".") for p in self.packages
        )

    def add_package(self, package):
        """Registers the package's submodules already imported; later ones at their import."""
        name = package.__name__
        if name not in self.packages:
            self.packages.append(name)
        for modname, module in list(sys.modules.items()):
            if modname.startswith(name + ".") and isinstance(module, types.ModuleType):
                add_target(module, self.exact)

    def submodule_loaded(self, module):
        name = getattr(module, "__name__", "")
        if any(name.startswith(p + ".") for p in self.packages):
            add_target(module, self.exact)

    def find_spec(self, name, path=None, target=None):
        # a module loaded by another kind of loader (compiled, zipped, ...)
        # is found here at the program's next import
        self.module_loaded()
        if not self._wanted(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _RegisteringLoader(spec.loader.name, spec.loader.path, self)
            return spec
        return None  # other loaders: the normal import; registered by the next import's check

    def module_loaded(self, done=None):
        if self._busy or not self.pending:
            return
        self._busy = True  # a module's __getattr__ may import: no re-entry
        try:
            for target in list(self.pending):
                if _still_importing(target, done):
                    continue  # the module runs its first lines (an import): not yet
                obj = resolve_loaded(target)
                if obj is not None:
                    _note_if_compiled(target, obj, add_target(obj, self.exact))
                    self.pending.remove(target)
                    if _is_package(obj) and target not in self.whole_only:
                        self.add_package(obj)
        finally:
            self._busy = False


class _RegisteringLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name, path, targets):
        super().__init__(name, path)
        self._targets = targets

    def exec_module(self, module):
        super().exec_module(module)
        self._targets.module_loaded(done=module)
        self._targets.submodule_loaded(module)


def _importable(target):
    """Whether the target's top-level module can be found; imports nothing."""
    import importlib.util

    top = target.partition(":")[0].split(".")[0]
    try:
        return top in sys.modules or importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _main_file_of(module_name):
    """The source file `python -m module_name` runs (a package's __main__)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module_name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(module_name + ".__main__")
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return origin if origin and origin.endswith(".py") else None


def _preimport_package(package):
    """kernprof's eager import of a package target: every submodule (one that
    fails to import is left out, as kernprof leaves it); returns the count."""
    count = 0
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=lambda _name: None):
        try:
            count += add_target(importlib.import_module(info.name))
        except Exception:  # a submodule that cannot import on its own
            continue
    return count


def imported_names(path, package="", source=None):
    """What a module's source (the file at path, or source) imports at
    module level (in if/try/with blocks too, not inside functions or
    classes), as -p targets: `import a.b` -> "a.b", `from x import y` ->
    "x.y", relative imports resolved in `package`. kernprof's --prof-imports
    times these, and its --no-preimports only these."""
    import ast

    try:
        if source is None:
            with open(path, "rb") as fh:
                source = fh.read()
        tree = ast.parse(source, path)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                out.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    if node.level - 1 > len(parts) or not package:
                        continue  # beyond the top: Python refuses it too
                    parent = ".".join(parts[: len(parts) - (node.level - 1)])
                    base = f"{parent}.{base}" if base else parent
                out.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
                if any(alias.name == "*" for alias in node.names):
                    out.append(base)
            elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit(inner)

    visit(tree.body)
    return out


def _run_imports(script_path, script_code, run_module):
    """What the program's own code (the script, the -m module run, or -c / -
    code) imports at module level."""
    if script_path:
        return imported_names(script_path)
    if run_module:
        main_file = _main_file_of(run_module)
        if not main_file:
            return []
        package = run_module if main_file.endswith("__main__.py") else run_module.rpartition(".")[0]
        return imported_names(main_file, package)
    if script_code is not None:
        import linecache

        lines = linecache.cache.get(script_code.co_filename)
        if lines:
            return imported_names(script_code.co_filename, source="".join(lines[2]))
    return []


def _through_run_imports(wanted, script_path, script_code, run_module):
    """kernprof's --no-preimports: a named target is timed where the
    program's own code imports it by name (`from pkg.mod import f` for -p
    pkg.mod or -p pkg.mod.f: f), and only there; paths, the script and the
    module run stay as they are. Returns (targets, names left out)."""
    imports = None
    kept, left_out = [], []
    for target in wanted:
        name = target.partition(":")[0]
        if (
            target.endswith(".py")
            or os.sep in target
            or (script_path and (_same_file(target, script_path) or target == script_path))
            or (run_module and (run_module == name or run_module.startswith(name + ".")))
            or ":" in target
        ):
            kept.append(target)
            continue
        if imports is None:
            imports = _run_imports(script_path, script_code, run_module)
        found = [n for n in imports if n == name or n.startswith(name + ".")]
        kept.extend(n for n in found if n not in kept)
        if not found:
            left_out.append(target)
    return kept, left_out


def register(targets, script_path, script_code, preimport=None, run_module=None, prof_imports=False):
    """Registers every -p target (named ones when their module is imported,
    or now with preimport); returns how many code objects were added now.
    preimport None: not asked either way (lazy); False: --no-preimports
    asked for (lazy, and a module is only what it defines, as kernprof).
    run_module: the module `-m` runs as __main__; a target naming it (or a
    package holding it) traces the code it runs. A target naming no file
    or module is warned about and the program runs, as with kernprof;
    `pkg.__init__` names the package's own module, without its submodules."""
    exact = preimport is False
    files, names, whole_only, invalid = [], [], set(), []
    count = 0
    wanted = split_targets(targets)
    if prof_imports:  # the script's or the run module's imports, when it is a target
        for target in list(wanted):
            if script_path and (_same_file(target, script_path) or target == script_path):
                wanted += imported_names(script_path)
            elif run_module and run_module == target:
                main_file = _main_file_of(run_module)
                if main_file:
                    package = (
                        run_module if main_file.endswith("__main__.py") else run_module.rpartition(".")[0]
                    )
                    wanted += imported_names(main_file, package)
    if preimport is False:
        wanted, left_out = _through_run_imports(wanted, script_path, script_code, run_module)
        _not_imported_by_name.extend(left_out)
    for target in wanted:
        if target.endswith(".__init__") and not target.endswith(".py"):
            target = target[: -len(".__init__")]
            whole_only.add(target)
        if run_module and (
            run_module == target or (run_module.startswith(target + ".") and target not in whole_only)
        ):
            main_file = _main_file_of(run_module)
            if main_file:
                files.append(main_file)
            if run_module == target and main_file and os.path.basename(main_file) != "__main__.py":
                continue  # a plain module run as __main__: never imported by name
        if script_path and (_same_file(target, script_path) or target == script_path):
            before = collector.registered_count()
            collector.add_code_tree(script_code)
            count += collector.registered_count() - before
        elif target.endswith(".py") or os.sep in target:
            if os.path.isfile(target):
                files.append(target)
            else:
                invalid.append(target)
        elif not _importable(target):
            invalid.append(target)
        elif preimport:
            obj = _resolve_name(target)
            added = add_target(obj)
            _note_if_compiled(target, obj, added)
            count += added
            if _is_package(obj) and target not in whole_only:
                count += _preimport_package(obj)
                names.append(target)  # and its submodules imported later
        else:
            obj = resolve_loaded(target)
            if obj is not None and not _still_importing(target):
                added = add_target(obj, exact)
                _note_if_compiled(target, obj, added)
                count += added
                if _is_package(obj) and target not in whole_only:
                    names.append(target)  # its submodules, as they are imported
            else:
                names.append(target)
    if invalid:
        invalid = sorted(set(invalid))
        sys.stderr.write(
            f"lprof: warning: {len(invalid)} -p target{'s' if len(invalid) > 1 else ''}"
            f" name{'' if len(invalid) > 1 else 's'} no file or module: "
            f"{invalid!r}\n"
        )
    if names:
        _waiting.append(_NameTargets(names, exact, whole_only))
        sys.meta_path.insert(0, _waiting[-1])
    if files:  # asked first: a file traced whole needs its own loader, also in a target package
        sys.meta_path.insert(0, _FileTracingFinder(files))
    return count


_waiting = []
_not_imported_by_name = []  # --no-preimports: named targets the program's code never imports


def never_imported():
    """Named targets whose module the program never imported (nothing of
    them was traced)."""
    return [t for t, why in untraced() if why is None]


def untraced():
    """[(target, why)] for each -p target nothing of which was traced: why
    None when the program never imported its module, else what is wrong
    (a name the module lacks, a compiled module with no Python code)."""
    for finder in _waiting:
        finder.module_loaded()
    out = [(t, _why_untraced(t)) for finder in _waiting for t in finder.pending]
    out += [
        (
            t,
            "with --no-preimports only what the program's own code imports by name is "
            "traced, and it does not import this",
        )
        for t in _not_imported_by_name
    ]
    return out + [(t, "a compiled module: it has no Python code to trace") for t in _compiled]


def _why_untraced(target):
    parts, attrs = module_of(target)
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        module = sys.modules.get(name)
        if module is not None:
            missing = (parts[i:] + attrs)[0] if parts[i:] + attrs else None
            if missing is None or (parts[i:] and _submodule_exists(f"{name}.{missing}")):
                return None  # a submodule the program never imported
            return f"{name} has no '{missing}'"
    return None


def _submodule_exists(name):
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None  # its parent is imported already
    except (ImportError, ValueError):
        return False


_compiled = []  # module targets the program imported that hold no Python functions


def _note_if_compiled(target, obj, count):
    if count == 0 and isinstance(obj, types.ModuleType) and not hasattr(obj, "__path__"):
        origin = getattr(getattr(obj, "__spec__", None), "origin", None) or ""
        if origin in ("built-in", "frozen") or not origin.endswith(".py"):
            _compiled.append(target)
