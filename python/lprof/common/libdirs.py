"""Where library code lives: the standard library, site-packages and lprof
itself. Listings hide these files by default, and memory is charged to the
innermost frame outside them."""

import functools
import os
import sys

# lprof's own package folder (ends with os.sep): its frames are the launcher's
LPROF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # lprof/


def is_launcher_file(path):
    """lprof's own files: the one definition of the launcher's frames. Stacks
    are cut at them in C (the folder is given to _lprof.set_launcher_dir;
    runpy's frames lie rootward of lprof's, so they go too), and tracebacks
    of the program start below them (runner.print_exception)."""
    return os.path.abspath(path).startswith(LPROF_DIR) or path == _RUNPY_FILE


_RUNPY_FILE = __import__("runpy").__file__

# The frames a sampled stack may hold around lprof's own (snap_cut.c cuts
# by them): the files of the frames that called lprof's command (the console
# script, or runpy for `python -m lprof`), and lprof's functions that run the
# program's code. Below lprof's command, code outside lprof that no program
# entry called is lprof's own work (an import of its start or end).
COMMAND_CALLERS = set()
PROGRAM_ENTRIES = set()  # {(co_filename, qualified name)}


def note_command_callers():
    """Called by lprof's command where it starts as a process's program:
    every file on the stack below the caller that is not lprof's."""
    f = sys._getframe(1)
    while f is not None:
        if not f.f_code.co_filename.startswith(LPROF_DIR):
            COMMAND_CALLERS.add(f.f_code.co_filename)
        f = f.f_back


def program_entry(fn):
    """Marks one of lprof's functions as running the program's code: what it
    calls is the program's, not lprof's."""
    code = fn.__code__
    PROGRAM_ENTRIES.add((code.co_filename, getattr(code, "co_qualname", code.co_name)))
    return fn


@functools.lru_cache(maxsize=1)
def _dirs_as_given():
    """The standard library (where `os` lives; lib-dynload is inside it) and
    lprof, each ending with os.sep. Every package folder (purelib, platlib,
    user site, Debian's) is named site-packages or dist-packages, which
    is_library_file tests by name (sysconfig would say the same, but costs
    3 ms to import and ask)."""
    return tuple(sorted({os.path.dirname(os.path.abspath(os.__file__)) + os.sep, LPROF_DIR}))


@functools.lru_cache(maxsize=1)
def library_dirs():
    """Real paths of the library folders, each ending with os.sep."""
    return tuple(sorted({os.path.realpath(d) + os.sep for d in _dirs_as_given()}))


def _in_library(path, dirs):
    return (
        "site-packages" in path or "dist-packages" in path or path.startswith(dirs) or is_generated_file(path)
    )


def is_generated_file(path):
    """Code a compiler wrote for the program, not the program: torch.compile's
    (Inductor's) modules under its cache folder, whose `call()` launches the
    Triton kernels. Its lines mean nothing to the reader; the work belongs to
    the program's line that called the compiled function, or, under --gpu,
    to the source lines each kernel fused (model/compiled_kernels.py)."""
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if cache and path.startswith(os.path.abspath(cache) + os.sep):
        return True
    # the default cache: <tempdir>/torchinductor_<user>/
    return os.sep + "torchinductor_" in path


@functools.lru_cache(maxsize=65536)
def is_library_file(path):
    """True for a file under library_dirs() or any site-/dist-packages."""
    # The path as given decides most files without realpath's lstat of every
    # component; only files it does not place are resolved.
    if _in_library(path, _dirs_as_given()):
        return True
    return _in_library(os.path.realpath(path), library_dirs())
