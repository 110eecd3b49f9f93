"""Assembling a profile dict from the collectors that ran (see docs/contracts.md)."""

import os
import sys
import time

from .. import _lprof
from ..common import procinfo
from . import stacks as stacks_model
from . import timeline as timeline_model

STARTED = time.time()


def base_profile(modes, argv=None):
    prof = {
        "format": "lprof",
        "version": 2,
        "meta": {
            "argv": list(argv if argv is not None else sys.argv),
            "python": "%d.%d.%d" % sys.version_info[:3],
            "implementation": _implementation(),
            "pid": os.getpid(),
            "hostname": os.uname().nodename,
            "cwd": os.getcwd(),
            "started": STARTED,
            "duration_s": time.time() - STARTED,
            "exit_code": None,
            "modes": list(modes),
            "timer": _lprof.timer_name(),
            "timer_unit_s": _lprof.timer_unit(),
            "lprof_version": _version(),
        },
        "functions": [],
    }
    # ppid, and rank, world_size, local_rank, launcher under a launcher
    prof["meta"].update(procinfo.identity())
    return prof


def _implementation():
    # platform.python_implementation()'s spelling, without importing platform
    name = sys.implementation.name
    return {"cpython": "CPython", "pypy": "PyPy"}.get(name, name)


def _version():
    from .. import __version__

    return __version__


def sections(collectors, started=None):
    """Each collector's section plus the one "stacks" section they share,
    and the sample "timeline" (times from `started`, unix s; default: when
    lprof was imported).

    A collector has `name` (its section's key), optionally before_stacks()
    (finish its columns in the C table), rewrite_stacks(stacks) (change the
    stacks section in place before any section is built from it) and
    section(stacks) -> dict or None
    (its per-line rows come from the stacks by the one attribution rule)."""
    for c in collectors:
        if hasattr(c, "before_stacks"):
            c.before_stacks()
    out = {}
    st = (
        stacks_model.snapshot(start_s=STARTED if started is None else started)
        if any(hasattr(c, "section") for c in collectors)
        else None
    )
    if st is not None:
        for c in collectors:
            # a collector's map applied to the stacks before any section reads
            # them (the GPU one: torch.compile kernels to their source lines)
            if hasattr(c, "rewrite_stacks"):
                c.rewrite_stacks(st)
    part = st.pop("timeline", None) if st is not None else None
    task_rows = st.pop("task_rows", None) if st is not None else None
    task_rows_refused = st.pop("task_rows_refused", 0) if st is not None else 0
    gpu_part = st.pop("gpu_timeline", None) if st is not None else None
    for c in collectors:
        if hasattr(c, "section"):
            sec = c.section(st)
            if sec is not None:
                out[c.name] = sec
        else:  # the line tracer: its own "functions" section
            out.update(c.snapshot())
    if st is not None and st["stacks"]:
        out["stacks"] = st
        if task_rows and out.get("sampling", {}).get("tasks"):  # the task view's split (task_stacks.py)
            out["sampling"]["task_rows"] = task_rows
            if task_rows_refused:
                out["sampling"]["task_rows_refused"] = task_rows_refused
        if part and "sampling" in out:
            tl = out["timeline"] = timeline_model.section(part)
            timeline_model.name_threads(tl, out["sampling"].get("threads", {}))
        if gpu_part and "gpu" in out:
            from . import gpu_timeline

            gpu_part["clock"] = (out["gpu"].get("stats") or {}).get("clock", {})
            out["gpu_timeline"] = gpu_timeline.section(gpu_part)
            if part and "sampling" in out:  # sampled runs: a sample with no GPU work is idle
                out["gpu"]["idle_lines"] = gpu_timeline.sampled_idle(part, gpu_part, st["frames"])
    return out


def profile(modes, collectors, argv=None, started=None, exit_code=None):
    """The one place a profile dict is assembled (the lprof command,
    lprof.stop() and LineProfiler.snapshot all call it)."""
    prof = base_profile(modes, argv=argv)
    if started is not None:
        prof["meta"]["started"] = started
        prof["meta"]["duration_s"] = time.time() - started
    prof["meta"]["exit_code"] = exit_code
    prof.update(sections(collectors, started=prof["meta"]["started"]))
    if "stacks" in prof:
        table = stacks_model.table_info()
        if table is not None:
            prof["meta"]["stack_table"] = table
    return prof
