"""Section 1: exact line profiler overhead, lprof -l vs kernprof -l."""
import os

import lprof_tool
import peers
from common import SCRATCH, Failed, alternate, fmt, median, run_timed, workload

# (title, workload, args, added-time target: lprof added <= factor * kernprof added)
CASES = [
    ("cheap-lines loop (worst case)", "lp_cheap", ["2500000"], 1 / 3),
    ("parser + dicts, many calls", "lp_funcs", ["4000", "8"], 1.0),
    ("numpy-heavy", "lp_numpy", ["20000", "1500"], 1.0),
]


def run(repeats, log):
    rows, targets = [], []
    for title, name, args, factor in CASES:
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

        res = alternate(["plain", "kernprof", "lprof"], repeats, one)
        log(f"  line/{name}: " + ", ".join(
            f"{t}={fmt(median(v['runs']), '.3f')}s" + (f" ({v['error']})" if v["error"] else "")
            for t, v in res.items()))
        plain = median(res["plain"]["runs"])
        kp = median(res["kernprof"]["runs"])
        lp = median(res["lprof"]["runs"])
        kp_ratio = kp / plain if kp and plain else None
        lp_ratio = lp / plain if lp and plain else None
        rel = None
        if kp and lp and plain and kp > plain:
            rel = (lp - plain) / (kp - plain)
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
