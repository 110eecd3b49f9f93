"""make gpu-check: lprof --gpu on a real GPU (run it where CUDA and PyTorch
with CUDA are present, e.g. the device machine).

1. tests/scripts/gpu_torch_workload.py under `lprof --gpu`: per line, the
   device time of the kernels and copies it launched.
2. The same program, in a separate process (CUPTI takes one client), under
   torch.profiler(activities=[CPU, CUDA], with_stack=True): per function
   (torch.profiler names Python frames by their function's first line; the
   workload's measured functions are one line long), the self device time of
   the operators it called.
3. Checks: the matmul, elementwise and copy lines agree within 5%; the copy
   line's bytes are exactly the tensors copied; the CPU-only line has no GPU
   time; no GPU work is left without a launch record; the kernels are the
   leaves of the GPU stacks.
4. Overhead: wall time of the whole program, plain vs lprof --gpu, median of
   alternating runs.
Writes docs/gpu-check.md (and copies it to $OUT when set); exit status 1 if
a check failed, 2 if there is no CUDA device."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "tests", "scripts", "gpu_torch_workload.py")
STEPS = int(os.environ.get("GPU_CHECK_STEPS", "200"))
COPY_BYTES = 2048 * 2048 * 4
TOLERANCE = 0.05

TORCH_PROFILE = r"""
import json, os, re, runpy, sys
import torch
from torch.profiler import ProfilerActivity, profile
workload, steps, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [workload, steps]
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
    runpy.run_path(workload, run_name="__main__")
name = os.path.basename(workload)
per_line = {}
for e in prof.events():
    us = getattr(e, "self_device_time_total", None)
    if us is None:
        us = getattr(e, "self_cuda_time_total", 0)
    if not us:
        continue
    # the innermost Python frame of the workload: an ancestor event named
    # "file(first line of the function): function" (or, in older versions,
    # an entry of e.stack "file(line): function")
    line, q = None, e
    frames = list(e.stack or [])
    while q is not None:
        frames.append(q.name)
        q = q.cpu_parent
    for frame in frames:
        m = re.match(r"(.*)\((\d+)\): ", frame)
        if m and os.path.basename(m.group(1)) == name:
            line = int(m.group(2))
            break
    per_line[line] = per_line.get(line, 0.0) + us * 1e-6
json.dump({str(k): v for k, v in per_line.items()}, open(out, "w"))
"""


def marker_line(marker):
    for i, text in enumerate(open(WORKLOAD).read().splitlines(), 1):
        if text.rstrip().endswith("# marker: " + marker):
            return i
    raise SystemExit(f"gpu-check: marker {marker} missing in {WORKLOAD}")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def run(cmd, **kw):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=ROOT, **kw)
    return r, time.perf_counter() - t0


def main():
    try:
        import torch
        ok = torch.cuda.is_available()
    except Exception as exc:  # no torch at all
        print(f"gpu-check: PyTorch is not usable here ({exc})")
        return 2
    if not ok:
        print("gpu-check: no CUDA device (torch.cuda.is_available() is False)")
        return 2
    tmp = tempfile.mkdtemp(prefix="gpu-check-")
    py = sys.executable
    prof_path, folded = os.path.join(tmp, "p.lprof"), os.path.join(tmp, "gpu.folded")
    r, _ = run([py, "-m", "lprof", "--gpu", "-o", prof_path, "--stacks", folded, "--stacks-metric", "gpu",
                WORKLOAD, str(STEPS)])
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        return 1
    listing = r.stdout
    r2, _ = run([py, "-m", "lprof", "export", prof_path, "--format", "json", "-o", os.path.join(tmp, "p.json")])
    doc = json.load(open(os.path.join(tmp, "p.json")))
    lprof_lines = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == WORKLOAD}
    stats = doc["gpu"]["stats"]
    torch_out = os.path.join(tmp, "torch.json")
    r3, _ = run([py, "-c", TORCH_PROFILE, WORKLOAD, str(STEPS), torch_out])
    if r3.returncode != 0:
        print(r3.stdout[-3000:], r3.stderr[-3000:])
        return 1
    torch_lines = {int(k) if k != "None" else None: v for k, v in json.load(open(torch_out)).items()}

    checks, rows = [], []
    for name in ("matmul", "elementwise", "h2d"):
        ln = marker_line(name)
        ours = lprof_lines.get(ln, {})
        ours_s = ours.get("kernel_s", 0.0) + ours.get("copy_s", 0.0)
        theirs = torch_lines.get(ln, 0.0)
        ratio = ours_s / theirs if theirs else float("nan")
        good = bool(theirs) and abs(ratio - 1) <= TOLERANCE
        checks.append((f"line {ln} ({name}): lprof {ours_s * 1e3:.2f} ms vs torch.profiler "
                       f"{theirs * 1e3:.2f} ms (ratio {ratio:.3f}, within 5%)", good))
        rows.append((ln, name, ours_s, theirs, ratio, ours.get("kernels", 0), ours.get("launches", 0)))
    h2d = lprof_lines.get(marker_line("h2d"), {})
    want = (5 + STEPS) * COPY_BYTES
    checks.append((f"h2d line copied {h2d.get('h2d_bytes', 0)} bytes, the tensors hold {want}",
                   h2d.get("h2d_bytes", 0) == want))
    cpu = lprof_lines.get(marker_line("cpu"), {})
    checks.append(("the CPU-only line has no GPU time", not cpu.get("kernel_s") and not cpu.get("copy_s")))
    join = stats.get("join", {})
    checks.append((f"GPU work without a launch record: {join.get('unattributed', 0)} of "
                   f"{join.get('records', 0)} records", join.get("unattributed", 0) <= 0.01 * max(1, join.get("records", 0))))
    leaves = [l for l in open(folded).read().splitlines() if ";matmul (" in l]
    checks.append(("kernels are the leaves of the GPU stacks under matmul()",
                   any(re.search(r"gemm|sgemm|cutlass|Kernel", l.rsplit(" ", 1)[0].rsplit(";", 1)[-1]) for l in leaves)))

    plain, prof = [], []
    for _ in range(3):
        rp, tp = run([py, WORKLOAD, str(STEPS)])
        rl, tl = run([py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, "o.lprof"), WORKLOAD, str(STEPS)])
        if rp.returncode == 0 and rl.returncode == 0:
            plain.append(tp)
            prof.append(tl)
    overhead = statistics.median(p / q for p, q in zip(prof, plain)) if plain else float("nan")

    dev = torch.cuda.get_device_name(0)
    lines = ["# make gpu-check", "",
             f"Measured by tools/gpu_check.py on {dev}, PyTorch {torch.__version__}, CUDA "
             f"{torch.version.cuda}, CUPTI API {stats.get('cupti', {}).get('version')} "
             f"({stats.get('cupti', {}).get('library')}); {STEPS} steps + 5 warm-up.", "",
             "| line | what | lprof GPU ms | torch.profiler ms | ratio | kernels | launches |",
             "|---|---|---|---|---|---|---|"]
    for ln, name, ours, theirs, ratio, k, n in rows:
        lines.append(f"| {ln} | {name} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ratio:.3f} | {k:.0f} | {n:.0f} |")
    lines += ["", "| check | result |", "|---|---|"]
    lines += [f"| {text} | {'pass' if good else 'FAIL'} |" for text, good in checks]
    lines += ["", f"Overhead of `lprof --gpu` (sampling + GPU) on the whole program: median "
              f"{overhead:.3f}x of the plain run over {len(plain)} alternating pairs "
              f"(plain {statistics.median(plain) if plain else float('nan'):.2f} s).", "",
              "lprof's listing of the run:", "", "```", listing.strip()[-6000:], "```", ""]
    text = "\n".join(lines)
    path = os.path.join(ROOT, "docs", "gpu-check.md")
    with open(path, "w") as fh:
        fh.write(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "gpu-check.md"), "w") as fh:
            fh.write(text)
    print(text)
    return 0 if all(good for _t, good in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
