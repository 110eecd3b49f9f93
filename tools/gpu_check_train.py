"""make gpu-check, the training view (issue #36): tests/scripts/gpu_train_workload.py,
a training step whose forward lines are the program's, a pinned batch copy,
a `.item()`, a launch-bound loop of tiny kernels, a large captured CUDA
graph and a sleep while the GPU is idle, run:

- plain (its step times), under `lprof --gpu` and under torch.profiler
  (CPU + CUDA, with stacks): per line, device time within 5% and kernels
  exactly; each forward line's backward (lprof's `[backward]` work) against
  torch.profiler's backward ops joined by autograd sequence number to that
  line's forward ops; the copy's bytes exact; the tiny loop's kernels exact
  after it wrapped lprof's launch ring; the graph replay's kernels exact;
  nothing unattributed, aged out or incomplete;
- a torch.compile'd three-line function: its fused kernel split over its
  lines (Inductor's provenance), together torch.profiler's calling line;
- tensor memory after the allocator history wrapped: the 1 GiB tensor held
  from the start live at exit on its line, the peak equal to the allocator's
  own, backward allocations on lines (none frameless);
- the Chrome trace export: a device track, every kernel there, every flow's
  launch at or before its kernel's start (CUPTI's clock against the host's);
- `lprof -l --gpu`: GPU idle on the sleep line (the GPU idle throughout) and
  not on the `.item()` line (the GPU busy); the forward call's line has the
  forward lines' kernels, backward included;
- `lprof --gpu -i 1`, and with PYTORCH_CUDA_ALLOC_CONF expandable segments
  (cuMemMap) and the cudaMallocAsync backend: the program's output unchanged,
  the same kernels per line as the first run, nothing unattributed;
- step overhead: the steps alone (the program times them, synchronised),
  lprof's added time at most a third of torch.profiler's.

The comparisons are plain functions, unit-tested without a GPU
(tests/python/test_gpu_check_train.py)."""

import json
import os
import re

import gpu_check

ROOT = gpu_check.ROOT
WORKLOAD = os.path.join(ROOT, "tests", "scripts", "gpu_train_workload.py")
STEPS = int(os.environ.get("GPU_CHECK_TRAIN_STEPS", "20"))
TINY = int(os.environ.get("GPU_CHECK_TINY", "13000"))  # per step: (3 + 20) x 13000 > 2^18 launches
TINY_REFERENCE = 2000  # torch.profiler's run: its trace of 300k kernels would take minutes to write
NODES = 1000  # captured loop iterations: 2000 kernels per replay
FORWARD = ("fwd fc1", "fwd gelu", "fwd fc2", "fwd loss")
# not the .item() line: a 4-byte copy a step, whose time is noise between runs
COMPARED = FORWARD + ("batch", "backward", "optimizer", "graph replay")
SAME_COUNTS = COMPARED + ("captured",)  # lines whose kernels every lprof run must count alike
OVERHEAD_SHARE = 1 / 3  # lprof's added step time at most a third of torch.profiler's
IDLE_SHARE = 0.9  # the sleep line: the GPU idle for at least this share of its time
BUSY_SHARE = 0.25  # the .item() line: idle for at most this share
FLOW_SLACK_US = 1.0  # a kernel cannot start before its launch call; the clocks' pairing error

# ---- pure functions (unit-tested without a GPU) ----


def program_info(stdout):
    """The workload's `gpu-check-train {json}` line, {} if absent."""
    m = re.search(r"^gpu-check-train (\{.*\})$", stdout or "", re.M)
    return json.loads(m.group(1)) if m else {}


def forward_checks(lprof_lines, torch_lines, markers):
    """Each forward line: its backward work against torch.profiler's backward
    ops of its forward ops; the backward() line keeps none of it. Its whole
    time and kernels are compared with the other lines (gpu_check.compare)."""
    out = []
    bwd_total = 0.0
    for name in FORWARD:
        ln = markers[name]
        ours = lprof_lines.get(ln, {}).get("backward_s", 0.0)
        bwd_total += ours
        out.append(
            (
                f"line {ln} ({name}) has its backward: lprof {ours * 1e3:.2f} ms, torch.profiler "
                f"{torch_lines.get(f'backward:{ln}', 0.0) * 1e3:.2f} ms",
                ours > 0,
            )
        )
    ln = markers["backward"]
    left = lprof_lines.get(ln, {})
    left_s = left.get("backward_s", 0.0) + left.get("other_thread_s", 0.0)
    out.append(
        (
            f"the backward() line keeps none of the backward's device time: {left_s * 1e3:.3f} ms "
            f"there, {bwd_total * 1e3:.2f} ms on the forward lines",
            bwd_total > 0 and left_s <= 0.01 * bwd_total,
        )
    )
    return out


COMPILED = ("compiled a", "compiled b", "compiled c")  # one function, fused into one kernel


def compiled_checks(lprof_lines, torch_lines, markers, tolerance=gpu_check.TOLERANCE):
    """torch.compile's kernel on the lines it fused (Inductor's provenance):
    the three lines of the compiled function together have the device time
    and kernels torch.profiler charges to the line calling it, each about a
    third (an even split), and the calling line keeps none."""
    call = markers["compiled call"]
    ours = [lprof_lines.get(markers[n], {}) for n in COMPILED]
    ours_s = sum(r.get("kernel_s", 0.0) + r.get("copy_s", 0.0) for r in ours)
    ours_k = sum(r.get("kernels", 0) for r in ours)
    theirs, their_k = torch_lines.get(str(call), 0.0), torch_lines.get(f"kernels:{call}", 0)
    kept = lprof_lines.get(call, {})
    kept_s = kept.get("kernel_s", 0.0) + kept.get("copy_s", 0.0)
    ratio = ours_s / theirs if theirs else float("nan")
    shares = [(r.get("kernel_s", 0.0) + r.get("copy_s", 0.0)) / ours_s if ours_s else 0.0 for r in ours]
    return [
        (
            f"torch.compile: the compiled function's 3 lines {ours_s * 1e3:.2f} ms, torch.profiler's "
            f"calling line {theirs * 1e3:.2f} ms (ratio {ratio:.3f}, within {tolerance:.0%})",
            bool(theirs) and abs(ratio - 1) <= tolerance,
        ),
        (
            f"torch.compile: {ours_k:.3f} kernels on the 3 lines, torch.profiler {their_k:.0f}",
            bool(their_k) and abs(ours_k - their_k) < 1e-6 * max(1, their_k),
        ),
        (
            "torch.compile: each line a third of it (" + ", ".join(f"{x:.3f}" for x in shares) + ")",
            all(abs(x - 1 / 3) <= 0.01 for x in shares),
        ),
        (
            f"torch.compile: the calling line keeps {kept_s * 1e3:.3f} ms of device time",
            bool(ours_s) and kept_s <= 0.01 * ours_s,
        ),
    ]


def count_checks(lprof_lines, markers, info, what="lprof --gpu"):
    """Kernels and bytes the program knows it made: the tiny loop's (after
    it wrapped the launch ring), the graph replay's, the batch copy's."""
    tiny = lprof_lines.get(markers["tiny"], {}).get("kernels", 0)
    replay = lprof_lines.get(markers["captured"], {}).get("kernels", 0)
    left = lprof_lines.get(markers["graph replay"], {}).get("kernels", 0)
    copied = lprof_lines.get(markers["batch"], {}).get("h2d_bytes", 0)
    return [
        (
            f"{what}: the tiny loop's line ran {tiny:.0f} kernels, the program launched "
            f"{info.get('tiny_kernels', 0)}",
            bool(info) and tiny == info.get("tiny_kernels"),
        ),
        (
            f"{what}: the line captured into the graph ran {replay:.0f} kernels in the replays, which "
            f"hold {info.get('replay_kernels', 0)}; the replay line kept {left:.0f}",
            bool(info) and replay == info.get("replay_kernels") and not left,
        ),
        (
            f"{what}: the batch line copied {copied:.0f} bytes to the device, the batches hold "
            f"{info.get('batch_bytes', 0)}",
            bool(info) and copied == info.get("batch_bytes"),
        ),
    ]


def same_counts(first, other, markers, what, names=SAME_COUNTS):
    """Another run of the same workload counts the same kernels per line."""
    diff = [
        f"{n} {first.get(markers[n], {}).get('kernels', 0):.0f}/{other.get(markers[n], {}).get('kernels', 0):.0f}"
        for n in names
        if first.get(markers[n], {}).get("kernels", 0) != other.get(markers[n], {}).get("kernels", 0)
    ]
    total = sum(other.get(markers[n], {}).get("kernels", 0) for n in names)
    return (
        f"{what}: the same kernels per line as the first run ({total:.0f} on {len(names)} lines"
        + (f"; differ: {', '.join(diff)}" if diff else "")
        + ")",
        bool(other) and not diff,
    )


def tensor_wrap_checks(doc, markers, info, path):
    """Tensor memory after the allocator history wrapped: the tensor held
    from the start is live at exit on its line; the replay's peak is the
    allocator's own (the program's requested_bytes.all.peak); backward's
    allocations are on lines."""
    tm = (doc.get("gpu") or {}).get("tensor_memory") or {}
    dev = ((tm.get("stats") or {}).get("devices") or [{}])[0]
    lines = {r["line"]: r for r in tm.get("lines", []) if r.get("file") == path}
    held = lines.get(markers["hold"], {}).get("live_bytes", 0)
    want_peak = info.get("requested_peak", 0)
    peak = dev.get("peak_bytes", 0)
    return [
        (
            f"tensor memory: the history wrapped ({dev.get('trace_entries', 0)} entries kept)",
            bool(dev.get("window_full")),
        ),
        (
            f"tensor memory: the tensor held from the start is live at exit on its line: {held:.0f} bytes, "
            f"the tensor {info.get('hold_bytes', 0)}",
            bool(info) and held == info.get("hold_bytes"),
        ),
        (
            f"tensor memory: peak {peak:.0f} bytes, the allocator's requested_bytes.all.peak {want_peak:.0f}",
            bool(want_peak) and abs(peak - want_peak) <= 0.001 * want_peak,
        ),
        (
            f"tensor memory: backward allocated {dev.get('backward_bytes', 0):.0f} bytes on lines, "
            f"{dev.get('frameless_bytes', 0):.0f} bytes frameless",
            dev.get("backward_bytes", 0) > 0 and not dev.get("frameless_bytes", 0),
        ),
    ]


def devmem_check(doc, info, what):
    """Device memory as the driver hands it out (cudaMalloc, cuMemMap with
    expandable segments, pool allocations with cudaMallocAsync): its peak
    holds at least the tensor held throughout."""
    mem = (((doc.get("gpu") or {}).get("stats") or {}).get("memory")) or {}
    peak, hold = mem.get("peak_bytes", 0), info.get("hold_bytes", 0)
    return (
        f"{what}: device memory {mem.get('allocs', 0)} allocations, peak {peak:.0f} bytes "
        f"(the held tensor {hold})",
        bool(hold) and mem.get("allocs", 0) > 0 and peak >= hold,
    )


def chrome_checks(events, records):
    """The Chrome trace export: a GPU device process, every record of the
    GPU timeline there (kernels, copies, fills: `records`, the store's own
    count), and every flow's launch at or before the start of the work it
    launched (CUPTI's clock brought onto the host's)."""
    procs = {
        e.get("pid"): e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    gpu_pids = {pid for pid, name in procs.items() if name.startswith("GPU ")}
    shown = sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).startswith("gpu,"))
    starts, ends = {}, {}
    for e in events:
        if e.get("ph") == "s":
            starts[e.get("id")] = e["ts"]
        elif e.get("ph") == "f":
            ends[e.get("id")] = e["ts"]
    paired = [(starts[i], ends[i]) for i in starts if i in ends]
    late = sum(1 for s, f in paired if s > f + FLOW_SLACK_US)
    worst = max((s - f for s, f in paired), default=0.0)
    return [
        (f"Chrome trace: {len(gpu_pids)} GPU device process(es)", bool(gpu_pids)),
        (
            f"Chrome trace: {shown} kernels, copies and fills on the device tracks, the GPU timeline "
            f"kept {records:.0f}",
            bool(records) and shown == records,
        ),
        (
            f"Chrome trace: {len(paired)} launch-to-work flows, {late} with the work starting before its "
            f"launch (latest by {worst:.2f} us; allowed {FLOW_SLACK_US} us)",
            bool(records) and len(paired) >= 0.99 * records and late == 0,
        ),
    ]


def idle_checks(line_prof, markers):
    """lprof -l --gpu's GPU idle: the sleep line (after a synchronize) idle
    throughout, the .item() line (waiting for queued kernels) hardly."""
    out = []
    for name, test, want in (
        ("sleep", lambda r: r >= IDLE_SHARE, f"at least {IDLE_SHARE:.0%}"),
        ("item", lambda r: r <= BUSY_SHARE, f"at most {BUSY_SHARE:.0%}"),
    ):
        ln = markers[name]
        spent, idle = line_prof.get("time", {}).get(ln, 0.0), line_prof.get("idle", {}).get(ln, 0.0)
        share = idle / spent if spent else float("nan")
        out.append(
            (
                f"lprof -l --gpu: the {name} line's GPU idle {idle * 1e3:.2f} ms of its {spent * 1e3:.2f} ms "
                f"({share:.1%}; {want})",
                bool(spent) and bool(line_prof.get("idle")) and test(share) and idle <= spent * 1.0001,
            )
        )
    return out


def overhead_rows(times):
    """times: {run: {"train_step_s", "tiny_launch_s"}} for "plain",
    "lprof --gpu" and "torch.profiler". Rows (what, plain, lprof, torch,
    lprof added / torch added) and checks: lprof's added time at most
    OVERHEAD_SHARE of torch.profiler's."""
    rows, checks = [], []
    plain, ours, theirs = (times.get(k, {}) for k in ("plain", "lprof --gpu", "torch.profiler"))
    for key, what in (("train_step_s", "training step"), ("tiny_launch_s", "tiny kernel launch")):
        p, o, t = plain.get(key), ours.get(key), theirs.get(key)
        if not (p and o and t):
            checks.append((f"step overhead, {what}: not measured", False))
            continue
        share = (o - p) / (t - p) if t > p else float("inf")
        rows.append((what, p, o, t, share))
        checks.append(
            (
                f"step overhead, {what}: lprof adds {(o - p) * 1e6:.1f} us, torch.profiler "
                f"{(t - p) * 1e6:.1f} us ({share:.2f} of it; at most {OVERHEAD_SHARE:.2f})",
                share <= OVERHEAD_SHARE,
            )
        )
    return rows, checks


# ---- the runs (need a GPU) ----

LAST_STATS = {}  # the GPU stats of the last lprof --gpu run (CUPTI's version for the report)


DEVICE = os.environ.get("GPU_CHECK_TRAIN_DEVICE", "cuda")  # cpu: a dry run of the orchestration


def _args(tiny=TINY):
    return ["--steps", str(STEPS), "--tiny", str(tiny), "--nodes", str(NODES), "--device", DEVICE]


def _lines(doc):
    return {r["line"]: r for r in (doc.get("gpu") or {}).get("lines", []) if r.get("file") == WORKLOAD}


def _line_mode(prof_path):
    """{"time": {line: s}, "idle": {line: s}, "gpu": {line: GPU columns}} of
    the workload's train_step in an lprof -l profile."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "python"))
    from lprof.model import profile_file
    from lprof.model.sections import gpu_line_columns

    prof = profile_file.load(prof_path)
    out = {"time": {}, "idle": {}, "gpu": {}}
    for fn in prof.get("functions", []):
        if fn.get("file") == WORKLOAD:
            out["time"].update({ln: t for ln, _hits, t in fn.get("lines", [])})
            out["idle"].update({ln: s for ln, s in fn.get("gpu_idle", [])})
    cols = gpu_line_columns(prof, functions=prof["functions"])
    out["gpu"] = {line: c for (path, line), c in cols.items() if path == WORKLOAD}
    return out


def _ran(checks, what, r):
    ok = r.returncode == 0 and "ok" in r.stdout.splitlines()
    checks.append((f"{what} ran the training workload (exit {r.returncode}, printed ok: {ok})", ok))
    return ok


def run_all(py, tmp, progress=lambda rows, checks: None):
    """Every run and check of the training view: (rows, checks, overhead
    rows). progress(rows, checks) is called after each stage, so a report
    written there survives a lease that ends first."""
    run, export, save = gpu_check.run, gpu_check.export, gpu_check.save
    markers = gpu_check.marker_lines(open(WORKLOAD).read())
    checks, times = [], {}

    rp, _ = run([py, WORKLOAD] + _args())
    if _ran(checks, "a plain run", rp):
        times["plain"] = program_info(rp.stdout)

    # lprof's compile variant (Inductor's provenance map is in its cache key)
    # warmed by a short run, so that the measured one does not autotune
    rw, _ = run(
        [py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, "w.lprof"), WORKLOAD]
        + ["--steps", "1", "--warmup", "0", "--tiny", "10", "--nodes", "10", "--device", DEVICE]
    )
    _ran(checks, "a short lprof --gpu run (compile cache warm-up)", rw)
    prof = os.path.join(tmp, "train.lprof")
    r1, _ = run([py, "-m", "lprof", "--gpu", "-q", "-o", prof, WORKLOAD] + _args())
    doc = export(py, prof, tmp, "train.json") if _ran(checks, "lprof --gpu", r1) else {}
    info = program_info(r1.stdout)
    times["lprof --gpu"] = info
    lprof_lines = _lines(doc)
    LAST_STATS.clear()
    LAST_STATS.update((doc.get("gpu") or {}).get("stats", {}))
    if doc:
        save("train.json", json.dumps(doc))

    tout = os.path.join(tmp, "train-torch.json")
    rt, _ = run(
        [py, "-c", gpu_check.TORCH_PROFILE, WORKLOAD, tout, os.path.join(ROOT, "tools")]
        + _args(TINY_REFERENCE)
    )
    torch_lines = json.load(open(tout)) if _ran(checks, "torch.profiler", rt) else {}
    times["torch.profiler"] = program_info(rt.stdout)
    if torch_lines:
        save("train-torch.json", json.dumps(torch_lines))

    rows, compared = gpu_check.compare(lprof_lines, torch_lines, markers, names=COMPARED)
    checks += compared
    checks.append(
        (
            f"torch.profiler's reference: {torch_lines.get('how')} (no backward op unmapped)",
            bool(torch_lines) and not (torch_lines.get("how") or {}).get("backward unmapped"),
        )
    )
    checks += forward_checks(lprof_lines, torch_lines, markers)
    checks += compiled_checks(lprof_lines, torch_lines, markers)
    progress(rows, checks)
    checks += count_checks(lprof_lines, markers, info)
    checks += gpu_check.join_checks((doc.get("gpu") or {}).get("stats", {}))
    checks += tensor_wrap_checks(doc, markers, info, WORKLOAD)
    checks.append(devmem_check(doc, info, "lprof --gpu"))

    trace = os.path.join(tmp, "train-trace.json")
    rc, _ = run([py, "-m", "lprof", "export", prof, "--format", "chrome", "-o", trace])
    events = []
    if rc.returncode == 0 and os.path.exists(trace):
        loaded = json.load(open(trace))
        events = loaded.get("traceEvents", []) if isinstance(loaded, dict) else loaded
    records = (((doc.get("gpu") or {}).get("stats") or {}).get("timeline") or {}).get("records", 0)
    checks += chrome_checks(events, records) if events else [("Chrome trace export (failed)", False)]
    progress(rows, checks)

    lprof_l = os.path.join(tmp, "train-l.lprof")
    rl, _ = run([py, "-m", "lprof", "-l", "--gpu", "-q", "-o", lprof_l, WORKLOAD] + _args(TINY_REFERENCE))
    line_prof = _line_mode(lprof_l) if _ran(checks, "lprof -l --gpu", rl) else {}
    checks += idle_checks(line_prof, markers)
    progress(rows, checks)
    fwd_kernels = sum(lprof_lines.get(markers[n], {}).get("kernels", 0) for n in FORWARD)
    got = (line_prof.get("gpu") or {}).get(markers["forward call"], {}).get("kernels", 0)
    checks.append(
        (
            f"lprof -l --gpu: the forward call's line ran {got:.0f} kernels, forward and backward; "
            f"the forward lines {fwd_kernels:.0f} in the sampled run",
            bool(fwd_kernels) and got == fwd_kernels,
        )
    )

    for what, extra, env in (
        ("lprof --gpu -i 1", ["-i", "1"], {}),
        ("expandable segments", [], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
        ("cudaMallocAsync", [], {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
    ):
        path = os.path.join(tmp, "train-%d.lprof" % len(checks))
        os.environ.update(env)
        try:
            r, _ = run([py, "-m", "lprof", "--gpu", "-q"] + extra + ["-o", path, WORKLOAD] + _args())
        finally:
            for k in env:
                os.environ.pop(k, None)
        other = export(py, path, tmp, "other.json") if _ran(checks, what, r) else {}
        checks.append(same_counts(lprof_lines, _lines(other), markers, what))
        checks += count_checks(_lines(other), markers, program_info(r.stdout), what)[:1]
        join = ((other.get("gpu") or {}).get("stats") or {}).get("join", {})
        checks.append(
            (
                f"{what}: {join.get('unattributed', '?')} unattributed, {join.get('aged_out', '?')} aged out "
                f"of {join.get('records', 0)} records",
                join.get("records", 0) > 0 and join.get("unattributed") == 0 and join.get("aged_out") == 0,
            )
        )
        checks.append(devmem_check(other, program_info(r.stdout), what))
        progress(rows, checks)

    orows, ochecks = overhead_rows(times)
    return rows, checks + ochecks, orows


# GPU_CHECK_ONLY=overhead: where lprof --gpu's step overhead goes (the H200
# run of 2026-11-27 found it far above a third of torch.profiler's)
VARIANTS = (
    ("plain", None, {}),
    ("lprof --gpu", [], {}),
    ("lprof --gpu, no allocator history", [], {"LPROF_TORCH_MEMORY": "0"}),
    ("lprof --gpu, no backward mapping", [], {"LPROF_GPU_BACKWARD": "0"}),
    ("lprof --gpu, neither", [], {"LPROF_TORCH_MEMORY": "0", "LPROF_GPU_BACKWARD": "0"}),
    ("torch.profiler", "torch", {}),
)


def overhead_table(times):
    """times: {variant: program_info}. Rows (variant, training step ms,
    tiny launch us, each added over plain)."""
    plain = times.get("plain") or {}
    rows = []
    for name, _how, _env in VARIANTS:
        t = times.get(name) or {}
        step, tiny = t.get("train_step_s"), t.get("tiny_launch_s")
        if not (step and tiny and plain):
            rows.append((name, "n/a", "n/a"))
            continue
        rows.append(
            (
                name,
                f"{step * 1e3:.3f} (+{(step - plain['train_step_s']) * 1e3:.3f})",
                f"{tiny * 1e6:.2f} (+{(tiny - plain['tiny_launch_s']) * 1e6:.2f})",
            )
        )
    return rows


def overhead_only(py, tmp, tiny=2000):
    """Each variant once, the same small workload: {variant: program_info}."""
    args = ["--steps", str(STEPS), "--tiny", str(tiny), "--nodes", "10", "--device", DEVICE, "--no-compile"]
    times = {}
    for name, how, env in VARIANTS:
        os.environ.update(env)
        try:
            if how is None:
                cmd = [py, WORKLOAD] + args
            elif how == "torch":
                cmd = [py, "-c", gpu_check.TORCH_PROFILE, WORKLOAD, os.path.join(tmp, "o.json")]
                cmd += [os.path.join(ROOT, "tools")] + args
            else:
                cmd = [py, "-m", "lprof", "--gpu", "-q", "-o", os.path.join(tmp, "o.lprof"), WORKLOAD] + args
            r, _ = gpu_check.run(cmd)
        finally:
            for k in env:
                os.environ.pop(k, None)
        times[name] = program_info(r.stdout) if r.returncode == 0 else {}
    return times
