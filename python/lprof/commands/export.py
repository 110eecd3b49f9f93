"""`lprof export FILE --format F`: JSON, folded stacks, speedscope, SVG, HTML,
Chrome trace, pstats, Firefox Profiler (gecko). The format comes from lprof.export's one registry."""

import sys

from .. import export as exports
from ..common.errors import LprofError
from ..model import profile_file, task_stacks
from .options import STACK_METRICS
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof export", allow_abbrev=False, description="Convert a saved profile to another format."
    )
    p.add_argument("file")
    p.add_argument("--format", "-f", required=True, choices=list(exports.FORMATS))
    p.add_argument(
        "--metric",
        default=None,
        choices=STACK_METRICS,
        help="stack metric for folded/speedscope/svg/chrome/pstats/gecko (default cpu, "
        "or wall for wall-mode profiles; chrome, pstats, gecko: cpu or wall)",
    )
    p.add_argument(
        "--full-imports",
        action="store_true",
        help="svg/html: show importlib's frames whole (by default each import is one 'import module' frame)",
    )
    p.add_argument(
        "--thread-stacks",
        action="store_true",
        help="folded/speedscope/svg/html: stacks per thread, from the event loop down, for a profile "
        "of an asyncio program (by default: per task)",
    )
    p.add_argument("-o", "--output", help="output file ('-' for stdout; default next to FILE)")
    return p


def default_output(path, fmt):
    base = path[: -len(".lprof")] if path.endswith(".lprof") else path
    return base + exports.FORMATS[fmt].extension


def main(args):
    spec = exports.FORMATS[args.format]
    # stack exports read the columnar stacks section as stored (no rows built)
    prof = profile_file.load(args.file, rows=spec.rows)
    if args.thread_stacks:
        prof = task_stacks.thread_view(prof)
    out = args.output or default_output(args.file, args.format)
    if out == "-" and args.format == "json":
        from ..export.json_doc import write_json

        write_json(prof, sys.stdout)
        return 0
    if out == "-" and args.format != "folded":
        raise LprofError(f"--format {args.format} needs an output file (-o PATH)", 2)
    options = {}
    if spec.metric == "stack":
        options["metric"] = args.metric or _stack_metric(prof)
    elif spec.metric == "time":
        options["metric"] = args.metric or _time_metric(prof)
    if args.format in ("svg", "html"):
        options["fold_imports"] = not args.full_imports
    try:
        exports.write(prof, args.format, "/dev/stdout" if out == "-" else out, **options)
    except ValueError as exc:
        raise LprofError(str(exc), 2) from None
    except OSError as exc:
        raise LprofError(f"cannot write {out}: {exc.strerror}", 2) from None
    if out != "-":
        sys.stderr.write(f"lprof: wrote {out}\n")
    return 0


def _time_metric(prof):
    return "wall" if (prof.get("sampling") or {}).get("mode") == "wall" else "cpu"


def _stack_metric(prof):
    """Folded, speedscope, SVG: GPU time for a profile of GPU stacks alone."""
    return "gpu" if "gpu" in prof and "sampling" not in prof else _time_metric(prof)
