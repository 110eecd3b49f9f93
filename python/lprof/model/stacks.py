"""The one stack model: the profile's "stacks" section, built once from the C
stack table that every collector writes (sampler and memory share it), and
the one rule that charges a stack to a source line.

Section: {"frames": [[file, function, first_line, line], ...],
          "columns": [[name, unit, merge], ...],
          "stacks": [[frame ids root first, thread, {column: value}], ...]}
Columns and their merge kinds come from C (src/aggregate/metrics.h): "ns"
columns are stored in seconds, "milli" ones as counts, the rest as they are.
Zero values are left out of a row's dict.

Attribution (docs/formats.md): a stack is charged to its innermost Python
frame whose file passes `accept` (by default: user code, not the standard
library, site-packages or lprof; code given as text, `<string>` and the like,
only where no such file is on the stack), else to its innermost Python frame; native
frames (lprof --native) and GPU work frames (lprof --gpu) are skipped. The listing, the
.lprof file's per-line sections and the JSON export all use lines() below.
"""
from .. import _lprof
from ..common import libdirs
from .frames import table as frame_table

_SCALE = {"ns": 1e-9, "milli": 1e-3}
# columns kept for the memory sampler's statistics (the leak rule reads them),
# not quantities a report shows per line: their audience in metrics.h
INTERNAL_COLUMNS = frozenset(_lprof.internal_metrics())


def columns():
    """[(name, unit, merge)] of the C table, in column order."""
    return [tuple(c) for c in _lprof.metric_names()]


def snapshot(start_s=None):
    """The C stack table as a stacks section (launcher frames already cut).
    With start_s (unix time): also its "timeline" (model/timeline.py) and,
    where GPU work was recorded, its "gpu_timeline" (model/gpu_timeline.py),
    times from start_s, under those keys (assemble moves them to their own
    sections)."""
    from . import timeline as timeline_model
    origin = timeline_model.origin_ns(start_s) if start_s is not None else 0
    _lprof.set_launcher_dir(libdirs.LPROF_DIR)  # the frames cut as lprof's own (snapshot.c)
    _lprof.set_launcher_roles(libdirs.COMMAND_CALLERS, libdirs.PROGRAM_ENTRIES)
    frames, parent_b, frame_b, node_b, thread_b, values_b, tl_raw, gpu_raw = _lprof.stacks_snapshot(origin)
    cols = columns()
    rows = _lprof.stacks_rows(parent_b, frame_b, node_b, thread_b, values_b,
                              [name for name, _u, _m in cols],
                              [_SCALE.get(unit) for _n, unit, _m in cols])
    out = {"frames": [list(f) for f in frames], "columns": [list(c) for c in cols], "stacks": rows}
    if start_s is not None:
        out["timeline"] = timeline_model.from_snapshot(tl_raw, start_s)
        if gpu_raw is not None:
            from . import gpu_timeline
            out["gpu_timeline"] = gpu_timeline.from_snapshot(gpu_raw, parent_b, frame_b, out["frames"], start_s,
                                                             origin_ns=origin)
    return out


def reset():
    _lprof.stacks_reset()


def table_info():
    """How full the C stack table is: node and row counts and capacities,
    events that overflowed, reserved and resident bytes (a dict), or None."""
    return _lprof.stacks_table_info()


def is_user_file(path):
    """The default attribution filter: the program's own code."""
    if not path:
        return False
    if path.startswith("<"):  # code given as text; IPython's cells too
        return path.startswith(("<string>", "<stdin>", "<ipython-input-"))
    return not libdirs.is_library_file(path)


def charge_frame(frames, ids, accept_frame):
    """The innermost frame accept_frame(frame) takes (the -l listing charges
    GPU work to lines inside its profiled functions); None if none does.
    frames: the section's frame table (model/frames.py table())."""
    for fid in reversed(ids):
        f = frames[fid]
        if f.has_line and accept_frame(f):
            return f
    return None


def charge(frames, ids, accept=is_user_file):
    """The frame a stack is charged to (the rule above); None for a stack
    without any Python or marker frame. Native frames are never charged:
    their time is the calling line's, and a stack of native frames alone (a
    thread outside Python, seen with --native) has no line, as without it.
    frames: the section's frame table (model/frames.py table())."""
    innermost = text = None
    for fid in reversed(ids):
        f = frames[fid]
        if not f.has_line:
            continue
        if accept(f[0]):
            if not f[0].startswith("<"):
                return f
            # code given as text counts only where no program file is on the
            # stack: libraries exec code too (Triton's kernel launcher,
            # dataclasses' __init__), and such a line has no source to show
            text = text or f
        if innermost is None:
            innermost = f
    return text or innermost


def lines(section, accept=None, names=None, thread=None):
    """{(file, line, function): {column: sum}} by the attribution rule; only
    the named columns (all by default); only one thread's stacks if given.
    accept: the files selected (default: model/selection.default_accept, the
    program's own files, and the package a library program exercised)."""
    if accept is None:
        from .selection import default_accept
        accept = default_accept(section)
    frames = frame_table(section.get("frames", []))
    out = {}
    cache = {}
    for ids, th, m in section.get("stacks", []):
        if thread is not None and str(th) != str(thread):
            continue
        if not ids:
            continue
        key = tuple(ids)
        if key in cache:
            f = cache[key]
        else:
            f = cache[key] = charge(frames, ids, accept)
        if f is None:
            continue
        row = out.setdefault((f[0], f[3], f[1]), {})
        for name, v in m.items():
            if names is None or name in names:
                row[name] = row.get(name, 0) + v
    return out


def merge_kinds(section):
    return {name: merge for name, _unit, merge in section.get("columns") or columns()}


def merge(into, more):
    """Merges stacks section `more` into `into`: frames are matched by value,
    rows of the same stack and thread combine by their columns' merge kinds
    (sums add, peaks take the maximum). Returns `into`."""
    kinds = merge_kinds(into)
    kinds.update(merge_kinds(more))
    index = {tuple(f): i for i, f in enumerate(into["frames"])}
    remap = []
    for f in more.get("frames", []):
        key = tuple(f)
        if key not in index:
            index[key] = len(into["frames"])
            into["frames"].append(list(f))
        remap.append(index[key])
    rows = {(tuple(ids), th): m for ids, th, m in into["stacks"]}
    for ids, th, m in more.get("stacks", []):
        key = (tuple(remap[i] for i in ids), th)
        have = rows.get(key)
        if have is None:
            m = dict(m)
            rows[key] = m
            into["stacks"].append([list(key[0]), th, m])
            continue
        for name, v in m.items():
            if kinds.get(name) == "max":
                have[name] = max(have.get(name, v), v)
            else:
                have[name] = have.get(name, 0) + v
    cols = {c[0]: c for c in into.get("columns", [])}
    for c in more.get("columns", []):
        cols.setdefault(c[0], list(c))
    into["columns"] = list(cols.values())
    return into


def restrict(section, names):
    """A copy with only the named columns (rows left without values dropped)."""
    rows = []
    for ids, th, m in section.get("stacks", []):
        kept = {k: v for k, v in m.items() if k in names}
        if kept:
            rows.append([list(ids), th, kept])
    return {"frames": section.get("frames", []),
            "columns": [c for c in section.get("columns", []) if c[0] in names],
            "stacks": rows}


# -- the section's two shapes: the row form above (built in memory, what the
# listings and this module read) and the file's columnar form ("nodes",
# "rows": what a loaded .lprof keeps for the stack exports, which fold it in
# C without building rows). Only these functions tell them apart.

def is_columnar(section):
    return "nodes" in section


def row_form(section, name="<profile>"):
    """The section in its row form (a columnar one converted; ProfileFileError
    when malformed)."""
    if not is_columnar(section):
        return section
    from .profile_file import stacks_from_columns
    return stacks_from_columns(section, name)


def row_threads(section):
    """The thread of each row, in either form."""
    if is_columnar(section):
        return section["rows"]["thread"]
    return [r[1] for r in section.get("stacks", [])]
