"""`lprof export FILE --format F`: JSON, folded stacks, speedscope, SVG, HTML."""
import os
import sys

from ..model import profile_file
from ..errors import LprofError
from ..export_json import write_json

# formats read from the row form of the stacks (the others fold the columns in C)
ROW_FORMATS = ("json", "html", "chrome", "pstats")
EXTENSIONS = {"json": ".json", "folded": ".folded", "speedscope": ".speedscope.json",
              "svg": ".svg", "html": ".html",
              "chrome": ".trace.json", "pstats": ".pstats"}


def default_output(path, fmt):
    base = path[:-len(".lprof")] if path.endswith(".lprof") else path
    return base + EXTENSIONS[fmt]


def main(args):
    # stack exports read the columnar stacks section as stored (no rows built)
    prof = profile_file.load(args.file, rows=args.format in ROW_FORMATS)
    out = args.output or default_output(args.file, args.format)
    if args.format in ROW_FORMATS and args.format != "json":
        if out == "-":
            raise LprofError(f"--format {args.format} needs an output file (-o PATH)", 2)
        _write_report(prof, args, out)
    elif args.format == "json":
        if out == "-":
            write_json(prof, sys.stdout)
        else:
            _write_text(out, lambda fh: write_json(prof, fh))
    else:
        from .. import stacks
        metric = args.metric or _stack_metric(prof)
        if out == "-" and args.format != "folded":
            raise LprofError(f"--format {args.format} needs an output file (-o PATH)", 2)
        try:
            stacks.export(prof, args.format, metric, "/dev/stdout" if out == "-" else out,
                          fold_imports=not args.full_imports)
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


def _write_report(prof, args, out):
    """The formats built from the whole profile (not one stack metric)."""
    try:
        if args.format == "html":
            from ..render import html_report
            html_report.write(prof, out, fold_imports=not args.full_imports)
        else:
            from .. import export_chrome, export_pstats
            module = export_chrome if args.format == "chrome" else export_pstats
            module.write(prof, out, metric=args.metric or _time_metric(prof))
    except ValueError as exc:
        raise LprofError(str(exc), 2) from None
    except OSError as exc:
        raise LprofError(f"cannot write {out}: {exc.strerror}", 2) from None


def _write_text(path, write):
    """Writes through write(file): to a device or pipe as it is, to a
    regular file by a temporary name renamed over it."""
    if os.path.exists(path) and not os.path.isfile(path):
        # a device or pipe (/dev/stdout, a FIFO): write to it; renaming a
        # temporary file over it would replace the device itself
        try:
            with open(path, "w", encoding="utf-8") as f:
                write(f)
        except OSError as exc:
            raise LprofError(f"cannot write {path}: {exc.strerror}", 2) from None
        return
    try:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, path)
    except OSError as exc:
        raise LprofError(f"cannot write {path}: {exc.strerror}", 2) from None
