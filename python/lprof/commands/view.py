"""`lprof view FILE`: print a saved profile again."""
import sys

from ..model import profile_file


def render(prof, args):
    parts = []
    if prof.get("functions") or "lines" in prof["meta"].get("modes", []):
        from ..render.listing import render_lines
        parts.append(render_lines(prof, unit=args.unit, skip_zero=args.skip_zero,
                                  sort=args.sort, summarize=args.summarize))
    if "sampling" in prof:
        from ..collect import sampling
        parts.append(sampling.render_listing(
            prof, reduced=args.reduced, profile_only=args.profile_only or None,
            profile_all=args.profile_all, threshold_pct=args.threshold,
            per_thread=args.per_thread))
    if not parts:
        parts.append("The profile holds no data.\n")
    return "\n".join(parts)


def main(args):
    prof = profile_file.load(args.file)
    if args.ranks:
        from ..errors import LprofError
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
