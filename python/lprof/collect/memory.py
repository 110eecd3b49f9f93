"""Memory profiling: per line and per stack, bytes allocated, freed, live at
the process peak, Python-object vs native share, leaks, and a live-bytes
timeline (docs/design-memory.md).

Python objects are seen through CPython's allocator hooks; native allocations
(numpy, torch, C/C++ extensions) only when lprof's allocator shim is preloaded
(`lprof --memory` re-executes the interpreter with it, see lprof.process.preload)."""

import sys

from .. import _lprof
from ..model.sections import memory_section as build_section


def native_covered():
    """True when the allocator shim is preloaded (native allocations are seen)."""
    return bool(_lprof.memory_native_covered())


class MemoryCollector:
    """Collector for the runner: start(), stop(), section(stacks); section "memory"."""

    name = "memory"

    def __init__(self, sample_bytes=16384, quiet=False):
        if int(sample_bytes) <= 0:
            raise ValueError("sample_bytes must be positive")
        self.sample_bytes = int(sample_bytes)
        self.quiet = quiet  # a followed child's stderr is the program's alone
        self._final = None
        self._running = False

    def start(self):
        self._final = None
        _lprof.memory_start(self.sample_bytes)
        self._running = True
        if not native_covered() and not self.quiet:
            sys.stderr.write(
                "lprof: native allocations are not covered (allocator shim not "
                "preloaded); memory shows Python objects only\n"
            )

    def stop(self):
        if not self._running:
            return
        self._running = False
        _lprof.memory_stop()
        self._final = _lprof.memory_snapshot()

    def before_stacks(self):
        """Finishes the memory columns of the stack table (live bytes,
        survivors) before the stacks are read; keeps the totals."""
        self._raw = self._final if self._final is not None else _lprof.memory_snapshot()

    def section(self, stacks):
        raw = getattr(self, "_raw", None) or self._final
        return build_section(raw, stacks) if raw else None

    def snapshot(self):
        """{"memory": ..., "stacks": ...} of this collector alone."""
        from ..model import assemble

        return assemble.sections([self])
