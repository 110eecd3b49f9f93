"""Scalene-style listing of a sampled profile: per file, source lines with
CPU % (Python / native / system), wall % and seconds, plus a per-function
summary. Time in library code is charged to the innermost frame whose file
passes the filter (the user's calling line). Every percentage is a share of
the process's whole (model/shares.py: its CPU time, or wall time summed over
its threads), and the listing ends with what it did not show and where that
went."""

import os
import re
import shutil
import sys

from ..model.frames import python_threads
from ..model.stacks import CPU_COLUMNS
from ..model import task_stacks
from .source import read_lines
from .wrap import wrap
from .memory_report import fmt_bytes, memory_lines, memory_summary
from . import gpu_columns

# then: time coroutines waited at the line's await (wall mode, 3.12+), and
# the part of the line's time its thread held the GIL
_COLS = CPU_COLUMNS + ("wall_s", "wait_s", "gil_s")
_N = len(_COLS)
_NCPU = len(CPU_COLUMNS)
_WALL, _WAIT, _GIL = _COLS.index("wall_s"), _COLS.index("wait_s"), _COLS.index("gil_s")


def shows_gil(profile):
    """The gil% column: where more than one thread ran Python (the GIL is
    shared) and the profile measured it (files before gil_s have none)."""
    samp = profile.get("sampling") or {}
    if len(python_threads(samp.get("threads"))) < 2:
        return False
    st = profile.get("stacks") or {}
    return any(
        "gil_s" == (c[0] if isinstance(c, (list, tuple)) else c) for c in st.get("columns", [])
    ) or any(m.get("gil_s") for _i, _t, m in st.get("stacks", []) if isinstance(m, dict))


def _make_filter(profile, profile_only, profile_all):
    if isinstance(profile_only, str):
        profile_only = [p for p in profile_only.split(",") if p]

    if not profile_all and not profile_only:
        # the default rule, as in the file, the HTML report and the JSON export
        from ..model.selection import default_accept
        from ..model.stacks import row_form

        return default_accept(row_form(profile.get("stacks") or {}))

    def accept(path):
        if not path or path.startswith("<"):
            return False
        if profile_all:
            return True
        return any(p in path for p in profile_only)

    return accept


def _charge(profile, accept, thread=None):
    """Per line and per function, by the one attribution rule
    (lprof.model.stacks.charge); only lines of accepted files are shown."""
    from ..model.frames import table as frame_table
    from ..model.stacks import charge

    st = profile.get("stacks") or {}
    frames = frame_table(st.get("frames", []))
    lines, funcs = {}, {}
    for ids, th, m in st.get("stacks", []):
        if thread is not None and str(th) != str(thread):
            continue
        vals = [m.get(c, 0.0) for c in _COLS]
        if not any(vals) or not ids:
            continue
        chosen = charge(frames, ids, accept)
        if chosen is None or not accept(chosen.file):
            continue
        key = (chosen.file, chosen.line)
        row = lines.setdefault(key, [0.0] * _N)
        frow = funcs.setdefault((chosen.file, chosen.function, chosen.first_line), [0.0] * _N)
        for i, v in enumerate(vals):
            row[i] += v
            frow[i] += v
    return lines, funcs


def _fmt_pct(v, total):
    if not total or not v:
        return ""
    return f"{100.0 * v / total:5.1f}%"


def _render_one(profile, accept, reduced, threshold_pct, wholes, thread=None, notes=None):
    """The files' listings. Percentages are shares of the process's whole
    (wholes: {"cpu": s, "wall": s}); a line is listed when it holds
    threshold_pct of the time charged to the selected files. notes (a dict)
    gets what was left out: {"below_s", "files", "files_s"}."""
    samp = profile.get("sampling") or {}
    mode = samp.get("mode", "cpu")
    lines, funcs = _charge(profile, accept, thread)
    cpu_total = wholes["cpu"]
    wall_total = wholes["wall"]
    wait_total = sum(v[_WAIT] for v in lines.values())
    main_total = wall_total if mode == "wall" else cpu_total
    notes = notes if notes is not None else {}
    memory = memory_lines(profile, accept) if thread is None else {}
    alloc_total = sum(m["alloc_bytes"] for m in memory.values())
    gpu = gpu_columns.for_listing(profile, accept) if thread is None else {}
    gpu_total = sum(g["gpu_s"] for g in gpu.values())
    idle = gpu_columns.sampled_idle(profile, accept) if thread is None else {}
    out = []
    if not lines and not memory and not gpu:
        out.append("(no samples in the selected files)")
        return out
    by_file = {}
    for (path, ln), v in lines.items():
        by_file.setdefault(path, {})[ln] = v
    for path, ln in list(memory) + list(gpu):
        by_file.setdefault(path, {}).setdefault(ln, [0.0] * _N)
    show_wall = mode == "wall"  # CPU mode samples no wall time: no empty column
    show_gil = shows_gil(profile)

    def wall_cell(v):
        return f" {_fmt_pct(v, wall_total):>7}" if show_wall else ""

    def wait_cell(v):  # a column only where a coroutine waited
        return f" {(f'{v:.3f}' if v else ''):>9}" if wait_total else ""

    def gil_cell(v):  # of the line's own time: how much of it kept the other threads out
        if not show_gil:
            return ""
        own = main_value(v)
        return f" {(f'{100.0 * v[_GIL] / own:4.0f}%' if own else ''):>5}"

    def wait_share(v):
        return 100.0 * v[_WAIT] / wait_total if wait_total else 0.0

    hdr = (
        f"{'Line':>6} {'CPU% py':>8} {'native':>7} {'system':>7}"
        + (f" {'wall%':>7}" if show_wall else "")
        + f" {'time(s)':>9}"
        + (f" {'gil%':>5}" if show_gil else "")
        + (f" {'wait(s)':>9}" if wait_total else "")
    )
    if memory:
        hdr += f" {'alloc':>10} {'net':>10} {'at peak':>10} {'py%':>5}"
    if gpu:
        hdr += gpu_columns.HEADER
    if idle:
        hdr += gpu_columns.IDLE_HEADER
    hdr += "  source"

    def mem_cells(path, ln):
        if not memory:
            return ""
        m = memory.get((path, ln))
        if m is None:
            return f" {'':>10} {'':>10} {'':>10} {'':>5}"
        return (
            f" {fmt_bytes(m['alloc_bytes']):>10} {fmt_bytes(m['net_bytes']):>10} "
            f"{fmt_bytes(m['peak_bytes']):>10} {100 * m['python_share']:>4.0f}%"
        )

    def mem_share(path, ln):
        m = memory.get((path, ln))
        return 100.0 * m["alloc_bytes"] / alloc_total if m and alloc_total else 0.0

    def gpu_share(path, ln):
        g = gpu.get((path, ln))
        return 100.0 * g["gpu_s"] / gpu_total if g and gpu_total else 0.0

    def gpu_memory(path, ln):  # a line that allocated device memory is always shown
        g = gpu.get((path, ln))
        return bool(g and g["alloc_bytes"])

    def gpu_cells(path, ln):
        cells = gpu_columns.cells(gpu.get((path, ln)), gpu_total) if gpu else ""
        return cells + (gpu_columns.idle_cell(idle.get((path, ln))) if idle else "")

    def cpu_cells(v):  # the CPU columns, the first under "CPU% py"
        return " ".join(f"{_fmt_pct(v[i], cpu_total):>{8 if i == 0 else 7}}" for i in range(_NCPU))

    def main_value(v):
        return v[_WALL] if mode == "wall" else sum(v[:_NCPU])

    selected_total = sum(main_value(v) for v in lines.values())

    def pct_of_main(v):  # the threshold's share: of the selected files' time
        return 100.0 * main_value(v) / selected_total if selected_total else 0.0

    files = sorted(by_file, key=lambda p: -sum(main_value(v) for v in by_file[p].values()))
    hidden = []
    for path in files:
        file_lines = by_file[path]
        ftime = sum(main_value(v) for v in file_lines.values())
        if reduced and not any(
            pct_of_main(v) >= threshold_pct
            or mem_share(path, ln) >= threshold_pct
            or wait_share(v) >= threshold_pct
            for ln, v in file_lines.items()
        ):
            hidden.append(ftime)  # no line to show: no empty header (issue #14 defect 12)
            continue
        out.append("")
        out.append(
            f"File: {path}  ({ftime:.3f} s, {100.0 * ftime / main_total if main_total else 0:.1f}%"
            f" of {whole_name(profile)})"
        )
        src = read_lines(path)
        if src is None:
            out.append("  (source not available)")
        out.append(hdr)
        if reduced:
            shown = sorted(
                ln
                for ln, v in file_lines.items()
                if pct_of_main(v) >= threshold_pct
                or mem_share(path, ln) >= threshold_pct
                or gpu_share(path, ln) >= threshold_pct
                or gpu_memory(path, ln)
                or wait_share(v) >= threshold_pct
            )
        else:
            shown = list(range(1, (len(src) if src else 0) + 1))
            shown = sorted(set(shown) | set(file_lines))
        notes["below_s"] = (
            notes.get("below_s", 0.0)
            + ftime
            - sum(main_value(file_lines[ln]) for ln in shown if ln in file_lines)
        )
        for ln in shown:
            v = file_lines.get(ln, [0.0] * _N)
            text = src[ln - 1] if src and 0 < ln <= len(src) else ""
            secs = main_value(v)
            out.append(
                f"{ln:>6} {cpu_cells(v)}{wall_cell(v[_WALL])} "
                f"{(f'{secs:.3f}' if secs else ''):>9}{gil_cell(v)}{wait_cell(v[_WAIT])}"
                f"{mem_cells(path, ln)}"
                f"{gpu_cells(path, ln)}  {text}"
            )
        out.extend(_import_memory_notes(memory, path, shown, src))
        fl = sorted(((k, v) for k, v in funcs.items() if k[0] == path), key=lambda kv: -main_value(kv[1]))
        if fl:
            out.append("  function summary:")
            for (p, func, first), v in fl:
                if reduced and pct_of_main(v) < threshold_pct and wait_share(v) < threshold_pct:
                    continue
                out.append(
                    f"  {first:>6} {cpu_cells(v)}{wall_cell(v[_WALL])} "
                    f"{main_value(v):>9.3f}{gil_cell(v)}{wait_cell(v[_WAIT])}  {func}"
                )
    notes["files"] = notes.get("files", 0) + len(hidden)
    notes["files_s"] = notes.get("files_s", 0.0) + sum(hidden)
    notes["threshold"] = threshold_pct
    return out


_IMPORT_LINE = re.compile(r"\s*(import|from)\s+[\w.]+")
_IMPORT_NOTE_BYTES = 1 << 20


def _import_memory_notes(memory, path, shown, src):
    """A word for an import line that keeps megabytes outside Python objects:
    what the imported extensions set up while loading (numpy's OpenBLAS keeps
    buffers per BLAS thread: 41.7 MB net at one thread, 100.1 MB at two,
    measured), held to the end, not something the line leaks."""
    out = []
    for ln in shown:
        m = memory.get((path, ln))
        text = src[ln - 1] if src and 0 < ln <= len(src) else ""
        if (
            m
            and m["net_bytes"] >= _IMPORT_NOTE_BYTES
            and m["python_share"] < 0.5
            and _IMPORT_LINE.match(text)
        ):
            out += wrap(
                f"note: line {ln} (an import) keeps {fmt_bytes(m['net_bytes'])} allocated "
                f"({100 * (1 - m['python_share']):.0f}% of its allocations outside Python "
                f"objects): what the imported extensions set up while loading (BLAS "
                f"libraries keep buffers per thread: fewer threads, less of it); it stays "
                f"until the process ends.",
                width(),
                initial_indent="  ",
                subsequent_indent="    ",
            )
    return out


def whole_name(profile):
    """What every share is of, in words."""
    mode = (profile.get("sampling") or {}).get("mode", "cpu")
    if mode == "wall":
        return "wall time, summed over threads"
    return (
        "the processes' CPU time"
        if (profile.get("meta") or {}).get("processes", 1) > 1
        else "the process's CPU time"
    )


def width():
    """The listing's width: $COLUMNS, else the terminal's, else 80."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        if sys.stdout.isatty():
            return max(40, shutil.get_terminal_size((80, 24)).columns)
    except (AttributeError, ValueError, OSError):
        pass
    return 80


def _wrap(text, cols, indent="  "):
    return wrap(text, cols, subsequent_indent=indent) or [""]


def legend(profile, cols=None):
    """What the columns mean, wrapped to cols (default: width())."""
    mode = (profile.get("sampling") or {}).get("mode", "cpu")
    text = (
        "Columns: CPU% py / native / system = share of the process's CPU time spent on the "
        "line in Python code, in native code it called, in the kernel"
    )
    if mode == "wall":
        text += "; wall% = share of wall time summed over threads"
    text += f"; time(s) = {mode} seconds"
    if shows_gil(profile):
        text += (
            "; gil% = share of the line's own time its thread held the GIL (native code "
            "that keeps it stops every other thread's Python)"
        )
    if (profile.get("sampling") or {}).get("wait_total_s"):
        text += (
            "; wait(s) = seconds coroutines spent suspended at the line's await, summed over "
            "coroutines (several waiting at once add up)"
        )
    if task_stacks.applies(profile):
        text += (
            "; the flame graph and folded stacks are per asyncio task, from the task's name down "
            "its await chain (--thread-stacks: per thread)"
        )
        apart = task_stacks.told_apart(profile)
        text += (
            f", {apart} task(s) each apart"
            if apart
            else ", tasks of one coroutine function together (Python 3.14+ draws each apart)"
        )
    if profile.get("memory"):
        text += (
            "; alloc = bytes allocated, net = allocated minus freed, at peak = live at the "
            "process's peak, py% = share allocated by Python objects"
        )
    if (profile.get("gpu") or {}).get("lines"):
        text += "; " + gpu_columns.LEGEND
    if (profile.get("gpu") or {}).get("idle_lines"):
        text += "; " + gpu_columns.SAMPLED_IDLE_LEGEND
    return "\n".join(_wrap(text + ".", cols or width()))


def header(profile, parts=None, cols=None):
    """The first lines: how it was sampled, and the whole (each number one
    stated thing)."""
    from ..model import shares

    samp = profile.get("sampling") or {}
    mode = samp.get("mode", "cpu")
    parts = parts or shares.breakdown(profile)
    nthreads = len(python_threads(samp.get("threads"))) or parts["threads"]
    run = samp.get("duration_s", 0.0)
    if mode == "wall":
        reads = samp.get("rate_hz_effective", 0.0) * run * max(1, nthreads)
        per = reads / parts["wall_whole_s"] if parts["wall_whole_s"] else 0.0
        text = (
            f"lprof sampled wall time: {samp.get('rate_hz_requested', 0):g} Hz per thread "
            f"requested, {reads:.0f} reads ({per:.0f} per thread-second); wall "
            f"{parts['wall_whole_s']:.3f} s summed over {nthreads} "
            f"thread{'s' if nthreads != 1 else ''} in a {run:.3f} s run; process CPU "
            f"{parts['cpu_whole_s']:.3f} s; signal {samp.get('signal')}"
        )
        if samp.get("outside_samples"):
            text += (
                f"; the running threads read from outside, not stopped ({samp['outside_samples']} reads); "
                + _split_words(samp.get("split_samples", 0))
            )
    else:
        signals = samp.get("signals", 0)
        n = (profile.get("meta") or {}).get("processes", 1)
        procs = f"CPU of {n} processes" if n > 1 else "process CPU"
        cpu_on_stacks = parts["whole_s"] - parts["unsampled_s"] - parts["lprof_s"]
        source = _CPU_SOURCES.get(samp.get("cpu_source"), _CPU_SOURCES["timers"])
        if samp.get("cpu_source") == "outside":
            reads = samp.get("outside_samples", 0)
            return (
                f"lprof sampled CPU time: {samp.get('rate_hz_requested', 0):g} Hz requested, "
                f"{reads} reads of running threads ({reads / cpu_on_stacks if cpu_on_stacks else 0:.0f} "
                f"per sampled CPU second: {source}), each weighted by the CPU time it covers; "
                f"{procs} {parts['cpu_whole_s']:.3f} s ({cpu_on_stacks:.3f} s on sampled Python "
                f"stacks) in a {run:.3f} s run, {nthreads} thread{'s' if nthreads != 1 else ''}; "
                + _split_words(samp.get("split_samples", 0))
            )
        text = (
            f"lprof sampled CPU time: {samp.get('rate_hz_requested', 0):g} Hz requested, "
            f"{signals} signals ({signals / cpu_on_stacks if cpu_on_stacks else 0:.0f} "
            f"per sampled CPU second: {source}), each weighted by "
            f"the CPU time it covers; {procs} {parts['cpu_whole_s']:.3f} s "
            f"({cpu_on_stacks:.3f} s on sampled Python stacks) in a {run:.3f} s run, "
            f"{nthreads} thread{'s' if nthreads != 1 else ''}; signal {samp.get('signal')}"
        )
    return text


# what made CPU-mode signals (collect/sampler.h); files before it was
# recorded had CPU timers
_CPU_SOURCES = {
    "perf": "a task-clock perf event per thread",
    "thread": "lprof's sampler thread; perf events were refused here",
    "timers": "CPU timers, which fire on the kernel tick",
    "outside": "lprof's sampler thread reading their frames from outside, not stopping them",
}


def _split_words(split_samples):
    """How the outside reads' CPU time was split (aggregate/cpu_split.h)."""
    if split_samples:
        return (
            f"Python, native and system split by {split_samples} signalled samples beside the reads, "
            "per line (a line with none: native is time whose leaf stood on a call)"
        )
    return "no system column (no PC): native is time whose leaf stood on a call"


def _pct(v, whole):
    return f"{100.0 * v / whole:.1f}%" if whole else "0.0%"


def remainder(profile, parts, notes, cols=None):
    """What the listing does not show, and where it went, as lines."""
    from ..model import shares

    whole = parts["whole_s"]
    if not whole:
        return []
    shown = parts["selected_s"] - notes.get("below_s", 0.0) - notes.get("files_s", 0.0)
    head = (
        f"Shown above: {_pct(shown, whole)} of {whole_name(profile)} ({shown:.3f} s of "
        f"{whole:.3f} s). Not shown:"
    )
    bits = []
    if notes.get("below_s", 0.0) > 5e-4:
        bits.append(
            f"{_pct(notes['below_s'], whole)} on lines of these files under the "
            f"threshold ({notes.get('threshold', 1.0):g}% of the selected files' time)"
        )
    if notes.get("files"):
        n = notes["files"]
        bits.append(
            f"{_pct(notes['files_s'], whole)} in {n} more selected file{'s' if n > 1 else ''} "
            f"(--all lists them)"
        )
    for label, secs, names in shares.hidden_by_kind(parts):
        named = ", ".join(f"{n} {_pct(v, whole)}" for n, v in names[:3] if v >= 5e-4)
        bits.append(f"{_pct(secs, whole)} in {label}" + (f" ({named})" if named else ""))
    if parts["no_python_s"]:
        bits.append(f"{_pct(parts['no_python_s'], whole)} in threads without Python, on no Python stack")
    if parts["lprof_s"]:
        bits.append(f"{_pct(parts['lprof_s'], whole)} in lprof itself (its threads, and its code on yours)")
    if parts["unsampled_s"]:
        bits.append(
            f"{_pct(parts['unsampled_s'], whole)} on no sampled Python stack (threads' "
            f"last partial tick, threads outside the sampler's table)"
        )
    if not bits:
        bits.append("nothing")
    return _wrap(head + " " + "; ".join(bits) + ".", cols or width(), indent="")


def stack_table_warning(profile):
    """One line when the stack table overflowed: what happened after that
    is in the totals but on no line (never silent)."""
    table = (profile.get("meta") or {}).get("stack_table") or {}
    lost = table.get("overflows", 0)
    if not lost:
        return None
    return (
        f"WARNING: the stack table filled up ({table.get('node_capacity', 0):,} frames, "
        f"{table.get('row_capacity', 0):,} stacks): {lost:,} samples or allocations after "
        f"that are on no line. Profile a shorter run, or sample allocations less often "
        f"(--memory-sample-bytes)."
    )


def render(
    profile,
    reduced=True,
    profile_only=None,
    profile_all=False,
    threshold_pct=1.0,
    per_thread=False,
    cols=None,
):
    from ..model import shares

    samp = profile.get("sampling") or {}
    cols = cols or width()
    accept = _make_filter(profile, profile_only, profile_all)
    parts = shares.breakdown(profile, accept)
    wholes = {"cpu": parts["cpu_whole_s"], "wall": parts["wall_whole_s"]}
    extra = []
    if samp.get("dropped"):
        extra.append(f"{samp['dropped']} samples dropped")
    if samp.get("truncated"):
        extra.append(f"{samp['truncated']} stacks truncated")
    if samp.get("threads_unsampled"):  # the thread table stayed full (128 threads at once)
        extra.append(f"{samp['threads_unsampled']} threads not sampled")
    if samp.get("wait_total_s"):
        extra.append(f"coroutines waited {samp['wait_total_s']:.3f} s at awaits")
    if (samp.get("waits") or {}).get("evicted"):
        extra.append(
            f"{samp['waits']['evicted']} await waits lost (more coroutines suspended at once "
            f"than the table holds)"
        )
    if (samp.get("waits") or {}).get("note"):
        extra.append(samp["waits"]["note"])
    if samp.get("perf_stalled"):  # collect/sampler.c: close_stalled_perf
        n = samp["perf_stalled"]
        extra.append(
            f"{n} thread{'s' if n != 1 else ''} blocked the sampling signal while "
            f"computing: {'their' if n != 1 else 'its'} CPU time from then on is on no "
            f"line (its signals were stopped before their queue ended the process)"
        )
    if samp.get("in_profiler"):  # the tracer's or --memory hooks' own time: on no line
        n = samp["in_profiler"]
        extra.append(f"{n} sample{'s' if n != 1 else ''} in lprof's own code, on no line")
    focus = getattr(accept, "focus", None)
    if focus:  # the program is library code: what it exercised is selected too
        from ..model.selection import describe

        extra.append(
            "selected: your files and "
            + ", ".join(sorted(describe(g) for g in focus))
            + " (what the run exercised)"
        )
    head = header(profile, parts) + (" [" + "; ".join(extra) + "]" if extra else "")
    out = _wrap(head + ".", cols, indent="  ") + [legend(profile, cols)]
    full = stack_table_warning(profile)
    if full:
        out.append(full)
    notes = {}
    if per_thread:
        threads = samp.get("threads", {})
        seen = sorted({str(t) for _i, t, _m in (profile.get("stacks") or {}).get("stacks", [])})
        for t in seen:
            out.append("")
            out.append(f"== thread {threads.get(t, t)} ({t})")
            out.extend(_render_one(profile, accept, reduced, threshold_pct, wholes, thread=t, notes=notes))
    else:
        out.extend(_render_one(profile, accept, reduced, threshold_pct, wholes, notes=notes))
    rest = remainder(profile, parts, notes, cols)
    if rest:
        out.append("")
        out.extend(rest)
    out.extend(memory_summary(profile))
    out.extend(gpu_columns.summary(profile))
    return "\n".join(out) + "\n"
