"""Section 1: exact line profiler overhead, lprof -l vs kernprof -l."""

import os
import re

import lprof_tool
import peers
from common import SCRATCH, Failed, alternate, fmt, median, paired_ratios, run_timed, workload

# (title, workload, args, added-time target: lprof added <= factor * kernprof added,
#  rounds at least: where both tools add ~10%, their ratio needs many rounds,
#  a function whose reported time is set beside its own time in the plain run:
#  the workload prints "<name>: <seconds> s" on stderr, or None)
CASES = [
    ("cheap-lines loop (worst case)", "lp_cheap", ["2500000"], 1 / 3, 9, "cheap"),
    ("parser + dicts, many calls", "lp_funcs", ["4000", "8"], 1.0, 9, None),
    ("numpy-heavy", "lp_numpy", ["20000", "1500"], 1.0, 21, None),
]
# kernprof, plain, lprof, then backwards: plain always runs next to both tools
ORDER = ["kernprof", "plain", "lprof"]


def _own_time(stderr, func):
    """The "<func>: <seconds> s" line a workload prints on stderr."""
    m = re.search(r"^%s: ([0-9.]+) s$" % re.escape(func), stderr or "", re.M)
    return float(m.group(1)) if m else None


def _reported_time(path, func):
    """The Total time the listing of a .lprof file (lprof's or kernprof's)
    gives for the function named func (lprof view reads both)."""
    try:
        text = lprof_tool.run([peers.VPY, "-m", "lprof", "view", path]).stdout
    except Failed:
        return None
    for block in text.split("Total time: ")[1:]:
        m = re.match(r"([0-9.e+-]+) s\n.*?\nFunction: (\S+) at line", block, re.S)
        if m and m.group(2) == func:
            return float(m.group(1))
    return None


def run(repeats, log):
    rows, targets, reported = [], [], []
    for title, name, args, factor, min_rounds, func in CASES:
        script = workload(name)
        out = os.path.join(SCRATCH, name + ".prof")
        times = {"plain": [], "kernprof": [], "lprof": []}

        def one(tool, r):
            if tool == "plain":
                plain = run_timed([peers.VPY, script] + args)
                if func:
                    times["plain"].append(_own_time(plain.stderr, func))
                return plain.wall
            if tool == "kernprof":
                path = out + ".kp"
                wall = run_timed(peers.kernprof_cmd(script, args, path))[0]
            else:
                path = out + ".lprof"
                if os.path.exists(path):
                    os.remove(path)
                wall = lprof_tool.run(lprof_tool.line_cmd(script, args, path))[0]
                if not os.path.exists(path):
                    raise Failed("not built: no profile file written")
            if func:  # read after the timed run
                times[tool].append(_reported_time(path, func))
            return wall

        res = alternate(ORDER, max(repeats, min_rounds), one, serpentine=True)
        if func:
            own = median([x for x in times["plain"] if x])
            cells = [title + f" (`{func}`)", fmt(own, ".3f")]
            for tool in ("kernprof", "lprof"):
                rep = median([x for x in times[tool] if x])
                cells.append(f"{fmt(rep, '.3f')} ({fmt(rep / own, '.2f')}x)" if rep and own else "n/a")
            reported.append(cells)
        log(
            f"  line/{name}: "
            + ", ".join(
                f"{t}={fmt(median(v['runs']), '.3f')}s" + (f" ({v['error']})" if v["error"] else "")
                for t, v in res.items()
            )
        )
        plain = median(res["plain"]["runs"])
        # the median over rounds of (tool run / plain run of the same round):
        # the machine's speed drifts, neighbouring runs share it
        kp_ratio, lp_ratio = (
            median(paired_ratios(zip(res[t]["runs"], res["plain"]["runs"]))) for t in ("kernprof", "lprof")
        )
        rel = None
        if kp_ratio and lp_ratio and kp_ratio > 1:
            rel = (lp_ratio - 1) / (kp_ratio - 1)
        met = None if rel is None else rel <= factor
        goal = "<= 1/3" if factor < 1 else "<= 1"
        rows.append(
            [
                title,
                fmt(plain, ".3f"),
                fmt(kp_ratio, ".2f") + "x" if kp_ratio else "n/a (" + str(res["kernprof"]["error"]) + ")",
                fmt(lp_ratio, ".2f") + "x" if lp_ratio else "n/a (" + str(res["lprof"]["error"]) + ")",
                fmt(rel, ".3f") + f" (target {goal})" if rel is not None else f"n/a (target {goal})",
                {True: "yes", False: "**no**", None: "n/a"}[met],
            ]
        )
        targets.append((f"line profiler, {title}: lprof added / kernprof added {goal}", met, fmt(rel, ".3f")))
    header = [
        "workload",
        "plain s",
        "kernprof ratio",
        "lprof ratio",
        "lprof added / kernprof added",
        "target met",
    ]
    reported_header = [
        "workload (function)",
        "its own time, plain run s",
        "kernprof's listing says s",
        "lprof's listing says s",
    ]
    return header, rows, targets, (reported_header, reported)
