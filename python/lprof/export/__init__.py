"""Exports: one module per format, each with write(profile, path, metric)
(metric: the stack metric it draws; None for the formats that draw the
whole profile), and FORMATS, the one registry that `lprof export`, `lprof
run` (--stacks, --flamegraph, --html) and the command line's choices read.
Every file goes through the one atomic writer (lprof.common.files):
a reader never sees half a file; a device or pipe (/dev/stdout) is written
through. The stack metrics and the columns each sums: metrics.METRICS."""

import importlib


class Format:
    """One format: its module under lprof.export, the file name ending
    `lprof export` gives by default, whether it reads the stacks section's
    row form (the others fold its columns in C), and which metric it draws
    by default: "stack" (the profile's main stack metric), "time" (CPU or
    wall time) or None (the whole profile)."""

    def __init__(self, module, extension, rows, metric):
        self.module = module
        self.extension = extension
        self.rows = rows
        self.metric = metric

    def write(self, profile, path, metric=None, **options):
        mod = importlib.import_module(f"{__name__}.{self.module}")
        if metric is not None:
            options["metric"] = metric
        return mod.write(profile, path, **options)


FORMATS = {
    "json": Format("json_doc", ".json", rows=True, metric=None),
    "folded": Format("folded", ".folded", rows=False, metric="stack"),
    "speedscope": Format("speedscope", ".speedscope.json", rows=False, metric="stack"),
    "svg": Format("svg", ".svg", rows=False, metric="stack"),
    "html": Format("html", ".html", rows=True, metric=None),
    "chrome": Format("chrome_trace", ".trace.json", rows=True, metric="time"),
    "pstats": Format("pstats_file", ".pstats", rows=True, metric="time"),
    "gecko": Format("gecko", ".gecko.json", rows=True, metric="time"),
}
# the formats that draw one stack metric of the stacks section
STACK_FORMATS = tuple(f for f, spec in FORMATS.items() if spec.metric == "stack")


def write(profile, fmt, path, metric=None, **options):
    """Writes profile as fmt to path. ValueError for an unknown format, a
    metric the format cannot draw, or a profile without its data."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    return FORMATS[fmt].write(profile, path, metric, **options)


def export(profile, fmt, metric, out_path, fold_imports=True):
    """Writes profile's stacks for `metric` (cpu, wall, alloc, peak, leak, gpu)
    as `fmt` (folded, speedscope, svg) to out_path. ValueError for unknown
    names. The SVG folds importlib's frames into one frame per import unless
    fold_imports is False (lprof.model.import_fold); the data formats keep
    every frame."""
    if fmt not in STACK_FORMATS:
        raise ValueError(f"unknown stack format {fmt!r} (choose from {', '.join(STACK_FORMATS)})")
    options = {"fold_imports": fold_imports} if fmt == "svg" else {}
    return FORMATS[fmt].write(profile, out_path, metric, **options)
