"""Section 5: following child processes, and `lprof merge` of 1000 profiles.

Overhead: bench/workloads/p_pool.py (a 2-worker process pool does the work)
run plain, under lprof (children followed, the default), under
`lprof --no-follow`, `scalene run --cpu-only` and `py-spy record
--subprocesses`; ratios as in the sampling section (median over serpentine
rounds of run / plain run of the same round).

Merge: 1000 rank files made from one real profile of the pool workload (each
copy given its own rank, pid and scaled values), merged by `lprof merge` in a
process of its own; its wall time and peak RSS (ru_maxrss), beside the same
for 10 files: streaming keeps the peak near the 10-file one."""

import json
import os
import subprocess
import sys

import lprof_tool
import peers
from common import (
    SCRATCH,
    Failed,
    fmt,
    marker_lines,
    median,
    overhead_rounds,
    paired_ratios,
    run_timed,
    workload,
)

NAME, ARGS = "p_pool", ["16", "1000000"]
ROUNDS, EXTRA_ROUNDS = 5, 4
MERGE_FILES = 1000


def _worker_line_share(prof_path, script):
    """The workers' loop's share of the profile's CPU time (did it see the children?)."""
    prof = lprof_tool.export_json(prof_path)
    lines = lprof_tool.sampling_lines(prof, script)
    total = sum(d["cpu"] for d in lines.values())
    (marker,) = marker_lines(script).values()
    return (lines.get(marker, {}).get("cpu", 0.0) / total) if total else 0.0


def overhead(repeats, log):
    script = workload(NAME)
    tools = ["plain", "lprof", "lprof@no-follow", "scalene", "py-spy"]

    def one(tool, r):
        out = os.path.join(SCRATCH, f"{NAME}.{tool}")
        if tool == "plain":
            run = run_timed([peers.VPY, script] + ARGS)
        elif tool.startswith("lprof"):
            cmd = lprof_tool.sample_cmd(script, ARGS, out + ".lprof")
            if tool.endswith("no-follow"):
                cmd.insert(3, "--no-follow")
            run = lprof_tool.run(cmd + [])
            share = _worker_line_share(out + ".lprof", script) if tool == "lprof" else 1.0
            if share < 0.5:
                raise Failed(f"the workers' loop has {share:.0%} of the samples")
        elif tool == "scalene":
            run = peers.run_timed_group(peers.scalene_cmd(script, ARGS, out + ".json"))
        else:
            cmd = peers.pyspy_cmd(script, ARGS, out + ".raw")
            cmd.insert(2, "--subprocesses")
            run = peers.run_timed_group(cmd)
        return {"wall": run.wall, "cpu": run.cpu}

    res, pairs = overhead_rounds(
        tools, max(repeats, ROUNDS), EXTRA_ROUNDS, one, focus=("lprof", "lprof@no-follow")
    )
    log("  processes/overhead: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in tools))
    labels = {
        "plain": "plain",
        "lprof": "lprof (children followed, default)",
        "lprof@no-follow": "lprof --no-follow (main process only)",
        "scalene": "scalene --cpu-only",
        "py-spy": "py-spy record --subprocesses",
    }
    plain_runs = res["plain"]["runs"]
    rows = []
    for t in tools:
        runs = res[t]["runs"]
        if not runs or not plain_runs:
            rows.append([labels[t], "n/a", f"n/a ({res[t]['error']})", "n/a"])
            continue
        if t == "plain":
            rows.append([labels[t], f"{min(x['wall'] for x in runs):.3f}", "1.000x", "1.000x"])
            continue
        walls = paired_ratios(pairs[t], lambda x: x["wall"])
        wall = median(walls)
        rows.append(
            [
                labels[t],
                f"{min(x['wall'] for x in runs):.3f}",
                f"{wall:.3f}x ({(wall - 1) * 100:+.1f}%; rounds {min(walls):.2f}-{max(walls):.2f})",
                fmt(median(paired_ratios(pairs[t], lambda x: x["cpu"])), ".3f") + "x",
            ]
        )
    header = [
        "tool",
        "wall s (fastest run)",
        "wall ratio (overhead): median of rounds",
        "CPU time ratio (all processes)",
    ]
    return header, rows


_MAKE_RANKS = r"""
import json, os, sys
from lprof.model import profile_file
src, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = profile_file.load(src)
os.makedirs(folder, exist_ok=True)
for rank in range(count):
    prof = json.loads(json.dumps(base))
    prof["meta"].update(rank=rank, world_size=count, pid=10000 + rank, launcher="bench")
    scale = 1.0 + (rank % 7) / 10.0  # a known spread between ranks
    rows = prof.get("stacks", {}).get("stacks", [])
    ids = {}  # every process has its own thread ids, as real ranks do
    for row in rows:
        row[1] = ids.setdefault(row[1], 140000000000000 + 4096 * (rank * 64 + len(ids)))
        for k in row[2]:
            if k.endswith("_s"):
                row[2][k] *= scale
    threads = prof.get("sampling", {}).get("threads", {})
    prof.get("sampling", {})["threads"] = {str(ids.get(int(t), t)): n for t, n in threads.items()}
    profile_file.save(prof, os.path.join(folder, f"p_pool.sample.bench.{rank}.lprof"))
"""

_MEASURE = r"""
import resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
if r.returncode:
    sys.exit("merge failed: " + r.stderr[-300:])
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def merge(log):
    """(header, rows): lprof merge of 10 and of 1000 rank files."""
    script = workload(NAME)
    src = os.path.join(SCRATCH, "p_pool.merge-src.lprof")
    rows = []
    try:
        lprof_tool.run(lprof_tool.sample_cmd(script, ["4", "300000"], src))
        env = dict(os.environ, **lprof_tool.ENV)
        for count in (10, MERGE_FILES):
            folder = os.path.join(SCRATCH, f"ranks{count}")
            subprocess.run(["rm", "-rf", folder])
            made = subprocess.run(
                [peers.VPY, "-c", _MAKE_RANKS, src, folder, str(count)],
                env=env,
                capture_output=True,
                text=True,
            )
            if made.returncode:
                raise Failed(made.stderr[-300:])
            files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
            size = sum(os.path.getsize(f) for f in files)
            out = os.path.join(SCRATCH, f"merged{count}.lprof")
            r = subprocess.run(
                [
                    peers.VPY,
                    "-c",
                    _MEASURE,
                    peers.VPY,
                    "-m",
                    "lprof",
                    "merge",
                    "-q",
                    os.path.join(folder, "*.lprof"),
                    "-o",
                    out,
                ],
                env=env,
                capture_output=True,
                text=True,
            )
            if r.returncode:
                raise Failed(r.stderr[-300:])
            wall, rss_kb = r.stdout.split()
            rows.append(
                [
                    str(count),
                    f"{size / count / 1000:.1f} KB",
                    f"{float(wall):.2f}",
                    f"{int(rss_kb) / 1024:.0f} MB",
                ]
            )
    except Failed as exc:
        rows.append(["n/a", "", f"n/a ({exc})", ""])
    log("  processes/merge: " + "; ".join(" ".join(r) for r in rows))
    return ["files", "size per file", "wall s", "peak RSS of the merge"], rows


if __name__ == "__main__":  # this section alone: python3 bench/process_bench.py [--merge-only]
    os.makedirs(SCRATCH, exist_ok=True)
    if "--merge-only" not in sys.argv:
        peers.ensure_venv(print)
        print(json.dumps(overhead(2, print)))
    print(json.dumps(merge(print)))
