"""What the stack formats (folded, speedscope, SVG) and the time formats
(Chrome trace, pstats) share: frame names, the stacks section as one metric
sees it, and the fold in C (the table of stack metrics: metrics.py)."""
from ..model.frames import THREAD_FILE, Frame
from ..model import import_fold
from ..model.stacks import is_columnar, row_form, row_threads  # noqa: F401 (row_form: the exports')
from .metrics import METRICS, TIME_METRICS  # noqa: F401 (the table's home: metrics.py)


def frame_name(raw):
    """A stored frame's label (model/frames.py)."""
    return Frame.of(raw).label


def metric_columns(metric):
    """(columns summed, unit, scale of the output integers); ValueError for
    an unknown metric."""
    if metric not in METRICS:
        raise ValueError(f"unknown stack metric {metric!r} (choose from {', '.join(METRICS)})")
    cols, unit = METRICS[metric]
    return cols, unit, (1e6 if unit == "us" else 1)


def time_columns(metric, holder):
    """The columns of a time metric, for a format that holds time."""
    if metric not in TIME_METRICS:
        raise ValueError(f"{holder} holds time: --metric cpu or wall, not {metric!r}")
    return METRICS[metric][0]


def no_data(metric):
    return ValueError(f"the profile has no stacks with {metric} data (profiles of lprof -l "
                      f"alone hold none; sample with lprof script.py or -l --sample)")


def for_metric(profile, metric):
    """The profile whose stacks section `metric` is drawn from: device memory
    per tensor replaces the stacks where PyTorch's allocator history ran."""
    tensors = (profile.get("gpu") or {}).get("tensor_memory")
    if metric in ("gpu-mem", "gpu-peak") and tensors:
        return dict(profile, stacks=tensors["stacks"])
    return profile


def has_rows(st, cols):
    return any(any(m.get(c) for c in cols) for _ids, _t, m in st.get("stacks", []))


def fold_imports(st):
    """importlib's frames folded into one frame per import (pictures only)."""
    if import_fold.has_imports(st.get("frames", [])):
        return import_fold.fold_columns(st) if is_columnar(st) else import_fold.fold_section(st)
    return st


def thread_roots(profile, st):
    """For a picture of several threads: each stack starts with a frame
    naming its thread, so threads sit side by side, labelled. The columnar
    form keeps its columns: it gains the thread frames and a "root" list
    (one frame id per row) that fold() hands to the C fold; turning 1 M rows
    into Python objects took 14.7 s."""
    threads = row_threads(st)
    distinct = set(threads)
    if len(distinct) < 2:
        return st
    names = (profile.get("sampling") or {}).get("threads", {})
    frames = [list(f) for f in st.get("frames", [])]
    if is_columnar(st):
        root_of = {}
        for th in sorted(distinct, key=str):
            root_of[th] = len(frames)
            name = names.get(str(th))
            frames.append([THREAD_FILE, f"thread {name} ({th})" if name else f"thread {th}", 0, 0])
        return dict(st, frames=frames, rows=dict(st["rows"], root=[root_of[t] for t in threads]))
    root_of = {}
    rows = []
    for ids, th, m in st.get("stacks", []):
        if th not in root_of:
            root_of[th] = len(frames)
            name = names.get(str(th))
            frames.append([THREAD_FILE, f"thread {name} ({th})" if name else f"thread {th}", 0, 0])
        rows.append([[root_of[th]] + list(ids), th, m])
    return dict(st, frames=frames, stacks=rows)


def fold(st, metric, out_path, min_fraction):
    """Folds the stacks section for `metric` in C: writes the folded lines to
    out_path (None: not written) and returns (frame names, (lines, total,
    rects)). The columnar section is folded straight from its value arrays
    (_lprof.fold_columns: no Python object per row)."""
    from array import array

    from .. import _lprof
    cols, _unit, scale = metric_columns(metric)
    if is_columnar(st):
        values = st["rows"]["values"]
        present = [values[c] for c in cols if c in values and any(values[c])]
        if not present:
            raise no_data(metric)
        names = [frame_name(f) for f in st["frames"]]
        args = (names, array("i", st["nodes"]["parent"]), array("i", st["nodes"]["frame"]),
                array("i", st["rows"]["node"]), [array("d", v) for v in present], scale)
        roots = st["rows"].get("root")  # the picture's thread frames (thread_roots)
        roots = array("i", roots) if roots is not None else None
        return names, _lprof.fold_columns(*args, out_path, min_fraction, roots)
    if not has_rows(st, cols):
        raise no_data(metric)
    names = [frame_name(f) for f in st.get("frames", [])]
    return names, _lprof.fold_rows(names, st.get("stacks", []), cols, scale, out_path, min_fraction)
