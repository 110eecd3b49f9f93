"""The task view of a wall-mode profile of an asyncio program (3.12+): each
stack that ran (or waited) inside a task starts at the task, not at the
event loop. The rows stay those of the stacks section, in order, with their
threads and values; only the frames above the task's root coroutine change:
the loop's scaffolding (asyncio.run, run_forever, _run_once, Handle._run,
a Python Task's step) is cut, and in its place come a frame naming the task
("task fetcher") and, when another task awaited it, that task's own prefix
and await chain. The tasks come from the sampling section's "tasks" table
(lprof.collect.task_names; docs/formats.md). Stacks outside any task (the
loop idle in select, code before asyncio.run) keep their frames.

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


def _table(profile):
    """{root key: record} of the well-formed records."""
    out = {}
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
                }
        except (KeyError, TypeError, IndexError):
            continue
        out[key] = {"names": names, "parent": parent}
    return out


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
    table = _table(profile)
    frames = [list(f) for f in section.get("frames", [])]
    fid = stacks.frame_interner(frames)

    prefixes = {}

    def prefix(key, depth=0):
        """Frame ids above a task's root coroutine: its awaiting tasks, its name."""
        if depth == 0 and key in prefixes:
            return prefixes[key]
        entry = table.get(key) or {"names": [], "parent": None}
        out = []
        parent = entry["parent"]
        if parent is not None and depth < _MAX_DEPTH:
            if parent["root"] in table:
                out += prefix(parent["root"], depth + 1)
            else:
                out.append(fid([TASK_FILE, _label([parent["name"]], parent["root"]), 0, 0]))
            out += [fid(f) for f in parent["chain"]]
        out.append(fid([TASK_FILE, _label(entry["names"], key), 0, 0]))
        if depth == 0:
            prefixes[key] = out
        return out

    rows = []
    for ids, thread, values in section.get("stacks", []):
        start = _task_start(frames, ids)
        if start is None:
            rows.append([ids, thread, values])
            continue
        root = frames[ids[start]]
        rows.append([prefix((root[0], root[1], root[2])) + list(ids[start:]), thread, values])
    return {"frames": frames, "columns": section.get("columns", []), "stacks": rows}
