"""Stack sections and stack exports: folded, speedscope, SVG flame graph.

export(profile, fmt, metric, out_path) writes one metric of a profile's
"stacks" section (lprof.model.stacks builds it). Folding runs in C
(_lprof.fold_rows).
"""
import json

from . import _lprof
from .model import import_fold

# export metric -> (stack metric columns summed, unit of the output integers)
METRICS = {
    "cpu": (("cpu_python_s", "cpu_native_s", "cpu_system_s"), "us"),
    "wall": (("wall_s",), "us"),
    "alloc": (("alloc_bytes",), "bytes"),
    "peak": (("peak_bytes",), "bytes"),
    "leak": (("live_bytes",), "bytes"),
    "gpu": (("gpu_kernel_s", "gpu_copy_s"), "us"),
    # device memory allocated / live at the device's peak: per tensor from
    # PyTorch's allocator history when it ran (lprof.collect.torch_memory), else
    # what cudaMalloc and friends handed out
    "gpu-mem": (("gpu_alloc_bytes",), "bytes"),
    "gpu-peak": (("gpu_peak_bytes",), "bytes"),
}
FORMATS = ("folded", "speedscope", "svg")


THREAD_FILE = "<thread>"  # the picture's thread frames (never stored in a profile)


def frame_name(frame):
    file, func, first, line = frame[:4]
    if file == "<gpu>" or file == THREAD_FILE:  # GPU work, a thread: the name alone
        return func
    if first == 0 and line == 0 and not file.startswith("<"):  # native: object file, no line
        return f"{func} ({file.rsplit('/', 1)[-1]})"
    return f"{func} ({file}:{line})"


def _metric(metric):
    if metric not in METRICS:
        raise ValueError(f"unknown stack metric {metric!r} (choose from {', '.join(METRICS)})")
    cols, unit = METRICS[metric]
    return cols, unit, (1e6 if unit == "us" else 1)


def _values(profile, metric):
    cols, unit, scale = _metric(metric)
    st = profile.get("stacks") or {"frames": [], "stacks": []}
    frames = st.get("frames", [])
    ids_list, vals, threads = [], [], []
    for ids, thread, m in st.get("stacks", []):
        v = sum(m.get(c, 0) for c in cols)
        iv = int(round(v * scale))
        if iv > 0 and ids:
            ids_list.append(ids)
            vals.append(iv)
            threads.append(thread)
    return frames, ids_list, vals, threads, unit


def export(profile, fmt, metric, out_path, fold_imports=True):
    """Writes profile's stacks for `metric` (cpu, wall, alloc, peak, leak, gpu)
    as `fmt` (folded, speedscope, svg) to out_path. ValueError for unknown
    names. The SVG folds importlib's frames into one frame per import unless
    fold_imports is False (lprof.model.import_fold); the data formats keep
    every frame."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown stack format {fmt!r} (choose from {', '.join(FORMATS)})")
    cols, unit, scale = _metric(metric)
    tensors = (profile.get("gpu") or {}).get("tensor_memory")
    if metric in ("gpu-mem", "gpu-peak") and tensors:
        profile = dict(profile, stacks=tensors["stacks"])
    st = profile.get("stacks") or {}
    if fmt == "svg":
        if fold_imports and import_fold.has_imports(st.get("frames", [])):
            st = (import_fold.fold_columns(st) if "nodes" in st else import_fold.fold_section(st))
        st = _thread_roots(profile, st)
        profile = dict(profile, stacks=st)
    if "nodes" in st:  # the file's columnar form (lprof export)
        if fmt != "speedscope":
            return _export_columns(st, fmt, metric, cols, unit, scale, out_path)
        from .model.profile_file import stacks_from_columns
        profile = dict(profile, stacks=stacks_from_columns(st))
        st = profile["stacks"]
    if not any(any(m.get(c) for c in cols) for _ids, _t, m in st.get("stacks", [])):
        raise ValueError(f"the profile has no stacks with {metric} data (profiles of lprof -l "
                         f"alone hold none; sample with lprof script.py or -l --sample)")
    frames = st.get("frames", [])
    names = [frame_name(f) for f in frames]
    rows = st.get("stacks", [])
    if fmt == "folded":
        _lprof.fold_rows(names, rows, cols, scale, out_path, -1.0)
    elif fmt == "svg":
        from .render.flamegraph import MIN_FRACTION, write_svg
        _lines, total, rects = _lprof.fold_rows(names, rows, cols, scale, None, MIN_FRACTION)
        write_svg(names, rects, total, out_path, title=f"lprof {metric}", unit=unit)
    else:
        frames, ids_list, vals, threads, unit = _values(profile, metric)
        _write_speedscope(profile, frames, names, ids_list, vals, threads, metric, unit, out_path)


def _thread_roots(profile, st):
    """For a picture of several threads: each stack starts with a frame
    naming its thread, so threads sit side by side, labelled."""
    threads = st["rows"]["thread"] if "nodes" in st else [r[1] for r in st.get("stacks", [])]
    if len(set(threads)) < 2:
        return st
    if "nodes" in st:
        from .model.profile_file import stacks_from_columns
        st = stacks_from_columns(st)
    names = (profile.get("sampling") or {}).get("threads", {})
    frames = [list(f) for f in st.get("frames", [])]
    root_of = {}
    rows = []
    for ids, th, m in st.get("stacks", []):
        if th not in root_of:
            root_of[th] = len(frames)
            name = names.get(str(th))
            frames.append([THREAD_FILE, f"thread {name} ({th})" if name else f"thread {th}", 0, 0])
        rows.append([[root_of[th]] + list(ids), th, m])
    return dict(st, frames=frames, stacks=rows)


def _export_columns(st, fmt, metric, cols, unit, scale, out_path):
    """Folded or SVG straight from the columnar section: one C pass over the
    rows' value arrays (_lprof.fold_columns), no Python object per row."""
    from array import array
    values = st["rows"]["values"]
    present = [values[c] for c in cols if c in values and any(values[c])]
    if not present:
        raise ValueError(f"the profile has no stacks with {metric} data (profiles of lprof -l "
                         f"alone hold none; sample with lprof script.py or -l --sample)")
    names = [frame_name(f) for f in st["frames"]]
    args = (names, array("i", st["nodes"]["parent"]), array("i", st["nodes"]["frame"]),
            array("i", st["rows"]["node"]), [array("d", v) for v in present], scale)
    if fmt == "folded":
        _lprof.fold_columns(*args, out_path, -1.0)
    else:
        from .render.flamegraph import MIN_FRACTION, write_svg
        _lines, total, rects = _lprof.fold_columns(*args, None, MIN_FRACTION)
        write_svg(names, rects, total, out_path, title=f"lprof {metric}", unit=unit)


def _write_speedscope(profile, frames, names, ids_list, vals, threads, metric, unit, out_path):
    by_thread = {}
    for ids, v, t in zip(ids_list, vals, threads):
        by_thread.setdefault(t, ([], []))
        by_thread[t][0].append(list(ids))
        by_thread[t][1].append(v)
    thread_names = (profile.get("sampling") or {}).get("threads", {})
    sframes = [{"name": f[1], "file": f[0], "line": f[3]} for f in frames]
    unit_name = {"us": "microseconds", "bytes": "bytes"}[unit]
    profiles = []
    for t in sorted(by_thread):
        samples, weights = by_thread[t]
        name = thread_names.get(str(t), f"thread {t}")
        profiles.append({"type": "sampled", "name": f"{name} ({metric})", "unit": unit_name,
                         "startValue": 0, "endValue": sum(weights),
                         "samples": samples, "weights": weights})
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": sframes}, "profiles": profiles,
           "name": f"lprof {metric}", "activeProfileIndex": 0, "exporter": "lprof"}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
