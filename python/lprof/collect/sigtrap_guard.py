"""The program's own SIGTRAP handler comes before lprof's perf events.

Where nothing handled SIGTRAP when sampling started, CPU mode's perf events
raise it: the kernel's cheapest way to signal a thread
(collect/perf_clock.h). A program that later sets a SIGTRAP handler with
signal.signal must not see it called at every sample, so signal.signal is
wrapped: for SIGTRAP, the events move to lprof's real-time signal first
(lprof's handler passes on every SIGTRAP no event raised, with the default
action, until then). A C extension calling sigaction itself passes no
wrapper: each drain asks the kernel who holds SIGTRAP and moves the events
then (lp_sampler_check_sigtrap), a drain period later."""

import functools
import signal as _signal

from .. import _lprof


def install():
    """Wraps signal.signal (once: a second call finds the wrapper)."""
    real = _signal.signal
    if getattr(real, "_lprof_sigtrap_guard", False):
        return

    @functools.wraps(real)
    def signal(signalnum, handler):
        if signalnum == _signal.SIGTRAP:
            _lprof.sampler_release_sigtrap()
        return real(signalnum, handler)

    signal._lprof_sigtrap_guard = True
    _signal.signal = signal
