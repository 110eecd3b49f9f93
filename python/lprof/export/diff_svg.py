"""The diff flame graph of `lprof diff A B --flamegraph PATH`: B's flame
graph (widths are B's values, laid out by the same C fold and drawn by the
same SVG writer as every flame graph), each frame coloured by its change
against A: red where it grew, blue where it shrank, the colour's strength
its change as a share of the larger of the two profiles' totals (full at
FULL_SHARE or more), near white where it did not change. A frame is the
same frame in both where its path from the root is (the frames' labels:
function, file and line; a thread's root by its name, not its id, which
differs between runs). Frames only in B are classed "new" (and drawn
outlined); frames only in A have no width in B: their parent's title says
how many there were and how much they held."""

import bisect
import re

from ..model.stacks import CPU_COLUMNS
from . import stack_rows, svg

FULL_SHARE = 0.10
SAME = (232, 232, 232)
GREW = (214, 39, 40)
SHRANK = (31, 90, 200)
_THREAD_ID = re.compile(r" \(\d+\)$")

# a diff column -> the stack metric holding it
STACK_METRIC = {
    "cpu_s": "cpu",
    **{c: "cpu" for c in CPU_COLUMNS},
    "samples": "cpu",
    "wall_s": "wall",
    "wait_s": "wait",
    "alloc_bytes": "alloc",
    "peak_bytes": "peak",
    "live_bytes": "leak",
    "gpu_kernel_s": "gpu",
    "gpu_copy_s": "gpu",
    "gpu_alloc_bytes": "gpu-mem",
    "gpu_peak_bytes": "gpu-peak",
}


def _folded(profile, metric, min_fraction, fold_imports):
    profile = stack_rows.for_metric(profile, metric)
    st = profile.get("stacks") or {}
    if fold_imports:
        st = stack_rows.fold_imports(st)
    st = stack_rows.thread_roots(profile, st)
    names, (_lines, total, rects) = stack_rows.fold(st, metric, None, min_fraction)
    return names, total, rects


def _key(name):
    """A frame's identity across profiles (a thread root without its id)."""
    return _THREAD_ID.sub("", name) if name.startswith("thread ") else name


def paths(names, rects):
    """Per rect: the keys of its frames from the root, as a tuple, and the
    index of its parent rect (-1 for a root). A rect's parent is the one a
    level up whose span holds its start."""
    by_depth = {}
    for i, (d, _n, x, _w) in enumerate(rects):
        by_depth.setdefault(d, []).append((x, i))
    for level in by_depth.values():
        level.sort()
    out = [None] * len(rects)
    parent = [-1] * len(rects)
    for d in sorted(by_depth):
        ups = by_depth.get(d - 1, [])
        starts = [x for x, _i in ups]
        for x, i in by_depth[d]:
            key = _key(names[rects[i][1]])
            if d == 0 or not ups:
                out[i] = (key,)
                continue
            j = ups[max(bisect.bisect_right(starts, x) - 1, 0)][1]
            parent[i] = j
            out[i] = out[j] + (key,)
    return out, parent


def _mix(to, t):
    return "rgb(%d,%d,%d)" % tuple(round(s + (e - s) * t) for s, e in zip(SAME, to))


def write(before, after, path, metric="cpu", fold_imports=True, names=("before", "after")):
    """Writes the diff flame graph; returns {"grew", "shrank", "new", "gone"}:
    frame counts (ValueError where `after` has no data for metric)."""
    _cols, unit, _scale = stack_rows.metric_columns(metric)
    try:
        a_names, a_total, a_rects = _folded(before, metric, 0.0, fold_imports)
    except ValueError:
        a_names, a_total, a_rects = [], 0, []  # nothing before: every frame is new
    b_names, b_total, b_rects = _folded(after, metric, svg.MIN_FRACTION, fold_imports)
    a_paths, _ = paths(a_names, a_rects)
    old = {}
    for p, r in zip(a_paths, a_rects):
        old[p] = old.get(p, 0) + r[3]
    b_paths, _parent = paths(b_names, b_rects)
    b_set = set(b_paths)
    whole = max(a_total, b_total) or 1
    # frames only in before, charged to the deepest frame of B on their path
    gone = {}
    for p, r in zip(a_paths, a_rects):
        if p in b_set or p[:-1] not in b_set:
            continue  # still there, or under a frame that is itself gone
        g = gone.setdefault(p[:-1], [0, 0])
        g[0] += 1
        g[1] += r[3]
    counts = {"grew": 0, "shrank": 0, "same": 0, "new": 0, "gone": sum(g[0] for g in gone.values())}
    decor = []
    for p, r in zip(b_paths, b_rects):
        w = r[3]
        was = old.get(p)
        delta = w - (was or 0)
        share = delta / whole
        t = min(1.0, abs(share) / FULL_SHARE)
        if delta > 0:
            fill, cls = _mix(GREW, t), "grew"
        elif delta < 0:
            fill, cls = _mix(SHRANK, t), "shrank"
        else:
            fill, cls = _mix(SAME, 0), "same"
        counts[cls] += 1
        if was is None:
            cls += " new"
            counts["new"] += 1
            note = f"; new: not in {names[0]}"
        else:
            note = f"; {names[0]}: {was} {unit}"
        note += f"; change {delta:+d} {unit}, {100.0 * share:+.2f}% of the whole"
        if p in gone:
            n, held = gone[p]
            note += f"; {n} frame{'s' if n > 1 else ''} below only in {names[0]} ({held} {unit})"
        decor.append((fill, cls, note))
    legend = (
        f"colour: change against {names[0]} (red grew, blue shrank, full at "
        f"{100 * FULL_SHARE:g}% of the whole; outlined: new); widths: {names[1]}"
    )
    svg.write_svg(
        b_names,
        b_rects,
        b_total,
        path,
        title=f"lprof diff {metric}: {names[1]} against {names[0]}",
        unit=unit,
        decorate=lambda i: decor[i],
        legend=legend,
        extra_style=".f.new rect{stroke:#000;stroke-dasharray:3 2;stroke-width:0.8}",
    )
    return counts
