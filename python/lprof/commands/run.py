"""`lprof [options] script.py args`: run a program under the chosen collectors,
then save and print its profile on every exit path."""

import atexit
import builtins
import os
import signal
import sys
import threading

from ..process import faults, follow, runner
from . import output_paths as outputs
from ..collect import make as make_collectors, options_of

# imported here, not where it pauses: an import there ran importlib's Python
# code (_handle_fromlist) while the sampler still ran, a stack of its own
from ..collect import sampling
from ..common import headroom
from ..model import profile_file, task_stacks
from ..common.errors import LprofError
from ..collect.recording import Recording

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_bootstrap")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_outfile(target, line_by_line):
    """<target>.lprof for -l (kernprof's name: `lprof view` reads both
    tools' files), <target>.sample.lprof when sampling, so the two modes
    never overwrite each other's profile of the same script."""
    name = os.path.basename(os.path.normpath(target)) or "lprof"
    return name + (".lprof" if line_by_line else ".sample.lprof")


def _code_outfile(target, line_by_line):
    """-c / - : under -l kernprof's names, kernprof-command-XXXXXXXX.lprof and
    kernprof-stdin-XXXXXXXX.lprof (a fresh name each run, as kernprof's temp
    file gives it); sampled: lprof-command.sample.lprof."""
    if not line_by_line:
        return default_outfile("lprof-command", False)
    import secrets

    what = "stdin" if target == "-" else "command"
    return f"kernprof-{what}-{secrets.token_hex(4)}.lprof"


def _inject_builtin_profile():
    from ..decorator import profile  # imported here: sampling runs never need the tracer

    builtins.profile = profile
    from . import line_profiler_bridge  # `from line_profiler import profile` too

    line_profiler_bridge.install()
    # Children (multiprocessing spawn, subprocesses) get `profile` too.
    os.environ["LPROF_BUILTIN_PROFILE"] = "1"
    parts = [BOOTSTRAP_DIR, PACKAGE_PARENT]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(parts + ([old] if old else []))


class _Run(Recording):
    """The lprof command's own recording, with what only it has: the output
    file, the fault guard and the checkpoints' HTML report."""

    def __init__(self, args, collectors, modes, outfile):
        target = args.module or args.script
        super().__init__(collectors, modes, argv=[target] + list(args.args))
        self.args, self.outfile = args, outfile
        self.lock = threading.Lock()
        self.guard = None  # faults.Guard: SIGTERM, fatal signals, exec, os._exit

    def start(self):
        super().start()
        if self.args.output_interval and self.args.output_interval > 0:
            self.start_checkpoints(self.args.output_interval, self._checkpoint)

    def stop(self):
        super().stop()
        self.stop_checkpoints(join_timeout=5)

    def save(self, prof):
        """Saves the profile; returns its encoded bytes (what a fatal signal writes)."""
        if self.args.as_kernprof:  # -c / - code's functions go with kernprof's temporary file
            from .kernprof_mode import without_code_functions

            prof = without_code_functions(prof)
        data = profile_file.encode(prof)
        with self.lock:
            profile_file.save_bytes(data, self.outfile)
        return data

    def _checkpoint(self):
        try:
            prof = self.build()
            data = self.save(prof)
            if self.guard is not None:
                self.guard.checkpoint(data)  # what a fatal signal writes
            if self.args.html:  # the report follows the checkpoints (written atomically)
                from .. import export as exports

                if getattr(self.args, "thread_stacks", False):
                    prof = task_stacks.thread_view(prof)
                exports.write(prof, "html", self.args.html, fold_imports=not self.args.full_imports)
        except Exception as exc:  # a failed checkpoint must not end the program
            sys.stderr.write(f"lprof: periodic save failed: {exc}\n")


def _print_outputs(args, prof):
    out = []
    if "lines" in prof["meta"]["modes"] and args.view and not args.quiet:
        from ..render.listing import render_lines

        out.append(
            render_lines(
                prof,
                unit=args.unit,
                skip_zero=args.skip_zero,
                summarize=args.summarize,
                widths=getattr(args, "column_widths", None),
            )
        )
    if "sampling" in prof and not args.quiet:
        from ..render.sampled_listing import render as render_sampled

        out.append(
            render_sampled(
                prof,
                reduced=args.reduced,
                profile_only=args.profile_only or None,
                profile_all=args.profile_all,
                threshold_pct=args.threshold,
                per_thread=args.per_thread,
            )
        )
    if out:
        try:
            sys.stdout.flush()
            sys.stdout.write("\n".join(out))
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def _write_stacks(args, prof):
    """Writes --stacks/--flamegraph/--html; False when one could not be written."""
    from .. import export as exports

    ok = True
    if getattr(args, "thread_stacks", False):
        prof = task_stacks.thread_view(prof)
    if args.html:
        try:
            exports.write(prof, "html", args.html, fold_imports=not args.full_imports)
        except (ValueError, OSError) as exc:
            sys.stderr.write(f"lprof: could not write {args.html}: {exc}\n")
            ok = False
    if not (args.stacks or args.flamegraph):
        return ok
    sampled = not args.line_by_line or args.sample
    # --gpu asks for GPU stacks, where a GPU ran; without one the profile is
    # made as usual, its stacks too
    gpu_ran = bool((prof.get("gpu") or {}).get("lines"))
    metric = args.stacks_metric or (
        "gpu"
        if args.gpu and (gpu_ran or not (sampled or args.memory))
        else "alloc"
        if args.memory
        else "wall"
        if args.wall
        else "cpu"
    )
    for path, fmt in ((args.stacks, "folded"), (args.flamegraph, "svg")):
        if path:
            try:
                exports.export(prof, fmt, metric, path, fold_imports=not args.full_imports)
            except (ValueError, OSError) as exc:
                _say(f"lprof: could not write {path}: {exc}\n")
                ok = False
    return ok


_children_pending = []


def _finish_children():
    """The parent's last step when children were followed: wait briefly for
    children still writing, merge their profiles into the parent's, save
    the merged profile over the parent's own and print it."""
    if not _children_pending:
        return
    args, session, prof, outfile, written = _children_pending.pop()
    if not session.is_parent():
        return
    try:
        left = session.wait()
        if left and not args.quiet:
            sys.stderr.write(
                f"lprof: {len(left)} child process(es) still running after "
                f"{follow.WAIT_S:g} s; their profiles are not merged\n"
            )
        from ..common.errors import ProfileFileError
        from ..model.merge import MergeError, Merger

        merger = Merger()
        merger.add(prof)
        children = []
        for path in session.files():
            try:
                merger.add(profile_file.load(path))
                children.append(path)
            except (ProfileFileError, MergeError) as exc:
                sys.stderr.write(f"lprof: a child's profile is not merged: {exc}\n")
            except Exception as exc:  # a child's file that validates but does not merge
                sys.stderr.write(
                    f"lprof: a child's profile is not merged ({path}: {exc.__class__.__name__}: {exc})\n"
                )
        merged = merger.result() if children else prof  # no child wrote: the parent's alone
        try:
            if children:
                profile_file.save(merged, outfile)
            if not args.quiet and (children or written):
                what = f", {merger.count} processes merged" if children else ""
                sys.stderr.write(
                    f"lprof: wrote profile to {outfile}{what} (view it again: lprof view {outfile})\n"
                )
        except OSError as exc:
            sys.stderr.write(f"lprof: could not write {outfile}: {exc.strerror or exc}\n")
        _write_stacks(args, merged)
        if args.per_process:
            _print_per_process(args, prof, children)
        else:
            _print_outputs(args, merged)
    except Exception as exc:  # never a traceback at exit; the parent's own file is saved
        sys.stderr.write(
            f"lprof: merging the children's profiles failed "
            f"({exc.__class__.__name__}: {exc}); {outfile} holds the main "
            f"process's profile\n"
        )
        _print_outputs(args, prof)
    finally:
        session.close()


def _print_per_process(args, parent, children):
    """--per-process: the parent's listing, then each child's, one at a time."""

    def header(prof, what):
        meta = prof.get("meta", {})
        argv = " ".join(map(str, meta.get("argv", [])))
        return f"\n== process {meta.get('pid')} ({what}): {argv}\n"

    if args.quiet:
        return
    _emit(header(parent, "parent"))
    _print_outputs(args, parent)
    for path in children:
        try:
            prof = profile_file.load(path)
        except Exception:
            continue
        _emit(header(prof, f"child of {prof.get('meta', {}).get('ppid')}"))
        _print_outputs(args, prof)


def _emit(text):
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _say_started(args, modes):
    """One line on a terminal (never into a pipe or file): what runs, and
    that Ctrl-C still gives the profile."""
    try:
        if args.quiet or not sys.stderr.isatty():
            return
    except (AttributeError, ValueError):
        return
    what = []
    if "lines" in modes:
        what.append("tracing @profile lines")
    if "cpu" in modes or "wall" in modes:
        what.append(f"sampling {'wall' if args.wall else 'CPU'} time at {args.rate} Hz")
    if "memory" in modes:
        what.append("memory")
    if "gpu" in modes:
        what.append("GPU")
    sys.stderr.write(f"lprof: {', '.join(what)}; Ctrl-C stops the program and keeps the profile\n")
    sys.stderr.flush()


def _target(args):
    """(name shown as sys.argv[0], kind for runner.run, compiled code or None)."""
    if args.module:
        return args.module, "module", None
    if args.code is not None:
        if args.code_from_stdin:
            source, name, filename = sys.stdin.read(), "-", "<stdin>"
        else:
            source, name, filename = args.code, "-c", "<string>"
        import linecache  # so the listing can show the code's lines

        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        return name, "code", compile(source, filename, "exec", dont_inherit=True)
    return args.script, "script", runner.read_script(args.script)


def main(args):
    runner.end_like_python_on_ctrl_c()
    program = runner.prepare(lambda: _target(args))
    if program is None:
        return 1
    target, kind, code = program
    outfile = args.outfile or (
        _code_outfile(target, args.line_by_line)
        if kind == "code"
        else default_outfile(target, args.line_by_line)
    )
    from ..common.procinfo import profile_path

    outfile = profile_path(outfile, args.outdir)
    outputs.check(
        [
            ("-o", outfile),
            ("--stacks", args.stacks),
            ("--flamegraph", args.flamegraph),
            ("--html", args.html),
        ],
        protected=[args.script] if kind == "script" else [],
    )
    # before any of lprof's threads starts: none imports while the program forks
    from ..process import fork_safe_imports

    extra = fork_safe_imports.LINE_MODULES if args.line_by_line else ()
    if args.html:
        extra += ("lprof.export", "lprof.export.html")
    fork_safe_imports.import_all(extra)
    try:
        collectors, modes = make_collectors(args)
    except ValueError as exc:  # e.g. LPROF_SIGNAL naming a signal the sampler must not take
        raise LprofError(f"cannot start profiling: {exc}", 2) from None
    if args.line_by_line or args.builtin:
        _inject_builtin_profile()
    session = None
    if args.follow:
        session = follow.Session(dict(options_of(args), output_interval=args.output_interval))
        session.quiet = args.quiet
        # after the program's own atexit handlers (multiprocessing's joins its
        # children there), before the Ctrl-C exit (runner.end_like_python_on_ctrl_c)
        atexit.register(_finish_children)
    run = _Run(args, collectors, modes, os.path.abspath(outfile))

    def on_start():
        _say_started(args, modes)
        if kind == "code" and args.line_by_line:
            # -l -c / -l -: the code's own functions are timed, as kernprof
            # times them (it makes the code a -p target)
            from ..collect.linetrace import collector

            collector.add_code_tree(code)
        if args.prof_mod:
            from . import targets

            targets.register(
                args.prof_mod,
                args.script,
                code,
                preimport=args.preimports,
                run_module=args.module,
                prof_imports=args.prof_imports,
            )
        try:
            run.start()
        except (ValueError, RuntimeError, OSError) as exc:  # e.g. an unusable --signal
            run.stop()
            raise LprofError(f"cannot start profiling: {exc}", 2) from None

    def finish(how, exit_code):  # the end of a run killed by SIGTERM, or of exec/_exit
        # before exec, no listing: an exec that fails leaves the program's stdout as it was
        return _save_and_print(run, args, outfile, exit_code, how, listing=how != "exec")

    run.guard = faults.arm(
        finish,
        lambda: profile_file.encode(run.build()),
        run.outfile,
        checkpoints=not args.output_interval,
        quiet=args.quiet,
    )
    # kernprof's -qq (verbosity -2) silences the program's sys.stdout, -qqq
    # its sys.stderr too. Plain code, no context manager: contextlib's
    # __exit__ would be code outside lprof's files run after the program
    saved_streams, sink = (sys.stdout, sys.stderr), None
    if args.verbosity <= -2:
        sink = open(os.devnull, "w")
        sys.stdout = sink
        if args.verbosity <= -3:
            sys.stderr = sink
    try:
        outcome = runner.run(target, args.args, kind=kind, code=code, setup=args.setup, on_start=on_start)
    finally:
        if sink is not None:
            sys.stdout, sys.stderr = saved_streams
            sink.close()
    # the program is over: what follows is lprof's, unsampled, with the headroom;
    # no code outside lprof's files may run before the pause (its stack would
    # begin at that code once lprof's frames are cut from it)
    sampling.pause_at_program_end()
    headroom.release()
    if session is not None and not session.is_parent():
        # a fork of the program came back through the runner: it is a
        # followed child, whose own profile is written at its exit
        return outcome.exit_code
    terminated = run.guard.end(join=False)
    run.stop()
    if args.prof_mod and not args.quiet:
        from . import targets

        for missed, why in targets.untraced():
            sys.stderr.write(
                f"lprof: -p {missed}: {why or 'the program never imported it'}; nothing of it was traced\n"
            )
    if terminated:  # SIGTERM while the program was ending: saved, then die by it
        finish(f"killed by {signal.Signals(terminated).name}", -terminated)
        run.guard.die(terminated)
    children = session is not None and session.has_children()
    if not children:
        if session is not None:
            session.close()
        written = finish(None, outcome.exit_code)
        run.guard.reap()
        if outcome.keyboard_interrupt:
            runner.note_ctrl_c()
        # the program's status; lprof's own failure shows only where the program succeeded
        return outcome.exit_code if outcome.exit_code or written else 2
    prof = run.build(exit_code=outcome.exit_code)
    written = True
    try:
        run.save(prof)  # the parent's own part is on disk whatever happens next
    except OSError as exc:
        _say(f"lprof: could not write {outfile}: {exc.strerror or exc}\n")
        written = False
    run.guard.reap()
    if outcome.keyboard_interrupt:
        runner.note_ctrl_c()
    # merged once the program's atexit handlers have run (_finish_children)
    _children_pending.append((args, session, prof, outfile, written))
    return outcome.exit_code if outcome.exit_code or written else 2


def _save_and_print(run, args, outfile, exit_code, how, listing=True):
    """Saves the profile, writes --stacks/--flamegraph/--html, prints the
    listing; False when something could not be written. `how` says why the
    run ended early (None: the program ended)."""
    headroom.release()  # a run killed before stop(): the build needs it too
    prof = run.build(exit_code=exit_code)
    written = True
    try:
        run.save(prof)
    except OSError as exc:
        _say(f"lprof: could not write {outfile}: {exc.strerror or exc}\n")
        written = False
    if written and not args.quiet:
        if how is None and args.line_by_line:
            _emit(_kernprof_wrote(args, outfile))
        else:
            why = (
                f"the program was {how}; "
                if how and how.startswith("killed")
                else f"before {how}: "
                if how
                else ""
            )
            _say(f"lprof: {why}wrote profile to {outfile} (view it again: lprof view {outfile})\n")
    written = _write_stacks(args, prof) and written
    if listing:
        _print_outputs(args, prof)
    return written


def _kernprof_wrote(args, outfile):
    """After a -l run, kernprof's own lines on stdout, where scripts that
    drive kernprof read them; the command to look again is line_profiler's
    where it is installed (it reads lprof -l files), else lprof's."""
    text = f"Wrote profile results to {outfile!r}\n"
    if not args.view:
        import importlib.util

        try:
            has_line_profiler = importlib.util.find_spec("line_profiler") is not None
        except (ImportError, ValueError):
            has_line_profiler = False
        again = (
            f"{sys.executable} -m line_profiler -rmt {outfile}"
            if has_line_profiler
            else f"lprof view {outfile}"
        )
        text += f"Inspect results with:\n{again}\n"
    return text


def _say(text):
    """lprof's line on stderr; the program may have closed it (os.closerange)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
