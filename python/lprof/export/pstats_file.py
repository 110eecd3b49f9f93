"""pstats export: function-level statistics from a profile's stacks, in the
marshal format `pstats.Stats` reads (and so snakeviz, gprof2dot, tuna).

Each stack row's time is charged, as cProfile would, to its leaf function
(tottime) and once to every distinct function on the stack (cumtime);
caller -> callee edges get the same. Sampling counts no calls: the call
columns hold the number of samples a function was on the stack. Functions
are (file, first line, name); native frames (--native) are (object, 0, name),
as cProfile names built-ins ('~', 0, name)."""

import marshal

from ..common.files import atomic_path
from ..model.frames import Frame
from ..model.stacks import row_form
from .stack_rows import time_columns


def _func(frame):
    frame = Frame.of(frame)
    return (frame.file, 0 if frame.is_native else int(frame.first_line), frame.function)


def stats(profile, metric="cpu"):
    """{func: (cc, nc, tt, ct, {caller: (cc, nc, tt, ct)})} as pstats keeps it."""
    cols = time_columns(metric, "pstats")
    st = row_form(profile.get("stacks") or {})
    frames = st.get("frames", [])
    funcs = [_func(f) for f in frames]
    table = {}  # func -> [samples, tt, ct]
    edges = {}  # (caller, callee) -> [samples, tt, ct]
    for ids, _thread, m in st.get("stacks", []):
        v = sum(m.get(c, 0) for c in cols)
        if v <= 0 or not ids:
            continue
        n = m.get("samples", 0) or 1
        path = [funcs[i] for i in ids]
        leaf = path[-1]
        seen = set()
        for f in path:
            e = table.setdefault(f, [0, 0.0, 0.0])
            if f not in seen:
                e[0] += n
                e[2] += v
                seen.add(f)
        table[leaf][1] += v
        seen_edges = set()
        for k in range(1, len(path)):
            key = (path[k - 1], path[k])
            e = edges.setdefault(key, [0, 0.0, 0.0])
            if key not in seen_edges:
                e[0] += n
                e[2] += v
                seen_edges.add(key)
            if k == len(path) - 1:
                e[1] += v
    if not table:
        raise ValueError(
            f"the profile has no stacks with {metric} data (profiles of lprof -l "
            f"alone hold none; sample with lprof script.py or -l --sample)"
        )
    callers = {}
    for (caller, callee), (n, tt, ct) in edges.items():
        if caller != callee:
            callers.setdefault(callee, {})[caller] = (n, n, tt, ct)
    return {f: (n, n, tt, ct, callers.get(f, {})) for f, (n, tt, ct) in table.items()}


def write(profile, out_path, metric="cpu"):
    data = stats(profile, metric)
    with atomic_path(out_path) as tmp:
        with open(tmp, "wb") as fh:
            marshal.dump(data, fh)
