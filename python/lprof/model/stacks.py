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

import math

from .. import _lprof
from ..common import libdirs
from ..common.errors import ProfileFileError
from .frames import NO_THREAD, NO_THREAD_NAME, THREAD_FILE, table as frame_table

_SCALE = {"ns": 1e-9, "milli": 1e-3}
# columns kept for the memory sampler's statistics (the leak rule reads them),
# not quantities a report shows per line: their audience in metrics.h
INTERNAL_COLUMNS = frozenset(_lprof.internal_metrics())
# CPU time is split into columns (Python, native, system: the sampling group
# of metrics.h); every reader that sums or shows CPU time takes them from here
CPU_COLUMNS = tuple(n for n in _lprof.metric_groups()["sampling"] if n.startswith("cpu_"))


def columns():
    """[(name, unit, merge)] of the C table, in column order."""
    return [tuple(c) for c in _lprof.metric_names()]


def snapshot(start_s=None):
    """The C stack table as a stacks section (launcher frames already cut).
    With start_s (unix time): also its "timeline" (model/timeline.py) and,
    where GPU work was recorded, its "gpu_timeline" (model/gpu_timeline.py),
    times from start_s, under those keys (assemble moves them to their own
    sections). Where asyncio tasks were told apart (3.14+, --wall), also
    "task_rows": [[frame ids, thread, task serial, {column: value}], ...],
    each the part of the stack's row that task took (the task view's:
    model/task_stacks.py), and "task_rows_refused" (pairs with no room)."""
    from . import timeline as timeline_model

    origin = timeline_model.origin_ns(start_s) if start_s is not None else 0
    _lprof.set_launcher_dir(libdirs.LPROF_DIR)  # the frames cut as lprof's own (snap_cut.c)
    _lprof.set_launcher_roles(libdirs.COMMAND_CALLERS, libdirs.PROGRAM_ENTRIES)
    snap = _lprof.stacks_snapshot(origin)
    frames, parent_b, frame_b, node_b, thread_b, values_b, tl_raw, gpu_raw, tasks_raw = snap
    cols = columns()
    names = [name for name, _u, _m in cols]
    scales = [_SCALE.get(unit) for _n, unit, _m in cols]
    rows = _lprof.stacks_rows(parent_b, frame_b, node_b, thread_b, values_b, names, scales)
    out = {"frames": [list(f) for f in frames], "columns": [list(c) for c in cols], "stacks": rows}
    if tasks_raw is not None:
        t_node, t_thread, t_task, t_values, refused = tasks_raw
        split = _lprof.stacks_rows(parent_b, frame_b, t_node, t_thread, t_values, names, scales)
        serials = memoryview(t_task).cast("I")  # uint32 (no array module: start-up imports)
        out["task_rows"] = [[ids, th, serials[i], m] for i, (ids, th, m) in enumerate(split)]
        out["task_rows_refused"] = refused
    if start_s is not None:
        out["timeline"] = timeline_model.from_snapshot(tl_raw, start_s)
        if gpu_raw is not None:
            from . import gpu_timeline

            out["gpu_timeline"] = gpu_timeline.from_snapshot(
                gpu_raw, parent_b, frame_b, out["frames"], start_s, origin_ns=origin
            )
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
        if accept(f.file):
            if not f.file.startswith("<"):
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
        row = out.setdefault((f.file, f.line, f.function), {})
        for name, v in m.items():
            if names is None or name in names:
                row[name] = row.get(name, 0) + v
    return out


def merge_kinds(section):
    return {name: merge for name, _unit, merge in section.get("columns") or columns()}


def frame_interner(frames):
    """A function giving a raw frame's index in `frames` (a section's list of
    [file, function, first_line, line]), appending it the first time."""
    index = {tuple(f): i for i, f in enumerate(frames)}

    def frame_id(raw):
        key = tuple(raw)
        if key not in index:
            index[key] = len(frames)
            frames.append(list(raw))
        return index[key]

    return frame_id


def merge(into, more):
    """Merges stacks section `more` into `into`: frames are matched by value,
    rows of the same stack and thread combine by their columns' merge kinds
    (sums add, peaks take the maximum). Returns `into`."""
    kinds = merge_kinds(into)
    kinds.update(merge_kinds(more))
    frame_id = frame_interner(into["frames"])
    remap = [frame_id(f) for f in more.get("frames", [])]
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


# -- the section's two shapes: the row form above (built in memory, what the
# listings and this module read) and the file's columnar form (a trie of frame
# ids, then one list per column: what a loaded .lprof keeps for the stack
# exports, which fold it in C without building rows; docs/formats.md):
#   {"frames", "columns", "nodes": {"parent": [...], "frame": [...]},
#    "rows": {"node": [...], "thread": [...], "values": {column: [...]}}}
# Only the code below reads the columnar fields: every exporter and renderer
# asks this module (tests/python/test_python_layout.py checks it).


class Trie:
    """Stacks as a trie of frame ids: node n is frame[n] under parent[n] (-1:
    a root). The columnar form stores one; import folding builds one."""

    __slots__ = ("parent", "frame", "_index")

    def __init__(self):
        self.parent, self.frame, self._index = [], [], {}

    def node_of(self, ids, node=-1):
        """The node of the stack `ids` (root first) under `node`, added as needed."""
        index, parent, frame = self._index, self.parent, self.frame
        for fid in ids:
            key = (node, fid)
            nxt = index.get(key)
            if nxt is None:
                nxt = index[key] = len(parent)
                parent.append(node)
                frame.append(fid)
            node = nxt
        return node

    def paths(self):
        """Each node's stack of frame ids, root first (tuples)."""
        out = []
        for p, f in zip(self.parent, self.frame):
            out.append((out[p] if p >= 0 else ()) + (f,))
        return out


def _names(section):
    """The value columns of a row-form section: its declared columns, then
    any a row holds that none declares, in order of appearance."""
    names = [c[0] for c in section.get("columns", [])]
    for _ids, _t, m in section.get("stacks", []):
        for name in m:
            if name not in names:
                names.append(name)
    return names


def to_columns(section):
    """Row form -> the columnar form (what the file stores)."""
    trie = Trie()
    row_node, row_thread = [], []
    names = _names(section)
    values = {name: [] for name in names}
    for ids, thread, m in section.get("stacks", []):
        row_node.append(trie.node_of(ids))
        row_thread.append(thread)
        for name in names:
            values[name].append(m.get(name, 0))
    return {
        "frames": section.get("frames", []),
        "columns": section.get("columns", []),
        "nodes": {"parent": trie.parent, "frame": trie.frame},
        "rows": {"node": row_node, "thread": row_thread, "values": values},
    }


def from_columns(col, name="<profile>"):
    """The columnar form -> row form; ProfileFileError when malformed."""

    def bad(what):
        raise ProfileFileError(f"{name}: malformed profile (stacks {what})")

    try:
        frames, nodes, rows = col["frames"], col["nodes"], col["rows"]
        parent, frame = nodes["parent"], nodes["frame"]
        row_node, row_thread, values = rows["node"], rows["thread"], rows["values"]
    except (KeyError, TypeError):
        bad("section")
    if not (
        isinstance(frames, list)
        and isinstance(values, dict)
        and all(isinstance(a, list) for a in (parent, frame, row_node, row_thread))
        and len(parent) == len(frame)
        and len(row_node) == len(row_thread)
        and all(isinstance(v, list) and len(v) == len(row_node) for v in values.values())
    ):
        bad("arrays")
    for column in values.values():  # numbers only: the exporters pack them into C arrays
        if not all(type(v) in (int, float) for v in column) or not all(map(math.isfinite, column)):
            bad("values")
    paths = []
    for p, f in zip(parent, frame):
        if not (isinstance(p, int) and isinstance(f, int) and -1 <= p < len(paths) and 0 <= f < len(frames)):
            bad("node")
        paths.append((paths[p] if p >= 0 else ()) + (f,))
    names = list(values)
    stacks = []
    for r, node in enumerate(row_node):
        if not (isinstance(node, int) and 0 <= node < len(paths)):
            bad("row")
        m = {n: values[n][r] for n in names if values[n][r]}
        stacks.append([list(paths[node]), row_thread[r], m])
    return {"frames": frames, "columns": col.get("columns", []), "stacks": stacks}


def is_columnar(section):
    return "nodes" in section


def is_row_form(section):
    """A section in the row form (one that holds its rows)."""
    return "stacks" in section


def row_form(section, name="<profile>"):
    """The section in its row form (a columnar one converted; ProfileFileError
    when malformed)."""
    if not is_columnar(section):
        return section
    return from_columns(section, name)


def row_threads(section):
    """The thread of each row, in either form."""
    if is_columnar(section):
        return section["rows"]["thread"]
    return [r[1] for r in section.get("stacks", [])]


def frames(section):
    """The section's frames as Frames, by frame id (model/frames.py)."""
    return frame_table(section.get("frames", []))


def fold_imports(section):
    """importlib's frames folded into one frame per import (pictures only:
    model/import_fold.py), in the section's own form; the section itself
    where it holds no import. Rows keep their order, threads and values, and
    frame ids keep their frames (folding only appends frames). A row-form
    section is put in a trie once and read back folded."""
    from . import import_fold

    if not import_fold.has_imports(section.get("frames", [])):
        return section
    new_frames = [list(f) for f in section["frames"]]
    folded = Trie()
    if is_columnar(section):
        nodes, rows_ = section["nodes"], section["rows"]
        image = import_fold.fold_trie(new_frames, nodes["parent"], nodes["frame"], folded)
        rows_ = dict(rows_, node=[image[n] for n in rows_["node"]])
        return dict(
            section, frames=new_frames, nodes={"parent": folded.parent, "frame": folded.frame}, rows=rows_
        )
    trie = Trie()
    stacks = section.get("stacks", [])
    ends = [trie.node_of(ids) for ids, _t, _m in stacks]
    image = import_fold.fold_trie(new_frames, trie.parent, trie.frame, folded)
    paths = folded.paths()
    names = _names(section)
    return {
        "frames": new_frames,
        "columns": section.get("columns", []),
        "stacks": [
            [list(paths[image[n]]) if n >= 0 else [], th, {k: m[k] for k in names if m.get(k)}]
            for n, (_ids, th, m) in zip(ends, stacks)
        ],
    }


def thread_roots(section, names):
    """For a picture of several threads: each stack starts with a frame
    naming its thread (names: {str(thread): name}), so threads sit side by
    side, labelled; the section itself for one thread. The columnar form
    keeps its columns: it gains the thread frames and a "root" list (one
    frame id per row) that fold() hands to the C fold; turning 1 M rows into
    Python objects took 14.7 s."""
    threads = row_threads(section)
    distinct = set(threads)
    if len(distinct) < 2:
        return section
    new_frames = [list(f) for f in section.get("frames", [])]

    def root(th):
        name = names.get(str(th))
        if str(th) == NO_THREAD:
            label = NO_THREAD_NAME
        else:
            label = f"thread {name} ({th})" if name else f"thread {th}"
        new_frames.append([THREAD_FILE, label, 0, 0])
        return len(new_frames) - 1

    if is_columnar(section):
        root_of = {th: root(th) for th in sorted(distinct, key=str)}
        return dict(
            section, frames=new_frames, rows=dict(section["rows"], root=[root_of[t] for t in threads])
        )
    root_of = {}
    out = []
    for ids, th, m in section.get("stacks", []):
        if th not in root_of:
            root_of[th] = root(th)
        out.append([[root_of[th]] + list(ids), th, m])
    return dict(section, frames=new_frames, stacks=out)


def has_values(section, cols):
    """Whether a row of the row form holds a value in one of cols."""
    return any(any(m.get(c) for c in cols) for _ids, _t, m in section.get("stacks", []))


def fold(section, cols, scale, out_path, min_fraction):
    """Folds the section for the sum of columns `cols` in C (times `scale`,
    as integers): writes the folded lines to out_path (None: not written) and
    returns (frame labels, (lines, total, rects)); None where no row holds
    any of cols. The columnar section is folded straight from its value
    arrays (_lprof.fold_columns: no Python object per row)."""
    from array import array

    if is_columnar(section):
        values = section["rows"]["values"]
        present = [values[c] for c in cols if c in values and any(values[c])]
        if not present:
            return None
        labels = [f.label for f in frames(section)]
        nodes, rows_ = section["nodes"], section["rows"]
        args = (
            labels,
            array("i", nodes["parent"]),
            array("i", nodes["frame"]),
            array("i", rows_["node"]),
            [array("d", v) for v in present],
            scale,
        )
        roots = rows_.get("root")  # the picture's thread frames (thread_roots)
        roots = array("i", roots) if roots is not None else None
        return labels, _lprof.fold_columns(*args, out_path, min_fraction, roots)
    if not has_values(section, cols):
        return None
    labels = [f.label for f in frames(section)]
    return labels, _lprof.fold_rows(labels, section.get("stacks", []), cols, scale, out_path, min_fraction)
