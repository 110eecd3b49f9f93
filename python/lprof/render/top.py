"""The live view of `lprof attach --top`: the hottest lines of a running
process (and, with --children, of the processes below it, summed), from two
successive snapshots of each one's profile: the share of the last interval
("now") beside the share and seconds since the attach.

Lines are charged by the one attribution rule (lprof.model.stacks.charge),
as in the listing: time in library code goes to the line of the program's
own code that called it."""

import os

from ..model.frames import table as frame_table
from ..model.stacks import CPU_COLUMNS, charge, is_user_file
from .source import read_lines

# the seconds a line is ranked by, per sampling mode
_METRICS = {"cpu": CPU_COLUMNS, "wall": ("wall_s",)}


def line_seconds(profile):
    """{(path, line): (function, seconds)} of a sampled profile, in its mode's
    metric (CPU or wall)."""
    names = _METRICS["wall" if (profile.get("sampling") or {}).get("mode") == "wall" else "cpu"]
    st = profile.get("stacks") or {}
    frames = frame_table(st.get("frames", []))
    out = {}
    for ids, _thread, m in st.get("stacks", []):
        value = sum(m.get(n, 0.0) for n in names)
        if not value or not ids:
            continue
        chosen = charge(frames, ids, is_user_file)
        if chosen is None or not is_user_file(chosen.file):
            continue
        key = (chosen.file, chosen.line)
        func, total = out.get(key, (chosen.function, 0.0))
        out[key] = (func, total + value)
    return out


def _sum_lines(profiles):
    """line_seconds() of several processes' profiles, added line by line."""
    out = {}
    for prof in profiles:
        for key, (func, secs) in line_seconds(prof).items():
            func, total = out.get(key, (func, 0.0))
            out[key] = (func, total + secs)
    return out


def _whole(profiles):
    """The processes' whole CPU (or, in wall mode, wall) time, added up: what
    every percent is a share of (lprof.model.shares)."""
    from ..model import shares

    return sum(shares.breakdown(p)["whole_s"] for p in profiles if p.get("sampling"))


def _source(cache, path, line):
    if path not in cache:
        cache[path] = read_lines(path)
    lines = cache[path]
    return lines[line - 1].strip() if lines and 0 < line <= len(lines) else ""


def render(previous, current, pid, limit=20, cache=None):
    """One frame of the view, as text. current: the profile so far of each
    process followed (the first is PID's); previous: each one's profile at
    the last frame (empty for the first frame, or a process new since:
    "now" is then the whole run so far)."""
    cache = {} if cache is None else cache
    now_total = _sum_lines(current)
    before = _sum_lines(previous)
    delta = {k: v[1] - before.get(k, (None, 0.0))[1] for k, v in now_total.items()}
    sum_total = sum(v[1] for v in now_total.values())
    # percents are shares of the processes' whole time, now and since the
    # attach (what the listing does), never of the lines shown alone
    whole_total = max(_whole(current), sum_total)
    whole_now = max(whole_total - _whole(previous), sum(max(v, 0.0) for v in delta.values()))
    sampling = [p.get("sampling") or {} for p in current]
    mode = sampling[0].get("mode", "cpu") if sampling else "cpu"
    span = max((s.get("duration_s", 0.0) for s in sampling), default=0.0)
    more = f" and {len(current) - 1} child process(es)" if len(current) > 1 else ""
    whole_name = "CPU time" if mode == "cpu" else "wall time summed over threads"
    head = (
        f"lprof attach {pid}{more}: {mode.upper() if mode == 'cpu' else mode} time by line, "
        f"{span:.1f} s attached, {sum_total:.2f} s on the program's lines of "
        f"{whole_total:.2f} s {whole_name} (percents are shares of the whole)"
    )
    rows = sorted(now_total, key=lambda k: (-max(delta[k], 0.0), -now_total[k][1]))[:limit]
    out = [head, f"{'now%':>6} {'total%':>7} {'total(s)':>9}  {'line':<28} {'function':<20} source"]
    for key in rows:
        func, total = now_total[key]
        path, line = key
        now_pct = 100.0 * max(delta[key], 0.0) / whole_now if whole_now else 0.0
        tot_pct = 100.0 * total / whole_total if whole_total else 0.0
        where = f"{os.path.basename(path)}:{line}"
        out.append(
            f"{now_pct:5.1f}% {tot_pct:6.1f}% {total:9.3f}  {where:<28.28} "
            f"{func:<20.20} {_source(cache, path, line)}"
        )
    if not rows:
        out.append("  (no samples on the program's lines yet)")
    return "\n".join(out) + "\n"
