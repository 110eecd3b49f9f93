"""What the stack formats (folded, speedscope, SVG) and the time formats
(Chrome trace, pstats) share: frame names, the stacks section as one metric
sees it, and the fold in C (the table of stack metrics: metrics.py)."""

from ..model.frames import Frame
from ..model import stacks, task_stacks
from .metrics import METRICS, TIME_METRICS, columns


def frame_name(raw):
    """A stored frame's label (model/frames.py)."""
    return Frame.of(raw).label


def metric_columns(metric):
    """(columns summed, unit, scale of the output integers); ValueError for
    an unknown metric."""
    if metric not in METRICS:
        raise ValueError(f"unknown stack metric {metric!r} (choose from {', '.join(METRICS)})")
    unit = METRICS[metric][1]
    return columns(metric), unit, (1e6 if unit == "us" else 1)


def time_columns(metric, holder):
    """The columns of a time metric, for a format that holds time."""
    if metric not in TIME_METRICS:
        raise ValueError(f"{holder} holds time: --metric cpu or wall, not {metric!r}")
    return columns(metric)


def no_data(metric):
    return ValueError(
        f"the profile has no stacks with {metric} data (profiles of lprof -l "
        f"alone hold none; sample with lprof script.py or -l --sample)"
    )


def for_metric(profile, metric):
    """The profile whose stacks section `metric` is drawn from: device memory
    per tensor replaces the stacks where PyTorch's allocator history ran; the
    task view (lprof.model.task_stacks) the thread stacks of the time metrics
    where the run recorded asyncio tasks."""
    tensors = (profile.get("gpu") or {}).get("tensor_memory")
    if metric in ("gpu-mem", "gpu-peak") and tensors:
        return dict(profile, stacks=tensors["stacks"])
    if metric in task_stacks.METRICS and task_stacks.applies(profile):
        return dict(profile, stacks=task_stacks.view(profile))
    return profile


def has_rows(st, cols):
    return stacks.has_values(st, cols)


def fold_imports(st):
    """importlib's frames folded into one frame per import (pictures only)."""
    return stacks.fold_imports(st)


def thread_roots(profile, st):
    """For a picture of several threads: each stack starts with a frame
    naming its thread (lprof.model.stacks.thread_roots)."""
    return stacks.thread_roots(st, (profile.get("sampling") or {}).get("threads", {}))


def fold(st, metric, out_path, min_fraction):
    """Folds the stacks section for `metric` in C: writes the folded lines to
    out_path (None: not written) and returns (frame names, (lines, total,
    rects)) (lprof.model.stacks.fold)."""
    cols, _unit, scale = metric_columns(metric)
    out = stacks.fold(st, cols, scale, out_path, min_fraction)
    if out is None:
        raise no_data(metric)
    return out
