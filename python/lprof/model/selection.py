"""Which files a profile's per-line views select by default, and where the
rest of the time went.

The program's own code is selected (stacks.is_user_file). When the program
itself is library code (`lprof -m pytest`, `lprof -m test test_json`,
`lprof -m json.tool`), the code it exercises is selected too: for each stack,
the first frame that is not a runner's (runpy, threading, unittest, pytest
and its plugins, pluggy, the stdlib's test runner) nor a test file is what
the run called (stacks inside an import are not counted: collecting tests,
loading plugins); the packages holding at least FOCUS_SHARE of that time are
selected with the program's own files, unless they call the user's code
(IPython running a cell, pytest running the user's tests: hosts, not the
code under test). The attribution rule then charges a
stack to its innermost frame in the selected files (stacks.charge), so an
installed package's test suite shows the package's lines, with the standard
library it calls charged to them.

Every file belongs to a group: ("user", path), ("site", top package),
("stdlib", top module), ("lprof",), ("text", name) for code given as text,
("other", path) for anything else (generated code, markers).
"""

import os

from ..common import libdirs
from .frames import table as frame_table
from .stacks import CPU_COLUMNS, is_user_file

# the runners' own code: never what a run exercises
HARNESS = frozenset(
    {
        ("stdlib", "runpy"),
        ("stdlib", "importlib"),
        ("stdlib", "threading"),
        ("stdlib", "unittest"),
        ("stdlib", "doctest"),
        ("stdlib", "site"),
        ("stdlib", "test"),
        ("stdlib", "contextlib"),
        ("stdlib", "functools"),
        ("site", "pytest"),
        ("site", "_pytest"),
        ("site", "pluggy"),
        ("site", "py"),
        ("site", "nose2"),
        ("site", "xdist"),
        ("site", "pytest_timeout"),
    }
)
# a package is selected when it holds this share of the time the run's tests
# (or the library program) spent in the code they called
FOCUS_SHARE = 0.10

_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_STDLIB_REAL = os.path.realpath(_STDLIB) + os.sep
_TEST_DIRS = {"test", "tests", "testing"}
# code typed by the user (a notebook cell, standard input): the user's, as a file
_INTERACTIVE = ("<ipython-input-", "<stdin>")


def _top(rest):
    head = rest.split(os.sep, 1)[0]
    for ext in (".py", ".pyc"):
        if head.endswith(ext):
            return head[: -len(ext)]
    return head.split(".", 1)[0] if head.endswith(".so") else head


def file_group(path):
    """The group of a file (module docstring)."""
    if not path:
        return ("other", "")
    if path.startswith("<"):
        if path.startswith("<frozen "):
            return ("stdlib", path[len("<frozen ") : -1].split(".", 1)[0])
        return ("text", path) if is_user_file(path) else ("other", path)
    if path.startswith(libdirs.LPROF_DIR):
        return ("lprof",)
    if not libdirs.is_library_file(path):
        return ("user", path)
    for marker in (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep):
        i = path.rfind(marker)
        if i >= 0:
            return ("site", _top(path[i + len(marker) :]))
    for base in (_STDLIB, _STDLIB_REAL):
        if path.startswith(base):
            rest = path[len(base) :]
            if rest.startswith("lib-dynload" + os.sep):
                rest = rest[len("lib-dynload" + os.sep) :]
            return ("stdlib", _top(rest))
    real = os.path.realpath(path)
    if real != path:
        return file_group(real)
    return ("other", path)


def is_test_file(path):
    """A test module by the usual conventions (test_*.py, *_test.py,
    conftest.py, a file under a test/tests/testing folder; the standard
    library's test package)."""
    if not path or path.startswith("<"):
        return False
    name = os.path.basename(path)
    if (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name in ("conftest.py", "tests.py", "test.py")
    ):
        return True
    group = file_group(path)
    if group == ("stdlib", "test"):
        return True
    parts = path.split(os.sep)[:-1]
    if group[0] == "site":  # only the folders inside the package count
        for marker in ("site-packages", "dist-packages"):
            if marker in parts:
                parts = parts[len(parts) - parts[::-1].index(marker) :]
                break
    elif group[0] == "user":  # a user's checkout: the folders below the current one
        cwd = os.getcwd() + os.sep
        parts = path[len(cwd) :].split(os.sep)[:-1] if path.startswith(cwd) else parts[-2:]
    return any(p in _TEST_DIRS for p in parts)


def _weight(m):
    w = sum(m.get(c, 0) for c in CPU_COLUMNS) + m.get("wall_s", 0)
    return w or m.get("alloc_bytes", 0) or m.get("samples", 0)


def _python_frames(frames, ids):
    return [frames[i] for i in ids if frames[i].has_line and frames[i].kind == "python"]


def _is_runner(group):
    """The runners' code (HARNESS, and pytest's plugins: pytest_cov,
    _hypothesis_pytestplugin, ...), lprof's, code given as text."""
    return (
        group in HARNESS
        or group[0] in ("lprof", "text", "other")
        or (group[0] == "site" and "pytest" in group[1])
    )


def focus_groups(section):
    """The library groups a run exercised, when the program is library code
    (a frozenset, empty for a program of the user's own). Never raises: a
    profile it cannot read selects the user's files."""
    try:
        return _focus_groups(section)
    except Exception:  # the profile is saved and shown whatever this finds
        return frozenset()


def _focus_groups(section):
    frames = frame_table(section.get("frames", []))
    groups = {}

    def grp(path):
        g = groups.get(path)
        if g is None:
            g = groups[path] = file_group(path)
        return g

    def users(path):  # the user's own code, written in a file or typed
        return grp(path)[0] == "user" or path.startswith(_INTERACTIVE)

    program_user = program_lib = 0.0
    called = {}
    hosts = set()
    for ids, _th, m in section.get("stacks", []):
        w = _weight(m)
        if not w or not ids:
            continue
        py = _python_frames(frames, ids)
        if not py:
            continue
        root = None  # the program's first frame: below runpy; threads' roots are threading's
        for f in py:
            if grp(f.file) in (("stdlib", "runpy"), ("lprof",)):
                continue
            root = grp(f.file)
            break
        if root is None or root == ("stdlib", "threading"):
            pass
        elif root[0] in ("user", "text"):
            program_user += w
        else:
            program_lib += w
        seen = []  # library groups rootward of the user's code host it: never the focus
        for f in py:
            if users(f.file):
                hosts.update(seen)
            elif grp(f.file)[0] in ("site", "stdlib"):
                seen.append(grp(f.file))
        entry = None  # the first frame past the runners and the tests: what the run called
        for f in py:
            g = grp(f.file)
            if g == ("stdlib", "importlib"):
                break  # an import (a runner's plugin, a test module): not what the run tests
            if users(f.file):
                if is_test_file(f.file):
                    continue
                entry = ("user",)
                break
            if _is_runner(g) or is_test_file(f.file):
                continue
            entry = g
            break
        if entry is not None:
            called[entry] = called.get(entry, 0.0) + w
    if program_lib <= program_user:
        return frozenset()
    total = sum(called.values())
    return frozenset(
        g
        for g, w in called.items()
        if g[0] != "user" and g not in hosts and total and w >= FOCUS_SHARE * total
    )


def default_accept(section):
    """The default selection of a stacks section: the program's own files,
    and where the program is library code, the packages it exercised."""
    focus = focus_groups(section)
    if not focus:
        return is_user_file
    cache = {}

    def accept(path):
        hit = cache.get(path)
        if hit is None:
            hit = cache[path] = bool(is_user_file(path) or file_group(path) in focus)
        return hit

    accept.focus = focus
    return accept


def describe(group):
    """A group's name for the listing."""
    kind = group[0]
    if kind == "site":
        return group[1]
    if kind == "stdlib":
        return group[1]
    if kind == "lprof":
        return "lprof"
    return group[1] if len(group) > 1 else kind
