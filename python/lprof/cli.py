"""lprof's command line: argument parsing and dispatch.

The only place that turns an LprofError into `lprof: <message>` and an exit
status. Verbs: run (default: `lprof [options] script.py args`), view, export."""
import argparse
import sys

from . import __version__
from .errors import LprofError

VERBS = ("view", "export")


def _run_parser():
    p = argparse.ArgumentParser(
        prog="lprof", allow_abbrev=False,
        usage="lprof [options] script.py [args ...]\n"
              "       lprof [options] -m module [args ...]\n"
              "       lprof view FILE.lprof [options]\n"
              "       lprof export FILE.lprof --format json|folded|speedscope|svg [options]",
        description="Line-level profiler for Python. Without -l: samples the whole program "
                    "(CPU or wall time per line and per stack). With -l: exact timing of the "
                    "lines of functions marked @profile.")
    p.add_argument("--version", action="version", version=f"lprof {__version__}")
    g = p.add_argument_group("exact line profiler (kernprof-compatible)")
    g.add_argument("-l", "--line-by-line", action="store_true",
                   help="trace @profile functions line by line (puts `profile` into builtins)")
    g.add_argument("-b", "--builtin", action="store_true",
                   help="put `profile` into builtins (implied by -l)")
    g.add_argument("-p", "--prof-mod", action="append", default=[], metavar="TARGET",
                   help="profile without decorators: a module, function (pkg.mod.func or "
                        "pkg.mod:Class.method), or a path (the script itself: every function "
                        "in it); repeat or separate with commas")
    g.add_argument("-s", "--setup", metavar="CODE_OR_FILE",
                   help="code (or a file) to run before the program, not profiled")
    g.add_argument("-u", "--unit", type=float, default=None,
                   help="output unit of the time columns in seconds (default 1e-6)")
    g.add_argument("-z", "--skip-zero", action="store_true",
                   help="hide functions that never ran")
    g.add_argument("--summarize", action="store_true", help="add a one-line-per-function summary")
    g.add_argument("--sample", action="store_true",
                   help="with -l: also sample the whole program")
    g = p.add_argument_group("output")
    g.add_argument("-o", "--outfile", help="profile file to write (default: <script>.lprof)")
    g.add_argument("-v", "--view", action="store_true",
                   help="print the listing after the run (default for sampling)")
    g.add_argument("-q", "--quiet", action="store_true", help="do not print the listing")
    g.add_argument("-i", "--output-interval", type=float, default=0, metavar="SECONDS",
                   help="rewrite the profile file every SECONDS while the program runs")
    g.add_argument("--stacks", metavar="PATH", help="write folded stacks (flamegraph.pl input)")
    g.add_argument("--stacks-metric", choices=["cpu", "wall", "alloc", "peak", "leak"],
                   help="metric of --stacks/--flamegraph (default: the profile's main one)")
    g.add_argument("--flamegraph", metavar="PATH", help="write a self-contained SVG flamegraph")
    g = p.add_argument_group("sampling")
    g.add_argument("--wall", action="store_true", help="sample wall-clock time, not CPU time")
    g.add_argument("--cpu", action="store_true", help="sample CPU time (default)")
    g.add_argument("--rate", type=int, default=None, metavar="HZ",
                   help="samples per second (default 1000; CPU timers fire at most at the kernel "
                        "tick, 250 Hz on Debian, each sample weighted by the ticks it covers)")
    g.add_argument("--signal", type=int, default=None, metavar="SIGNUM",
                   help="signal the sampler uses (default SIGPROF, or a real-time signal if "
                        "the program uses SIGPROF)")
    g.add_argument("--native", nargs="?", const="on", default=None, metavar="all",
                   help="stacks gain native (C/C++) frames through libunwind; --native=all "
                        "also keeps the interpreter's own frames")
    g.add_argument("--reduced", dest="reduced", action="store_true", default=True,
                   help="list only lines above the threshold (default)")
    g.add_argument("--all", dest="reduced", action="store_false", help="list every line")
    g.add_argument("--threshold", type=float, default=1.0, metavar="PCT",
                   help="reduced listing: minimum share of a line, in percent (default 1)")
    g.add_argument("--profile-only", action="append", default=[], metavar="PATTERN",
                   help="list only files whose path contains PATTERN")
    g.add_argument("--profile-all", action="store_true",
                   help="list every file, the standard library and site-packages too")
    g.add_argument("--per-thread", action="store_true", help="split the listing by thread")
    g = p.add_argument_group("memory")
    g.add_argument("--memory", action="store_true",
                   help="add memory columns: allocated, net, peak per line (preloads lprof's "
                        "allocator shim)")
    g.add_argument("--memory-sample-bytes", type=int, default=16384, metavar="BYTES",
                   help="mean bytes between memory samples (default 16384)")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    p.add_argument("script", nargs="?", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def _view_parser():
    p = argparse.ArgumentParser(prog="lprof view", allow_abbrev=False,
                                description="Print a saved profile again.")
    p.add_argument("file")
    p.add_argument("-u", "--unit", type=float, default=None)
    p.add_argument("-z", "--skip-zero", action="store_true")
    p.add_argument("--summarize", action="store_true")
    p.add_argument("--sort", choices=["time", "file"], default="time")
    p.add_argument("--all", dest="reduced", action="store_false", default=True)
    p.add_argument("--threshold", type=float, default=1.0)
    p.add_argument("--profile-only", action="append", default=[])
    p.add_argument("--profile-all", action="store_true")
    p.add_argument("--per-thread", action="store_true")
    return p


def _export_parser():
    p = argparse.ArgumentParser(prog="lprof export", allow_abbrev=False,
                                description="Convert a saved profile to another format.")
    p.add_argument("file")
    p.add_argument("--format", "-f", required=True,
                   choices=["json", "folded", "speedscope", "svg"])
    p.add_argument("--metric", default=None, choices=["cpu", "wall", "alloc", "peak", "leak"],
                   help="stack metric for folded/speedscope/svg (default cpu, or wall for "
                        "wall-mode profiles)")
    p.add_argument("-o", "--output", help="output file ('-' for stdout; default next to FILE)")
    return p


def _parse(parser, argv):
    # argparse prints usage and exits 2 on bad input: that is the one-line-error contract.
    return parser.parse_args(argv)


def _fix_native(args):
    """`--native` takes an optional value (`--native=all`); argparse hands it
    the next word when none is given (`lprof --native script.py`): that word
    is the script, and every positional moves one place back."""
    if args.native in (None, "on", "all"):
        return
    if args.script is not None:
        args.args = [args.script] + args.args
    args.script, args.native = args.native, "on"


def _check_run_args(args):
    from ._lprof import SAMPLER_DEFAULT_RATE_HZ, SAMPLER_MAX_RATE_HZ  # stated once, in C
    if args.native and args.line_by_line and not args.sample:
        raise LprofError("--native adds native frames to sampled stacks: use it without -l "
                         "(or with -l --sample)", 2)
    if args.native:
        from ._lprof import native_unwind_check
        why = native_unwind_check()
        if why:
            raise LprofError(f"--native: {why}", 2)
    if args.rate is None:
        args.rate = SAMPLER_DEFAULT_RATE_HZ
    if not 1 <= args.rate <= SAMPLER_MAX_RATE_HZ:
        raise LprofError(f"--rate {args.rate}: must be between 1 and {SAMPLER_MAX_RATE_HZ} samples a second", 2)
    if args.memory_sample_bytes < 1:
        raise LprofError(f"--memory-sample-bytes {args.memory_sample_bytes}: must be at least 1", 2)
    if args.output_interval < 0:
        raise LprofError(f"--output-interval {args.output_interval:g}: must not be negative", 2)
    if args.unit is not None and not args.unit > 0:
        raise LprofError(f"--unit {args.unit:g}: must be a positive number of seconds", 2)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in VERBS:
            verb = argv.pop(0)
            if verb == "view":
                from .commands import view
                return view.main(_parse(_view_parser(), argv))
            from .commands import export
            return export.main(_parse(_export_parser(), argv))
        parser = _run_parser()
        args = _parse(parser, argv)
        _fix_native(args)
        if args.module is not None and args.script is not None:
            args.args = [args.script] + args.args
            args.script = None
        if args.module is None and args.script is None:
            parser.print_usage(sys.stderr)
            raise LprofError("no script to profile (give a script path or -m module)", 2)
        _check_run_args(args)
        if args.memory:
            # before the run command's imports: the re-executed process
            # pays for them again, this one should not
            from . import preload
            preload.maybe_reexec(argv)
        from .commands import run
        return run.main(args, argv)
    except LprofError as exc:
        sys.stderr.write(f"lprof: {exc.message}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 1


def entry():
    sys.exit(main())
