"""Overhead on the interpreter that runs this script (make bench runs it on
CPython 3.14 and 3.15 inside the Debian unstable chroot, tools/sid_matrix.py):
`lprof -l` beside `kernprof -l` on the cheap-lines loop, and lprof's sampling
beside the standard library's `profiling.sampling` (3.15+) on the mixed
simulation. Ratios are medians over serpentine rounds of (tool run / plain
run of the same round), as in the other sections.

usage: python bench/version_bench.py [--rounds 9] --json OUT"""

import argparse
import importlib.util
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ROOT, SCRATCH, Failed, alternate, median, paired_ratios, run_timed, workload

LPROF_ENV = {"PYTHONPATH": os.path.join(ROOT, "python")}
LINE = ("lp_cheap", ["2500000"])
SAMPLING = ("mixed", ["2000", "2000"])


def has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def command(tool, script, args, out):
    py = sys.executable
    if tool == "plain":
        return [py, script] + args, None
    if tool == "kernprof":
        return [py, "-m", "kernprof", "-l", "-o", out + ".kp", script] + args, None
    if tool == "lprof -l":
        return [py, "-m", "lprof", "-l", "-q", "-o", out + ".lprof", script] + args, LPROF_ENV
    if tool == "lprof":
        return [py, "-m", "lprof", "-q", "-o", out + ".sample.lprof", script] + args, LPROF_ENV
    if tool == "profiling.sampling":
        return [
            py,
            "-m",
            "profiling.sampling",
            "run",
            "--collapsed",
            "-o",
            out + ".collapsed",
            script,
        ] + args, None
    raise ValueError(tool)


def measure(case, tools, rounds):
    name, args = case
    script = workload(name)
    out = os.path.join(SCRATCH, f"v{sys.version_info[0]}{sys.version_info[1]}-{name}")

    def one(tool, r):
        argv, env = command(tool, script, args, out)
        return run_timed(argv, env_extra=env).wall

    res = alternate(tools, rounds, one, serpentine=True)
    rows = []
    plain = median(res["plain"]["runs"])
    for tool in tools[1:]:
        ratios = paired_ratios(zip(res[tool]["runs"], res["plain"]["runs"]))
        rows.append(
            {
                "workload": name,
                "tool": tool,
                "plain_s": plain,
                "ratio": median(ratios),
                "lo": min(ratios) if ratios else None,
                "hi": max(ratios) if ratios else None,
                "rounds": len(ratios),
                "error": res[tool]["error"],
            }
        )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    os.makedirs(SCRATCH, exist_ok=True)
    line_tools = ["plain", "kernprof", "lprof -l"] if has_module("kernprof") else ["plain", "lprof -l"]
    sampling_tools = ["plain", "lprof"]
    if has_module("profiling.sampling"):
        sampling_tools.append("profiling.sampling")
    rows = measure(LINE, line_tools, a.rounds) + measure(SAMPLING, sampling_tools, a.rounds)
    kernprof = None
    if has_module("line_profiler"):
        from importlib.metadata import version

        kernprof = version("line_profiler")
    result = {
        "python": platform.python_version(),
        "build": " ".join(platform.python_build()),
        "line_profiler": kernprof,
        "rounds": a.rounds,
        "rows": rows,
    }
    with open(a.json, "w") as fh:
        json.dump(result, fh, indent=1)
    for r in rows:
        print(
            f"{result['python']} {r['workload']} {r['tool']}: {r['ratio']} ({r['error'] or 'ok'})", flush=True
        )


if __name__ == "__main__":
    try:
        main()
    except Failed as exc:
        sys.exit(f"version_bench: {exc}")
