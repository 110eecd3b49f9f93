"""Section 3: memory profiler accuracy on known allocations, and overhead."""

import json
import os

import lprof_tool
import peers
from common import (
    SCRATCH,
    Failed,
    alternate,
    fmt,
    marker_lines,
    median,
    overhead_rounds,
    paired_ratios,
    run_timed,
    workload,
)

NAME = "m_known"
# Expected per line (MB = 1e6 bytes): total allocated, live at the process peak.
EXPECTED = {"K": (200.0, 200.0), "O": (40.0, 40.0), "L": (26.2144, 26.2144), "C": (1000.0, 50.0)}
TOOLS = ["lprof", "scalene", "memray", "memory_profiler"]
OVERHEAD = [
    ("allocation-heavy", "allocs", ["500", "5000"], 1.3),
    ("CPU-bound", "mixed", ["2000", "2000"], 1.05),
]
OVH_TOOLS = ["plain", "lprof", "scalene", "memray"]
OVERHEAD_MIN_ROUNDS = 9  # rounds of every tool
OVERHEAD_EXTRA_ROUNDS = 12  # then rounds of plain and lprof only: 21 lprof ratios


def _work_seconds(truth_path):
    """The workload's own timing of its work (bench/workloads/_truth.py), or None."""
    try:
        with open(truth_path) as f:
            return json.load(f)["work_wall_s"]
    except (OSError, ValueError, KeyError):
        return None


def profile_once(tool, script, args, base, timeout=300):
    """Returns (wall, {lineno: {...}}, leak lines, peak lines)."""
    env = {"BENCH_TRUTH": base + ".truth.json"}
    if tool == "lprof":
        prof = base + ".lprof"
        if os.path.exists(prof):
            os.remove(prof)
        wall = lprof_tool.run(lprof_tool.sample_cmd(script, args, prof, memory=True), env_extra=env)[0]
        lines, leaks = lprof_tool.memory_lines(lprof_tool.export_json(prof), script)
        peaks = sorted(lines, key=lambda no: -lines[no]["peak_mb"])
    elif tool == "scalene":
        out = base + ".scalene.json"
        if os.path.exists(out):
            os.remove(out)
        wall = peers.run_timed_group(
            peers.scalene_cmd(script, args, out, memory=True), env_extra=env, timeout=timeout
        )[0]
        lines, leaks = peers.scalene_lines(out, script)
        peaks = sorted(lines, key=lambda no: -lines[no]["peak_mb"])
    elif tool == "memray":
        out = base + ".memray.bin"
        wall = run_timed(peers.memray_cmd(script, args, out), env_extra=env)[0]
        raw, leaks, peaks = peers.memray_lines(out, script)
        lines = {
            no: {"alloc_mb": v["alloc_bytes"] / 1e6, "peak_mb": v["peak_bytes"] / 1e6}
            for no, v in raw.items()
        }
    elif tool == "memory_profiler":
        r = run_timed(peers.mprof_cmd(script, args), env_extra=env)
        wall, stdout = r.wall, r.stdout
        lines = peers.mprof_lines(stdout)
        leaks, peaks = [], sorted(lines, key=lambda no: -lines[no]["incr_mb"])
    else:
        wall = run_timed([peers.VPY, script] + args, env_extra=env)[0]
        lines, leaks, peaks = {}, [], []
    return wall, lines, leaks, peaks


def _within(v, exp):
    return v is not None and abs(v - exp) <= 0.10 * exp


def accuracy(repeats, log):
    script = workload(NAME)
    marks = marker_lines(script)

    def one(tool, r):
        _, lines, leaks, peaks = profile_once(tool, script, [], os.path.join(SCRATCH, f"{NAME}.{tool}"))
        if not lines:
            raise Failed("no lines of the workload in the output")
        out = {
            "leak_named": bool(leaks) and leaks[0] == marks["L"],
            "peak_named": bool(peaks) and peaks[0] == marks["K"],
        }
        for label, no in marks.items():
            out[label] = lines.get(no, {})
        return out

    res = alternate(TOOLS, repeats, one)
    log("  memory/accuracy: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in TOOLS))
    rows, targets = [], []
    for label in ["K", "O", "L", "C"]:
        ea, ep = EXPECTED[label]
        row = [f"{label} (line {marks[label]})", f"{ea:.1f} / {ep:.1f}"]
        for t in TOOLS:
            runs = res[t]["runs"]
            if not runs:
                row.append("n/a (" + str(res[t]["error"]) + ")")
                continue
            if t == "memory_profiler":
                inc = median([x[label].get("incr_mb") for x in runs])
                row.append(f"RSS incr {fmt(inc, '.1f')}")
                continue
            a = median([x[label].get("alloc_mb") for x in runs])
            p = median([x[label].get("peak_mb") for x in runs])
            ok = _within(a, ea) and _within(p, ep)
            row.append(f"{fmt(a, '.1f')} / {fmt(p, '.1f')}" + (" ok" if ok else " **off**"))
            if t == "lprof":
                targets.append(
                    (
                        f"memory, line {label}: allocated and peak within 10%",
                        ok,
                        f"{fmt(a, '.1f')} / {fmt(p, '.1f')} MB",
                    )
                )
        rows.append(row)
    for key, what in (
        ("leak_named", "leaking line (L) named first"),
        ("peak_named", "peak line (K) named first"),
    ):
        row = ["", what]
        for t in TOOLS:
            runs = res[t]["runs"]
            if not runs:
                row.append("n/a")
                continue
            if t == "memory_profiler":
                row.append("n/a (no leak or peak report)")
                continue
            n = sum(1 for x in runs if x[key])
            row.append(f"{n}/{len(runs)} runs")
            if t == "lprof":
                targets.append((f"memory: {what}", n == len(runs), f"{n}/{len(runs)}"))
        rows.append(row)
    rows[-2][0] = rows[-1][0] = "naming"
    header = ["line", "expected alloc / peak MB"] + [
        f"{t} alloc / peak MB" if t != "memory_profiler" else "memory_profiler (RSS increment MB)"
        for t in TOOLS
    ]
    return (header, rows), targets


def overhead(repeats, log):
    rows, targets = [], []
    for title, name, args, limit in OVERHEAD:
        script = workload(name)

        def one(tool, r):
            # `scalene run --memory` takes ~20-25 s (allocs) and ~9-12 s (mixed) here;
            # 120 s only bounds a regression (the whole process group is killed)
            base = os.path.join(SCRATCH, f"{name}.mem.{tool}")
            truth = base + ".truth.json"
            if os.path.exists(truth):
                os.remove(truth)
            wall = profile_once(tool, script, args, base, timeout=120)[0]
            return {"wall": wall, "work": _work_seconds(truth)}

        res, pairs = overhead_rounds(OVH_TOOLS, max(repeats, OVERHEAD_MIN_ROUNDS), OVERHEAD_EXTRA_ROUNDS, one)
        log(f"  memory/overhead/{name}: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in OVH_TOOLS))
        plain_runs = [x["wall"] for x in res["plain"]["runs"] if x]
        fastest_plain = min(plain_runs) if plain_runs else None
        ratios = {}
        row = [title, fmt(fastest_plain, ".3f")]
        for t in OVH_TOOLS[1:]:
            # This machine's speed drifts by tens of percent within minutes;
            # a tool's run and the plain run next to it see the same speed,
            # so the estimate is the median of those per-round ratios (the
            # ratio of each tool's fastest run is shown beside it). The
            # in-script ratio (the workload's own timing of its work) leaves
            # out start-up and the end: what the hooks cost while it runs.
            runs = [x["wall"] for x in res[t]["runs"] if x and x["wall"]]
            paired = paired_ratios(pairs[t], lambda x: x["wall"])
            ratios[t] = median(paired)
            work = median(paired_ratios(pairs[t], lambda x: x["work"]))
            fastest = min(runs) / fastest_plain if runs and fastest_plain else None
            row.append(
                f"{ratios[t]:.2f}x (rounds {min(paired):.2f}-{max(paired):.2f}; "
                f"fastest runs {fastest:.2f}x; in-script {fmt(work, '.2f')}x)"
                if ratios[t]
                else "n/a (" + str(res[t]["error"]) + ")"
            )
        row.append("n/a (needs @profile; traces every line)")
        lp = ratios.get("lprof")
        met = None
        if lp is not None:
            peers_ok = all(lp < v for k, v in ratios.items() if k != "lprof" and v)
            met = lp <= limit and peers_ok
        row.append({True: "yes", False: "**no**", None: "n/a"}[met])
        rows.append(row)
        targets.append(
            (
                f"memory overhead, {title}: lprof <= {limit:.2f}x and below scalene and memray",
                met,
                fmt(lp, ".2f") + "x" if lp else "n/a",
            )
        )
    header = [
        "workload",
        "plain s",
        "lprof --memory",
        "scalene run --memory",
        "memray run",
        "memory_profiler",
        "target met",
    ]
    return (header, rows), targets
