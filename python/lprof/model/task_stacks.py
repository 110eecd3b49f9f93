"""The task view of a wall-mode profile of an asyncio program (3.12+): each
stack that ran (or waited) inside a task starts at the task, not at the
event loop. The rows stay those of the stacks section, in order, with their
threads and values (a row split by task, below, becomes its parts, the same
values in all); only the frames above the task's root coroutine change:
the loop's scaffolding (asyncio.run, run_forever, _run_once, Handle._run,
a Python Task's step) is cut, and in its place come a frame naming the task
("task fetcher") and, when another task awaited it, that task's own prefix
and await chain. The tasks come from the sampling section's "tasks" table
(lprof.collect.task_names; docs/formats.md). Stacks outside any task (the
loop idle in select, code before asyncio.run) keep their frames.

Which task ran a stack: on 3.14+ the samples say (the sampling section's
"task_rows": the part of each row each task took, by task id), and each
task with a record of its own ("id") is drawn apart under its own name and
awaiting task. What no such task took (before 3.14 all of it; on 3.14+
the time of tasks past a process's first 4096, and the columns not split:
memory's) goes, as before, under the record of the task's root coroutine,
which tasks running the same coroutine function share.

The view is for pictures (folded stacks, flame graphs); the listing charges
lines on the stored stacks."""

import os

from . import stacks
from .frames import TASK_FILE

# the time metrics a task view draws (export/metrics.py names)
METRICS = ("wall", "wait", "cpu", "gil")
_MAX_DEPTH = 16  # awaiting tasks above one task (a cycle stops there)
_SHOWN_NAMES = 3


def _in_asyncio(path, module):
    return path.replace(os.sep, "/").endswith("/asyncio/" + module)


def _is_loop_run(frame):
    """Handle._run: where the loop calls a task's step (or a callback)."""
    return frame[1] == "Handle._run" and _in_asyncio(frame[0], "events.py")


def _is_task_step(frame):
    """A Python Task's step (the C Task has no frame)."""
    return "__step" in frame[1] and _in_asyncio(frame[0], "tasks.py")


def recorded(profile):
    """The profile's task table (a list; empty before 3.12 or without tasks)."""
    tasks = (profile.get("sampling") or {}).get("tasks")
    return tasks if isinstance(tasks, list) else []


def applies(profile):
    """The rule: a profile whose run recorded asyncio tasks (--wall, 3.12+)."""
    return bool(recorded(profile))


def told_apart(profile):
    """How many tasks have records of their own (3.14+: drawn apart)."""
    return sum(1 for t in recorded(profile) if isinstance(t, dict) and "id" in t)


def thread_view(profile):
    """The profile without its task table: its pictures draw thread stacks."""
    sampling = profile.get("sampling")
    if not sampling or "tasks" not in sampling:
        return profile
    return dict(profile, sampling={k: v for k, v in sampling.items() if k != "tasks"})


def _label(names, root):
    if not names:
        return f"[{root[1]}: a loop callback or a task not seen suspending]"
    shown = " | ".join(str(n) for n in names[:_SHOWN_NAMES])
    more = len(names) - _SHOWN_NAMES
    return f"task {shown}" + (f" +{more}" if more > 0 else "")


def _tables(profile):
    """({root key: record}, {task id: record}) of the well-formed records."""
    roots, own = {}, {}
    for t in recorded(profile):
        try:
            key = tuple(t["root"][:3])
            names = [str(n) for n in t.get("names") or []]
            parent = t.get("parent")
            if parent is not None:
                parent = {
                    "name": str(parent["name"]),
                    "root": tuple(parent["root"][:3]),
                    "chain": [list(f[:4]) for f in parent["chain"]],
                    "id": parent.get("id"),
                }
        except (KeyError, TypeError, IndexError, AttributeError):
            continue
        record = {"names": names, "parent": parent, "root": key}
        if "id" in t:
            own[t["id"]] = record
        else:
            roots[key] = record
    return roots, own


def _split(profile, own):
    """{(frame ids, thread): [(task id, {column: value}), ...]}: the parts of
    the rows that tasks with records of their own took."""
    out = {}
    for row in (profile.get("sampling") or {}).get("task_rows") or []:
        try:
            ids, thread, task, values = row
        except (TypeError, ValueError):
            continue
        if task in own and isinstance(values, dict):
            out.setdefault((tuple(ids), thread), []).append((task, values))
    return out


def _rest(values, parts):
    """The row's values less the tasks' parts; a column the parts took whole
    (up to float rounding) is left out."""
    rest = dict(values)
    for _task, part in parts:
        for k, v in part.items():
            if k in rest:
                rest[k] -= v
    return {k: v for k, v in rest.items() if abs(v) > 1e-9 * abs(values[k]) + 1e-12}


def _task_start(frames, ids):
    """Index in ids of the task's root coroutine frame, or None outside a task."""
    for i, fid in enumerate(ids):
        if _is_loop_run(frames[fid]):
            j = i + 1
            while j < len(ids) and _is_task_step(frames[ids[j]]):
                j += 1
            return j if j < len(ids) else None
    return None


def view(profile):
    """The profile's stacks section in the task view (the row form)."""
    section = stacks.row_form(profile.get("stacks") or {})
    table, own = _tables(profile)
    split = _split(profile, own)
    frames = [list(f) for f in section.get("frames", [])]
    fid = stacks.frame_interner(frames)

    prefixes = {}

    def prefix(key, task=None, depth=0):
        """Frame ids above a task's root coroutine: its awaiting tasks, its
        name; the task's own record's (an id) or its root coroutine's."""
        if depth == 0 and (key, task) in prefixes:
            return prefixes[key, task]
        entry = own[task] if task in own else table.get(key) or {"names": [], "parent": None}
        out = []
        parent = entry["parent"]
        if parent is not None and depth < _MAX_DEPTH:
            if parent["id"] in own:
                out += prefix(own[parent["id"]]["root"], parent["id"], depth + 1)
            elif parent["root"] in table:
                out += prefix(parent["root"], None, depth + 1)
            else:
                out.append(fid([TASK_FILE, _label([parent["name"]], parent["root"]), 0, 0]))
            out += [fid(f) for f in parent["chain"]]
        out.append(fid([TASK_FILE, _label(entry["names"], key), 0, 0]))
        if depth == 0:
            prefixes[key, task] = out
        return out

    rows = []
    for ids, thread, values in section.get("stacks", []):
        start = _task_start(frames, ids)
        if start is None:
            rows.append([ids, thread, values])
            continue
        root = frames[ids[start]]
        key = (root[0], root[1], root[2])
        tail = list(ids[start:])
        parts = split.get((tuple(ids), thread), ())
        for task, part in parts:
            rows.append([prefix(key, task) + tail, thread, dict(part)])
        rest = _rest(values, parts) if parts else values
        if rest:
            rows.append([prefix(key) + tail, thread, rest])
    return {"frames": frames, "columns": section.get("columns", []), "stacks": rows}
