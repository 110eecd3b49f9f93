"""The kernel's switch-on of its perf hooks, beside lprof's start-up.

The first task-clock perf event a process opens waits 5-25 ms in the kernel
(seen on a 2-core VM; wall time, not CPU time) while the scheduler's perf
hooks are switched on; they stay on about a second after the last event
closes. CPU sampling opens such events (collect/perf_clock.h), so the run
command starts a thread that opens and closes one first thing, before its
options are read and its modules imported (a run that samples no CPU
wastes a thread start). Nothing waits for it: the sampler starts with CPU
timers where the switch-on is not over, and the drain, woken when it is,
puts the perf events in their place (_lprof.sampler_settle). Only os and
the extension are imported here: a --memory run re-executes itself after
this."""

import os

from .. import _lprof


def start():
    # the sources without perf events (collect/sampling.py: LPROF_CPU_SAMPLER)
    if os.environ.get("LPROF_CPU_SAMPLER") not in ("thread", "timers"):
        _lprof.sampler_perf_warm()
