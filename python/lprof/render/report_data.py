"""The data behind the HTML report: one JSON-ready dict built from a profile.

Metric columns are the profile's own (its stacks section names them, from
src/aggregate/metrics.h), so a column added there shows up in the report
without edits here. Each stack row is sent with the frame it is charged to by
the one attribution rule (lprof.model.stacks.charge): the page sums rows per
line and per thread but never re-implements the rule."""

from ..model import import_fold
from ..model.frames import table as frame_table, thread_name
from ..model import shares, task_stacks
from ..model.selection import default_accept
from ..model.stacks import CPU_COLUMNS, INTERNAL_COLUMNS, charge, row_form
from ..model.stacks import fold_imports as fold_section_imports
from .source import block_range, read_lines

# units as the file stores them (docs/formats.md): ns columns in seconds,
# milli ones as counts
_UNITS = {"ns": "s", "milli": "count"}
# shown in the source view unless the user ticks them
_QUIET = ("samples", "alloc_count", "python_bytes", "freed_bytes", "live_bytes")
_MAX_SOURCE_LINES = 5000
_CONTEXT = 3


# friendlier names for some columns; any other column is named after itself
_LABELS = {
    "cpu_s": "CPU total",
    "peak_bytes": "at peak",
    "alloc_bytes": "alloc",
    "python_bytes": "python objects",
    "wall_s": "wall",
    "wait_s": "await wait",
    "gil_s": "GIL held",
}


def _label(name):
    if name in _LABELS:
        return _LABELS[name]
    words = name.replace("_", " ")
    for suffix in (" s", " bytes"):
        if words.endswith(suffix):
            words = words[: -len(suffix)]
    return words


def _columns(section):
    """[(name, unit, merge)] with any data, in the section's order; a derived
    CPU total first when the section splits CPU time."""
    cols = [tuple(c) for c in section.get("columns") or []]
    known = {c[0] for c in cols}
    for _ids, _t, m in section.get("stacks", []):  # rows may hold undeclared columns
        for name in m:
            if name not in known:
                known.add(name)
                cols.append((name, "count", "sum"))
    used = set()
    for _ids, _t, m in section.get("stacks", []):
        used.update(k for k, v in m.items() if v)
    return [(n, _UNITS.get(u, u), k) for n, u, k in cols if n in used and n not in INTERNAL_COLUMNS]


def _cpu_parts(cols):
    return [n for n, _u, _k in cols if n in CPU_COLUMNS]


def _stack_part(profile, fold_imports, accept):
    section = row_form(profile.get("stacks") or {})
    section = dict(section, stacks=[r for r in section.get("stacks", []) if r[0]])
    # charged on the stacks as stored, as the listing charges them (a stack
    # with no selected frame is on no line: the summary says where it went);
    # folding keeps the rows in order and the frame ids (it only appends frames)
    frames = frame_table(section.get("frames", []))
    cache = {}
    charged = []
    for ids, _th, _m in section["stacks"]:
        key = tuple(ids)
        if key not in cache:
            f = charge(frames, ids, accept)
            cache[key] = -1 if f is None or not accept(f.file) else _fid(frames, ids, f)
        charged.append(cache[key])
    if task_stacks.applies(profile):  # the flame graph per asyncio task; rows keep their order
        view = task_stacks.view(profile)
        section = dict(view, stacks=[r for r in view["stacks"] if r[0]])
        frames = frame_table(section["frames"])
    folded = fold_imports and import_fold.has_imports(frames)
    if folded:  # the rows put in a trie once and read back folded
        section = fold_section_imports(section)
    cols = _columns(section)
    parts = _cpu_parts(cols)
    names = [c[0] for c in cols]
    if parts:  # one CPU column to sort and draw by (the split stays)
        cols.insert(0, ("cpu_s", "s", "sum"))
    threads = {}
    rows = []
    for (ids, th, m), fid in zip(section["stacks"], charged):
        values = [m.get(n, 0) for n in names]
        if not any(values):
            continue
        if parts:
            values.insert(0, sum(m.get(n, 0) for n in parts))
        t = threads.setdefault(str(th), len(threads))
        rows.append([list(ids), t, fid, [_num(v) for v in values]])
    return folded, cols, parts, section.get("frames", []), threads, rows


def _fid(frames, ids, f):
    for fid in reversed(ids):
        if frames[fid] is f:
            return fid
    return -1


def _num(v):
    return round(v, 9) if isinstance(v, float) else v


def _sources(paths, wanted):
    """{path: {line: text}}: the lines of the files the report shows, whole
    for files up to _MAX_SOURCE_LINES, else the wanted lines with context."""
    out = {}
    for path in paths:
        lines = read_lines(path)
        if lines is None:
            continue
        if len(lines) <= _MAX_SOURCE_LINES:
            keep = range(1, len(lines) + 1)
        else:
            keep = sorted(
                {
                    k
                    for ln in wanted.get(path, ())
                    for k in range(max(1, ln - _CONTEXT), min(len(lines), ln + _CONTEXT) + 1)
                }
            )
        out[path] = {str(k): lines[k - 1] for k in keep}
    return out


def _lineprof(profile):
    """The -l section: functions with their block's source lines."""
    out = []
    cache = {}
    for fn in profile.get("functions", []):
        path = fn["file"]
        if path not in cache:
            cache[path] = read_lines(path)
        lines = cache[path]
        rows = fn["lines"]
        if lines is not None:
            first, last = block_range(lines, fn["first_line"])
            last = max([last] + [r[0] for r in rows])
            source = {str(k): lines[k - 1] for k in range(first, min(last, len(lines)) + 1)}
        else:
            source = {}
        total = sum(r[2] for r in rows)  # the listing's rule (render/listing.line_sum)
        out.append(
            {
                "file": path,
                "name": fn["name"],
                "first_line": fn["first_line"],
                "total_s": total,
                "outermost_s": fn.get("total_s", total),
                "lines": rows,
                "source": source,
                "wait": fn.get("wait", []),
            }
        )
    return out


def _whole(profile, accept):
    parts = shares.breakdown(profile, accept)
    out = shares.as_dict(parts)
    out.update(
        {
            "cpu_s": parts["cpu_whole_s"],
            "wall_s": parts["wall_whole_s"],
            "threads": parts["threads"],
            "run_s": parts["run_s"],
        }
    )
    return out


def build(profile, fold_imports=True):
    """The report's data: JSON-ready, everything the page shows."""
    meta = profile.get("meta", {})
    accept = default_accept(row_form(profile.get("stacks") or {}))
    folded, cols, parts, frames, threads, rows = _stack_part(profile, fold_imports, accept)
    charged = {rows_charged for _i, _t, rows_charged, _v in rows if rows_charged >= 0}
    wanted = {}
    table = frame_table(frames)
    for fid in charged:
        wanted.setdefault(table[fid].file, set()).add(table[fid].line)
    user_files = [p for p in wanted if accept(p) and not p.startswith("<")]
    thread_names = (profile.get("sampling") or {}).get("threads", {})
    mem = profile.get("memory") or {}
    samp = profile.get("sampling") or {}
    return {
        "title": "lprof: " + " ".join(str(a) for a in meta.get("argv", [])),
        "meta": {
            k: meta.get(k)
            for k in (
                "argv",
                "python",
                "duration_s",
                "started",
                "modes",
                "exit_code",
                "hostname",
                "lprof_version",
            )
        },
        "sampling": {k: samp.get(k) for k in ("mode", "signals", "rate_hz_effective", "native", "dropped")}
        if samp
        else None,
        # the denominators of every share the page shows, and what no line holds
        "whole": _whole(profile, accept) if samp else None,
        "columns": [
            {
                "name": n,
                "unit": u,
                "label": _label(n),
                "quiet": n in _QUIET,
                "parts": parts if n == "cpu_s" else None,
            }
            for n, u, _k in cols
        ],
        "frames": [
            [f.short_label, f.file, f.function, f.line, bool(accept(f.file)) and not f.is_native]
            for f in table
        ],
        "threads": [
            [tid, thread_name(thread_names, tid, f"thread {tid}")]
            for tid, _i in sorted(threads.items(), key=lambda kv: kv[1])
        ],
        "stacks": rows,
        "sources": _sources(user_files, wanted),
        "functions": _lineprof(profile),
        "memory": {
            "timeline": mem.get("timeline", []),
            "peak_bytes": mem.get("peak_bytes", 0),
            "peak_time_s": mem.get("peak_time_s", 0.0),
            "sample_bytes": mem.get("sample_bytes"),
            "leaks": mem.get("leaks", []),
        }
        if mem
        else None,
        "folded_imports": bool(folded),
    }
