"""speedscope's file format (https://www.speedscope.app/file-format-schema.json):
one sampled profile per thread, weights in the metric's unit."""

import json

from ..common.files import atomic_path
from ..model.frames import table as frame_table, thread_name
from ..model.stacks import row_form
from . import stack_rows


def write(profile, path, metric="cpu"):
    cols, unit, scale = stack_rows.metric_columns(metric)
    profile = stack_rows.for_metric(profile, metric)
    st = row_form(profile.get("stacks") or {})
    if not stack_rows.has_rows(st, cols):
        raise stack_rows.no_data(metric)
    by_thread = {}
    for ids, thread, m in st.get("stacks", []):
        iv = int(round(sum(m.get(c, 0) for c in cols) * scale))
        if iv > 0 and ids:
            samples, weights = by_thread.setdefault(thread, ([], []))
            samples.append(list(ids))
            weights.append(iv)
    thread_names = (profile.get("sampling") or {}).get("threads", {})
    sframes = [
        {"name": f.function, "file": f.file, "line": f.line} for f in frame_table(st.get("frames", []))
    ]
    unit_name = {"us": "microseconds", "bytes": "bytes"}[unit]
    profiles = []
    for t in sorted(by_thread):
        samples, weights = by_thread[t]
        name = thread_name(thread_names, t, f"thread {t}")
        profiles.append(
            {
                "type": "sampled",
                "name": f"{name} ({metric})",
                "unit": unit_name,
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        )
    doc = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": sframes},
        "profiles": profiles,
        "name": f"lprof {metric}",
        "activeProfileIndex": 0,
        "exporter": "lprof",
    }
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
