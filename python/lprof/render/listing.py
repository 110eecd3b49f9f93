"""The line_profiler-shaped listing of `lprof -l` (exact line timing).

Header per function: Total time, File, Function; then Line #, Hits, Time,
Per Hit, % Time, Line Contents, with memory columns when the profile has them,
and Wait for generators and coroutines (time suspended at a yield or await
line until the frame resumed, which Time leaves out)."""

import os

from .source import block_range, read_lines
from .memory_report import fmt_bytes, memory_lines, memory_summary
from . import gpu_columns

_MIN_WIDTHS = {"line": 6, "hits": 9, "time": 12, "perhit": 8, "percent": 8}


def line_sum(fn):
    """A function's Total time: the sum of its line times (kernprof's rule).
    A line's time includes the calls it made, so in a recursive function the
    nested calls' time is counted again at each level, in the lines and in
    this total alike; the tracer's total_s (its outermost calls, from call to
    return) is said beside it where that is less."""
    return sum(t for _ln, _h, t in fn["lines"])


def outermost_note(fn, total):
    """The line under Total time where recursion counted nested calls again
    (None otherwise)."""
    outer = fn.get("total_s")
    if outer is None or total <= outer * 1.01 + 1e-9:
        return None
    return (
        f"Outermost calls: {outer:g} s (recursive: each line's time includes its nested "
        f"calls, counted again at every level, as kernprof counts them)"
    )


def _fmt_num(value, width):
    text = f"{value:5.1f}"
    if len(text) > width:
        text = f"{value:5.3g}"
    return text


def render_function(fn, unit, memory=None, source_cache=None, gpu=None, widths=None):
    # line_profiler's column widths: its defaults are the minima, a config
    # ([tool.line_profiler.show.column_widths]) may widen them
    w = {k: max(v, (widths or {}).get(k, 0)) for k, v in _MIN_WIDTHS.items()}
    memory = memory or {}
    idle_on = gpu is not None
    gpu = gpu or {}
    source_cache = source_cache if source_cache is not None else {}
    path = fn["file"]
    if path not in source_cache:
        source_cache[path] = read_lines(path)
    lines = source_cache[path]
    rows = {ln: (hits, t) for ln, hits, t in fn["lines"]}
    total = line_sum(fn)
    waits = {ln: w for ln, w in fn.get("wait", [])}
    idle = {ln: s for ln, s in fn.get("gpu_idle", [])} if idle_on else {}
    out = [f"Total time: {total:g} s"]
    note = outermost_note(fn, total)
    if note:
        out.append(note)
    if waits:
        out.append(f"Total wait: {sum(waits.values()):g} s (suspended at yield/await)")
    out += [f"File: {path}", f"Function: {fn['name']} at line {fn['first_line']}", ""]
    mem_cols = bool(memory) and any(
        (path, ln) in memory for ln in range(fn["first_line"], (max(rows) if rows else fn["first_line"]) + 1)
    )
    gpu_rows = {k: v for k, v in gpu.items() if k[0] == path}
    gpu_total = sum(g["gpu_s"] for g in gpu.values())
    header = (
        f"{'Line #':>{w['line']}} {'Hits':>{w['hits']}} {'Time':>{w['time']}} "
        f"{'Per Hit':>{w['perhit']}} {'% Time':>{w['percent']}}"
    )
    if waits:
        header += f" {'Wait':>12}"
    if mem_cols:
        header += f" {'Alloc':>10} {'Net':>10} {'At peak':>10}"
    if gpu_rows:
        header += gpu_columns.HEADER
    if idle:
        header += gpu_columns.IDLE_HEADER
    header += "  Line Contents"
    out += [header, "=" * len(header)]
    if lines is None:
        out.append(f"(source not found: {path}; showing recorded lines only)")
        span = sorted(rows)
    else:
        first, last = block_range(lines, fn["first_line"])
        last = max([last] + list(rows))
        span = range(first, last + 1)
    for ln in span:
        text = lines[ln - 1] if lines is not None and 0 < ln <= len(lines) else ""
        if ln in rows:
            hits, t = rows[ln]
            cells = (
                f"{ln:>{w['line']}} {hits:>{w['hits']}} "
                f"{_fmt_num(t / unit, w['time']):>{w['time']}} "
                f"{_fmt_num(t / unit / hits if hits else 0.0, w['perhit']):>{w['perhit']}} "
                f"{(_fmt_num(100.0 * t / total, w['percent']) if total else ''):>{w['percent']}}"
            )
        else:
            cells = (
                f"{ln:>{w['line']}} {'':>{w['hits']}} {'':>{w['time']}} "
                f"{'':>{w['perhit']}} {'':>{w['percent']}}"
            )
        if waits:
            cells += f" {_fmt_num(waits[ln] / unit, 12) if ln in waits else '':>12}"
        if mem_cols:
            m = memory.get((path, ln))
            cells += (
                f" {fmt_bytes(m['alloc_bytes']):>10} {fmt_bytes(m['net_bytes']):>10}"
                f" {fmt_bytes(m['peak_bytes']):>10}"
                if m
                else f" {'':>10} {'':>10} {'':>10}"
            )
        if gpu_rows:
            cells += gpu_columns.cells(gpu_rows.get((path, ln)), gpu_total)
        if idle:
            cells += gpu_columns.idle_cell(idle.get(ln))
        out.append(f"{cells}  {text}".rstrip() if not text else f"{cells}  {text}")
    out.append("")
    return "\n".join(out) + "\n"


def render_lines(profile, unit=None, skip_zero=False, sort="time", summarize=False, widths=None):
    """The whole `lprof -l` listing as text."""
    unit = unit or 1e-6
    functions = list(profile.get("functions", []))
    if skip_zero:
        functions = [f for f in functions if any(h for _l, h, _t in f["lines"])]
    if sort == "time":
        functions.sort(key=lambda f: -line_sum(f))
    else:
        functions.sort(key=lambda f: (f["file"], f["first_line"]))
    memory = memory_lines(profile)
    gpu = gpu_columns.for_listing(profile, functions=functions) if profile.get("gpu") else None
    parts = [f"Timer unit: {unit:g} s\n\n"]
    if not functions:
        parts.append(
            "No @profile functions were registered or run.\n"
            "(Decorate functions with @profile, or use -p to name them.)\n"
        )
    cache = {}
    for fn in functions:
        parts.append(render_function(fn, unit, memory, cache, gpu, widths))
        parts.append("\n")
    if summarize and functions:
        parts.append(render_summary(functions))
    if profile.get("waits_evicted"):
        parts.append(
            f"Wait: {profile['waits_evicted']} suspensions had no room in the tracer's "
            "table; their frames' waits, if they resumed, are not counted.\n"
        )
    mem = memory_summary(profile) + gpu_columns.summary(profile)
    if gpu is not None and any(f.get("gpu_idle") for f in functions):
        mem.append(gpu_columns.IDLE_LEGEND)
    if mem:
        parts.append("\n".join(mem).lstrip("\n") + "\n")
    return "".join(parts)


def render_summary(functions):
    out = []
    for fn in sorted(functions, key=line_sum):
        out.append(
            f"{line_sum(fn):6.2f} seconds - {os.path.relpath(fn['file'])}:{fn['first_line']} - {fn['name']}"
        )
    return "\n".join(out) + "\n"
