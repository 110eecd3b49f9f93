"""`lprof view FILE`: print a saved profile again."""
import argparse
import sys

from ..model import profile_file
from .options import add_sampled_listing_options


def parser():
    p = argparse.ArgumentParser(prog="lprof view", allow_abbrev=False,
                                description="Print a saved profile again: an lprof file, or a "
                                            "line_profiler (kernprof -l) .lprof file.")
    p.add_argument("file", help="the profile file")
    p.add_argument("-u", "--unit", type=float, default=None,
                   help="output unit of the -l time columns in seconds (default 1e-6)")
    p.add_argument("-z", "--skip-zero", action="store_true",
                   help="hide functions that never ran (-l listings)")
    p.add_argument("--summarize", action="store_true",
                   help="add a one-line-per-function summary (-l listings)")
    p.add_argument("--sort", choices=["time", "file"], default="time",
                   help="order of the -l functions: most time first (default) or by file")
    add_sampled_listing_options(p.add_argument_group("sampled listing"))
    g = p.add_argument_group("merged profiles (lprof merge, children followed)")
    g.add_argument("--ranks", action="store_true",
                   help="per-line imbalance across ranks or processes: mean, max, max/mean "
                        "and the rank holding the max")
    g.add_argument("--ranks-metric", metavar="NAME",
                   help="column of the --ranks view (default cpu_s, wall_s in wall mode, "
                        "line_time_s for -l profiles); any column the profile holds")
    g.add_argument("--ranks-lines", type=int, default=20, metavar="N",
                   help="lines shown by --ranks (default 20)")
    return p


def render(prof, args):
    parts = []
    if prof.get("functions") or "lines" in prof["meta"].get("modes", []):
        from ..render.listing import render_lines
        parts.append(render_lines(prof, unit=args.unit, skip_zero=args.skip_zero,
                                  sort=args.sort, summarize=args.summarize))
    if "sampling" in prof:
        from ..render.sampled_listing import render as render_sampled
        parts.append(render_sampled(
            prof, reduced=args.reduced, profile_only=args.profile_only or None,
            profile_all=args.profile_all, threshold_pct=args.threshold,
            per_thread=args.per_thread))
    if not parts:
        parts.append("The profile holds no data.\n")
    return "\n".join(parts)


def main(args):
    prof = profile_file.load(args.file)
    if args.ranks:
        from ..common.errors import LprofError
        from ..render import ranks
        if args.ranks_metric and args.ranks_metric not in ranks.metric_names(prof):
            names = ", ".join(ranks.metric_names(prof)) or "none"
            raise LprofError(f"--ranks-metric {args.ranks_metric}: the profile has no such "
                             f"column (it has: {names})", 2)
        sys.stdout.write(ranks.render(prof, metric=args.ranks_metric,
                                      limit=max(1, args.ranks_lines)))
        return 0
    sys.stdout.write(render(prof, args))
    return 0
