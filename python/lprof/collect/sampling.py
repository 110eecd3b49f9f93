"""Whole-program sampling: CPU or wall time per Python line and stack.

The C sampler (src/collect/sampler.c, handler in sampler_handler.c) takes samples from a signal handler
into per-thread rings; a background drain thread moves them into the shared
stack table every 100 ms (and at stop). Design: docs/design-sampler.md.
"""

import contextlib
import os
import signal as _signal
import sys
import threading
import time
import types

from .. import _lprof
from ..model.frames import NO_THREAD, NO_THREAD_NAME
from ..model.sections import SAMPLING_METRICS, sampling_line_rows as line_rows

_DRAIN_PERIOD_S = 0.1


def _awaits():
    """collect/awaits.py, imported on first use: only --wall on 3.12+ waits
    at awaits, and its import (task names, sys.monitoring) is start-up time
    every other run would pay."""
    from . import awaits

    return awaits


def _parse_signal(spec):
    """'SIGPROF', 'PROF', 'SIGRTMIN+3', '27' -> signal number."""
    if spec is None:
        return None
    if isinstance(spec, int):
        return spec
    s = str(spec).strip().upper()
    if s.isdigit():
        return int(s)
    if not s.startswith("SIG"):
        s = "SIG" + s
    if s.startswith("SIGRTMIN"):
        rest = s[len("SIGRTMIN") :]
        return _signal.SIGRTMIN + (int(rest) if rest else 0)
    try:
        return int(getattr(_signal, s))
    except AttributeError:
        raise ValueError(f"unknown signal {spec!r}") from None


# Signals the sampler may take: its own timer signals, the user signals and
# the real-time range. Every other signal means something to the program, the
# runtime or the terminal (SIGSEGV, SIGINT, SIGTERM, SIGCHLD, SIGPIPE, ...):
# taking one would break the program (a segfault that hangs, Ctrl-C ignored).
_SAMPLER_SIGNALS = {
    int(_signal.SIGPROF),
    int(_signal.SIGVTALRM),
    int(_signal.SIGALRM),
    int(_signal.SIGUSR1),
    int(_signal.SIGUSR2),
}


def check_signal(signo):
    """Raises ValueError for a signal the sampler must not take."""
    if signo in _SAMPLER_SIGNALS or _signal.SIGRTMIN <= signo <= _signal.SIGRTMAX:
        return signo
    try:
        name = _signal.Signals(signo).name
    except ValueError:
        raise ValueError(f"signal {signo} does not exist") from None
    raise ValueError(
        f"signal {signo} ({name}) belongs to the program or the runtime; use "
        f"SIGPROF, SIGVTALRM, SIGALRM, SIGUSR1, SIGUSR2 or SIGRTMIN+N"
    )


def _signal_name(signo):
    try:
        return _signal.Signals(signo).name
    except ValueError:
        if _signal.SIGRTMIN <= signo <= _signal.SIGRTMAX:
            return f"SIGRTMIN+{signo - _signal.SIGRTMIN}"
        return str(signo)


_NATIVE_MODES = {None: 0, "on": 1, "all": 2}  # the C sampler's native argument


def _traced():
    """True when a debugger or tracer (ptrace) is attached to this process."""
    from ..common.procinfo import status_field

    try:
        return int(status_field("TracerPid") or "0") != 0
    except ValueError:
        return False


def _stop_perf_trampoline():
    """Python 3.12's perf trampoline (-X perf) routes every call through JIT
    code without unwind tables: native stacks would end at the first one.
    lprof splices Python frames itself, so the trampoline is turned off."""
    active = getattr(sys, "is_stack_trampoline_active", None)
    if active is not None and active():
        sys.deactivate_stack_trampoline()


_active = None  # the running collector (one per process)
_patched = False
_orig_bootstrap_inner = None


def _code_run_by(thread):
    """The code object a thread runs (its target, or its own run()), read
    before run() deletes the target; None for C callables."""
    try:
        if type(thread).run is threading.Thread.run:
            target = getattr(thread, "_target", None)
        else:
            target = type(thread).run
        code = getattr(target, "__code__", None)
        return code if isinstance(code, types.CodeType) else None
    except Exception:  # a property or __getattr__ of the program's: never break its thread
        return None


def _install_thread_hook():
    """Threads started while sampling register themselves (and unregister)."""
    global _patched, _orig_bootstrap_inner
    if _patched:
        return
    _orig_bootstrap_inner = threading.Thread._bootstrap_inner

    def _bootstrap_inner(self):
        col = _active
        registered = False
        ran = None
        if col is not None:
            registered = col._register_current(self)
            ran = _code_run_by(self)
        try:
            _orig_bootstrap_inner(self)
        finally:
            if registered:
                _lprof.sampler_unregister_current(ran)

    threading.Thread._bootstrap_inner = _bootstrap_inner
    _patched = True


class SamplingCollector:
    """Samples every Python thread of this process; section "sampling"."""

    name = "sampling"

    def __init__(self, mode="cpu", rate_hz=None, signal=None, native=None, waits=None):
        if mode not in ("cpu", "wall"):
            raise ValueError("mode must be 'cpu' or 'wall'")
        if native not in _NATIVE_MODES:
            raise ValueError("native must be None, 'on' or 'all'")
        self.native = native
        # wall mode: the time coroutines wait at an await (collect/awaits.py)
        self.waits = (mode == "wall" and sys.version_info >= (3, 12)) if waits is None else bool(waits)
        self._waits_note = None
        if rate_hz is None:
            rate_hz = default_rate(mode)
        if not rate_hz or rate_hz <= 0:
            raise ValueError("rate_hz must be positive")
        self.mode = mode
        self.rate_hz = float(rate_hz)
        spec = signal if signal is not None else os.environ.get("LPROF_SIGNAL") or None
        self._signo = _parse_signal(spec)
        if self._signo is not None:
            check_signal(self._signo)
        self._running = False
        self._stopped = False
        self._drainer = None
        self._stop_event = threading.Event()
        self._threads = {}
        self._t0 = self._t1 = None
        self._cpu0 = self._cpu1 = None
        self._pid = None

    # -- life cycle --
    def start(self):
        global _active
        if self._running:
            return
        install_fork_hook()
        if _active is not None:
            raise RuntimeError("lprof: sampling is already running in this process")
        from . import exec_guard

        exec_guard.install()
        # no signal named: perf events may raise SIGTRAP, their cheapest
        # delivery, unless a debugger (which takes every SIGTRAP) traces us
        source = _cpu_source(self.rate_hz, self.native)
        perf_trap = (
            self.mode == "cpu" and source == CPU_SOURCES["perf"] and self._signo is None and not _traced()
        )
        if self._signo is None:
            self._signo = _lprof.sampler_default_signal()
        if self.native:
            _stop_perf_trampoline()
        _lprof.sampler_start(
            self.mode, self.rate_hz, self._signo, _NATIVE_MODES[self.native], source, perf_trap
        )
        if perf_trap and _lprof.sampler_stats().get("cpu_source") != "thread":
            # the events may raise SIGTRAP (now, or once they replace the
            # start's CPU timers): the program's own handler comes first
            from . import sigtrap_guard

            sigtrap_guard.install()
        _active = self
        if self.waits:
            # here, on the program's thread before any of lprof's: the
            # drain and the checkpoints use it without importing it
            self._waits_note = _awaits().start()
        self._running = True
        self._pid = os.getpid()
        self._t0 = time.perf_counter()
        self._cpu0 = time.process_time()
        _install_thread_hook()
        me = threading.current_thread()
        self._register_current(me)
        others = [
            (t.ident, getattr(t, "native_id", 0) or 0)
            for t in threading.enumerate()
            if t is not me and t.ident is not None
        ]
        for t in threading.enumerate():
            if t is not me and t.ident is not None:
                self._threads[t.ident] = t.name
        if others:
            _lprof.sampler_register_threads(others)
        self._stop_event.clear()
        from ..common.own_thread import OwnThread

        self._drainer = OwnThread(self._drain_loop)
        self._drainer.start()

    def _register_current(self, thread):
        self._threads[threading.get_ident()] = thread.name
        return _lprof.sampler_register_current()

    def _drain_loop(self):
        # every period, or at once when a ring is half full (deep stacks at
        # high rates, many waiting threads read by the wall thread)
        prefaulted = False
        began = time.monotonic()
        while True:
            _lprof.sampler_drain_wait(_DRAIN_PERIOD_S)
            if self._stop_event.is_set():
                return
            # woken (too) when the kernel's perf switch-on is over: the
            # threads' perf events replace the CPU timers of the start
            _lprof.sampler_settle()
            if not prefaulted and time.monotonic() - began >= _DRAIN_PERIOD_S:
                # the table's index faulted in here, beside the program, not
                # by the first drain with the GIL held (11 ms of the
                # program's time); after the first period, so that a program
                # over by then pays nothing for it (the fault-in holds the
                # address space's lock: its munmaps would wait), and in
                # parts, so that one ending meanwhile waits for one part
                part, parts = 0, 1
                while part < parts and not self._stop_event.is_set():
                    parts = _lprof.stacks_prefault(part)
                    part += 1
                prefaulted = True
                if self._stop_event.is_set():
                    return
            try:
                _lprof.sampler_drain()
            except Exception:  # never break the program for the profiler
                pass

    def _after_fork_child(self):
        # The C side disabled itself in the child (pthread_atfork); forget
        # the parent's drain thread so stop() in the child is a clean no-op.
        global _active
        self._running = False
        self._stopped = True
        self._drainer = None
        _active = None
        if self.waits:
            _awaits().after_fork_child()

    def stop(self):
        global _active
        if not self._running:
            return
        self._running = False
        self._stopped = True
        self._t1 = time.perf_counter()
        self._cpu1 = time.process_time()
        self._stop_event.set()
        _lprof.sampler_drain_wake()
        if self._drainer is not None and not self._drainer.is_current():
            self._drainer.join(timeout=5)
        self._drainer = None
        if self.waits:
            _awaits().stop()
        _lprof.sampler_stop()
        self._stats = _lprof.sampler_stats()
        if _active is self:
            _active = None

    # -- results --
    def section(self, stacks):
        """The "sampling" section; its per-line rows follow the one
        attribution rule (lprof.model.stacks.lines)."""
        from ..model import stacks as model

        if self._running:
            _lprof.sampler_drain()
        stats = self._stats if self._stopped and hasattr(self, "_stats") else _lprof.sampler_stats()
        t1 = self._t1 if self._t1 is not None else time.perf_counter()
        duration = (t1 - self._t0) if self._t0 is not None else 0.0
        per_line = model.lines(stacks, names=SAMPLING_METRICS)
        totals = {name: sum(row.get(name, 0) for row in per_line.values()) for name in SAMPLING_METRICS}
        cpu_s = sum(totals[name] for name in model.CPU_COLUMNS)
        others = _threads_without_python(stats)
        # the timer's rate is per CPU second of the threads it samples
        span = max(0.0, cpu_s - others["cpu_s"]) if self.mode == "cpu" else duration
        return {
            "mode": self.mode,
            "rate_hz_requested": self.rate_hz,
            "rate_hz_effective": _effective_rate(self.mode, stats, span, len(self._threads)),
            # the signal that made the samples (CPU mode's perf events: maybe SIGTRAP)
            "signal": _signal_name(stats.get("signal") or self._signo) if self._signo else None,
            # CPU mode: what made the signals (collect/sampler.h), after any fallback
            "cpu_source": stats.get("cpu_source") if self.mode == "cpu" else None,
            # perf events closed because their thread blocked the sampling signal
            "perf_stalled": stats.get("perf_stalled", 0),
            "outside_samples": stats.get("outside_samples", 0),
            # outside reads that found the thread moved (read again, or its time
            # carried to the next read)
            "outside_retries": stats.get("outside_retries", 0),
            # signalled samples beside those reads, which split their CPU time
            # into Python, native and system (aggregate/cpu_split.h)
            "split_samples": stats.get("split_samples", 0),
            "samples": int(totals["samples"]),
            "signals": stats["signals"],
            "dropped": stats["dropped"],
            "in_profiler": stats.get("in_profiler", 0),
            # times the drain thread was starved of the GIL and the main thread drained
            "drains_behind": stats.get("drains_behind", 0),
            "truncated": stats["truncated"],
            "stack_overflows": stats["stack_overflows"],
            "native": self.native,
            "native_mismatch": stats.get("native_mismatch", 0),
            "threads_unsampled": stats.get("threads_unsampled", 0),
            "threads_without_python": others,
            "duration_s": duration,
            "cpu_total_s": cpu_s,
            "wall_total_s": totals["wall_s"],
            **self._waits_section(totals["wait_s"]),
            "process_cpu_s": ((self._cpu1 if self._cpu1 is not None else time.process_time()) - self._cpu0)
            if self._cpu0 is not None
            else 0.0,
            "lprof_cpu_s": _lprof_cpu_s(self.mode, stats),
            "threads": self._thread_names(others),
            "lines": line_rows(stacks, per_line),
        }

    def _thread_names(self, others):
        """Each sampled thread's name; thread 0 (model/frames.py: no thread)
        where it holds CPU time of threads without Python that no Python
        thread was in native code to take (collect/other_threads.h)."""
        names = {str(k): v for k, v in self._threads.items()}
        if others["uncharged_s"] > 0 and NO_THREAD not in names:
            names[NO_THREAD] = NO_THREAD_NAME
        return names

    def _waits_section(self, total):
        """The await waits' total and counts, in wall mode (else nothing)."""
        if not self.waits:
            return {}
        awaits = _awaits()
        out = {"wait_total_s": total, "waits": awaits.stats() or {}}
        tasks = awaits.tasks()
        if tasks:  # the task view of the stacks (model/task_stacks.py)
            out["tasks"] = tasks
        if self._waits_note:
            out["waits"]["note"] = self._waits_note
        return out

    def snapshot(self):
        """{"sampling": ..., "stacks": ...} of this collector alone."""
        from ..model import assemble

        return assemble.sections([self])


def running():
    """True while a sampling collector runs in this process."""
    return _active is not None


def pause_at_program_end():
    """The program is over: lprof's own end of run (stopping its threads,
    building the profile) is not sampled. stop() follows."""
    if _active is not None and _active._running:
        _lprof.sampler_pause()


def _threads_without_python(stats):
    """The CPU time of threads the sampler does not sample (threads that run
    no Python: BLAS, OpenMP, a C library's workers), measured by the C
    clock (collect/other_threads.h): cpu_s in all, charged_s of it on the
    line of a Python thread in native code then (native CPU, under a
    "[threads without Python]" marker frame), uncharged_s on no line (in
    cpu_total_s all the same: a stack of that marker alone)."""
    charged = stats.get("others_charged_ns", 0) * 1e-9
    uncharged = (stats.get("others_uncharged_ns", 0) + stats.get("others_lost_ns", 0)) * 1e-9
    return {
        "cpu_s": round(charged + uncharged, 9),
        "charged_s": round(charged, 9),
        "uncharged_s": round(uncharged, 9),
    }


def _lprof_cpu_s(mode, stats):
    """The CPU time lprof itself took while it sampled: its own threads
    (the drain, the clock, a checkpoint writer), and in CPU mode the signals
    that landed in its code on the program's threads, a period each (the -l
    tracer; the drain a dying code object asks for)."""
    own = stats.get("lprof_threads_ns", 0)
    if mode == "cpu":
        own += stats.get("in_profiler", 0) * stats.get("period_ns", 0)
    return round(own * 1e-9, 9)


# What makes CPU-mode signals (collect/sampler.h): a task-clock perf event
# per thread (the rate asked; lprof falls back to its sampler thread where
# perf_event_open is refused), lprof's sampler thread, or POSIX CPU timers
# (checked at the kernel tick only: 250 Hz on Debian's kernel). Chosen with
# LPROF_CPU_SAMPLER=perf|thread|timers, for diagnosis and comparison; or
# "outside": lprof's sampler thread reading the running threads' frames from
# outside, no signal (collect/outside_read.h): far cheaper at high rates;
# a perf event per thread at 250 Hz beside the reads gives the PCs that split
# their CPU time into Python, native and system (aggregate/cpu_split.h).
CPU_SOURCES = {"timers": 0, "thread": 1, "perf": 2, "outside": 3}


def default_rate(mode):
    """Samples a second when none is asked (collect/sampler.h says why)."""
    return _lprof.SAMPLER_DEFAULT_RATE_HZ if mode == "wall" else _lprof.SAMPLER_DEFAULT_CPU_RATE_HZ


# Asked this rate or more, CPU mode reads the running threads from outside
# unless LPROF_CPU_SAMPLER names a source or --native wants the native
# frames only a signal can unwind: a perf event's signal costs the running
# thread 30-45 us on a VM (bench/interrupt_floor.c), 1.15x at 5 kHz and
# 1.5-2x at 10 kHz here, where the reads cost 1.0-1.13x and were as accurate
# at 10 kHz (every hot line within 0.17 points); below it the perf events
# were the more accurate (outside reads at 1 kHz: up to 0.78 points on two
# threads, perf 0.19). Measured 2026-12-07, docs/design-sampler.md.
OUTSIDE_FROM_HZ = 5000


def _cpu_source(rate_hz, native):
    named = os.environ.get("LPROF_CPU_SAMPLER")
    if named is not None:
        return CPU_SOURCES.get(named, CPU_SOURCES["perf"])
    return CPU_SOURCES["outside" if rate_hz >= OUTSIDE_FROM_HZ and not native else "perf"]


def _effective_rate(mode, stats, span, threads):
    """Samples taken per second: per CPU second in CPU mode (timer signals),
    per thread and wall second in wall mode, where the wall thread reads
    threads without the GIL itself (wall_reads) and signals the others."""
    if span <= 0:
        return 0.0
    if mode == "cpu":  # signals, and the sampler thread's reads of threads not running
        return (stats["signals"] + stats.get("wall_reads", 0)) / span
    return (stats["signals"] + stats.get("wall_reads", 0)) / span / max(1, threads)


def _at_fork_child():
    if _active is not None:
        _active._after_fork_child()


_fork_hook_done = False


def install_fork_hook():
    """Registers the forked child's reset of the sampler (once): when
    sampling starts, and from lprof.process.follow before its own hook, which must
    run after this one. Nothing is registered by importing this module."""
    global _fork_hook_done
    if not _fork_hook_done and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_at_fork_child)
        _fork_hook_done = True


# -- lprof.start() / lprof.stop() / lprof.sampling() --
_api_collector = None


def start(mode="cpu", rate_hz=None, signal=None):
    """Starts sampling this process; stop() returns the profile dict."""
    global _api_collector
    if _api_collector is None and _active is None:
        _lprof.stacks_reset()
    _api_collector = SamplingCollector(mode=mode, rate_hz=rate_hz, signal=signal)
    _api_collector.start()
    return _api_collector


def stop():
    """Stops sampling started by start(); returns the profile dict."""
    global _api_collector
    col = _api_collector
    if col is None:
        return None
    col.stop()
    _api_collector = None
    from ..model import assemble

    return assemble.profile([col.mode], [col])


@contextlib.contextmanager
def sampling(**kw):
    """with sampling(mode="cpu") as result: ...; result["profile"] after the block."""
    result = {}
    start(**kw)
    try:
        yield result
    finally:
        result["profile"] = stop()
