"""The per-line sections of a profile ("sampling", "memory", "gpu" lines),
derived from its stacks section by the one attribution rule
(lprof.model.stacks): what a collector gives at the end of a run, and what a
merge of several profiles rebuilds. Pure functions of profile data: no
collector, no C state read (the column lists and the leak rule are C's)."""

from .. import _lprof
from .frames import GPU, MARKER, table as frame_table
from . import stacks as stacks_model

# Each section's columns in column order, from the one list (the group tags of
# src/aggregate/metrics.h): a sampling line's times and samples, the columns
# a memory line sums (the leak rule's inputs among them; the rule itself is
# C's, src/aggregate/leak.h), a GPU line's columns in listing order.
_GROUPS = _lprof.metric_groups()
SAMPLING_METRICS = tuple(_GROUPS["sampling"])
MEMORY_COLUMNS = tuple(_GROUPS["memory"])
GPU_COLUMNS = tuple(_GROUPS["gpu"])
# a "sampling" line's times, after its file, line and function (then samples)
SAMPLING_LINE_COLUMNS = stacks_model.CPU_COLUMNS + ("wall_s",)
# the gpu section's line rows after (file, line, function); files before the
# comm and backward columns end early
GPU_LINE_COLUMNS = (
    "kernel_s",
    "copy_s",
    "kernels",
    "launches",
    "h2d_bytes",
    "d2h_bytes",
    "d2d_bytes",
    "alloc_bytes",
    "peak_bytes",
    "other_thread_s",
    "comm_s",
    "backward_s",
)

ORPHAN_MARKER = "[GPU work from a thread without Python]"
GPU_BACKEND_NAMES = {"cuda": "CUDA", "levelzero": "Level Zero"}


def sampling_line_rows(stacks, per_line=None):
    """The "sampling" section's per-line rows, from a stacks section by the
    one attribution rule (also what a merge of several profiles rebuilds)."""
    if per_line is None:
        per_line = stacks_model.lines(stacks, names=SAMPLING_METRICS)
    return sorted(
        [
            [f, ln, func]
            + [round(row.get(n, 0.0), 9) for n in SAMPLING_LINE_COLUMNS]
            + [int(row.get("samples", 0))]
            for (f, ln, func), row in per_line.items()
        ]
    )


def memory_section(raw, stacks):
    """The "memory" section: totals from _lprof.memory_snapshot(), per-line
    rows and leaks from the stack model (one attribution rule)."""
    peak = raw.get("peak_bytes", 0.0)
    duration = max(raw.get("duration_s", 0.0), 1e-9)
    out_lines, leaks = [], []
    for (path, line, func), c in stacks_model.lines(stacks, names=MEMORY_COLUMNS).items():
        alloc, freed = c.get("alloc_bytes", 0), c.get("freed_bytes", 0)
        if not alloc and not freed:
            continue
        net = alloc - freed
        out_lines.append(
            [
                path,
                line,
                func,
                round(alloc),
                round(freed),
                round(net),
                round(c.get("peak_bytes", 0)),
                (c.get("python_bytes", 0) / alloc) if alloc else 0.0,
                round(c.get("alloc_count", 0)),
            ]
        )
        is_leak, slope, _span, score = _lprof.leak_judge(
            c.get("alloc_samples", 0),
            c.get("free_samples", 0),
            c.get("survivors", 0),
            c.get("survivor_bytes", 0),
            c.get("survivor_t_ms", 0),
            c.get("survivor_t2_ms2", 0),
            net,
            peak,
            duration,
        )
        if is_leak:
            leaks.append((net, [path, line, func, slope, score]))
    out_lines.sort(key=lambda r: -r[3])
    # the line that lost the most memory first (a growth rate favours short bursts)
    leaks = [row for _net, row in sorted(leaks, key=lambda nr: -nr[0])]
    return {
        "sample_bytes": raw.get("sample_bytes", 0),
        "native_covered": bool(raw.get("native_covered", False)),
        "peak_bytes": round(peak),
        "peak_time_s": raw.get("peak_time_s", 0.0),
        "live_bytes": round(raw.get("live_bytes", 0.0)),
        "timeline": raw.get("timeline", []),
        "lines": out_lines,
        "leaks": leaks,
        "stats": raw.get("stats", {}),
    }


def memory_line_columns(profile):
    """{(file, line): {alloc_bytes, freed_bytes, net_bytes, peak_bytes,
    peak_share, python_share, count}} from a profile's "memory" section."""
    mem = profile.get("memory") or {}
    peak = mem.get("peak_bytes") or 0
    out = {}
    for path, line, _func, alloc, freed, net, at_peak, py_share, count in mem.get("lines", []):
        e = out.get((path, line))
        if e is None:
            out[(path, line)] = {
                "alloc_bytes": alloc,
                "freed_bytes": freed,
                "net_bytes": net,
                "peak_bytes": at_peak,
                "peak_share": (at_peak / peak) if peak else 0.0,
                "python_share": py_share,
                "count": count,
            }
        else:  # the same line under two function names (rare): sum
            py = e["python_share"] * e["alloc_bytes"] + py_share * alloc
            e["alloc_bytes"] += alloc
            e["freed_bytes"] += freed
            e["net_bytes"] += net
            e["peak_bytes"] += at_peak
            e["peak_share"] = (e["peak_bytes"] / peak) if peak else 0.0
            e["python_share"] = py / e["alloc_bytes"] if e["alloc_bytes"] else 0.0
            e["count"] += count
    return out


# A GPU line row's columns after file, line and function: the GPU metrics in
# listing order with other_thread_s after gpu_peak_bytes, then the columns
# added later (gpu_comm_s, gpu_backward_s) last, so rows of older files
# (without them) read the same.
_GPU_LATER = ("gpu_comm_s", "gpu_backward_s")
GPU_ROW_COLUMNS = tuple(c for c in GPU_COLUMNS if c not in _GPU_LATER) + ("other_thread_s",) + _GPU_LATER


def gpu_line_rows(section, accept_frame=None):
    """[[file, line, function, kernel_s, copy_s, kernels, launches, h2d, d2h,
    d2d, alloc, peak, other_thread_s, comm_s, backward_s], ...] by the attribution rule
    (or charged to the innermost frame accept_frame takes)."""
    frames = frame_table(section.get("frames", []))
    orphan = {i for i, f in enumerate(frames) if f.kind == MARKER and f.function == ORPHAN_MARKER}
    rows = {}
    other = GPU_ROW_COLUMNS.index("other_thread_s")
    for ids, _thread, m in section.get("stacks", []):
        if not ids or not any(m.get(c) for c in GPU_COLUMNS):
            continue
        f = (
            stacks_model.charge(frames, ids)
            if accept_frame is None
            else stacks_model.charge_frame(frames, ids, accept_frame)
        )
        if f is None or f.kind in (GPU, MARKER):
            continue
        row = rows.setdefault((f.file, f.line, f.function), [0.0] * len(GPU_ROW_COLUMNS))
        for i, c in enumerate(GPU_ROW_COLUMNS):
            row[i] += m.get(c, 0)
        if orphan and orphan.intersection(ids):
            row[other] += m.get("gpu_kernel_s", 0) + m.get("gpu_copy_s", 0)
    return [[path, line, func] + vals for (path, line, func), vals in rows.items()]


def gpu_line_columns(profile, functions=None):
    """{(file, line): {gpu_s, kernel_s, copy_s, kernels, launches, h2d_bytes,
    d2h_bytes, d2d_bytes, alloc_bytes, peak_bytes, other_thread_s, comm_s,
    backward_s}} (comm_s: the part of gpu_s in collectives, gpu_names.c's
    rule; backward_s: the part run by backward for the line's ops). With
    `functions` (the -l listing's), work is charged to the innermost frame
    inside one of them, from the profile's stacks."""
    gpu = profile.get("gpu") or {}
    if functions is not None:
        inside = {(fn["file"], fn["first_line"]) for fn in functions}
        rows = gpu_line_rows(profile.get("stacks") or {}, lambda f: (f.file, f.first_line) in inside)
    else:
        rows = gpu.get("lines", [])
    out = {}
    for path, line, _func, *vals in rows:
        e = out.setdefault((path, line), [0.0] * len(vals))
        for i, v in enumerate(vals):
            e[i] += v
    result = {}
    for k, vals in out.items():
        d = dict(zip(GPU_LINE_COLUMNS, vals))
        d.setdefault("comm_s", 0.0)  # a file written before the comm column
        d.setdefault("backward_s", 0.0)  # or before the backward column
        d["gpu_s"] = d["kernel_s"] + d["copy_s"]
        d["live_bytes"] = 0
        result[k] = d
    tensors = gpu.get("tensor_memory")
    if tensors:
        # PyTorch's allocator history is per tensor: it replaces the
        # per-segment cudaMalloc bytes on every line
        for d in result.values():
            d["alloc_bytes"] = d["peak_bytes"] = 0
        for path, line, _func, alloc, peak, live in tensors.get("lines", []):
            d = result.get((path, line))
            if d is None:
                d = result[(path, line)] = dict.fromkeys(GPU_LINE_COLUMNS + ("gpu_s", "live_bytes"), 0)
            d["alloc_bytes"] += alloc
            d["peak_bytes"] += peak
            d["live_bytes"] += live
    return result
