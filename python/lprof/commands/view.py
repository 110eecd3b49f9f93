"""`lprof view FILE`: print a saved profile again."""

import sys

from .. import __version__
from ..model import profile_file
from .options import add_sampled_listing_options
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof view",
        allow_abbrev=False,
        description="Print a saved profile again: an lprof file, or a "
        "line_profiler (kernprof -l) .lprof file.",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="file",
        help="the profile file; several are added up into one (as "
        "`python -m line_profiler` adds them, or `lprof merge`)",
    )
    p.add_argument("-V", "--version", action="version", version=f"lprof {__version__}")
    p.add_argument(
        "-c",
        "--config",
        metavar="TOML",
        help="defaults from this file's [tool.line_profiler.cli] table, as "
        "`python -m line_profiler` reads it (default: $LINE_PROFILER_RC, "
        "else the nearest line_profiler.toml or pyproject.toml)",
    )
    p.add_argument("--no-config", action="store_true", help="read no config file")
    p.add_argument(
        "-u",
        "--unit",
        type=float,
        default=None,
        help="output unit of the -l time columns in seconds (default 1e-6)",
    )
    p.add_argument(
        "-z", "--skip-zero", action="store_true", help="hide functions that never ran (-l listings)"
    )
    p.add_argument(
        "-m", "--summarize", action="store_true", help="add a one-line-per-function summary (-l listings)"
    )
    p.add_argument(
        "--sort",
        choices=["time", "file"],
        default="time",
        help="order of the -l functions: most time first (default) or by file",
    )
    p.add_argument(
        "-t",
        dest="sort",
        action="store_const",
        const="time",
        help="most time first (line_profiler's -t; lprof's default)",
    )
    p.add_argument(
        "-r", "--rich", action="store_true", help="accepted for line_profiler; lprof prints plain text"
    )
    add_sampled_listing_options(p.add_argument_group("sampled listing"))
    g = p.add_argument_group("merged profiles (lprof merge, children followed)")
    g.add_argument(
        "--ranks",
        action="store_true",
        help="per-line imbalance across ranks or processes: mean, max, max/mean and the rank holding the max",
    )
    g.add_argument(
        "--ranks-metric",
        metavar="NAME",
        help="column of the --ranks view (default cpu_s, wall_s in wall mode, "
        "line_time_s for -l profiles); any column the profile holds",
    )
    g.add_argument(
        "--ranks-lines", type=int, default=20, metavar="N", help="lines shown by --ranks (default 20)"
    )
    return p


def render(prof, args):
    parts = []
    if prof.get("functions") or "lines" in prof["meta"].get("modes", []):
        from ..render.listing import render_lines

        parts.append(
            render_lines(
                prof,
                unit=args.unit,
                skip_zero=args.skip_zero,
                sort=args.sort,
                summarize=args.summarize,
                widths=getattr(args, "column_widths", None),
            )
        )
    if "sampling" in prof:
        from ..render.sampled_listing import render as render_sampled

        parts.append(
            render_sampled(
                prof,
                reduced=args.reduced,
                profile_only=args.profile_only or None,
                profile_all=args.profile_all,
                threshold_pct=args.threshold,
                per_thread=args.per_thread,
            )
        )
    if not parts:
        parts.append("The profile holds no data.\n")
    return "\n".join(parts)


def _load(paths):
    """One profile, or several added up (lprof.model.merge)."""
    if len(paths) == 1:
        return profile_file.load(paths[0])
    from ..common.errors import LprofError
    from ..model.merge import MergeError, Merger

    merger = Merger()
    for path in paths:
        try:
            merger.add(profile_file.load(path), path)
        except MergeError as exc:
            raise LprofError(str(exc), 2) from None
    return merger.result()


def parse(argv):
    """The parsed arguments, with [tool.line_profiler.cli]'s defaults."""
    from . import config

    p = parser()
    early = parsers.parser(add_help=False, allow_abbrev=False)
    early.add_argument("-c", "--config")
    early.add_argument("--no-config", action="store_true")
    known, _ = early.parse_known_args(argv)
    path, explicit = config.config_path(known.config, known.no_config)
    p.set_defaults(**config.viewer_defaults(path, explicit))
    args = p.parse_args(argv)
    args.column_widths = config.column_widths(path, explicit)
    return args


def main(args):
    prof = _load(args.files)
    if args.ranks:
        from ..common.errors import LprofError
        from ..render import ranks

        if args.ranks_metric and args.ranks_metric not in ranks.metric_names(prof):
            names = ", ".join(ranks.metric_names(prof)) or "none"
            raise LprofError(
                f"--ranks-metric {args.ranks_metric}: the profile has no such column (it has: {names})", 2
            )
        sys.stdout.write(ranks.render(prof, metric=args.ranks_metric, limit=max(1, args.ranks_lines)))
        return 0
    sys.stdout.write(render(prof, args))
    return 0
