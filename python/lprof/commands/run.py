"""`lprof [options] script.py args`: run a program under the chosen collectors,
then save and print its profile on every exit path."""
import atexit
import builtins
import os
import signal
import sys
import threading
import time

from .. import runner, targets
from ..model import assemble, profile_file
from ..decorator import profile as profile_object
from ..errors import LprofError
from ..linetrace import collector as line_collector

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "_bootstrap")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_outfile(target):
    return os.path.basename(target) + ".lprof"


def _make_collectors(args):
    collectors, modes = [], []
    if args.line_by_line:
        collectors.append(line_collector)
        modes.append("lines")
    if not args.line_by_line or args.sample:
        from .. import sampler as sampling
        mode = "wall" if args.wall else "cpu"
        collectors.append(sampling.SamplingCollector(mode=mode, rate_hz=args.rate,
                                                     signal=args.signal,
                                                     native=args.native))
        modes.append(mode)
    if args.memory:
        from .. import memory
        collectors.append(memory.MemoryCollector(sample_bytes=args.memory_sample_bytes))
        modes.append("memory")
    return collectors, modes


def _inject_builtin_profile():
    builtins.profile = profile_object
    # Children (multiprocessing spawn, subprocesses) get `profile` too.
    os.environ["LPROF_BUILTIN_PROFILE"] = "1"
    parts = [BOOTSTRAP_DIR, PACKAGE_PARENT]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(parts + ([old] if old else []))


class _Run:
    """State of one profiled run: collectors, timing, periodic writer."""

    def __init__(self, args, collectors, modes, outfile):
        self.args, self.collectors, self.modes, self.outfile = args, collectors, modes, outfile
        self.started = None
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.writer = None

    def start(self):
        self.started = time.time()
        for c in self.collectors:
            c.start()
        if self.args.output_interval and self.args.output_interval > 0:
            self.writer = threading.Thread(target=self._periodic_writer, name="lprof-writer",
                                           daemon=True)
            self.writer.start()

    def stop(self):
        self.stop_event.set()
        for c in reversed(self.collectors):
            c.stop()
        if self.writer is not None:
            self.writer.join(timeout=5)

    def build(self, exit_code=None):
        target = self.args.module or self.args.script
        return assemble.profile(self.modes, self.collectors, argv=[target] + list(self.args.args),
                                started=self.started or time.time(), exit_code=exit_code)

    def save(self, prof):
        with self.lock:
            profile_file.save(prof, self.outfile)

    def _periodic_writer(self):
        while not self.stop_event.wait(self.args.output_interval):
            try:
                self.save(self.build())
            except Exception as exc:  # a failed checkpoint must not end the program
                sys.stderr.write(f"lprof: periodic save failed: {exc}\n")


def _print_outputs(args, prof):
    out = []
    if "lines" in prof["meta"]["modes"] and args.view and not args.quiet:
        from ..render.listing import render_lines
        out.append(render_lines(prof, unit=args.unit, skip_zero=args.skip_zero,
                                summarize=args.summarize))
    if "sampling" in prof and not args.quiet:
        from .. import sampler as sampling
        out.append(sampling.render_listing(
            prof, reduced=args.reduced, profile_only=args.profile_only or None,
            profile_all=args.profile_all, threshold_pct=args.threshold,
            per_thread=args.per_thread))
    if out:
        try:
            sys.stdout.flush()
            sys.stdout.write("\n".join(out))
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def _write_stacks(args, prof):
    if not (args.stacks or args.flamegraph):
        return
    from .. import stacks
    metric = args.stacks_metric or ("alloc" if args.memory else "wall" if args.wall else "cpu")
    for path, fmt in ((args.stacks, "folded"), (args.flamegraph, "svg")):
        if path:
            try:
                stacks.export(prof, fmt, metric, path)
            except (ValueError, OSError) as exc:
                sys.stderr.write(f"lprof: could not write {path}: {exc}\n")


_interrupted = []


def _die_by_sigint():
    # What CPython does after an uncaught KeyboardInterrupt: run the atexit
    # handlers, then end the process by SIGINT. Registered before the program
    # runs, so it runs after the program's own atexit handlers.
    if not _interrupted:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def main(args, raw_argv):
    atexit.register(_die_by_sigint)
    target = args.module or args.script
    try:
        code = None if args.module else runner.read_script(args.script)
    except (SyntaxError, ValueError) as exc:
        # As Python reports a script that does not compile: no traceback of ours.
        runner.print_exception(exc.with_traceback(None))
        return 1
    outfile = args.outfile or default_outfile(target)
    out_dir = os.path.dirname(os.path.abspath(outfile))
    if not os.path.isdir(out_dir):
        raise LprofError(f"cannot write profile: directory '{out_dir}' does not exist", 2)
    collectors, modes = _make_collectors(args)
    if args.line_by_line or args.builtin:
        _inject_builtin_profile()
    run = _Run(args, collectors, modes, os.path.abspath(outfile))

    def on_start():
        if args.prof_mod:
            targets.register(args.prof_mod, args.script, code)
        try:
            run.start()
        except (ValueError, RuntimeError, OSError) as exc:  # e.g. an unusable --signal
            run.stop()
            raise LprofError(f"cannot start profiling: {exc}", 2) from None

    outcome = runner.run(target, args.args, is_module=bool(args.module), code=code,
                         setup=args.setup, on_start=on_start)
    run.stop()
    prof = run.build(exit_code=outcome.exit_code)
    try:
        run.save(prof)
        sys.stderr.write(f"lprof: wrote profile to {outfile} (view it again: lprof view {outfile})\n")
    except OSError as exc:
        sys.stderr.write(f"lprof: could not write {outfile}: {exc.strerror}\n")
    _write_stacks(args, prof)
    _print_outputs(args, prof)
    if outcome.keyboard_interrupt:
        _interrupted.append(True)
    return outcome.exit_code
