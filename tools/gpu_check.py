"""make gpu-check: lprof --gpu on a real GPU (run it where CUDA and PyTorch
with CUDA are present, e.g. the device machine).

1. tests/scripts/gpu_torch_workload.py under `lprof --gpu`: per line, the
   device time of the kernels and copies it launched. The workload covers a
   matmul, an elementwise op, a pinned host-to-device copy, CPU-only work,
   torch.compile (Triton kernels through cuLaunchKernelEx), a CUDA graph
   replay, a DataLoader with worker processes and a training step (its
   backward runs on autograd's device thread).
2. The same program, in a separate process (CUPTI takes one client), under
   torch.profiler(activities=[CPU, CUDA], with_stack=True): per measured
   part, the device time of the kernels and copies whose launch call (read
   from its Chrome trace, joined by correlation id) ran inside the part's
   record_function annotation (the workload calls each one-line part inside
   one named after its marker). Both, and every run after them, follow a
   plain run that warms torch.compile's caches (a cold first call autotunes,
   running benchmark kernels a warm one does not).
3. Checks: every measured line agrees within 5% and its kernels exactly
   (the training line's backward, which autograd runs on its device thread,
   is joined on torch.profiler's side by autograd sequence number to the
   line of the forward ops that made its nodes, and compared with lprof's
   `[backward]` part); the copy lines' bytes are exactly the tensors copied;
   the CPU-only line has no GPU time; no GPU work is left without a launch
   record and no launch aged out; the kernels are the leaves of the GPU
   stacks; starting lprof leaves the driver uninitialised (cuDeviceGetCount
   answers 3 before the program's first CUDA call, also after `import
   torch`); torch.profiler started inside the program gets CUDA events and
   lprof says it handed CUPTI over; tensor memory per line (PyTorch's
   allocator history): the matmul and compiled lines allocated their
   results' bytes, the tensor the program holds is live at exit; no line of
   torch.compile's generated code is charged; under `lprof -l --gpu`
   (step() profiled) the lines of step() that call the parts have the
   kernels, bytes and device time the sampled run charged to the parts.
4. The training view (tools/gpu_check_train.py, its own docstring): the
   forward lines' backward, a launch-bound loop that wraps the launch ring
   and the allocator history, a large captured graph, the Chrome export's
   flows, -l's GPU idle, -i 1, expandable segments and cudaMallocAsync.
5. Overhead: the steps alone, timed by each program after a synchronize, in
   the plain, lprof --gpu and torch.profiler runs: lprof's added time at
   most a third of torch.profiler's. Whole-program wall time (start-up
   dominates it) only with GPU_CHECK_ROUNDS > 0, until GPU_CHECK_DEADLINE.
Every run has a time limit (GPU_CHECK_RUN_TIMEOUT) and its output goes to
gpu-check.log. Writes docs/gpu-check.md (and, with $OUT set, copies it,
the log, the profile's JSON, the GPU stacks and torch.profiler's per-line
numbers there, for the device tool to bring back), naming the
device, the driver and the torch build; exit status 1 if a check failed, 2
if there is no CUDA device. The parsing and comparison below are plain
functions, unit-tested without a GPU (tests/python/test_gpu_check.py)."""

import bisect
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
ROUNDS = int(os.environ.get("GPU_CHECK_ROUNDS", "0"))  # whole-program runs of each (start-up dominates)
# a device is lent by the minute: each run has a time limit, and the
# overhead rounds stop once the whole check has run this long (seconds)
RUN_TIMEOUT = float(os.environ.get("GPU_CHECK_RUN_TIMEOUT", "150"))
DEADLINE = float(os.environ.get("GPU_CHECK_DEADLINE", "240"))  # the whole check: about 5 minutes
WARMUP = 5
COPY_BYTES = 2048 * 2048 * 4
BATCH_BYTES = 64 * 1024 * 4
TOLERANCE = 0.05
# A copy's device time differs more from run to run than a kernel's (the
# host link's bandwidth): measured on an H100 on 2026-11-27, the pinned H2D
# line took 32.26, 33.69 and 34.63 ms in three runs (-l, torch.profiler,
# sampled) and the loader line 0.80-0.86 ms. The -l check compares two of
# lprof's own runs, bytes and counts exactly, a copy line's time within this.
COPY_TIME_TOLERANCE = 0.10
COMPARED = ("matmul", "elementwise", "h2d", "compiled", "graph replay", "loader", "train")
# bytes each copying line moves per step
COPIES = {"h2d": COPY_BYTES, "loader": BATCH_BYTES}
# tensor memory per line (PyTorch's allocator history): bytes each line's
# tensors take; what a line may take beyond them (cuBLAS's workspace, taken
# from the caching allocator at the first matmul)
TENSORS = {"matmul": 4096 * 4096 * 4, "compiled": (1 << 20) * 4}
TENSOR_SLACK = 128 << 20
LIVE_AT_EXIT = {"tensor a": 4096 * 4096 * 4}
# lprof -l --gpu (step() profiled): the lines of step() that call these get
# the same GPU work as the sampled run charged to the parts' own lines
LINE_MODE = ("matmul", "elementwise", "h2d", "graph replay", "loader")

# torch.profiler's run of a workload: python -c TORCH_PROFILE WORKLOAD OUT
# TOOLS_DIR ARGS...; OUT gets its per-line numbers (torch_per_line) and "how"
TORCH_PROFILE = r"""
import json, os, runpy, sys
sys.path.insert(0, sys.argv[3])
import gpu_check
from torch.profiler import ProfilerActivity, profile
workload, out, args = sys.argv[1], sys.argv[2], sys.argv[4:]
sys.argv = [workload] + args
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
    runpy.run_path(workload, run_name="__main__")
trace = out + ".trace.json"
prof.export_chrome_trace(trace)
events = json.load(open(trace))
events = events.get("traceEvents", []) if isinstance(events, dict) else events
os.unlink(trace)
per_line, how = gpu_check.torch_per_line(events, gpu_check.marker_lines(open(workload).read()))
per_line["how"] = how
print("torch.profiler: %s" % how)
json.dump(per_line, open(out, "w"))
"""

UNINITIALISED = r"""
import ctypes
n = ctypes.c_int()
print("cuDeviceGetCount", ctypes.CDLL("libcuda.so.1").cuDeviceGetCount(ctypes.byref(n)))
"""
# the same after `import torch`: lprof acts at torch's import (it queues the
# allocator's history for the program's first CUDA call), which must not
# start the driver
UNINITIALISED_TORCH = "import torch\n" + UNINITIALISED


# ---- pure functions (unit-tested without a GPU) ----

MARK = "gpu-check: "  # the workload's record_function annotations: MARK + marker name


def mark_of(names):
    """The marker name of the innermost workload annotation among an
    operator's names (itself, then its parents), or None."""
    for name in names:
        if name.startswith(MARK):
            return name[len(MARK) :]
    return None


DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")  # torch.profiler's trace: device work
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")  # the API calls that launched it
BACKWARD_OP = "autograd::engine::evaluate_function: "  # a node's backward, with its sequence number


def covering(spans, ts):
    """The innermost span (start, end, value) of a start-sorted list that
    holds ts (the latest started one still open), or None."""
    i = bisect.bisect_right(spans, (ts, float("inf"))) - 1
    for j in range(i, max(-1, i - 64), -1):  # nested spans: a few steps back at most
        if spans[j][1] >= ts:
            return spans[j]
    return None


def torch_per_line(events, markers):
    """torch.profiler's device work per workload line, from its Chrome trace
    (events): each kernel, copy or fill is joined by its correlation id to
    the runtime or driver call that launched it, and charged to the workload
    annotation (a record_function named MARK + marker) open on that call's
    thread at that moment, then to its marker's line. A launch inside a
    node's backward (autograd's `evaluate_function` op, on its own thread)
    goes to the line whose annotation was open when the forward op of the
    same sequence number ran, as backward ("backward unmapped" when that op
    is outside every annotation or the node has no number, as
    AccumulateGrad); any other launch outside every annotation goes to
    "other thread" on a thread with no annotation, else to "None"; device
    work with no launch call in the trace to "no launch".
    Returns ({key: seconds, "backward:" + key: the backward part,
    "kernels:" + key: kernels}, counts of device events by how charged).
    By time and thread, not by operator: torch.profiler (2.11 cu130, H100)
    joins a kernel to the operator whose external id was current at the
    launch, and a Triton kernel (launched by torch.compile's generated code,
    no ATen operator around it) or a graph replay's can take a stale one;
    its FunctionEvents in 2.11 carry no linked_correlation_id (0 on every
    device event) and no Python frames."""
    spans, launches, backward, forward = {}, {}, {}, {}
    for ev in events:
        cat, name, args = ev.get("cat"), ev.get("name", ""), ev.get("args") or {}
        end = ev.get("ts", 0) + ev.get("dur", 0)
        if cat == "user_annotation" and mark_of([name]):
            spans.setdefault(ev.get("tid"), []).append((ev["ts"], end, mark_of([name])))
        elif cat in LAUNCH_CATS and "correlation" in args:
            launches[args["correlation"]] = (ev.get("tid"), ev["ts"])
        elif cat == "cpu_op" and name.startswith(BACKWARD_OP):
            backward.setdefault(ev.get("tid"), []).append((ev["ts"], end, args.get("Sequence number")))
        elif cat == "cpu_op" and "Sequence number" in args and not args.get("Fwd thread id"):
            # every op records the number the next node will take: the last
            # one started with it made the node (the ones before made none)
            seq = args["Sequence number"]
            if ev["ts"] >= forward.get(seq, (None, -1.0))[1]:
                forward[seq] = (ev.get("tid"), ev["ts"])
    for by_tid in (spans, backward):
        for tid in by_tid:
            by_tid[tid].sort(key=lambda s: (s[0], s[1]))

    def annotation(tid, ts):
        span = covering(spans.get(tid, []), ts)
        return span[2] if span else None

    how = {"annotated": 0, "backward": 0, "backward unmapped": 0, "unannotated": 0, "no launch": 0}
    out = {}
    for ev in events:
        if ev.get("cat") not in DEVICE_CATS:
            continue
        launch = launches.get((ev.get("args") or {}).get("correlation"))
        prefix = ""
        if launch is None:
            key = kind = "no launch"
        else:
            tid, ts = launch
            name = annotation(tid, ts)
            node = None if name else covering(backward.get(tid, []), ts)
            if name:
                key, kind = str(markers.get(name)), "annotated"
            elif node is not None:
                fwd = forward.get(node[2]) if node[2] is not None else None
                name = annotation(*fwd) if fwd else None
                key, kind = (str(markers.get(name)), "backward") if name else ("backward unmapped",) * 2
                prefix = "backward:" if name else ""
            else:
                key, kind = ("None" if tid in spans else "other thread"), "unannotated"
        how[kind] += 1
        secs = ev.get("dur", 0) * 1e-6
        out[key] = out.get(key, 0.0) + secs
        if prefix:
            out[prefix + key] = out.get(prefix + key, 0.0) + secs
        if ev.get("cat") == "kernel":
            out["kernels:" + key] = out.get("kernels:" + key, 0) + 1
    return out, how


def marker_lines(source):
    """{marker: line} of the `# marker: name` comments in source text."""
    out = {}
    for i, text in enumerate(source.splitlines(), 1):
        m = re.search(r"# marker: (.+?)\s*$", text)
        if m:
            out[m.group(1)] = i
    return out


# lprof charges a part's device work to other lines as well: a graph
# replay's kernels to the lines captured into the graph (`[graph replay]`)
ALSO_ON = {"graph replay": ("captured",)}


def part_columns(lprof_lines, markers, name):
    """lprof's columns of a part: its line's, plus those of the lines that
    lprof charges the part's work to (ALSO_ON), summed."""
    rows = [lprof_lines.get(markers[name], {})]
    rows += [lprof_lines.get(markers[n], {}) for n in ALSO_ON.get(name, ()) if n in markers]
    out = {}
    for row in rows:
        for k, v in row.items():
            if isinstance(v, (int, float)):
                out[k] = out.get(k, 0) + v
    return out


def compare(lprof_lines, torch_lines, markers, names=COMPARED, tolerance=TOLERANCE):
    """Rows (line, name, lprof s, torch.profiler s, ratio, kernels, launches)
    and checks [(text, passed)]: per line, the device time within the
    tolerance and the kernels exactly. A line whose ops have a backward (the
    training line: autograd runs it on its device thread) has that part
    compared as well: lprof's backward_s (its "[backward]" work, plus any
    still "other thread") with torch.profiler's backward ops joined to the
    line by sequence number."""
    rows, checks = [], []
    for name in names:
        ln = markers[name]
        ours = part_columns(lprof_lines, markers, name)
        ours_s = ours.get("kernel_s", 0.0) + ours.get("copy_s", 0.0)
        theirs = torch_lines.get(str(ln), 0.0)
        their_bwd = torch_lines.get(f"backward:{ln}", 0.0)
        if their_bwd or ours.get("backward_s"):
            bwd = ours.get("backward_s", 0.0) + ours.get("other_thread_s", 0.0)
            r2 = bwd / their_bwd if their_bwd else float("nan")
            checks.append(
                (
                    f"line {ln} ({name}), its backward: lprof {bwd * 1e3:.2f} ms vs torch.profiler's "
                    f"backward ops of its forward ops {their_bwd * 1e3:.2f} ms (ratio {r2:.3f})",
                    bool(their_bwd) and abs(r2 - 1) <= tolerance,
                )
            )
        ratio = ours_s / theirs if theirs else float("nan")
        checks.append(
            (
                f"line {ln} ({name}): lprof {ours_s * 1e3:.2f} ms vs torch.profiler {theirs * 1e3:.2f} ms "
                f"(ratio {ratio:.3f}, within {tolerance:.0%})",
                bool(theirs) and abs(ratio - 1) <= tolerance,
            )
        )
        k, tk = ours.get("kernels", 0), torch_lines.get(f"kernels:{ln}", 0)
        checks.append((f"line {ln} ({name}): lprof {k:.0f} kernels, torch.profiler {tk:.0f}", k == tk))
        rows.append((ln, name, ours_s, theirs, ratio, k, ours.get("launches", 0)))
    return rows, checks


def copy_checks(lprof_lines, markers, steps, warmup=WARMUP, copies=COPIES):
    """The copy lines moved exactly the bytes of the tensors copied."""
    out = []
    for name, per_step in copies.items():
        got = lprof_lines.get(markers[name], {}).get("h2d_bytes", 0)
        want = (warmup + steps) * per_step
        out.append(
            (f"{name} line copied {got:.0f} bytes host to device, the tensors hold {want}", got == want)
        )
    return out


def join_checks(stats):
    join = stats.get("join", {})
    return [
        (
            f"GPU work without a launch record: {join.get('unattributed', 0)} of {join.get('records', 0)} records",
            join.get("unattributed", 0) == 0,
        ),
        (
            f"launches aged out before their records arrived: {join.get('aged_out', 0)}",
            join.get("aged_out", 0) == 0,
        ),
        (f"incomplete records: {join.get('incomplete', 0)}", join.get("incomplete", 0) == 0),
    ]


def leaf_check(folded_text, caller="matmul"):
    leaves = [l.rsplit(" ", 1)[0].rsplit(";", 1)[-1] for l in folded_text.splitlines() if f";{caller} (" in l]
    return (
        f"kernels are the leaves of the GPU stacks under {caller}()",
        any(re.search(r"gemm|sgemm|cutlass|Kernel", leaf) for leaf in leaves),
    )


def inner_profiler_checks(stdout, stderr):
    """torch.profiler started inside the program: it saw CUDA kernels, and
    lprof said it handed CUPTI over."""
    m = re.search(r"inner profiler kernels (\d+)", stdout)
    kernels = int(m.group(1)) if m else 0
    return [
        (f"torch.profiler started inside the program saw {kernels} CUDA kernels", kernels > 0),
        ("lprof said it handed CUPTI to torch.profiler", "handed CUPTI" in stderr),
    ]


def tensor_checks(tensor_lines, markers, steps, warmup=WARMUP):
    """Tensor memory per line, from PyTorch's allocator history: the lines
    that make a tensor each step allocated those bytes (plus at most
    TENSOR_SLACK); the tensors the program still holds are live at exit."""
    out = []
    for name, per_step in TENSORS.items():
        got = tensor_lines.get(markers[name], {}).get("alloc_bytes", 0)
        want = (warmup + steps) * per_step
        out.append(
            (
                f"tensor memory: {name} line allocated {got:.0f} bytes, its results hold {want} "
                f"(+{(got - want) / 2**20:.1f} MiB)",
                want <= got <= want + TENSOR_SLACK,
            )
        )
    for name, size in LIVE_AT_EXIT.items():
        got = tensor_lines.get(markers[name], {}).get("live_bytes", 0)
        out.append(
            (f"tensor memory: {name} line holds {got:.0f} bytes at exit, the tensor {size}", got == size)
        )
    return out


def line_mode_checks(
    line_cols, lprof_lines, markers, names=LINE_MODE, tolerance=TOLERANCE, copy_tolerance=COPY_TIME_TOLERANCE
):
    """lprof -l --gpu: each calling line of step() has the kernels, bytes
    and (within the tolerance: another run; a line of copies alone within
    copy_tolerance) the device time that the sampled run charged to the
    called part's line."""
    out = []
    for name in names:
        ours = line_cols.get(markers["call " + name], {})
        theirs = part_columns(lprof_lines, markers, name)
        allowed = copy_tolerance if theirs.get("copy_s") and not theirs.get("kernels") else tolerance
        ours_s, theirs_s = ours.get("gpu_s", 0.0), theirs.get("kernel_s", 0.0) + theirs.get("copy_s", 0.0)
        # launches: the part's own line's (a captured line's launches ran at capture, outside step())
        own = lprof_lines.get(markers[name], {})
        same = all(ours.get(k, 0) == theirs.get(k, 0) for k in ("kernels", "h2d_bytes")) and ours.get(
            "launches", 0
        ) == own.get("launches", 0)
        ratio = ours_s / theirs_s if theirs_s else float("nan")
        out.append(
            (
                f"lprof -l --gpu, step()'s line calling {name}: {ours.get('kernels', 0):.0f} kernels, "
                f"{ours.get('h2d_bytes', 0):.0f} B to the device, {ours_s * 1e3:.2f} ms (sampled run: "
                f"{theirs.get('kernels', 0):.0f}, {theirs.get('h2d_bytes', 0):.0f} B, {theirs_s * 1e3:.2f} ms)",
                same and bool(theirs_s) and abs(ratio - 1) <= allowed,
            )
        )
    return out


def line_mode_columns(prof_path):
    """{line: GPU columns} of the workload's lines in an lprof -l profile,
    by lprof's own reader (the -l listing's rule: work is charged to the
    innermost line inside a profiled function)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from lprof.model import profile_file
    from lprof.model.sections import gpu_line_columns

    prof = profile_file.load(prof_path)
    cols = gpu_line_columns(prof, functions=prof["functions"])
    return {line: c for (path, line), c in cols.items() if path == WORKLOAD}


def generated_code_check(doc):
    """torch.compile's generated modules and Triton's launcher (code exec'd
    from a string) are never a charged line: their kernels and tensors
    belong to the program's line that called them. (On an H200 the
    launcher's "<string>" line took every Triton kernel until the
    attribution rule put code given as text below program files.)"""
    gpu = doc.get("gpu", {})
    rows = list(gpu.get("lines", [])) + list((gpu.get("tensor_memory") or {}).get("lines", []))
    bad = sorted({r["file"] for r in rows if "torchinductor_" in r["file"] or r["file"] == "<string>"})
    return (
        f"no line of torch.compile's generated code or Triton's launcher is charged "
        f"({len(bad)} files: {bad[:2]})",
        not bad,
    )


def report(meta, rows, checks, runs, listing, train_rows=(), step_overhead=()):
    """docs/gpu-check.md's text. runs: {tool: [seconds of each whole-program
    run]}; train_rows: the training view's lines (as rows); step_overhead: step
    times (what, plain s, lprof s, torch.profiler s, lprof's added share)."""
    runs = {k: v for k, v in runs.items() if v}
    overhead = {k: statistics.median(v) for k, v in runs.items()}
    rounds = min((len(v) for v in runs.values()), default=0)
    lines = [
        "# make gpu-check",
        "",
        f"Measured by tools/gpu_check.py on {meta['date']}: {meta['device']}, driver {meta['driver']}, "
        f"PyTorch {meta['torch']} (CUDA {meta['cuda']}, git {meta['git']}), CUPTI API {meta['cupti']} "
        f"({meta['library']}); {meta['steps']} steps + {meta.get('warmup', WARMUP)} warm-up.",
        "",
        "| line | what | lprof GPU ms | torch.profiler ms | ratio | kernels | launches |",
        "|---|---|---|---|---|---|---|",
    ]
    for ln, name, ours, theirs, ratio, k, n in rows:
        lines.append(
            f"| {ln} | {name} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ratio:.3f} | {k:.0f} | {n:.0f} |"
        )
    if train_rows:
        lines += ["", "The training view (tests/scripts/gpu_train_workload.py):", ""]
        lines += lines[4:6]
        for ln, name, ours, theirs, ratio, k, n in train_rows:
            lines.append(
                f"| {ln} | {name} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ratio:.3f} | {k:.0f} | {n:.0f} |"
            )
    lines += ["", "| check | result |", "|---|---|"]
    lines += [f"| {text} | {'pass' if good else 'FAIL'} |" for text, good in checks]
    if step_overhead:
        lines += [
            "",
            "Step overhead: the steps alone, timed by the program after a synchronize (medians for the "
            "training view; lprof's added time as a share of torch.profiler's):",
            "",
            STEP_HEADER,
            "|---|---|---|---|---|",
        ]
        for what, p, o, t, share in step_overhead:
            lines.append(f"| {what} | {p * 1e3:.3f} ms | {o * 1e3:.3f} ms | {t * 1e3:.3f} ms | {share:.2f} |")
    if not runs:
        if not step_overhead:
            lines += ["", "Overhead: not measured (a run failed or the check ran out of time)."]
        lines += ["", "lprof's listing of the run:", "", "```", listing.strip()[-6000:], "```", ""]
        return "\n".join(lines)
    lines += [
        "",
        f"Whole-program wall time, median of {rounds} alternating round{'s' * (rounds != 1)} "
        "(ratio to the plain run):",
        "",
        "| run | seconds | ratio |",
        "|---|---|---|",
    ]
    plain = overhead.get("plain")
    if not overhead:
        lines.append("| (not measured: the check ran out of time) | | |")
    for tool, secs in overhead.items():
        ratio = f"{secs / plain:.3f}" if plain and secs == secs else "n/a"
        lines.append(f"| {tool} | {secs:.2f} | {ratio} |")
    if runs:  # a reader can tell a real difference from the spread between runs
        lines += [
            "",
            "Each run, in order (seconds): "
            + "; ".join(f"{tool} {', '.join(f'{t:.1f}' for t in times)}" for tool, times in runs.items())
            + ".",
        ]
    lines += ["", "lprof's listing of the run:", "", "```", listing.strip()[-6000:], "```", ""]
    return "\n".join(lines)


def steps_overhead(plain_out, lprof_out, torch_out):
    """The workload's steps alone (its `gpu-check-steps S` line) in the
    plain, lprof --gpu and torch.profiler runs: ([(what, plain, lprof, torch,
    lprof's added share of torch.profiler's)], checks)."""

    def secs(text):
        m = re.search(r"^gpu-check-steps ([0-9.]+)$", text or "", re.M)
        return float(m.group(1)) if m else None

    p, o, t = secs(plain_out), secs(lprof_out), secs(torch_out)
    if not (p and o and t):
        return [], [("step overhead, the workload's steps: not measured", False)]
    share = (o - p) / (t - p) if t > p else float("inf")
    return [(f"{STEPS} steps of the workload", p, o, t, share)], [
        (
            f"step overhead, the workload's {STEPS} steps: lprof adds {(o - p) * 1e3:.1f} ms, torch.profiler "
            f"{(t - p) * 1e3:.1f} ms ({share:.2f} of it; at most 0.33)",
            share <= 1 / 3,
        )
    ]


def read_overhead(text):
    """From a report's text (docs/gpu-check.md): (its "Measured by" line,
    [(run, seconds, ratio)] of its wall-time table); (None, []) if absent.
    make bench shows the last GPU run's overhead with it."""
    measured = next((l for l in text.splitlines() if l.startswith("Measured by ")), None)
    rows, inside = [], False
    for line in text.splitlines():
        if line == "| run | seconds | ratio |":
            inside = True
        elif inside and line.startswith("| ") and not line.startswith("| ("):
            tool, secs, ratio = [c.strip() for c in line.strip("|").split("|")]
            rows.append((tool, secs, ratio))
        elif inside and not line.startswith("|"):
            break
    return measured, rows


STEP_HEADER = "| steps | plain | lprof --gpu | torch.profiler | lprof added / torch.profiler added |"


def read_step_overhead(text):
    """From a report's text: the rows of its step-overhead table, [] if absent."""
    lines = text.splitlines()
    if STEP_HEADER not in lines:
        return []
    rows = []
    for line in lines[lines.index(STEP_HEADER) + 2 :]:
        if not line.startswith("| "):
            break
        rows.append(tuple(c.strip() for c in line.strip("|").split("|")))
    return rows


# ---- the run (needs a GPU) ----

LOG = []  # every command's outcome, written to gpu-check.log


def out_dir():
    return os.environ.get("OUT") or ""


def save(name, text):
    """A result file in $OUT (the device tool brings it back), if set."""
    if out_dir():
        with open(os.path.join(out_dir(), name), "w") as fh:
            fh.write(text)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + (
        os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else ""
    )
    return e


def run(cmd, **kw):
    """subprocess.run with a time limit; a run past it returns code 124 and
    what it printed. Each run's outcome goes to the log at once."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run(
            cmd, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=RUN_TIMEOUT, **kw
        )
    except subprocess.TimeoutExpired as exc:

        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")

        r = subprocess.CompletedProcess(cmd, 124, text(exc.stdout), text(exc.stderr))
    secs = time.perf_counter() - t0
    LOG.append(
        f"$ {' '.join(str(c) for c in cmd)[:300]}\nexit {r.returncode} after {secs:.1f} s\n"
        f"--- stdout (end)\n{r.stdout[-3000:]}\n--- stderr (end)\n{r.stderr[-6000:]}\n"
    )
    save("gpu-check.log", "\n".join(LOG))
    return r, secs


def export(py, prof_path, tmp, name):
    """The profile's JSON document, {} if it cannot be read."""
    out = os.path.join(tmp, name)
    r, _ = run([py, "-m", "lprof", "export", prof_path, "--format", "json", "-o", out])
    if r.returncode != 0 or not os.path.exists(out):
        return {}
    with open(out) as fh:
        return json.load(fh)


def workload_rows(rows):
    return {row["line"]: row for row in rows if row["file"] == WORKLOAD}


def driver_version():
    import ctypes

    try:
        v = ctypes.c_int()
        ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
        name = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() else "?"
        return f"{name} (CUDA {v.value // 1000}.{v.value % 1000 // 10})"
    except Exception as exc:
        return f"unknown ({exc})"


def uninitialised_check(py, tmp, name, source, what):
    script = os.path.join(tmp, name + ".py")
    with open(script, "w") as fh:
        fh.write(source)
    r, _ = run([py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, name + ".lprof"), script])
    got = r.stdout.strip()
    said = got or " / ".join(r.stderr.strip().splitlines()[-1:])[-200:]
    return (
        f"{what} leaves the driver uninitialised: {said} (3: not initialised)",
        got == "cuDeviceGetCount 3",
    )


ONLY = os.environ.get("GPU_CHECK_ONLY", "")  # "train": the training view alone (a short lease)


def write_report(text):
    """docs/gpu-check.md, and its copy for the device tool to bring back."""
    with open(os.path.join(ROOT, "docs", "gpu-check.md"), "w") as fh:
        fh.write(text)
    save("gpu-check.md", text)
    return text


def device_meta(torch, stats, steps):
    import datetime

    cupti = stats.get("cupti", {})
    return {
        "date": datetime.date.today().isoformat(),
        "device": torch.cuda.get_device_name(0),
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "git": getattr(torch.version, "git_version", "?")[:12],
        "steps": steps,
        "cupti": cupti.get("version"),
        "library": cupti.get("library"),
    }


def overhead_only(torch, py, tmp):
    """GPU_CHECK_ONLY=overhead: the training workload's step times under
    lprof --gpu with its parts turned off one by one, beside plain and
    torch.profiler (about 3 minutes); docs/gpu-check.md gets the table."""
    import gpu_check_train

    rows = gpu_check_train.overhead_table(gpu_check_train.overhead_only(py, tmp))
    text = "\n".join(
        [
            "# make gpu-check: where the step overhead goes (GPU_CHECK_ONLY=overhead)",
            "",
            f"Measured by tools/gpu_check.py on {device_meta(torch, {}, '')['date']}: "
            f"{torch.cuda.get_device_name(0)}, driver {driver_version()}, PyTorch {torch.__version__}; "
            "tests/scripts/gpu_train_workload.py, one run each, medians of its steps.",
            "",
            "| run | training step ms (added) | tiny launch us (added) |",
            "|---|---|---|",
        ]
        + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    )
    print(write_report(text + "\n"))
    return 0


def train_only(torch, py, tmp):
    """GPU_CHECK_ONLY=train: the training view alone, its own report."""
    import gpu_check_train

    def write(rows, checks, overhead=()):
        meta = device_meta(
            torch,
            gpu_check_train.LAST_STATS,
            f"the training view alone (GPU_CHECK_ONLY=train), {gpu_check_train.STEPS}",
        )
        meta["warmup"] = 3
        return write_report(report(meta, [], checks, {}, "", rows, overhead))

    rows, checks, overhead = gpu_check_train.run_all(py, tmp, write)
    print(write(rows, checks, overhead))
    return 0 if all(good for _t, good in checks) else 1


def main():
    t_start = time.perf_counter()
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
    if ONLY == "train":
        return train_only(torch, sys.executable, tmp)
    if ONLY == "overhead":
        return overhead_only(torch, sys.executable, tmp)
    py = sys.executable
    markers = marker_lines(open(WORKLOAD).read())
    checks = []
    # torch.compile's first call with a cold cache autotunes: Inductor runs
    # benchmark kernels (7.8 ms on an H100) that a later process, reading the
    # cache, does not. A plain run first, so that every run compared is warm.
    rw, _ = run([py, WORKLOAD, str(STEPS)])  # also the plain steps' time
    checks.append(
        (f"a plain run warmed torch.compile's caches first (exit {rw.returncode})", rw.returncode == 0)
    )
    # lprof --gpu asks Inductor for its provenance map, part of Inductor's
    # cache key: a short run under lprof warms that variant of the cache too
    rw2, _ = run([py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, "warm.lprof"), WORKLOAD, "1"])
    checks.append(
        (
            f"a short lprof --gpu run warmed the cache of lprof's compile variant (exit {rw2.returncode})",
            rw2.returncode == 0,
        )
    )
    prof_path, folded = os.path.join(tmp, "p.lprof"), os.path.join(tmp, "gpu.folded")
    r, _ = run(
        [
            py,
            "-m",
            "lprof",
            "--gpu",
            "-o",
            prof_path,
            "--stacks",
            folded,
            "--stacks-metric",
            "gpu",
            WORKLOAD,
            str(STEPS),
        ]
    )
    listing = r.stdout + ("\n" + r.stderr if r.returncode else "")
    checks.append((f"lprof --gpu ran the workload (exit {r.returncode})", r.returncode == 0))
    doc = export(py, prof_path, tmp, "p.json") if r.returncode == 0 else {}
    gpu = doc.get("gpu", {})
    lprof_lines, stats = workload_rows(gpu.get("lines", [])), gpu.get("stats", {})
    tensor_lines = workload_rows((gpu.get("tensor_memory") or {}).get("lines", []))
    if doc:
        save("p.json", json.dumps(doc))
    if os.path.exists(folded):
        save("gpu.folded", open(folded).read())

    torch_out = os.path.join(tmp, "torch.json")
    r3, _ = run([py, "-c", TORCH_PROFILE, WORKLOAD, torch_out, os.path.join(ROOT, "tools"), str(STEPS)])
    checks.append((f"torch.profiler ran the workload (exit {r3.returncode})", r3.returncode == 0))
    torch_lines = json.load(open(torch_out)) if r3.returncode == 0 else {}
    if torch_lines:
        save("torch.json", json.dumps(torch_lines))

    rows, compared = compare(lprof_lines, torch_lines, markers)
    checks += compared
    checks += copy_checks(lprof_lines, markers, STEPS)
    cpu = lprof_lines.get(markers["cpu"], {})
    checks.append(
        ("the CPU-only line has no GPU time", bool(doc) and not cpu.get("kernel_s") and not cpu.get("copy_s"))
    )
    checks += join_checks(stats)
    checks.append(leaf_check(open(folded).read() if os.path.exists(folded) else ""))
    checks += tensor_checks(tensor_lines, markers, STEPS)
    checks.append(
        generated_code_check(doc) if doc else ("no line of generated code is charged (no profile)", False)
    )

    checks.append(uninitialised_check(py, tmp, "uninitialised", UNINITIALISED, "starting lprof"))
    checks.append(
        uninitialised_check(py, tmp, "uninitialised_torch", UNINITIALISED_TORCH, "`import torch` under lprof")
    )

    line_prof = os.path.join(tmp, "l.lprof")
    rl, _ = run([py, "-m", "lprof", "-l", "--gpu", "-o", line_prof, WORKLOAD, str(STEPS)])
    line_cols = line_mode_columns(line_prof) if rl.returncode == 0 else {}
    checks += line_mode_checks(line_cols, lprof_lines, markers)

    inner_prof = os.path.join(tmp, "inner.lprof")
    ri, _ = run(
        [
            py,
            "-m",
            "lprof",
            "--gpu",
            "-o",
            inner_prof,
            WORKLOAD,
            str(STEPS),
            "--profile-inside",
            str(STEPS // 2),
        ]
    )
    inner_lines = (
        workload_rows(export(py, inner_prof, tmp, "inner.json").get("gpu", {}).get("lines", []))
        if ri.returncode == 0
        else {}
    )
    checks += inner_profiler_checks(ri.stdout, ri.stderr)
    per_step = lprof_lines.get(markers["matmul"], {}).get("kernels", 0) / (STEPS + WARMUP)
    got = inner_lines.get(markers["matmul"], {}).get("kernels", 0)
    want = per_step * (STEPS // 2 + WARMUP)
    checks.append(
        (
            f"after the hand-over lprof charged no more matmul kernels ({got:.0f}, "
            f"{want:.0f} launched before it)",
            bool(inner_lines) and abs(got - want) <= 0.01 * want,
        )
    )

    meta = device_meta(torch, stats, STEPS)

    step_rows, step_checks = steps_overhead(rw.stdout, r.stdout, r3.stdout)
    checks += step_checks
    train_rows = []

    def write(runs):
        return write_report(report(meta, rows, checks, runs, listing, train_rows, step_rows))

    write({})  # the checks so far are kept even if what follows does not finish
    import traceback

    import gpu_check_train

    try:
        train_rows, train_checks, train_overhead = gpu_check_train.run_all(
            py,
            tmp,
            lambda r, c: save("gpu-check-train-partial.md", report(meta, rows, checks + c, {}, "", r)),
        )
    except Exception as exc:  # the report keeps what ran, and says where this broke
        LOG.append(traceback.format_exc())
        save("gpu-check.log", "\n".join(LOG))
        train_checks, train_overhead = [(f"the training view broke: {exc!r}"[:300], False)], []
    checks += train_checks
    step_rows += train_overhead
    write({})
    runs = {"plain": [], "lprof --gpu": [], "torch.profiler": []}
    for _ in range(ROUNDS):
        if time.perf_counter() - t_start > DEADLINE:
            break
        rp, tp = run([py, WORKLOAD, str(STEPS)])
        rl, tl = run(
            [py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, "o.lprof"), WORKLOAD, str(STEPS)]
        )
        rt, tt = run(
            [
                py,
                "-c",
                TORCH_PROFILE,
                WORKLOAD,
                os.path.join(tmp, "t.json"),
                os.path.join(ROOT, "tools"),
                str(STEPS),
            ]
        )
        if rp.returncode == rl.returncode == rt.returncode == 0:
            runs["plain"].append(tp)
            runs["lprof --gpu"].append(tl)
            runs["torch.profiler"].append(tt)
    print(write(runs))
    return 0 if all(good for _t, good in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
