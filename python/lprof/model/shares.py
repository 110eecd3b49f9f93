"""The process's whole (CPU or wall time) and where each part of it went:
the denominator of every percentage a listing, the HTML report or an export
shows, and the parts of it a view does not show.

CPU mode: the whole is the process's CPU time while sampling ran
(sampling.process_cpu_s: every thread, Python or not, lprof's own threads
included), or what was sampled where that is more (sampling noise). Wall
mode: the wall time of the sampled threads, summed over threads (two
threads that lived 1 s each make 2 s). The parts:
- selected: charged to a line of a selected file (the views' lines)
- per library group: stacks with no selected frame, by the innermost
  site-packages frame on the stack, else the innermost standard-library one,
  else lprof's own or other code
- no_python: stacks without a Python frame (native frames alone with
  --native, a marker of lprof's alone: threads that never ran Python)
- lprof: CPU mode, lprof's own CPU time (sampling.lprof_cpu_s: its threads,
  its code on the program's threads), at most what no stack holds
- unsampled: the rest of the CPU time on no sampled stack (each thread's
  last partial tick, threads outside the sampler's table)
"""

from .frames import table as frame_table
from .selection import default_accept, file_group
from .stacks import CPU_COLUMNS, charge, row_form


def mode_of(profile):
    return (profile.get("sampling") or {}).get("mode", "cpu")


def metric_value(mode, m):
    """A stack row's (or line's) time in the mode's metric."""
    if mode == "wall":
        return m.get("wall_s", 0.0)
    return sum(m.get(c, 0.0) for c in CPU_COLUMNS)


def _hidden_group(frames, ids, groups):
    """Where a stack with no selected frame went (module docstring)."""
    best = None
    for fid in reversed(ids):
        f = frames[fid]
        if not f.has_line or f.kind != "python":
            continue
        g = groups.get(f.file)
        if g is None:
            g = groups[f.file] = file_group(f.file)
        if g[0] == "site":
            return g
        if g[0] == "stdlib" and (best is None or best[0] != "stdlib"):
            best = g
        elif best is None:
            best = g
    return best or ("other", "")


def breakdown(profile, accept=None, thread=None):
    """{"mode", "whole_s" (and "cpu_whole_s", "wall_whole_s"), "sampled_s",
    "selected_s", "hidden": {group: s}, "no_python_s", "lprof_s", "unsampled_s", "in_profiler_samples", "threads",
    "run_s",
    "basis"}: the process's whole and its parts (one thread's parts with
    `thread`; the whole stays the process's)."""
    mode = mode_of(profile)
    samp = profile.get("sampling") or {}
    section = row_form(profile.get("stacks") or {})
    if accept is None:
        accept = default_accept(section)
    frames = frame_table(section.get("frames", []))
    groups = {}
    sampled = selected = no_python = 0.0
    sampled_all = cpu_all = wall_all = 0.0
    hidden = {}
    threads = set()
    for ids, th, m in section.get("stacks", []):
        cpu_all += metric_value("cpu", m)
        wall_all += metric_value("wall", m)
        v = metric_value(mode, m)
        if not v:
            continue
        sampled_all += v
        threads.add(str(th))
        if thread is not None and str(th) != str(thread):
            continue
        sampled += v
        chosen = charge(frames, ids, accept) if ids else None
        if chosen is None or not any(frames[i].kind == "python" for i in ids):
            # native frames alone (--native), or a marker of lprof's alone (CPU of
            # threads that never ran Python, where the sampler records it)
            no_python += v
        elif accept(chosen[0]):
            selected += v
        else:
            g = _hidden_group(frames, ids, groups)
            hidden[g] = hidden.get(g, 0.0) + v
    cpu_whole = max(samp.get("process_cpu_s") or 0.0, cpu_all)
    if mode == "wall":
        whole = wall_all
        basis = "wall time summed over the sampled threads"
    else:
        whole = cpu_whole
        basis = "the process's CPU time"
    unsampled = max(0.0, whole - sampled_all) if thread is None else 0.0
    own = min(unsampled, samp.get("lprof_cpu_s") or 0.0) if mode == "cpu" else 0.0
    return {
        "mode": mode,
        "whole_s": whole,
        "cpu_whole_s": cpu_whole,
        "wall_whole_s": wall_all,
        "sampled_s": sampled,
        "selected_s": selected,
        "hidden": hidden,
        "no_python_s": no_python,
        "lprof_s": own,
        "unsampled_s": unsampled - own,
        "in_profiler_samples": samp.get("in_profiler", 0) if thread is None else 0,
        "threads": len(threads),
        "run_s": samp.get("duration_s", 0.0),
        "basis": basis,
    }


def hidden_by_kind(parts):
    """[(label, seconds, [(name, seconds), ...]), ...] of the hidden parts,
    largest first: other files of yours (below the threshold) are the
    caller's; here the standard library, site-packages, lprof, other code."""
    kinds = {
        "site": "site-packages",
        "stdlib": "the standard library",
        "lprof": "lprof's own code",
        "user": "other files",
        "text": "code given as text",
        "other": "other code",
    }
    out = {}
    for g, s in parts["hidden"].items():
        label = kinds.get(g[0], "other code")
        e = out.setdefault(label, [0.0, {}])
        e[0] += s
        name = g[1] if len(g) > 1 and g[0] in ("site", "stdlib") else None
        if name:
            e[1][name] = e[1].get(name, 0.0) + s
    return sorted(
        ((label, s, sorted(names.items(), key=lambda kv: -kv[1])) for label, (s, names) in out.items()),
        key=lambda r: -r[1],
    )


def as_dict(parts):
    """The breakdown as JSON-ready data (the export and the HTML report)."""
    return {
        "mode": parts["mode"],
        "basis": parts["basis"],
        "whole_s": parts["whole_s"],
        "selected_s": parts["selected_s"],
        "no_python_s": parts["no_python_s"],
        "lprof_s": parts["lprof_s"],
        "unsampled_s": parts["unsampled_s"],
        "in_profiler_samples": parts["in_profiler_samples"],
        "hidden": [
            {"where": label, "seconds": s, "top": [{"name": n, "seconds": v} for n, v in names[:5]]}
            for label, s, names in hidden_by_kind(parts)
        ],
    }
