"""Overhead on the interpreter that runs this script (make bench runs it on
CPython 3.14 and 3.15 inside the Debian unstable chroot, tools/sid_matrix.py):
`lprof -l` beside `kernprof -l` on the cheap-lines loop, and lprof's sampling
beside the standard library's `profiling.sampling` (3.15+) on the mixed
simulation. Ratios are medians over serpentine rounds of (tool run / plain
run of the same round), as in the other sections. Where profiling.sampling
exists, also the accuracy of both in CPU mode on section 2's workloads
(issue #35): each hot line's share against the share the workload measured
itself, worst line, median over rounds.

usage: python bench/version_bench.py [--rounds 9] --json OUT"""

import argparse
import importlib.util
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ROOT, SCRATCH, Failed, alternate, marker_lines, median, paired_ratios, run_timed, workload

LPROF_ENV = {"PYTHONPATH": os.path.join(ROOT, "python")}
LINE = ("lp_cheap", ["2500000"])
SAMPLING = ("mixed", ["2000", "2000"])


# section 2's CPU workloads (bench/sampling_bench.py ACCURACY) that need no
# package the chroot's interpreters lack
ACCURACY = [
    ("s_shares", ["40", "400000"]),
    ("s_threads", ["40", "400000"]),
    ("s_recursion", ["40", "400000"]),
    ("s_generator", ["40", "400000"]),
]


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


def _read_json(path, what):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as e:
        raise Failed(f"{what} unreadable: {e}")


def _lprof_lines(script, args, base, env):
    """lprof at its defaults (CPU mode): {line: CPU seconds} of script."""
    prof = base + ".lprof"
    run_timed(
        [sys.executable, "-m", "lprof", "-q", "-o", prof, script] + args, env_extra={**LPROF_ENV, **env}
    )
    run_timed(
        [sys.executable, "-m", "lprof", "export", prof, "--format", "json", "-o", prof + ".json"],
        env_extra=LPROF_ENV,
    )
    import lprof_tool

    lines = lprof_tool.sampling_lines(_read_json(prof + ".json", "lprof's export"), script)
    return {no: v["cpu"] for no, v in lines.items()}


def _tachyon_lines(script, args, base, env):
    """profiling.sampling in CPU mode over every thread (its defaults are wall
    time and the main thread alone): {line: samples} of the innermost frame
    in script, from its collapsed stacks (`file:function:line` frames)."""
    out = base + ".collapsed"
    run_timed(
        [
            sys.executable,
            "-m",
            "profiling.sampling",
            "run",
            "-a",
            "--mode",
            "cpu",
            "--collapsed",
            "-o",
            out,
            script,
        ]
        + args,
        env_extra=env,
    )
    lines = {}
    try:
        with open(out) as fh:
            for text in fh:
                stack, _, count = text.rstrip("\n").rpartition(" ")
                leaf = stack.rsplit(";", 1)[-1]
                path, _, rest = leaf.rpartition(":")
                path, _, _func = path.rpartition(":")
                # 3.15.2 names a file by its base name alone
                same = (
                    path == os.path.basename(script)
                    if os.sep not in path
                    else os.path.realpath(path) == os.path.realpath(script)
                )
                if same and rest.isdigit() and count.isdigit():
                    lines[int(rest)] = lines.get(int(rest), 0) + int(count)
    except OSError as e:
        raise Failed(f"no collapsed stacks: {e}")
    return lines


def accuracy(tools, rounds):
    """Worst hot-line error (points) of each tool on ACCURACY, median over
    serpentine rounds."""
    from sampling_bench import truth_shares

    rows = []
    for name, args in ACCURACY:
        script = workload(name)
        marks = marker_lines(script)
        base = os.path.join(SCRATCH, f"v{sys.version_info[0]}{sys.version_info[1]}-acc-{name}")

        def one(tool, r, script=script, args=args, base=base, marks=marks):
            run_base = f"{base}.{tool}.{r}"
            env = {"BENCH_TRUTH": run_base + ".truth.json"}
            lines = (_lprof_lines if tool == "lprof" else _tachyon_lines)(script, args, run_base, env)
            total = sum(lines.values())
            if total <= 0:
                raise Failed("no samples in the workload file")
            known = truth_shares(_read_json(env["BENCH_TRUTH"], "the workload's truth"), "cpu")
            return max(abs(lines.get(no, 0) / total - known[label]) * 100 for label, no in marks.items())

        res = alternate(tools, rounds, one, serpentine=True)
        for tool in tools:
            errs = res[tool]["runs"]
            rows.append(
                {
                    "kind": "accuracy",
                    "workload": name,
                    "tool": tool,
                    "worst_error": median(errs) if errs else None,
                    "lo": min(errs) if errs else None,
                    "hi": max(errs) if errs else None,
                    "rounds": len(errs),
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
    if has_module("profiling.sampling"):
        rows += accuracy(["lprof", "profiling.sampling"], max(3, a.rounds // 3))
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
        value = r["worst_error"] if r.get("kind") == "accuracy" else r["ratio"]
        print(f"{result['python']} {r['workload']} {r['tool']}: {value} ({r['error'] or 'ok'})", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Failed as exc:
        sys.exit(f"version_bench: {exc}")
