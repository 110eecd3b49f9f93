"""The time coroutines wait at an await, for wall-mode sampling (3.12+).

A sample of a thread idle in an event loop lands in the loop's select call;
what the program waited for is the await each suspended coroutine stopped
at. The C callbacks (src/collect/cpython/awaits.c) take the await chain's
stack at each suspension and add the time to its resume to that stack's
wait_s column; this module registers them with sys.monitoring (PY_YIELD,
PY_RESUME, PY_THROW; on 3.14+ PY_START too, where a task's first coroutine
starts: its serial) under a tool id of its own. Before 3.12 there is no
sys.monitoring: start() says why it did nothing."""

import functools
import sys

from .. import _lprof
from . import task_names

# lprof -l takes the first free id counting up from 2; this one counts down
_TOOL_IDS = (5, 4, 3, 2)
_tool = None


def start():
    """Registers the callbacks: None, or why not (a one-line reason)."""
    global _tool
    if _tool is not None:
        return None
    if sys.version_info < (3, 12):
        return "await waits need Python 3.12+ (sys.monitoring)"
    mon = sys.monitoring
    tool = next((i for i in _TOOL_IDS if mon.get_tool(i) is None), None)
    if tool is None:
        return "no free sys.monitoring tool id for await waits"
    ev = mon.events
    mon.use_tool_id(tool, "lprof-await")
    mon.register_callback(tool, ev.PY_YIELD, _lprof.await_on_yield)
    mon.register_callback(tool, ev.PY_RESUME, _lprof.await_on_resume)
    mon.register_callback(tool, ev.PY_THROW, _lprof.await_on_throw)
    events = ev.PY_YIELD | ev.PY_RESUME | ev.PY_THROW
    if sys.version_info >= (3, 14):  # a task's serial as its first coroutine starts
        mon.register_callback(tool, ev.PY_START, _lprof.await_on_start)
        events |= ev.PY_START
    _lprof.await_reset()
    task_names.reset()
    # the task view: the running asyncio task at each suspension (collect/task_names.py),
    # with its serial on 3.14+ and the way to another task's (its awaiting task's)
    _lprof.await_start(mon.DISABLE, functools.partial(task_names.note, serial_of=_lprof.await_task_serial))
    mon.set_events(tool, events)
    _tool = tool
    return None


def stop():
    """Unregisters the callbacks (the waits charged so far stay)."""
    global _tool
    if _tool is None:
        return
    _lprof.await_stop()
    mon = sys.monitoring
    ev = mon.events
    try:
        mon.set_events(_tool, 0)
        for e in (ev.PY_YIELD, ev.PY_RESUME, ev.PY_THROW, ev.PY_START):
            mon.register_callback(_tool, e, None)
        mon.free_tool_id(_tool)
    except ValueError:  # the program freed or took the id itself
        pass
    _tool = None


def after_fork_child():
    """The child's stack table starts over: the parent's suspensions go."""
    stop()
    if hasattr(_lprof, "await_reset"):
        _lprof.await_reset()
    task_names.reset()


def stats():
    """{suspensions, resumes, evicted, charged_s, task_notes, task_serials,
    task_serials_refused}, or None before 3.12."""
    return _lprof.await_stats() if hasattr(_lprof, "await_stats") else None


def tasks():
    """The asyncio tasks seen suspending (collect/task_names.py table())."""
    return task_names.table()
