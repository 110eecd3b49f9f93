"""Section 6: the cost lprof --gpu adds to each CUDA launch, measured here
without a GPU: the launch loop of bench/workloads/g_launch.py through the
test libcupti (tests/gpu/fake_cupti.c, which calls lprof's CUPTI callbacks
as CUPTI does), plain, under lprof (sampling only) and under lprof --gpu.
Per-launch cost = (in-script loop time - plain's) / launches, median over
serpentine rounds. Real GPU overhead is measured by `make gpu-check` on a
GPU machine (docs/gpu-check.md)."""

import os
import shutil
import subprocess

import lprof_tool
from common import ROOT, SCRATCH, fmt, median, overhead_rounds, run_timed, workload
from peers import VPY

LAUNCHES = 100000
ROUNDS, EXTRA_ROUNDS = 5, 4


def _fakes():
    """Builds the test libcupti and libcuda.so.1 into SCRATCH; None without CUPTI headers."""
    inc = None
    nvcc = shutil.which("nvcc")
    roots = [
        os.environ.get("CUDA_HOME"),
        os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) if nvcc else None,
        "/usr/local/cuda",
    ]
    for r in filter(None, roots):
        if os.path.exists(os.path.join(r, "include", "cupti.h")):
            inc = os.path.join(r, "include")
            break
    if inc is None:
        return None
    d = os.path.join(SCRATCH, "fake_cuda")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(ROOT, "tests", "gpu")
    for out, name, extra in (
        ("libcuda.so.1", "fake_cuda.c", ["-Wl,-soname,libcuda.so.1"]),
        ("libcupti.so.13", "fake_cupti.c", ["-I" + inc, "-lpthread"]),
    ):
        subprocess.run(
            ["cc", "-shared", "-fPIC", "-O2", "-o", os.path.join(d, out), os.path.join(src, name)] + extra,
            check=True,
        )
    return d


def launch_cost(repeats, log):
    fakes = _fakes()
    header = ["tool", "loop s (median)", "us per launch added", "ratio to plain (range)"]
    if fakes is None:
        return header, [["(no CUPTI headers here: section not measured)", "n/a", "n/a", "n/a"]]
    env = {"LD_LIBRARY_PATH": fakes, "LPROF_CUPTI_PATH": os.path.join(fakes, "libcupti.so.13")}
    script = workload("g_launch")
    tools = ["plain", "lprof", "lprof --gpu"]

    def one_run(tool, _round):
        argv = [VPY, script, str(LAUNCHES)]
        if tool != "plain":
            argv = (
                [VPY, "-m", "lprof", "-q", "-o", os.path.join(SCRATCH, "g.lprof")]
                + (["--gpu=cuda"] if tool.endswith("--gpu") else [])
                + argv[1:]
            )
        r = run_timed(argv, env_extra=dict(env, **lprof_tool.ENV) if tool != "plain" else env)
        return {"loop": float(r.stdout.strip().splitlines()[-1])}

    res, pairs = overhead_rounds(
        tools, max(ROUNDS, repeats), EXTRA_ROUNDS, one_run, focus=("lprof", "lprof --gpu")
    )
    rows = []
    for t in tools:
        runs = res[t]["runs"]
        if res[t]["error"] or not runs:
            rows.append([t, "failed: " + str(res[t]["error"]), "n/a", "n/a"])
            continue
        loop = median([r["loop"] for r in runs])
        if t == "plain":
            rows.append([t, fmt(loop, ".3f"), "-", "1.00"])
            continue
        diffs = [(x["loop"] - b["loop"]) / LAUNCHES * 1e6 for x, b in pairs[t]]
        ratios = [x["loop"] / b["loop"] for x, b in pairs[t] if b["loop"]]
        rows.append(
            [
                t,
                fmt(loop, ".3f"),
                fmt(median(diffs), ".2f"),
                f"{median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
            ]
        )
    log(f"  gpu launch cost: {rows}")
    return header, rows


def device_overhead():
    """The overhead the last `make gpu-check` measured on a real GPU
    (docs/gpu-check.md): (its "Measured by" line, whole-program rows, step
    rows), or (None, [], [])."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import gpu_check

    path = os.path.join(ROOT, "docs", "gpu-check.md")
    if not os.path.exists(path):
        return None, [], []
    with open(path) as fh:
        text = fh.read()
    return gpu_check.read_overhead(text) + (gpu_check.read_step_overhead(text),)
