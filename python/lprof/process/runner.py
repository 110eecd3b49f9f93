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

from ..common import libdirs
from ..common.errors import LprofError


# The program's exception when lprof runs inside a caller's process
# (lprof.kernprof.main): handed to the caller instead of printed.
hand_exceptions_to_caller = False
last_outcome = None
# files of frames that run the program on lprof's behalf, left out of the
# top of its tracebacks as lprof's own are (kernprof's cProfile run: runctx's)
launch_files = set()


class Outcome:
    """How the program ended: exit status, or an exception to re-raise/print."""

    def __init__(self, exit_code=0, exc=None, keyboard_interrupt=False):
        self.exit_code = exit_code
        self.exc = exc
        self.keyboard_interrupt = keyboard_interrupt


class SourceError(Exception):
    """A script Python itself would refuse to run; `text` is Python's own
    message (printed as is, exit status 1)."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


def is_runnable_dir_or_zip(path):
    """A folder or zip file Python runs through its __main__.py (zipapps)."""
    if os.path.isdir(path):
        return True
    if not os.path.isfile(path) or not _has_zip_end_record(path):
        return False  # a plain script: zipfile (2-3 ms to import) is not loaded for it
    import zipfile

    return zipfile.is_zipfile(path)


def _has_zip_end_record(path):
    """A zip's end-of-central-directory record lies in its last 64 KiB + 22 bytes."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - (65536 + 22)))
            return b"PK\x05\x06" in fh.read()
    except OSError:
        return False


def read_script(path):
    """Compiles the script; None for a folder or zipapp (run through its
    __main__); one-line LprofError for unusable paths."""
    if not os.path.exists(path):
        raise LprofError(f"can't open file '{path}': No such file or directory", 2)
    if is_runnable_dir_or_zip(path):
        return None
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise LprofError(f"can't open file '{path}': {exc.strerror}", 2) from None
    _check_encoding(path, source)
    return compile(source, os.path.abspath(path), "exec", dont_inherit=True)


def _check_encoding(path, source):
    """Python's own message for a non-UTF-8 script without a coding cookie
    (compile() of the bytes words it differently)."""
    import re

    head = source.split(b"\n", 2)[:2]
    if any(re.match(rb"^[ \t\f]*#.*?coding[:=]", line) for line in head):
        return
    try:
        source.decode("utf-8")
        return
    except UnicodeDecodeError as exc:
        bad = exc.start
    line = source.count(b"\n", 0, bad) + 1
    if sys.version_info[:2] == (3, 10):
        line += 1  # what 3.10's tokenizer reports
    url = (
        "https://peps.python.org/pep-0263/"
        if sys.version_info >= (3, 11)
        else "https://python.org/dev/peps/pep-0263/"
    )
    where = os.path.abspath(path)
    message = (
        f"Non-UTF-8 code starting with '\\x{source[bad]:02x}' in file {where} on line "
        f"{line}, but no encoding declared; see {url} for details"
    )
    if sys.version_info < (3, 14):
        raise SourceError(f"SyntaxError: {message}")
    # 3.14 shows the place as for any syntax error: compile() finds it (its
    # own message leaves out the file), the wording is the interpreter's
    try:
        compile(source, where, "exec", dont_inherit=True)
        raise SourceError(f"SyntaxError: {message}")
    except SyntaxError as exc:
        shown = SyntaxError(
            message, (where, exc.lineno, exc.offset, exc.text, exc.end_lineno, exc.end_offset)
        )
    import traceback

    raise SourceError("".join(traceback.format_exception_only(SyntaxError, shown)).rstrip("\n"))


def check_module(name):
    """Python's message when `python -m name` surely cannot run, else None.
    Only the top-level package is looked up: finding `pkg.sub` would import
    `pkg` before profiling starts (runpy reports a missing submodule itself)."""
    import importlib.util

    top = name.split(".", 1)[0]
    if not top:
        return f"{sys.executable}: Relative module names not supported"
    old = sys.path[0]
    sys.path[0] = os.getcwd()  # where `python -m` looks first
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path[0] = old
    if spec is None:
        return f"{sys.executable}: No module named {top}"
    return None


def check_main_of(path):
    """Python's message when a folder or zipapp has no __main__ module."""
    import zipfile

    names = ("__main__.py", "__main__.pyc")
    if os.path.isdir(path):
        found = any(os.path.isfile(os.path.join(path, n)) for n in names)
    else:
        with zipfile.ZipFile(path) as z:
            found = any(n in z.namelist() for n in names)
    if found:
        return None
    return f"{sys.executable}: can't find '__main__' module in {os.path.abspath(path)!r}"


def prepare(load):
    """load() -> (target, kind, code), as run() takes them (it compiles the
    script or code). Returns that, or None once Python's own message for a
    program that surely cannot run is printed (the caller exits 1 and
    writes no profile of a program that never ran)."""
    try:
        target, kind, code = load()
    except SourceError as exc:
        sys.stderr.write(exc.text + "\n")
        return None
    except (SyntaxError, ValueError) as exc:
        # as Python reports a script that does not compile: no traceback of lprof's
        print_exception(exc.with_traceback(None))
        return None
    why = (
        check_module(target)
        if kind == "module"
        else check_main_of(target)
        if kind == "script" and code is None
        else None
    )
    if why:
        sys.stderr.write(why + "\n")
        return None
    return target, kind, code


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


@libdirs.program_entry
def _wait_for_threads():
    # What Py_Finalize does first: join non-daemon threads, so their work is profiled.
    if hand_exceptions_to_caller:
        # the caller's process goes on: threading._shutdown would end it
        # for the caller too (concurrent.futures refuses new work after it)
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        return
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()


def run(target, args, kind="script", code=None, setup=None, on_start=None, execute=None):
    """Runs the program as python would; returns an Outcome. kind is
    "script" (compiled `code`, or None for a folder/zipapp), "module", or
    "code" (`python -c` / `python -`: `code` compiled, target "-c" or "-").

    `on_start()` is called right before the program's first line runs.
    `execute(kind, target, code, namespace)`, where given, runs the program
    in place of the plain run (kernprof's cProfile run wraps it)."""
    sys.argv[:] = [target] + list(args)
    if kind == "module":
        sys.path[0:1] = [os.getcwd()]
    elif kind == "code":
        sys.path[0:1] = [""]
        main = types.ModuleType("__main__")
        main.__builtins__ = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
        main.__spec__ = main.__loader__ = main.__package__ = None
        sys.modules["__main__"] = main
    elif code is None:  # a folder or zipapp: its __main__ module, from it
        sys.path[0:1] = [os.path.abspath(target)]
    else:
        sys.path[0:1] = [os.path.dirname(os.path.abspath(target))]
        # The script's module stays __main__ to the end (atexit, pickling).
        main = _make_main_module(target)
        sys.modules["__main__"] = main
    namespace = vars(main) if kind == "code" or (kind == "script" and code is not None) else None
    if setup:
        _run_setup(setup, namespace)
    if on_start:
        on_start()
    try:
        (execute or _run_program)(kind, target, code, namespace)
        _wait_for_threads()
        return Outcome(0)
    except SystemExit as exc:
        _wait_for_threads()
        return Outcome(exit_status(exc.code))
    except KeyboardInterrupt as exc:
        return _ended_by(Outcome(130, exc, keyboard_interrupt=True))
    except BaseException as exc:  # the program's own exception: print as Python would
        return _ended_by(Outcome(1, exc))


_interrupted = []


def end_like_python_on_ctrl_c():
    """Registers, before the program runs (so it runs after the program's
    own atexit handlers), what CPython does after an uncaught
    KeyboardInterrupt: once atexit has run, end the process by SIGINT.
    It acts only if note_ctrl_c() was called."""
    import atexit

    atexit.register(_die_by_sigint)


def note_ctrl_c():
    """The program ended by Ctrl-C: the process ends by SIGINT at exit."""
    _interrupted.append(True)


def _die_by_sigint():
    if not _interrupted:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def _ended_by(outcome):
    global last_outcome
    last_outcome = outcome
    if not hand_exceptions_to_caller:
        print_exception(outcome.exc)
    return outcome


@libdirs.program_entry
def _run_program(kind, target, code, namespace):
    """The program's code: what this calls is the program's, in its stacks
    (the rest of run() is lprof's, left out of them: snap_cut.c)."""
    if kind == "module":
        runpy._run_module_as_main(target, alter_argv=True)
    elif namespace is None:
        runpy._run_module_as_main("__main__", alter_argv=False)
    else:
        exec(code, namespace)


@libdirs.program_entry
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
    while tb is not None and (
        libdirs.is_launcher_file(tb.tb_frame.f_code.co_filename)
        or tb.tb_frame.f_code.co_filename in launch_files
    ):
        tb = tb.tb_next
    exc.__traceback__ = tb  # the hook prints exc.__traceback__ on newer versions
    if sys.excepthook is sys.__excepthook__ and _has_code_string_frames(tb):
        # -c / - code (or lprof's own, e.g. --preimports' imports): Python's
        # own hook cannot show its lines (it reads files); the traceback
        # module reads them from linecache, where they were put, so the
        # failing line shows as in a script
        import traceback

        traceback.print_exception(type(exc), exc, tb)
        return _flush_stderr()
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        import traceback  # only on this rare path: it costs start-up otherwise

        traceback.print_exception(type(exc), exc, tb)
    _flush_stderr()


def _has_code_string_frames(tb):
    import linecache

    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith("<") and name in linecache.cache:  # <string>, <stdin>, lprof's
            return True
        tb = tb.tb_next
    return False


def _flush_stderr():
    try:
        sys.stderr.flush()
    except Exception:
        pass
