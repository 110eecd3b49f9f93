"""Runs the user's script or module as `python script.py` / `python -m mod` would.

Same `sys.argv`, `__name__ == "__main__"`, `sys.path[0]`, `__file__`, exit
status and exceptions; the script's classes live in a real `__main__` module
so they pickle as `__main__.X` and multiprocessing's spawn method finds them.
The outcome is returned, not acted on, so the caller can save the profile on
every exit path first and then end the process the way the script would."""
import os
import runpy
import sys
import threading
import types
from importlib.machinery import SourceFileLoader

from . import libdirs
from .errors import LprofError


class Outcome:
    """How the program ended: exit status, or an exception to re-raise/print."""

    def __init__(self, exit_code=0, exc=None, keyboard_interrupt=False):
        self.exit_code = exit_code
        self.exc = exc
        self.keyboard_interrupt = keyboard_interrupt


def read_script(path):
    """Compiles the script; one-line LprofError for unusable paths."""
    if not os.path.exists(path):
        raise LprofError(f"can't open file '{path}': No such file or directory", 2)
    if os.path.isdir(path):
        raise LprofError(f"can't run '{path}': is a directory, not a Python script", 2)
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise LprofError(f"can't open file '{path}': {exc.strerror}", 2) from None
    return compile(source, os.path.abspath(path), "exec", dont_inherit=True)


def exit_status(code):
    """The process exit status Python uses for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _make_main_module(path):
    main = types.ModuleType("__main__")
    main.__file__ = os.path.abspath(path)
    main.__loader__ = SourceFileLoader("__main__", os.path.abspath(path))
    main.__builtins__ = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
    main.__spec__ = None
    main.__cached__ = None
    main.__package__ = None
    return main


def _wait_for_threads():
    # What Py_Finalize does first: join non-daemon threads, so their work is profiled.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()


def run(target, args, is_module=False, code=None, setup=None, on_start=None):
    """Runs a script (compiled `code`) or module; returns an Outcome.

    `on_start()` is called right before the program's first line runs."""
    if is_module:
        sys.argv[:] = [target] + list(args)
        sys.path[0:1] = [os.getcwd()]
    else:
        sys.argv[:] = [target] + list(args)
        sys.path[0:1] = [os.path.dirname(os.path.abspath(target))]
        # The script's module stays __main__ to the end (atexit, pickling).
        main = _make_main_module(target)
        sys.modules["__main__"] = main
    if setup:
        _run_setup(setup, None if is_module else vars(main))
    if on_start:
        on_start()
    try:
        if is_module:
            runpy._run_module_as_main(target, alter_argv=True)
        else:
            exec(code, vars(main))
        _wait_for_threads()
        return Outcome(0)
    except SystemExit as exc:
        _wait_for_threads()
        return Outcome(exit_status(exc.code))
    except KeyboardInterrupt as exc:
        print_exception(exc)
        return Outcome(130, exc, keyboard_interrupt=True)
    except BaseException as exc:  # the program's own exception: print as Python would
        print_exception(exc)
        return Outcome(1, exc)


def _run_setup(setup, namespace):
    namespace = namespace if namespace is not None else {"__name__": "__lprof_setup__"}
    try:
        if os.path.isfile(setup):
            with open(setup, "rb") as f:
                code = compile(f.read(), os.path.abspath(setup), "exec")
        else:
            code = compile(setup, "<lprof --setup>", "exec")
        exec(code, namespace)
    except Exception as exc:
        raise LprofError(f"--setup failed: {exc.__class__.__name__}: {exc}", 2) from None


def print_exception(exc):
    """Prints the traceback without lprof's own frames, as Python would."""
    tb = exc.__traceback__
    while tb is not None and libdirs.is_launcher_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    exc.__traceback__ = tb  # the hook prints exc.__traceback__ on newer versions
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        import traceback  # only on this rare path: it costs start-up otherwise
        traceback.print_exception(type(exc), exc, tb)
    try:
        sys.stderr.flush()
    except Exception:
        pass
