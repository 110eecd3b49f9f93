"""Section 1: exact line profiler overhead, lprof -l vs kernprof -l."""
import os

import lprof_tool
import peers
from common import (SCRATCH, Failed, alternate, fmt, median, paired_ratios, run_timed,
                    workload)

# (title, workload, args, added-time target: lprof added <= factor * kernprof added,
#  rounds at least: where both tools add ~10%, their ratio needs many rounds)
CASES = [
    ("cheap-lines loop (worst case)", "lp_cheap", ["2500000"], 1 / 3, 9),
    ("parser + dicts, many calls", "lp_funcs", ["4000", "8"], 1.0, 9),
    ("numpy-heavy", "lp_numpy", ["20000", "1500"], 1.0, 21),
]
# kernprof, plain, lprof, then backwards: plain always runs next to both tools
ORDER = ["kernprof", "plain", "lprof"]


def run(repeats, log):
    rows, targets = [], []
    for title, name, args, factor, min_rounds in CASES:
        script = workload(name)
        out = os.path.join(SCRATCH, name + ".prof")

        def one(tool, r):
            if tool == "plain":
                wall = run_timed([peers.VPY, script] + args)[0]
            elif tool == "kernprof":
                wall = run_timed(peers.kernprof_cmd(script, args, out + ".kp"))[0]
            else:
                path = out + ".lprof"
                if os.path.exists(path):
                    os.remove(path)
                wall = lprof_tool.run(lprof_tool.line_cmd(script, args, path))[0]
                if not os.path.exists(path):
                    raise Failed("not built: no profile file written")
            return wall

        res = alternate(ORDER, max(repeats, min_rounds), one, serpentine=True)
        log(f"  line/{name}: " + ", ".join(
            f"{t}={fmt(median(v['runs']), '.3f')}s" + (f" ({v['error']})" if v["error"] else "")
            for t, v in res.items()))
        plain = median(res["plain"]["runs"])
        # the median over rounds of (tool run / plain run of the same round):
        # the machine's speed drifts, neighbouring runs share it
        kp_ratio, lp_ratio = (
            median(paired_ratios(zip(res[t]["runs"], res["plain"]["runs"])))
            for t in ("kernprof", "lprof"))
        rel = None
        if kp_ratio and lp_ratio and kp_ratio > 1:
            rel = (lp_ratio - 1) / (kp_ratio - 1)
        met = None if rel is None else rel <= factor
        goal = "<= 1/3" if factor < 1 else "<= 1"
        rows.append([title, fmt(plain, ".3f"),
                     fmt(kp_ratio, ".2f") + "x" if kp_ratio else "n/a (" + str(res["kernprof"]["error"]) + ")",
                     fmt(lp_ratio, ".2f") + "x" if lp_ratio else "n/a (" + str(res["lprof"]["error"]) + ")",
                     fmt(rel, ".3f") + f" (target {goal})" if rel is not None else f"n/a (target {goal})",
                     {True: "yes", False: "**no**", None: "n/a"}[met]])
        targets.append((f"line profiler, {title}: lprof added / kernprof added {goal}", met,
                        fmt(rel, ".3f")))
    header = ["workload", "plain s", "kernprof ratio", "lprof ratio",
              "lprof added / kernprof added", "target met"]
    return header, rows, targets
