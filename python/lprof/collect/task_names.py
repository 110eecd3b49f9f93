"""The asyncio tasks of a run, for the task view of the stacks (3.12+).

A sample says which coroutine frames ran, not which task ran them, nor
which task awaited it. At a coroutine's suspension the await collector
(src/collect/cpython/awaits.c) hands the running task to note(), which
records it under its root coroutine, the frame a task view starts from:
its name and, once known, the task awaiting it (`await task`, gather, a
TaskGroup) with that task's await chain then. Tasks of one coroutine
function share that record. On 3.14+ a task also has a serial, the one the
sampler stamps on its samples (src/collect/task_ids.h), and a record of its
own under it ("id"), whose parent names the awaiting task's serial: the
view draws each such task apart. Bounded: up to 4096 root coroutines, 8
names each, and 4096 tasks of their own; past that, tasks go unnamed or
share their coroutine's record.

note() runs inside a sys.monitoring callback: it must not raise into the
program, and uses no generator (its own yields would be monitored)."""

import sys

_MAX_ROOTS = 4096
_MAX_NAMES = 8
_CHAIN = 64

_MAX_TASKS = 4096  # as many as get a serial (LP_TASK_SERIALS_MAX, task_register.h)

_roots = {}  # (file, function, first_line) -> {"names": [...], "parent": {...} or None}
_tasks = {}  # serial -> {"root": key, "names": [name], "parent": {...} or None}


def reset():
    _roots.clear()
    _tasks.clear()


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


def _parent_record(parent, serial_of):
    """The awaiting task's record: its name, serial and await chain now."""
    parent_code = getattr(parent.get_coro(), "cr_code", None)
    if parent_code is None:
        return None
    out = {
        "name": parent.get_name(),
        "root": list(_root_key(parent_code)),
        "chain": _chain(parent.get_coro()),
    }
    parent_serial = serial_of(parent) if serial_of else 0
    if parent_serial:
        out["id"] = parent_serial
    return out


def _note(task, serial, serial_of):
    asyncio = sys.modules.get("asyncio")
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    if asyncio is None or code is None:
        return True
    key = _root_key(code)
    entries = []
    entry = _roots.get(key)
    if entry is None and len(_roots) < _MAX_ROOTS:
        entry = _roots[key] = {"names": [], "parent": None}
    if entry is not None:
        entries.append(entry)
    own = _tasks.get(serial) if serial else None
    if serial and own is None and len(_tasks) < _MAX_TASKS:
        own = _tasks[serial] = {"root": key, "names": [], "parent": None}
    if own is not None:
        entries.append(own)
    if not entries:
        return True
    name = task.get_name()
    for e in entries:
        if name not in e["names"] and len(e["names"]) < _MAX_NAMES:
            e["names"].append(name)
    parent, known = _awaiting_task(task, asyncio)
    if parent is not None:
        record = None
        for e in entries:
            if e["parent"] is None:
                record = record or _parent_record(parent, serial_of)
                e["parent"] = record
    return known


def note(task, serial=0, serial_of=None):
    """Records the running task (its serial: 0 for none, before 3.14);
    serial_of(task) gives another task's. True once nothing more is to be
    learnt."""
    try:
        return _note(task, serial, serial_of)
    except Exception:  # never break the program for the profiler
        return True


def table():
    """The recorded tasks (the sampling section's "tasks": docs/formats.md):
    a record per root coroutine, then one per task told apart ("id")."""
    out = [{"root": list(key), "names": list(e["names"]), "parent": e["parent"]} for key, e in _roots.items()]
    out += [
        {"id": serial, "root": list(e["root"]), "names": list(e["names"]), "parent": e["parent"]}
        for serial, e in _tasks.items()
    ]
    return out
