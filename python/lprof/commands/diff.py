"""`lprof diff BEFORE AFTER`: lines and functions that got slower or heavier."""

import sys

from ..common.errors import LprofError
from ..model import profile_file
from ..common.files import write_text
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof diff",
        allow_abbrev=False,
        description="Compare two profiles: the lines and functions of "
        "your code whose time or memory changed most.",
    )
    p.add_argument("before", help="the earlier profile")
    p.add_argument("after", help="the later profile")
    p.add_argument(
        "--metric",
        default=None,
        metavar="COLUMN",
        help="column to sort by: cpu_s (CPU total), wall_s, time_s (-l), "
        "alloc_bytes, peak_bytes, ... (default: cpu_s, else wall_s, else "
        "time_s, else alloc_bytes)",
    )
    p.add_argument(
        "-n", "--top", type=int, default=20, metavar="N", help="lines and functions listed (default 20)"
    )
    p.add_argument("--html", metavar="PATH", help="also write the comparison as an HTML page")
    p.add_argument(
        "--flamegraph",
        metavar="PATH",
        help="also write AFTER's flame graph as an SVG, each frame coloured by its "
        "change against BEFORE (red grew, blue shrank)",
    )
    p.add_argument("--full-imports", action="store_true", help="--flamegraph: show importlib's frames whole")
    return p


def main(args):
    from ..model.compare import compare
    from ..render import diff_report

    before = profile_file.load(args.before)
    after = profile_file.load(args.after)
    try:
        result = compare(before, after, metric=args.metric)
    except ValueError as exc:
        raise LprofError(str(exc), 2) from None
    if args.html:
        text = diff_report.render_html(result, args.before, args.after, top=max(args.top, 100))
        try:
            write_text(args.html, text)
        except OSError as exc:
            raise LprofError(f"cannot write {args.html}: {exc.strerror}", 2) from None
        sys.stderr.write(f"lprof: wrote {args.html}\n")
    if args.flamegraph:
        _flamegraph(args, before, after, result["metric"])
    sys.stdout.write(diff_report.render_text(result, args.before, args.after, top=args.top))
    return 0


def _flamegraph(args, before, after, column):
    """The diff flame graph of the stack metric holding the diff's column
    (the profile's own time metric where no stacks hold it: -l times)."""
    from ..export import diff_svg
    from .export import _stack_metric

    metric = diff_svg.STACK_METRIC.get(column) or _stack_metric(after)
    try:
        diff_svg.write(
            before,
            after,
            args.flamegraph,
            metric,
            fold_imports=not args.full_imports,
            names=(args.before, args.after),
        )
    except ValueError as exc:
        raise LprofError(f"--flamegraph: {exc}", 2) from None
    except OSError as exc:
        raise LprofError(f"cannot write {args.flamegraph}: {exc.strerror}", 2) from None
    sys.stderr.write(f"lprof: wrote {args.flamegraph}\n")
