"""`lprof merge FILE... -o OUT`: one profile from many (one per rank or
process). Files are read one at a time and folded into the running total
(lprof.model.merge), so memory follows the distinct lines and stacks, not
the number of files."""

import glob
import os
import sys

from ..common.errors import LprofError
from ..model import profile_file
from ..model.merge import MergeError, Merger
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof merge",
        allow_abbrev=False,
        description="Merge profiles (one per rank or process) into "
        "one: sums add, peaks take the maximum, and a "
        "per-line imbalance view (lprof view OUT --ranks).",
    )
    p.add_argument("files", nargs="+", help="profile files (glob patterns are expanded)")
    p.add_argument(
        "-o", "--output", default="merged.lprof", help="merged profile to write (default merged.lprof)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no message on stderr")
    return p


def _inputs(patterns):
    """The files named, with glob patterns expanded (for shells that pass
    them through, and for more files than a command line holds)."""
    out = []
    for p in patterns:
        if any(c in p for c in "*?[") and not os.path.exists(p):
            found = sorted(glob.glob(p))
            if not found:
                raise LprofError(f"{p}: no file matches", 2)
            out.extend(found)
        else:
            out.append(p)
    return out


def main(args):
    paths = _inputs(args.files)
    out = args.output
    from . import output_paths as outputs

    outputs.check([("-o", out)])
    merger = Merger()
    for path in paths:
        prof = profile_file.load(path)  # ProfileFileError: one line, exit 2
        try:
            merger.add(prof, path)
        except MergeError as exc:
            raise LprofError(str(exc), 2) from None
        del prof
    merged = merger.result()
    try:
        profile_file.save(merged, out)
    except OSError as exc:
        raise LprofError(f"could not write {out}: {exc.strerror or exc}", 2) from None
    if not args.quiet:
        sys.stderr.write(
            f"lprof: merged {merger.count} profiles into {out} (per-line "
            f"imbalance: lprof view {out} --ranks)\n"
        )
    return 0
