"""`lprof attach`'s command line: the parser and the checks made before
anything is asked of the process (one line and exit status 2 each)."""

import os

from ..common.errors import LprofError
from . import output_paths
from .options import add_sampled_listing_options
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof attach",
        allow_abbrev=False,
        description="Profile a running Python process (Python 3.14+ in the process, through "
        "sys.remote_exec): sample every thread, or with -l time every line of the "
        "code -p names, until the duration is over, Ctrl-C, or the process ends; "
        "then save and print its profile. A process that cannot run lprof's code "
        "(Python 3.10-3.13, or a main thread blocked past --start-timeout) is "
        "sampled from outside instead: wall-clock stacks, a listing, no file.",
    )
    p.add_argument("pid", type=int, help="the process to attach to")
    p.add_argument(
        "-d",
        "--duration",
        type=float,
        metavar="S",
        help="stop after S seconds (default: at Ctrl-C, or when the process ends)",
    )
    p.add_argument("-o", "--outfile", metavar="FILE", help="profile file (default: attach-PID.sample.lprof)")
    p.add_argument(
        "--children",
        action="store_true",
        help="also the Python processes PID started (and theirs), as they are at "
        "the attach: one merged profile (lprof view FILE --ranks: per process)",
    )
    p.add_argument(
        "-l",
        "--line-by-line",
        action="store_true",
        help="exact timing of every line of the code named by -p, instead of "
        "sampling (as lprof -l; what the process has imported)",
    )
    p.add_argument(
        "-p",
        "--prof-mod",
        action="append",
        default=[],
        metavar="TARGET",
        help="-l: a function, class or module to time (pkg.mod.func, "
        "pkg.mod:Class.method, pkg.mod, or a source file); repeat or separate "
        "with commas",
    )
    p.add_argument(
        "-z", "--skip-zero", action="store_true", help="-l: hide functions that did not run while attached"
    )
    p.add_argument("--wall", action="store_true", help="sample wall time instead of CPU time")
    p.add_argument(
        "--rate",
        type=int,
        metavar="HZ",
        help="samples per second (default 250 in CPU mode, 1000 with --wall)",
    )
    p.add_argument(
        "--native",
        nargs="?",
        const="on",
        default=None,
        choices=["on", "all"],
        help="stacks gain native (C/C++) frames through libunwind",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="memory columns too: Python objects' allocations per line (native "
        "allocations need the program started under lprof --memory)",
    )
    p.add_argument(
        "--memory-sample-bytes",
        type=int,
        default=16384,
        metavar="BYTES",
        help="mean bytes between sampled allocations (default 16384)",
    )
    p.add_argument(
        "--top",
        action="store_true",
        help="while attached, show the hottest lines live (redrawn every --interval "
        "seconds; on a terminal the screen is redrawn, else frames are printed)",
    )
    p.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="--top: seconds between frames (default 1)"
    )
    p.add_argument(
        "--top-lines", type=int, default=20, metavar="N", help="--top: lines per frame (default 20)"
    )
    p.add_argument("--html", metavar="FILE", help="also write the HTML report")
    p.add_argument(
        "--start-timeout",
        type=float,
        default=30,
        metavar="S",
        help="how long to wait for the process's main thread to run Python code "
        "and start sampling (default 30)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print no listing")
    add_sampled_listing_options(p.add_argument_group("sampled listing"))
    return p


def check(args):
    from .._lprof import SAMPLER_MAX_RATE_HZ

    if args.pid <= 0:
        raise LprofError(f"attach: {args.pid} is not a process id", 2)
    if args.pid == os.getpid():
        raise LprofError("attach: that is lprof's own process", 2)
    if args.duration is not None and not args.duration > 0:
        raise LprofError(f"--duration {args.duration}: must be more than 0 seconds", 2)
    if args.top and not 0.1 <= args.interval <= 3600:
        raise LprofError(f"--interval {args.interval}: must be between 0.1 and 3600 seconds", 2)
    if args.top_lines < 1:
        raise LprofError(f"--top-lines {args.top_lines}: must be at least 1", 2)
    if not args.start_timeout > 0:
        raise LprofError(f"--start-timeout {args.start_timeout}: must be more than 0 seconds", 2)
    if args.memory_sample_bytes < 1:
        raise LprofError(f"--memory-sample-bytes {args.memory_sample_bytes}: must be at least 1", 2)
    if args.rate is not None and not 1 <= args.rate <= SAMPLER_MAX_RATE_HZ:
        raise LprofError(
            f"--rate {args.rate}: must be between 1 and {SAMPLER_MAX_RATE_HZ} samples a second", 2
        )
    args.targets = [t.strip() for v in args.prof_mod for t in v.split(",") if t.strip()]
    if args.line_by_line:
        if not args.targets:
            raise LprofError(
                "-l: name the code to time with -p (pkg.mod.func, pkg.mod:Class.method, pkg.mod or a file)", 2
            )
        for flag, given in (
            ("--wall", args.wall),
            ("--native", args.native),
            ("--rate", args.rate is not None),
            ("--top", args.top),
        ):
            if given:
                raise LprofError(f"{flag} is for sampling; -l times every line of the -p code", 2)
    elif args.targets:
        raise LprofError("-p names the code -l times: add -l", 2)
    args.outfile = args.outfile or (
        f"attach-{args.pid}.lprof" if args.line_by_line else f"attach-{args.pid}.sample.lprof"
    )
    output_paths.check([("--outfile", args.outfile), ("--html", args.html)])
