"""Memory profiling: per line and per stack, bytes allocated, freed, live at
the process peak, Python-object vs native share, leaks, and a live-bytes
timeline (docs/design-memory.md).

Python objects are seen through CPython's allocator hooks; native allocations
(numpy, torch, C/C++ extensions) only when lprof's allocator shim is preloaded
(`lprof --memory` re-executes the interpreter with it, see lprof.preload)."""
import sys

from . import _lprof

# Columns a memory line sums (the leak rule's inputs among them); the rule
# itself is C's (src/aggregate/leak.h), asked through _lprof.leak_judge.
MEMORY_COLUMNS = ("alloc_bytes", "alloc_count", "python_bytes", "freed_bytes", "peak_bytes",
                  "alloc_samples", "free_samples", "survivors", "survivor_bytes",
                  "survivor_t_ms", "survivor_t2_ms2")


def native_covered():
    """True when the allocator shim is preloaded (native allocations are seen)."""
    return bool(_lprof.memory_native_covered())


def build_section(raw, stacks):
    """The "memory" section: totals from _lprof.memory_snapshot(), per-line
    rows and leaks from the stack model (one attribution rule)."""
    from .model import stacks as model
    peak = raw.get("peak_bytes", 0.0)
    duration = max(raw.get("duration_s", 0.0), 1e-9)
    out_lines, leaks = [], []
    for (path, line, func), c in model.lines(stacks, names=MEMORY_COLUMNS).items():
        alloc, freed = c.get("alloc_bytes", 0), c.get("freed_bytes", 0)
        if not alloc and not freed:
            continue
        net = alloc - freed
        out_lines.append([path, line, func, round(alloc), round(freed), round(net),
                          round(c.get("peak_bytes", 0)),
                          (c.get("python_bytes", 0) / alloc) if alloc else 0.0,
                          round(c.get("alloc_count", 0))])
        is_leak, slope, _span, score = _lprof.leak_judge(
            c.get("alloc_samples", 0), c.get("free_samples", 0), c.get("survivors", 0),
            c.get("survivor_bytes", 0), c.get("survivor_t_ms", 0), c.get("survivor_t2_ms2", 0),
            net, peak, duration)
        if is_leak:
            leaks.append((net, [path, line, func, slope, score]))
    out_lines.sort(key=lambda r: -r[3])
    # the line that lost the most memory first (a growth rate favours short bursts)
    leaks = [row for _net, row in sorted(leaks, key=lambda nr: -nr[0])]
    return {
        "sample_bytes": raw.get("sample_bytes", 0),
        "native_covered": bool(raw.get("native_covered", False)),
        "peak_bytes": round(peak),
        "peak_time_s": raw.get("peak_time_s", 0.0),
        "live_bytes": round(raw.get("live_bytes", 0.0)),
        "timeline": raw.get("timeline", []),
        "lines": out_lines,
        "leaks": leaks,
        "stats": raw.get("stats", {}),
    }


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
            sys.stderr.write("lprof: native allocations are not covered (allocator shim not "
                             "preloaded); memory shows Python objects only\n")

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
        from .model import assemble
        return assemble.sections([self])


def line_columns(profile):
    """{(file, line): {alloc_bytes, freed_bytes, net_bytes, peak_bytes,
    peak_share, python_share, count}} from a profile's "memory" section."""
    mem = profile.get("memory") or {}
    peak = mem.get("peak_bytes") or 0
    out = {}
    for path, line, _func, alloc, freed, net, at_peak, py_share, count in mem.get("lines", []):
        e = out.get((path, line))
        if e is None:
            out[(path, line)] = {"alloc_bytes": alloc, "freed_bytes": freed, "net_bytes": net,
                                 "peak_bytes": at_peak,
                                 "peak_share": (at_peak / peak) if peak else 0.0,
                                 "python_share": py_share, "count": count}
        else:  # the same line under two function names (rare): sum
            py = e["python_share"] * e["alloc_bytes"] + py_share * alloc
            e["alloc_bytes"] += alloc
            e["freed_bytes"] += freed
            e["net_bytes"] += net
            e["peak_bytes"] += at_peak
            e["peak_share"] = (e["peak_bytes"] / peak) if peak else 0.0
            e["python_share"] = py / e["alloc_bytes"] if e["alloc_bytes"] else 0.0
            e["count"] += count
    return out
