"""Folded stacks (one line per stack: frames joined by ';', then its value),
as flamegraph.pl, inferno and speedscope read them. Folding runs in C
(_lprof.fold_rows / fold_columns), which writes the file."""

from ..common.files import atomic_path
from . import stack_rows


def write(profile, path, metric="cpu"):
    stack_rows.metric_columns(metric)
    st = stack_rows.for_metric(profile, metric).get("stacks") or {}
    with atomic_path(path) as tmp:
        stack_rows.fold(st, metric, tmp, -1.0)
