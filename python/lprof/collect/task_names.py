"""The asyncio tasks of a run, for the task view of the stacks (3.12+).

A sample says which coroutine frames ran, not which task ran them, nor
which task awaited it. At a coroutine's suspension the await collector
(src/collect/cpython/awaits.c) hands the running task to note(), which
records it under its root coroutine, the frame a task view starts from:
its name and, once known, the task awaiting it (`await task`, gather, a
TaskGroup) with that task's await chain then. Tasks of one coroutine
function share a record (their samples cannot be told apart). Bounded: up to
4096 root coroutines, 8 names each; past that, tasks go unnamed.

note() runs inside a sys.monitoring callback: it must not raise into the
program, and uses no generator (its own yields would be monitored)."""

import sys

_MAX_ROOTS = 4096
_MAX_NAMES = 8
_CHAIN = 64

_roots = {}  # (file, function, first_line) -> {"names": [...], "parent": {...} or None}


def reset():
    _roots.clear()


def _root_key(code):
    return (code.co_filename, code.co_qualname, code.co_firstlineno)


def _chain(coro):
    """The await chain of a task's coroutine, root first, as stored frames."""
    out = []
    while coro is not None and len(out) < _CHAIN:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is None:
            break
        code = frame.f_code
        out.append([code.co_filename, code.co_qualname, code.co_firstlineno, frame.f_lineno])
        coro = getattr(coro, "cr_await", None)
    return out


def _awaiting_task(task, asyncio):
    """The task awaiting `task`: (task, True), (None, True) for a task no
    task awaits (asyncio.run's main), (None, False) when not yet known."""
    callbacks = getattr(task, "_callbacks", None) or ()
    for entry in callbacks:
        cb = entry[0]
        owner = getattr(cb, "__self__", None)
        if isinstance(owner, asyncio.Task):  # `await task`: its wakeup
            return owner, True
        if isinstance(owner, asyncio.TaskGroup):
            return getattr(owner, "_parent_task", None), True
        if getattr(cb, "__name__", "") == "_run_until_complete_cb":
            return None, True
        for cell in getattr(cb, "__closure__", None) or ():  # gather's per-child callback
            try:
                outer = cell.cell_contents
            except ValueError:
                continue
            if isinstance(outer, asyncio.Future) and not isinstance(outer, asyncio.Task):
                for outer_entry in getattr(outer, "_callbacks", None) or ():
                    parent = getattr(outer_entry[0], "__self__", None)
                    if isinstance(parent, asyncio.Task):
                        return parent, True
    return None, False


def _note(task):
    asyncio = sys.modules.get("asyncio")
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    if asyncio is None or code is None:
        return True
    key = _root_key(code)
    entry = _roots.get(key)
    if entry is None:
        if len(_roots) >= _MAX_ROOTS:
            return True
        entry = _roots[key] = {"names": [], "parent": None}
    name = task.get_name()
    if name not in entry["names"] and len(entry["names"]) < _MAX_NAMES:
        entry["names"].append(name)
    parent, known = _awaiting_task(task, asyncio)
    if parent is not None and entry["parent"] is None:
        parent_code = getattr(parent.get_coro(), "cr_code", None)
        if parent_code is not None:
            entry["parent"] = {
                "name": parent.get_name(),
                "root": list(_root_key(parent_code)),
                "chain": _chain(parent.get_coro()),
            }
    return known


def note(task):
    """Records the running task; True once nothing more is to be learnt."""
    try:
        return _note(task)
    except Exception:  # never break the program for the profiler
        return True


def table():
    """The recorded tasks (the sampling section's "tasks": docs/formats.md)."""
    return [
        {"root": list(key), "names": list(e["names"]), "parent": e["parent"]} for key, e in _roots.items()
    ]
