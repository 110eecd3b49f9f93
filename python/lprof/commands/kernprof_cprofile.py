"""kernprof without -l, where lprof stands in kernprof's place
(kernprof_mode.py): the program under cProfile, as kernprof 5.1 runs it.

Without -b the whole program runs inside the profiler (`prof.runctx`); with
-b/--builtin, `profile` in builtins (and `from line_profiler import profile`)
is the profiler, and only what the decorated functions run is timed. The
stats go to <script>.prof in cProfile's own format (`python -m pstats FILE`
reads it); -v prints them as cProfile prints them, otherwise kernprof's
`Wrote profile results to ...` and `Inspect results with:` lines follow;
-i SECONDS rewrites the file while the program runs. -c and - code runs
from a temporary file, as kernprof runs it, so tracebacks show its lines.

The program runs through lprof's runner (the argv, __main__, exit status
and exceptions of a python run) and the stats are written on every way out
the runner sees: the end, sys.exit, an exception, Ctrl-C."""

import builtins
import marshal
import os
import reprlib
import shutil
import sys
import tempfile
import textwrap
import threading

from ..process import runner
from .contextual_profile import ContextualProfile
from . import kernprof_mode
from . import output_paths as outputs


def execfile(filename, globals=None, locals=None):
    """kernprof's execfile: the file's code run in the given namespace."""
    with open(filename, "rb") as fh:
        exec(compile(fh.read(), filename, "exec"), globals, locals)


def run_module(name):
    """`python -m name`'s run (what kernprof's rmod does)."""
    import runpy

    runpy._run_module_as_main(name, alter_argv=True)


def _run_main_of(_path):
    """A folder or zipapp: its __main__ module, as python runs it."""
    import runpy

    runpy._run_module_as_main("__main__", alter_argv=False)


def _call_text(func, *args):
    """`Calling: ...` as kernprof's diagnostics word it (arguments shortened)."""
    owner = getattr(func, "__self__", None)
    if owner is not None and not isinstance(owner, type(sys)):
        kind = type(owner)
        name = f"{kind.__module__}.{kind.__qualname__}(...).{func.__name__}"
    else:
        name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)}"
    short = reprlib.Repr()
    short.maxlevel, short.maxdict, short.maxtuple = 2, 4, 4
    short.maxstring, short.maxother = 80, 60
    shown = ",\n".join("    " + short.repr(a) for a in args)
    return f"Calling: {name}(\n{shown})" if args else f"Calling: {name}()"


class _Checkpoints(threading.Thread):
    """-i SECONDS: the stats rewritten every SECONDS (at least 1, as kernprof)."""

    def __init__(self, seconds, write):
        super().__init__(name="lprof-cprofile-checkpoints", daemon=True)
        self.seconds, self.write, self.done = max(seconds, 1.0), write, threading.Event()

    def run(self):
        while not self.done.wait(self.seconds):
            try:
                self.write()
            except Exception as exc:  # a failed checkpoint must not end the program
                sys.stderr.write(f"lprof: periodic save failed: {exc}\n")


def _write_stats(prof, path):
    """cProfile's dump_stats without its disable(): the stats so far, written whole
    (a reader never sees half a file)."""
    prof.snapshot_stats()
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lprof-", suffix=".prof")
    try:
        with os.fdopen(fd, "wb") as fh:
            marshal.dump(prof.stats, fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _code_file(args, folder):
    """-c / -: the code in a temporary file named as kernprof names it."""
    what = "stdin" if args.code_from_stdin else "command"
    source = sys.stdin.read() if args.code_from_stdin else args.code
    path = os.path.join(folder, f"kernprof-{what}.py")
    with open(path, "w") as fh:
        fh.write(textwrap.dedent(source) + "\n")
    return what, path


def _default_outfile(args, what):
    if what is not None:  # kernprof's fresh name in the current folder
        fd, path = tempfile.mkstemp(dir=os.curdir, prefix=f"kernprof-{what}-", suffix=".prof")
        os.close(fd)
        return os.path.relpath(path)
    target = args.module or args.script
    return (os.path.basename(os.path.normpath(target)) or "kernprof") + ".prof"


def main(args):
    runner.end_like_python_on_ctrl_c()
    debug = kernprof_mode.debugging(args)
    folder, what = None, None
    try:
        if args.code is not None:
            folder = tempfile.mkdtemp(prefix="lprof-kernprof-")
            what, script = _code_file(args, folder)
            kind, target = "script", script
        elif args.module:
            kind, target = "module", args.module
        else:
            kind, target = "script", args.script
        return _run(args, ContextualProfile(), kind, target, what, debug)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _run(args, prof, kind, target, what, debug):
    program = runner.prepare(lambda: (target, kind, runner.read_script(target) if kind == "script" else None))
    if program is None:
        return 1
    code = program[2]
    outfile = args.outfile or _default_outfile(args, what)
    from ..common.procinfo import profile_path

    outfile = profile_path(outfile, args.outdir)
    outputs.check([("-o", outfile)], protected=[target] if kind == "script" else [])
    if debug:
        kernprof_mode.debug(f"Profiling {'module' if kind == 'module' else 'script'}: {target}")
        kernprof_mode.debug(f"Using output destination {outfile!r}")
    if args.builtin:
        builtins.profile = prof
        from . import line_profiler_bridge  # `from line_profiler import profile`: the same

        line_profiler_bridge.install(prof)

    # runctx's frames: its file is cProfile.py, profiling/tracing/ on 3.15
    runctx_file = type(prof).runctx.__code__.co_filename
    runner.launch_files.update((runctx_file, "<string>"))

    def execute(kind, target, code, namespace):
        if kind == "module":
            call, call_args, command = run_module, (target,), "run_module(target)"
        elif namespace is None:
            call, call_args, command = _run_main_of, (target,), "run_main_of(target)"
        else:
            call, call_args = execfile, (os.path.abspath(target), namespace)
            command = "execfile(target, namespace)"
        if args.builtin:  # only what @profile decorates is timed
            if debug:
                kernprof_mode.debug(_call_text(call, *call_args))
            return call(*call_args)
        context = {
            "run_module": run_module,
            "run_main_of": _run_main_of,
            "execfile": execfile,
            "target": call_args[0],
            "namespace": namespace,
        }
        if debug:
            kernprof_mode.debug(_call_text(prof.runctx, command, context, context))
        prof.runctx(command, context, context)

    checkpoints = None
    if args.output_interval:
        checkpoints = _Checkpoints(args.output_interval, lambda: _write_stats(prof, outfile))
        checkpoints.start()
    stdout = sys.stdout
    saved_streams, sink = (sys.stdout, sys.stderr), None
    if args.verbosity <= -2:  # kernprof's -qq silences the program's stdout, -qqq stderr too
        sink = open(os.devnull, "w")
        sys.stdout = sink
        if args.verbosity <= -3:
            sys.stderr = sink
    try:
        outcome = runner.run(target, args.args, kind=kind, code=code, setup=args.setup, execute=execute)
    finally:
        if sink is not None:
            sys.stdout, sys.stderr = saved_streams
            sink.close()
        if checkpoints is not None:
            checkpoints.done.set()
            checkpoints.join(timeout=5)
        while prof.enable_count:
            prof.disable_by_count()
        prof.disable()
    if outcome.keyboard_interrupt:
        runner.note_ctrl_c()
    try:
        _write_stats(prof, outfile)
    except OSError as exc:
        sys.stderr.write(f"lprof: could not write {outfile}: {exc.strerror or exc}\n")
        return outcome.exit_code or 2
    if args.verbosity >= 0:
        _say(stdout, f"Wrote profile results to {outfile!r}\n")
    if args.verbosity >= 1:
        if debug:
            kernprof_mode.debug(_call_text(prof.print_stats))
        prof.print_stats()
    elif args.verbosity >= 0:
        _say(stdout, f"Inspect results with:\n{sys.executable} -m pstats {outfile}\n")
    return outcome.exit_code


def _say(stream, text):
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass
