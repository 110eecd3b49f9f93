"""Another process's Python stacks, read from outside (lprof dump, and
attach's fallback when the process cannot run code): one read through
lprof's C reader (collect/remote/remote.c), or reads repeated at a rate for
wall-clock samples. The target is found by process/remote_target.py (given
here as pid, runtime address and layout); nothing runs in it."""

import time

from ..common.errors import LprofError


def _message(status, pid, version, verb):
    from .. import _lprof as c

    if status == c.REMOTE_NOPROC:
        return f"{verb}: no process {pid}", 2
    if status == c.REMOTE_NOPERM:
        return (
            f"{verb}: not permitted to read process {pid}'s memory (process_vm_readv: "
            f"EPERM); run lprof as root, or as its user with "
            f"/proc/sys/kernel/yama/ptrace_scope at 0"
        ), 1
    if status == c.REMOTE_NODEBUG:
        return (
            f"{verb}: process {pid}: no CPython debug offsets at _PyRuntime (not a CPython "
            f"3.13+ lprof can read)"
        ), 2
    v = "%d.%d" % ((version >> 24) & 0xFF, (version >> 16) & 0xFF)
    if status == c.REMOTE_VERSION:
        return (
            f"{verb}: process {pid} runs Python {v}, whose debug offsets lprof does not "
            f"read yet (3.10-3.15 only)"
        ), 2
    if status == c.REMOTE_FREE_THREADED:
        return (
            f"{verb}: process {pid} runs a free-threaded Python {v}, whose threads lprof "
            f"does not read from outside"
        ), 2
    if status == c.REMOTE_LAYOUT:
        return f"{verb}: process {pid}: the frame layout lprof has for it is incomplete", 2
    return (
        f"{verb}: process {pid}: its interpreter state did not read (not the layout lprof "
        f"expected, or it is starting or exiting)"
    ), 1


def thread_name(pid, native_id):
    """The OS thread's name (/proc/PID/task/TID/comm), or None."""
    if not native_id:
        return None
    try:
        with open(f"/proc/{pid}/task/{native_id}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def read(pid, runtime, layout, verb="dump", with_locals=False):
    """Every thread's stack now: a list of dicts {thread_id, native_id,
    name, frames: [(file, function, line)] innermost first, complete};
    with_locals: frames are (file, function, line, [(name, value text)]).
    LprofError (one line) when the process cannot be read."""
    from .. import _lprof as c

    status, version, threads = c.remote_dump(pid, runtime, layout, with_locals)
    if status != c.REMOTE_OK:
        msg, code = _message(status, pid, version, verb)
        raise LprofError(msg, code)
    return [
        {
            "thread_id": tid,
            "native_id": ntid,
            "name": thread_name(pid, ntid),
            "frames": [tuple(f) for f in frames],
            "complete": st == c.REMOTE_OK,
        }
        for tid, ntid, frames, st in threads
    ]


def sample(pid, runtime, layout, duration, rate_hz=100, stop=None, verb="attach", on_start=None):
    """Reads every thread's stack `rate_hz` times a second for `duration`
    seconds (None: until stop() is true, Ctrl-C, or the process ends). Returns
    {"samples": n, "seconds": s, "ended": bool, "threads": {key: {"name",
    "samples", "self": {(file, line, func): n}, "total": {...}}}}, key the
    native thread id (the Python thread id where none). Wall-clock samples:
    a thread counts whether it runs or waits. on_start() is called once the
    first sample is in (Ctrl-C from then on ends the sampling, listed)."""
    period = 1.0 / rate_hz
    t0 = time.monotonic()
    out = {"samples": 0, "threads": {}, "ended": False, "rate_hz": rate_hz}
    try:
        _sample_loop(pid, runtime, layout, duration, period, stop, verb, out, on_start)
    except KeyboardInterrupt:  # Ctrl-C ends the sampling, as the duration would
        out["interrupted"] = True
    out["seconds"] = time.monotonic() - t0
    return out


def _sample_loop(pid, runtime, layout, duration, period, stop, verb, out, on_start):
    from .. import _lprof as c

    t0 = time.monotonic()
    next_t = t0
    while True:
        now = time.monotonic()
        if duration is not None and now - t0 >= duration:
            break
        if stop is not None and stop():
            break
        status, _version, threads = c.remote_dump(pid, runtime, layout)
        if status == c.REMOTE_NOPROC:
            out["ended"] = True
            break
        if status == c.REMOTE_NOPERM:
            raise LprofError(_message(status, pid, 0, verb)[0], 1)
        if status == c.REMOTE_OK:  # a read that raced the process is dropped
            out["samples"] += 1
            for tid, ntid, frames, _st in threads:
                th = out["threads"].get(ntid or tid)
                if th is None:
                    th = out["threads"][ntid or tid] = {
                        "name": thread_name(pid, ntid),
                        "native": bool(ntid),
                        "samples": 0,
                        "self": {},
                        "total": {},
                    }
                th["samples"] += 1
                seen = set()
                for i, (file, func, line) in enumerate(frames):
                    key = (file, line, func)
                    if i == 0:
                        th["self"][key] = th["self"].get(key, 0) + 1
                    if key not in seen:
                        seen.add(key)
                        th["total"][key] = th["total"].get(key, 0) + 1
            if on_start is not None and out["samples"] == 1:
                on_start()
        next_t += period
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_t = time.monotonic()  # fell behind (a busy machine): no burst to catch up
