"""Memory profiling: per line and per stack, bytes allocated, freed, live at
the process peak, Python-object vs native share, leaks, and a live-bytes
timeline (docs/design-memory.md).

Python objects are seen through CPython's allocator hooks; native allocations
(numpy, torch, C/C++ extensions) only when lprof's allocator shim is preloaded
(`lprof --memory` re-executes the interpreter with it, see lprof.preload)."""
import sys

from . import _lprof, libdirs

# A line is reported as a leak when the chance that its next allocation is
# never freed (Laplace rule over sampled blocks) exceeds this...
LEAK_SCORE = 0.95
# ...its surviving blocks were allocated over at least this long (one burst,
# such as building a list that is then kept, is not growth over time; a leak
# confined to one phase of a long run still is)...
LEAK_MIN_SPAN_S = 0.05
LEAK_MIN_SPAN_SHARE = 0.02
# ...with at least this many surviving samples, holding this share of the peak.
LEAK_MIN_SURVIVORS = 8
LEAK_MIN_PEAK_SHARE = 0.01

_NO_FRAME = ("<native>", "[no Python frame]", 0, 0)


def native_covered():
    """True when the allocator shim is preloaded (native allocations are seen)."""
    return bool(_lprof.memory_native_covered())


_LIBRARY, _USER, _LAUNCHER = 0, 1, 2


def _classify(path):
    """Whose frame is this file's? Stacks are charged to their innermost user
    frame (outside the standard library, site-packages and lprof), else to
    the innermost frame; lprof's own frames (the command that ran the
    program) and everything above them are left out of the stacks."""
    if not path or path.startswith("<"):
        return _USER if path.startswith("<string>") or path.startswith("<stdin>") else _LIBRARY
    if path.startswith(libdirs.LPROF_DIR):
        return _LAUNCHER
    return _LIBRARY if libdirs.is_library_file(path) else _USER


def _build(raw):
    """_lprof.memory_snapshot(_classify) -> ("memory" section, "stacks")."""
    peak = raw.get("peak_bytes", 0.0)
    duration = max(raw.get("duration_s", 0.0), 1e-9)
    frames = raw.get("frames", [])
    frames_out = [list(f) for f in frames]
    no_frame_id = None
    lines = {}
    stacks = {}
    for (ids, owner, thread, alloc, freed, count, py_bytes, at_peak,
         n_alloc, n_freed, ln, lw, lst, lst2) in raw.get("rows", []):
        f = frames[owner] if owner >= 0 else _NO_FRAME
        key = (f[0], f[3], f[1])
        e = lines.get(key)
        if e is None:
            e = lines[key] = [0.0] * 11
        e[0] += alloc
        e[1] += freed
        e[2] += at_peak
        e[3] += py_bytes
        e[4] += count
        e[5] += n_alloc
        e[6] += n_freed
        e[7] += ln
        e[8] += lw
        e[9] += lst
        e[10] += lst2
        if ids is None:  # lprof's own frames only: charged to a line, not a stack
            continue
        if not ids:
            if no_frame_id is None:
                no_frame_id = len(frames_out)
                frames_out.append(list(_NO_FRAME))
            ids = (no_frame_id,)
        skey = (ids, thread)
        m = stacks.get(skey)
        if m is None:
            m = stacks[skey] = [0.0] * 5
        m[0] += alloc
        m[1] += count
        m[2] += freed
        m[3] += alloc - freed
        m[4] += at_peak
    out_lines, leaks = [], []
    for (path, line, func), e in lines.items():
        alloc, freed, at_peak, py_bytes, count, n_alloc, n_freed, ln, lw, lst, lst2 = e
        net = alloc - freed
        out_lines.append([path, line, func, round(alloc), round(freed), round(net), round(at_peak),
                          (py_bytes / alloc) if alloc else 0.0, round(count)])
        slope, span, score = _leak(ln, lw, lst, lst2, n_alloc, n_freed)
        if (score > LEAK_SCORE and slope > 0
                and span >= max(LEAK_MIN_SPAN_S, LEAK_MIN_SPAN_SHARE * duration)
                and ln >= LEAK_MIN_SURVIVORS and net >= LEAK_MIN_PEAK_SHARE * peak):
            leaks.append((net, [path, line, func, slope, score]))
    out_lines.sort(key=lambda r: -r[3])
    # the line that lost the most memory first (a growth rate favours short bursts)
    leaks = [row for net, row in sorted(leaks, key=lambda nr: -nr[0])]
    section = {
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
    stack_list = [[list(ids), thread, {"alloc_bytes": round(m[0]), "alloc_count": round(m[1]),
                                       "freed_bytes": round(m[2]), "live_bytes": round(m[3]),
                                       "peak_bytes": round(m[4])}]
                  for (ids, thread), m in stacks.items()]
    return section, {"frames": frames_out, "stacks": stack_list}


def _leak(n, w, st, st2, n_alloc, n_freed):
    """(slope bytes/s, span s, score) from the survivors' allocation times
    (steady growth = uniform times: span = sqrt(12) * stddev)."""
    score = 1.0 - (n_freed + 1.0) / (n_alloc - n_freed + 2.0) if n_alloc >= n_freed else 0.0
    if n < 2:
        return 0.0, 0.0, score
    mean = st / n
    var = st2 / n - mean * mean
    if var <= 0:
        return 0.0, 0.0, score
    span = (12.0 * var) ** 0.5
    return w / span, span, score


class MemoryCollector:
    """Collector for the runner: start(), stop(), snapshot()."""

    def __init__(self, sample_bytes=16384):
        if int(sample_bytes) <= 0:
            raise ValueError("sample_bytes must be positive")
        self.sample_bytes = int(sample_bytes)
        self._final = None
        self._running = False

    def start(self):
        self._final = None
        _lprof.memory_start(self.sample_bytes)
        self._running = True
        if not native_covered():
            sys.stderr.write("lprof: native allocations are not covered (allocator shim not "
                             "preloaded); memory shows Python objects only\n")

    def stop(self):
        if not self._running:
            return
        self._running = False
        _lprof.memory_stop()
        self._final = _lprof.memory_snapshot(_classify)

    def snapshot(self):
        raw = self._final if self._final is not None else _lprof.memory_snapshot(_classify)
        if not raw:
            return {}
        section, stacks = _build(raw)
        return {"memory": section, "stacks": stacks}


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
