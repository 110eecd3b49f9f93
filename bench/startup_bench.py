"""Section 8: what each profiler adds to a program's start and end, on a
script that does nothing (a short script, a test run, every child process a
profiler follows pays it)."""

import os

import lprof_tool
import peers
from common import SCRATCH, Failed, alternate, median, run_timed

ROUNDS = 15
TOOLS = [
    "plain",
    "lprof",
    "lprof -l",
    "lprof --memory",
    "kernprof -l",
    "pyinstrument",
    "py-spy record",
    "memray run",
    "scalene run --cpu-only",
]


def _empty_script():
    path = os.path.join(SCRATCH, "startup_empty.py")
    with open(path, "w") as f:
        f.write("pass\n")
    return path


def command(tool, script, out):
    """The command line of one tool profiling script, writing to out*."""
    if tool == "plain":
        return [peers.VPY, script]
    if tool == "lprof":
        return lprof_tool.sample_cmd(script, [], out + ".lprof")
    if tool == "lprof -l":
        return lprof_tool.line_cmd(script, [], out + ".lprof")
    if tool == "lprof --memory":
        return lprof_tool.sample_cmd(script, [], out + ".lprof", memory=True)
    if tool == "kernprof -l":
        return peers.kernprof_cmd(script, [], out + ".kernprof.lprof")
    if tool == "pyinstrument":
        return [peers.vbin("pyinstrument"), "-o", out + ".pyinstrument.txt", script]
    if tool == "py-spy record":
        return peers.pyspy_cmd(script, [], out + ".pyspy.txt")
    if tool == "memray run":
        return peers.memray_cmd(script, [], out + ".memray.bin")
    if tool == "scalene run --cpu-only":
        return peers.scalene_cmd(script, [], out + ".scalene.json")
    raise ValueError(tool)


def added_ms(pairs):
    """Median over rounds of (tool wall - plain wall of the same round), ms."""
    return median([(x - p) * 1000 for x, p in pairs])


def run(rounds, log):
    script = _empty_script()

    def one(tool, r):
        argv = command(tool, script, os.path.join(SCRATCH, f"startup.{r}"))
        env = lprof_tool.ENV if tool.startswith("lprof") else None
        try:
            return run_timed(argv, env_extra=env, timeout=120).wall
        except Failed as e:
            raise Failed(lprof_tool.not_built(str(e)) if tool.startswith("lprof") else str(e))

    res = alternate(TOOLS, max(rounds, ROUNDS), one, serpentine=True)
    plain = res["plain"]["runs"]
    log("  startup: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in TOOLS))
    rows = []
    for t in TOOLS:
        runs = res[t]["runs"]
        if not runs or not plain:
            rows.append([t, "n/a", f"n/a ({res[t]['error']})", "n/a"])
            continue
        if t == "plain":
            rows.append([t, f"{median(runs) * 1000:.0f}", "-", f"{min(runs) * 1000:.0f}"])
            continue
        # the same round's plain run: serpentine order puts them near each other
        added = added_ms(list(zip(runs, plain)))
        rows.append(
            [t, f"{median(runs) * 1000:.0f}", f"{added:+.0f}", f"{(min(runs) - min(plain)) * 1000:+.0f}"]
        )
    header = [
        "tool",
        "wall ms (median)",
        "added ms: median of rounds (run - plain run)",
        "added ms: fastest run - fastest plain run",
    ]
    return header, rows
