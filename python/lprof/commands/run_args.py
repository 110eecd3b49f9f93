"""`lprof [options] TARGET args...`: the run verb's parser and the checks
argparse cannot make. Kept apart from commands/run.py, and light to import:
the words are parsed (and a --memory run re-executed) before the run's own
imports, which the re-executed process pays for again."""

import argparse
import os
import sys

from .. import __version__
from ..common.errors import LprofError
from .options import STACK_METRICS, add_sampled_listing_options
from . import parsers


_BOOL_WORDS = {
    **{w: True for w in ("1", "on", "true", "t", "yes", "y")},
    **{w: False for w in ("0", "off", "false", "f", "no", "n", "")},
}


def _bool_word(text):
    value = _BOOL_WORDS.get(str(text).casefold())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected yes/no, true/false, on/off or 1/0, not {text!r}")
    return value


class _AppendOverConfig(argparse._AppendAction):
    """-p appends, but the command line's first -p replaces the config
    file's list, as kernprof's does (`-p ''` clears it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not getattr(namespace, "_prof_mod_from_command_line", False):
            setattr(namespace, self.dest, [])
            namespace._prof_mod_from_command_line = True
        super().__call__(parser, namespace, values, option_string)


def _switch(group, short, long, help, default=False):
    """A kernprof-style switch: -x, --xx, --xx=yes|no (and the other boolean
    words), --no-xx."""
    action = group.add_argument(
        long,
        nargs="?",
        const=True,
        default=default,
        type=_bool_word,
        metavar="yes|no",
        help=help + (f" (short: {short})" if short else ""),
    )
    action.is_switch = True
    if short:
        group.add_argument(short, dest=action.dest, action="store_true", help=argparse.SUPPRESS)
    group.add_argument("--no-" + long[2:], dest=action.dest, action="store_false", help=argparse.SUPPRESS)
    return action


def parser():
    p = parsers.parser(
        prog="lprof",
        allow_abbrev=False,
        usage="lprof [options] script.py [args ...]\n"
        "       lprof [options] -m module [args ...]\n"
        "       lprof [options] -c code [args ...]\n"
        "       lprof view FILE.lprof [options]\n"
        "       lprof diff BEFORE.lprof AFTER.lprof [--html PATH]\n"
        "       lprof export FILE.lprof --format json|folded|speedscope|svg|html|chrome|pstats [options]\n"
        "       lprof merge FILE.lprof... -o OUT.lprof\n"
        "       lprof attach PID [-d SECONDS] [--children] [--wall] [--memory] [-l -p TARGET] [--top] [-o OUT]\n"
        "       lprof dump PID [--json]",
        description="Line-level profiler for Python. Without -l: samples the whole program "
        "(CPU or wall time per line and per stack). With -l: exact timing of the "
        "lines of functions marked @profile.",
        epilog="Everything after the script, -m MODULE or -c CODE goes to the program, as "
        "with python. Defaults can be set in pyproject.toml ([tool.lprof], and "
        "kernprof's [tool.line_profiler.kernprof]); see docs/usage.md.",
    )
    p.add_argument("-V", "--version", action="version", version=f"lprof {__version__}")
    p.add_argument(
        "--config",
        metavar="TOML",
        help="read option defaults from this file (default: the nearest "
        "pyproject.toml from the current folder up)",
    )
    p.add_argument("--no-config", action="store_true", help="read no pyproject.toml")
    g = p.add_argument_group("exact line profiler (kernprof-compatible)")
    _switch(g, "-l", "--line-by-line", "trace @profile functions line by line (puts `profile` into builtins)")
    _switch(g, "-b", "--builtin", "put `profile` into builtins (implied by -l)")
    g.add_argument(
        "-p",
        "--prof-mod",
        action=_AppendOverConfig,
        default=[],
        metavar="TARGET",
        help="profile without decorators: a module, function (pkg.mod.func or "
        "pkg.mod:Class.method), or a path (the script itself: every function "
        "in it); repeat or separate with commas",
    )
    _switch(
        g,
        None,
        "--prof-imports",
        "when the script (or -m module) is a -p target, also profile what it imports, as kernprof does",
    )
    # None unless given: an explicit --no-preimports also narrows a module
    # target to the functions defined in it, as kernprof's does
    _switch(
        g,
        None,
        "--preimports",
        "import -p modules before the program runs (kernprof's "
        "default); lprof's default registers them when the "
        "program imports them, so the program runs unchanged",
        default=None,
    )
    g.add_argument(
        "-s",
        "--setup",
        metavar="CODE_OR_FILE",
        help="code (or a file) to run before the program, not profiled",
    )
    g.add_argument(
        "-u",
        "--unit",
        type=float,
        default=None,
        help="output unit of the time columns in seconds (default 1e-6)",
    )
    _switch(g, "-z", "--skip-zero", "hide functions that never ran")
    _switch(g, None, "--summarize", "add a one-line-per-function summary")
    _switch(g, "-r", "--rich", "accepted for kernprof; lprof prints plain text")
    g.add_argument("--sample", action="store_true", help="with -l: also sample the whole program")
    g = p.add_argument_group("output")
    g.add_argument(
        "-o",
        "--outfile",
        help="profile file to write (default: <script>.lprof with -l, <script>.sample.lprof when sampling)",
    )
    g.add_argument(
        "-v",
        "--verbose",
        "--view",
        dest="verbose",
        action="count",
        default=0,
        help="print the -l listing after the run (sampling listings print by default)",
    )
    g.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="print no listing and no lprof messages (the program's output is "
        "never touched; -qq and -qqq are accepted and do the same)",
    )
    g.add_argument(
        "-i",
        "--output-interval",
        type=float,
        default=0,
        nargs="?",
        const=1.0,
        metavar="SECONDS",
        help="rewrite the profile file every SECONDS while the program runs (bare -i: every second)",
    )
    g.add_argument("--stacks", metavar="PATH", help="write folded stacks (flamegraph.pl input)")
    g.add_argument(
        "--stacks-metric",
        choices=STACK_METRICS,
        help="metric of --stacks/--flamegraph (default: the profile's main one)",
    )
    g.add_argument("--flamegraph", metavar="PATH", help="write a self-contained SVG flamegraph")
    g.add_argument(
        "--html",
        metavar="PATH",
        help="write a self-contained HTML report (source with per-line bars, hot "
        "lines and functions, flame graph, memory timeline); opens offline",
    )
    g.add_argument(
        "--thread-stacks",
        action="store_true",
        help="--stacks/--flamegraph/--html: stacks per thread, from the event loop down, for an "
        "asyncio program under --wall on 3.12+ (by default: per task)",
    )
    g.add_argument(
        "--full-imports",
        action="store_true",
        help="--flamegraph/--html: show importlib's frames whole (by default each "
        "import is one 'import module' frame)",
    )
    g.add_argument(
        "--outdir",
        metavar="DIR",
        help="write the profile into DIR as <name>.<host>.<rank>.lprof (the rank "
        "from mpirun, srun or torchrun; the pid outside a launcher)",
    )
    g = p.add_argument_group("child processes")
    g.add_argument(
        "--follow",
        dest="follow",
        action="store_true",
        default=True,
        help="profile child processes too (fork, multiprocessing, subprocesses "
        "running Python) and merge them into one profile (default)",
    )
    g.add_argument("--no-follow", dest="follow", action="store_false", help="profile the main process only")
    g.add_argument(
        "--per-process", action="store_true", help="print one listing per process (the file stays merged)"
    )
    g = p.add_argument_group("sampling")
    g.add_argument("--wall", action="store_true", help="sample wall-clock time, not CPU time")
    g.add_argument("--cpu", action="store_true", help="sample CPU time (default)")
    g.add_argument(
        "--no-waits",
        dest="waits",
        action="store_false",
        help="--wall: leave out the wait(s) column, the time coroutines wait at each "
        "await (kept on Python 3.12+ by default)",
    )
    g.add_argument(
        "--rate",
        type=int,
        default=None,
        metavar="HZ",
        help=f"samples per second, 1 to {_max_rate()} (default 250 in CPU mode, "
        f"1000 with --wall; in CPU mode per CPU second of each thread, from a task-clock perf event "
        f"per thread, each sample weighted by the CPU time it covers)",
    )
    g.add_argument(
        "--signal",
        type=int,
        default=None,
        metavar="SIGNUM",
        help="signal the sampler uses (default a real-time signal, SIGRTMIN+4, so "
        "that the program's own SIGPROF use is untouched)",
    )
    g.add_argument(
        "--native",
        nargs="?",
        const="on",
        default=None,
        choices=["on", "all"],
        help="stacks gain native (C/C++) frames through libunwind; --native=all "
        "also keeps the interpreter's own frames",
    )
    add_sampled_listing_options(g)
    g = p.add_argument_group("memory")
    g.add_argument(
        "--memory",
        action="store_true",
        help="add memory columns: allocated, net, peak per line (preloads lprof's allocator shim)",
    )
    g.add_argument(
        "--memory-sample-bytes",
        type=int,
        default=16384,
        metavar="BYTES",
        help="mean bytes between memory samples (default 16384)",
    )
    g = p.add_argument_group("GPU")
    g.add_argument(
        "--gpu",
        nargs="?",
        const="all",
        default=None,
        choices=["all", "cuda", "levelzero"],
        help="add GPU columns per line (kernel and copy time, launches, bytes copied, "
        "device memory) and GPU stacks: CUDA through CUPTI, Intel GPUs through "
        "Level Zero, each used where present",
    )
    g = p.add_argument_group("what to run (lprof's options end here)")
    g.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    g.add_argument("-c", dest="code", metavar="CODE", help="run CODE as python -c does")
    return p


def _max_rate():
    from .._lprof import SAMPLER_MAX_RATE_HZ  # stated once, in C

    return SAMPLER_MAX_RATE_HZ


def parse(argv, as_kernprof=False):
    """The run's options, checked: lprof's own words parsed with pyproject
    defaults, the target and the program's words taken off first (argsplit).
    as_kernprof: lprof stands in kernprof's place (kernprof_mode.py), with
    kernprof's defaults. Raises LprofError (one line) for what argparse
    cannot check."""
    args = _parse(argv, as_kernprof)
    _check(args)
    return args


def _parse(argv, as_kernprof=False):
    from . import argsplit, config

    p = parser()
    if as_kernprof:
        p.prog = "kernprof"
    own, target = argsplit.split(p, argv)
    if as_kernprof and target.kind == "script" and target.args[:1] == ["--"]:
        target.args = target.args[1:]  # kernprof's parser drops a `--` after the script
    pre = parsers.parser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    pre.add_argument("--no-config", action="store_true")
    early, _ = pre.parse_known_args(own)
    if not early.no_config:
        path, named = config.config_path(early.config, False)
        values, warning = config.defaults(p, path, explicit=named)
        values["column_widths"] = config.column_widths(path, named)
        if warning:
            from ..process.preload import MARKER  # set in the process --memory re-executes

            if not os.environ.get(MARKER):  # say it once, not again after the re-exec
                sys.stderr.write(f"lprof: {warning}\n")
        p.set_defaults(**values)
    args = p.parse_args(own)
    args.as_kernprof = as_kernprof
    if as_kernprof and args.preimports is None:
        args.preimports = True  # kernprof's default: -p modules imported first
    args.script = args.module = args.code = None
    args.code_from_stdin = False
    args.args = target.args
    if target.kind == "script":
        args.script = target.value
    elif target.kind == "module":
        args.module = target.value
    elif target.kind == "code":
        args.code = target.value
    elif target.kind == "stdin":  # read by the run command, after any re-exec
        args.code = ""
        args.code_from_stdin = True
    level = args.verbose - args.quiet
    args.verbosity = level  # kernprof's arithmetic: -qq silences the program's stdout too
    args.view = level >= 1
    args.quiet = level < 0
    if args.module is None and args.script is None and args.code is None:
        p.print_usage(sys.stderr)
        raise LprofError("no script to profile (give a script path, -m module or -c code)", 2)
    return args


def _check(args):
    from .._lprof import SAMPLER_MAX_RATE_HZ  # stated once, in C

    sampling = not args.line_by_line or args.sample
    if args.native and not sampling:
        raise LprofError(
            "--native adds native frames to sampled stacks: use it without -l (or with -l --sample)", 2
        )
    if args.wall and not sampling:
        raise LprofError("--wall is a sampling mode: use it without -l (or with -l --sample)", 2)
    if args.stacks_metric in ("alloc", "peak", "leak") and not args.memory:
        raise LprofError(f"--stacks-metric {args.stacks_metric} needs --memory", 2)
    if args.stacks_metric in ("cpu", "wall", "gil") and not sampling:
        raise LprofError(
            f"--stacks-metric {args.stacks_metric}: lprof -l alone records no stacks; add --sample", 2
        )
    if args.stacks_metric == "wall" and not args.wall:
        raise LprofError("--stacks-metric wall needs --wall (CPU sampling records no wall time)", 2)
    if args.stacks_metric == "wait" and not (args.wall and args.waits and sampling):
        raise LprofError(
            "--stacks-metric wait needs --wall (and not --no-waits): the await waits "
            "are measured in wall mode",
            2,
        )
    if not args.waits and not args.wall:
        raise LprofError("--no-waits goes with --wall (the only mode that measures await waits)", 2)
    if args.stacks_metric in ("gpu", "gpu-mem", "gpu-peak") and not args.gpu:
        raise LprofError(f"--stacks-metric {args.stacks_metric} needs --gpu", 2)
    if (args.stacks or args.flamegraph) and not (sampling or args.memory or args.gpu):
        raise LprofError(
            "--stacks/--flamegraph: lprof -l alone records no stacks; add --sample, --memory or --gpu", 2
        )
    if args.signal is not None:
        from ..collect.sampling import check_signal

        try:
            check_signal(args.signal)
        except ValueError as exc:
            raise LprofError(f"--signal {args.signal}: {exc}", 2) from None
    if args.native:
        from .._lprof import native_unwind_check

        why = native_unwind_check()
        if why:
            raise LprofError(f"--native: {why}", 2)
    if args.rate is None:
        from ..collect.sampling import default_rate

        args.rate = default_rate("wall" if args.wall else "cpu")
    if not 1 <= args.rate <= SAMPLER_MAX_RATE_HZ:
        raise LprofError(
            f"--rate {args.rate}: must be between 1 and {SAMPLER_MAX_RATE_HZ} samples a second", 2
        )
    if args.memory_sample_bytes < 1:
        raise LprofError(f"--memory-sample-bytes {args.memory_sample_bytes}: must be at least 1", 2)
    if args.output_interval < 0:
        raise LprofError(f"--output-interval {args.output_interval:g}: must not be negative", 2)
    if args.unit is not None and not args.unit > 0:
        raise LprofError(f"--unit {args.unit:g}: must be a positive number of seconds", 2)
