"""The GPU columns of both listings (lprof --gpu): per line, device time of
the kernels and copies it launched (and its share), kernels run, bytes copied
host to device and back, device memory it allocated (lprof.model.sections
charges them by the one attribution rule)."""

from ..model.sections import GPU_BACKEND_NAMES, GPU_ROW_COLUMNS, gpu_line_columns
from .memory_report import fmt_bytes

HEADER = (
    f" {'GPU s':>9} {'GPU%':>6} {'bwd s':>9} {'comm s':>9} {'kernels':>8} {'H2D':>9} {'D2H':>9} "
    f"{'GPU mem':>9}"
)
BLANK = " " * len(HEADER)
LEGEND = (
    "GPU s = device time of the kernels and copies the line launched (* = partly from "
    "threads without Python, charged to the line that started them), GPU% = its share, "
    "bwd s = the part of GPU s run by autograd's backward for the ops the line created "
    "(PyTorch; in stacks under '[backward]'), "
    "comm s = the part of GPU s in collectives (NCCL, oneCCL kernels; compute is GPU s - comm s), "
    "kernels = kernels run (a torch.compile kernel's split across the lines it fuses), H2D / D2H = bytes copied to / from the device, GPU mem = "
    "device memory allocated (per tensor when PyTorch's allocator history was read)"
)


IDLE_HEADER = f" {'GPU idle':>10}"
IDLE_LEGEND = (
    "GPU idle = wall time of the line's own intervals (lprof -l) during which no "
    "kernel, copy or memset ran on any device"
)
SAMPLED_IDLE_LEGEND = (
    "GPU idle = time of the line's samples during which no kernel, copy or memset ran on any device"
)


def sampled_idle(profile, accept=None):
    """{(file, line): idle seconds} of a sampled run (empty without a GPU timeline)."""
    out = {}
    for path, line, _func, idle, _total in (profile.get("gpu") or {}).get("idle_lines", []):
        if accept is None or accept(path):
            out[(path, line)] = out.get((path, line), 0.0) + idle
    return out


def idle_cell(seconds):
    """The GPU idle cell of a line (lprof -l --gpu); blank where none was measured."""
    return f" {seconds:>10.6f}" if seconds is not None else " " * 11


def for_listing(profile, accept=None, functions=None):
    """{(file, line): columns} of lines whose file `accept` takes."""
    cols = gpu_line_columns(profile, functions=functions)
    if accept is None:
        return cols
    return {k: v for k, v in cols.items() if accept(k[0])}


def _count(n):
    """A count cell: whole, or with one decimal where a torch.compile
    kernel's launches were split across the lines it fuses."""
    n = round(n, 6)
    return f"{n:.0f}" if n == int(n) else f"{n:.1f}"


def cells(g, total):
    if not g:
        return BLANK
    mark = "*" if g.get("other_thread_s") else " "
    pct = f"{100.0 * g['gpu_s'] / total:5.1f}%" if total and g["gpu_s"] else ""
    secs = f"{g['gpu_s']:.6f}" if g["gpu_s"] else ""
    kernels = _count(g["kernels"]) if g["kernels"] else ""
    comm = f"{g['comm_s']:.6f}" if g.get("comm_s") else ""
    bwd = f"{g['backward_s']:.6f}" if g.get("backward_s") else ""
    return (
        f" {secs:>8}{mark} {pct:>6} {bwd:>9} {comm:>9} {kernels:>8} {fmt_bytes(g['h2d_bytes']):>9} "
        f"{fmt_bytes(g['d2h_bytes']):>9} {fmt_bytes(g['alloc_bytes']):>9}"
    )


def levelzero_summary(lz):
    """What the Level Zero collector could not time, said in the listing:
    Level Zero has no activity stream to show unknown work as unattributed."""
    out = []
    parts = [
        (
            lz.get("no_event", 0),
            "had no event to time them (lprof's event pool used up, or a command "
            "list made before lprof started)",
        ),
        (lz.get("reused", 0), "had their event signalled or reset again while they ran"),
        (lz.get("unfinished", 0), "were still running at the end or their event was destroyed first"),
        (lz.get("no_timestamps", 0), "had an event without kernel timestamps"),
    ]
    said = [f"{n} {why}" for n, why in parts if n]
    if said:
        out.append(
            f"  Level Zero: {lz.get('lost', 0)} of {lz.get('appends', 0)} kernels/copies not timed: "
            + "; ".join(said)
        )
    if lz.get("reexecuted"):
        out.append(
            f"  Level Zero: {lz['reexecuted']} kernels/copies of regular command lists executed "
            f"again, not timed (each list is timed at its first execution)"
        )
    if lz.get("untimed_calls"):
        out.append(
            f"  Level Zero: {lz['untimed_calls']} appends of work lprof does not time (image copies, graphs)"
        )
    if lz.get("loader_newer"):
        out.append(
            f"  Level Zero loader {lz.get('loader_version')} is newer than the calls lprof knows "
            f"(1.32): work appended by calls added since is not seen"
        )
    return out


def summary(profile):
    """Lines under a listing: backends used, totals, what was not charged."""
    gpu = profile.get("gpu")
    if not gpu:
        return []
    stats = gpu.get("stats") or {}
    join = stats.get("join", {})
    used = [GPU_BACKEND_NAMES.get(b, b) for b, s in (gpu.get("backends") or {}).items() if s == "active"]
    if not used:
        why = "; ".join(f"{GPU_BACKEND_NAMES.get(b, b)}: {s}" for b, s in (gpu.get("backends") or {}).items())
        return ["", f"GPU: none ({why})"]
    launches = sum(row[6] for row in gpu.get("lines", []))
    at = 3 + GPU_ROW_COLUMNS.index("gpu_comm_s")
    comm = sum(row[at] for row in gpu.get("lines", []) if len(row) > at)
    out = [
        "",
        f"GPU ({', '.join(used)}): {join.get('records', 0)} kernels/copies, "
        f"{join.get('device_ns', 0) / 1e9:.6f} s device time, {launches:.0f} launches "
        f"charged to lines",
    ]
    if comm:
        out.append(f"  {comm:.6f} s of it in collectives (NCCL, oneCCL kernels: the comm s column)")
    at = 3 + GPU_ROW_COLUMNS.index("gpu_backward_s")
    bwd = sum(row[at] for row in gpu.get("lines", []) if len(row) > at)
    if bwd:
        out.append(
            f"  {bwd:.6f} s of it run by backward for ops of forward lines (the bwd s column, "
            f"stacks under '[backward]')"
        )
    compiled = stats.get("compiled") or {}
    if compiled.get("kernels"):
        n = compiled["kernels"]
        out.append(
            f"  {compiled.get('gpu_s', 0.0):.6f} s of it in {n} torch.compile kernel{'s' if n > 1 else ''} "
            f"charged to the source lines they fuse, split evenly (stacks under '[compiled: ...]')"
        )
    if join.get("unattributed"):
        out.append(
            f"  {join['unattributed']} records had no launch record (stack "
            f"'[GPU work without a launch record]')"
        )
    if join.get("late"):
        out.append(
            f"  {join['late']} records arrived after their launch's slot was reused; "
            f"charged to their launch all the same"
        )
    if join.get("aged_out"):
        out.append(f"  {join['aged_out']} launches aged out before their records arrived")
    if join.get("graph_joined"):
        out.append(
            f"  {join['graph_joined']} kernels/copies of CUDA graph replays charged to the lines "
            f"captured into the graph (stacks under '[graph replay]')"
        )
    if join.get("graph_missed"):
        out.append(
            f"  {join['graph_missed']} kernels/copies of CUDA graph replays had no captured line "
            f"(graph captured before lprof started, or past its node table): charged to the replay line"
        )
    out.extend(levelzero_summary(stats.get("levelzero") or {}))
    out.extend(f"  {note}" for note in gpu.get("notes", []))
    tensors = gpu.get("tensor_memory")
    tl = stats.get("timeline", {})
    if tl.get("dropped"):
        out.append(
            f"  GPU timeline: {tl['dropped']} kernels/copies past its {tl.get('capacity', 0)} "
            f"(LPROF_GPU_TRACE_MAX) are not in the Chrome trace nor in GPU idle time"
        )
    if tl.get("line_spans_dropped"):
        out.append(
            f"  GPU idle: {tl['line_spans_dropped']} line intervals past the "
            f"{tl.get('line_spans', 0)} kept (LPROF_GPU_SPANS_MAX) are not counted"
        )
    if tensors:
        from .tensor_memory import summary as tensor_summary

        out.extend(tensor_summary(tensors))
    mem = stats.get("memory", {})
    if mem.get("allocs"):
        out.append(
            f"  device memory: peak {fmt_bytes(mem.get('peak_bytes', 0)) or '0 B'}, "
            f"{mem.get('allocs', 0)} allocations"
        )
    return out
