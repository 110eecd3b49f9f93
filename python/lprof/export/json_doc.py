"""The JSON export: everything a profile holds, under a versioned schema.

Schema "lprof.export" version 2 (docs/formats.md): list rows of the profile
file become objects with named fields so consumers need no column list."""

import json

from ..common.files import atomic_path
from ..model.frames import table as frame_table
from ..model.sections import GPU_LINE_COLUMNS, SAMPLING_LINE_COLUMNS

SCHEMA = "lprof.export"
SCHEMA_VERSION = 2

SAMPLING_LINE_FIELDS = ("file", "line", "function") + SAMPLING_LINE_COLUMNS + ("samples",)
MEMORY_LINE_FIELDS = (
    "file",
    "line",
    "function",
    "alloc_bytes",
    "freed_bytes",
    "net_bytes",
    "peak_bytes",
    "python_share",
    "count",
)
LEAK_FIELDS = ("file", "line", "function", "slope_bytes_per_s", "score")
GPU_LINE_FIELDS = ("file", "line", "function") + GPU_LINE_COLUMNS
COLLECTIVE_CELL_FIELDS = ("member", "comm_s", "wait_s", "transfer_s", "count")
TENSOR_LINE_FIELDS = ("file", "line", "function", "alloc_bytes", "peak_bytes", "live_bytes")


def _rows(rows, fields):
    return [dict(zip(fields, row)) for row in rows]


def _function(f):
    """One -l function; its lines carry wait_s where it suspended (yield, await)."""
    waits = dict((ln, w) for ln, w in f.get("wait", []))
    lines = []
    for ln, hits, t in f["lines"]:
        row = {"line": ln, "hits": hits, "time_s": t}
        if ln in waits:
            row["wait_s"] = waits[ln]
        lines.append(row)
    return {
        "file": f["file"],
        "name": f["name"],
        "first_line": f["first_line"],
        "total_s": f.get("total_s", 0.0),
        "lines": lines,
    }


def export_dict(prof):
    out = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "meta": prof["meta"]}
    out["functions"] = [_function(f) for f in prof.get("functions", [])]
    if prof.get("waits_evicted"):
        out["waits_evicted"] = prof["waits_evicted"]
    if "sampling" in prof:
        s = dict(prof["sampling"])
        s["lines"] = _rows(s.get("lines", []), SAMPLING_LINE_FIELDS)
        if "task_rows" in s:  # 3.14+: each stack's time by asyncio task, frames as the stacks'
            s["task_rows"] = [
                {"frames": ids, "thread": thread, "task": task, "metrics": metrics}
                for ids, thread, task, metrics in s["task_rows"]
            ]
        if "stacks" in prof:  # the whole the shares are of, and what no selected line holds
            from ..model import shares

            s["whole"] = shares.as_dict(shares.breakdown(prof))
        out["sampling"] = s
    if "memory" in prof:
        m = dict(prof["memory"])
        m["lines"] = _rows(m.get("lines", []), MEMORY_LINE_FIELDS)
        m["leaks"] = _rows(m.get("leaks", []), LEAK_FIELDS)
        out["memory"] = m
    if "gpu" in prof:
        g = dict(prof["gpu"])
        g["lines"] = _rows(g.get("lines", []), GPU_LINE_FIELDS)
        if "tensor_memory" in g:  # PyTorch's allocator history (lprof.collect.torch_memory)
            t = dict(g["tensor_memory"])
            t["lines"] = _rows(t.get("lines", []), TENSOR_LINE_FIELDS)
            g["tensor_memory"] = t
        out["gpu"] = g
    if "stacks" in prof:
        st = prof["stacks"]
        out["stacks"] = {
            "frames": [
                {"file": f.file, "function": f.function, "first_line": f.first_line, "line": f.line}
                for f in frame_table(st.get("frames", []))
            ],
            "stacks": [
                {"frames": ids, "thread": thread, "metrics": metrics}
                for ids, thread, metrics in st.get("stacks", [])
            ],
        }
    if "ranks" in prof:
        r = prof["ranks"]

        def cells(values):
            return {k: {"sum": c[0], "max": c[1], "member": c[2]} for k, c in values.items()}

        out["ranks"] = {
            "members": r.get("members", []),
            "lines": [
                {"file": f, "line": ln, "function": fn, "values": cells(v)}
                for f, ln, fn, v in r.get("lines", [])
            ],
            "stacks": [{"frames": ids, "values": cells(v)} for ids, v in r.get("stacks", [])],
        }
        if r.get("collectives"):  # GPU collectives per line and rank (model/collectives.py)
            c = dict(r["collectives"])
            c["lines"] = [
                {
                    "file": f,
                    "line": ln,
                    "function": fn,
                    "ranks": [dict(zip(COLLECTIVE_CELL_FIELDS, cell)) for cell in cells_],
                }
                for f, ln, fn, cells_ in c.get("lines", [])
            ]
            out["ranks"]["collectives"] = c
    return out


def to_json(prof):
    return json.dumps(export_dict(prof), indent=1) + "\n"


def write_json(prof, fh):
    """Streams the export into an open text file: the same text as to_json()
    without ever holding it whole (issue #14 defect 12: a 77 MB export of a
    long --memory run peaked at 887 MiB as one string)."""
    json.dump(export_dict(prof), fh, indent=1)
    fh.write("\n")


def write(profile, path, metric=None):
    """The export as a file (streamed, through the atomic writer)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            write_json(profile, fh)
