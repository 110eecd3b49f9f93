"""`lprof view FILE --ranks`: per-line imbalance across the ranks (or
processes) of a merged profile: mean, maximum, max/mean and the rank that
holds the maximum (the straggler), from the profile's "ranks" section; with
GPU collectives, per line and rank their comm time, wait for peers and
transfer (its "collectives", model/collectives.py)."""

import os

from .source import read_lines
from .memory_report import fmt_bytes

# what a column is called in the header; any other column is shown by name
_TITLES = {
    "cpu_s": "CPU seconds",
    "wall_s": "wall seconds",
    "line_time_s": "line time (s), exact",
    "line_hits": "hits",
}


def default_metric(prof):
    ranks = prof.get("ranks") or {}
    names = {n for row in ranks.get("lines", []) for n in row[3]}
    mode = (prof.get("sampling") or {}).get("mode")
    for name in (("wall_s",) if mode == "wall" else ()) + (
        "cpu_s",
        "line_time_s",
        "alloc_bytes",
        "gpu_kernel_s",
    ):
        if name in names:
            return name
    return sorted(names)[0] if names else None


def metric_names(prof):
    return sorted({n for row in (prof.get("ranks") or {}).get("lines", []) for n in row[3]})


def _who(member, index):
    if member.get("rank") is not None:
        return f"rank {member['rank']}"
    return f"pid {member.get('pid', '?')}" if member.get("pid") is not None else f"#{index}"


def _fmt(value, metric):
    if metric.endswith("_bytes"):
        return fmt_bytes(value) or "0 B"
    if metric.endswith("_s"):
        return f"{value:.3f}"
    return f"{value:g}"


def render(prof, metric=None, limit=20):
    ranks = prof.get("ranks")
    if not ranks or not ranks.get("members"):
        return (
            "The profile holds no per-rank data: merge rank files with `lprof merge`, or "
            "profile a program that starts child processes.\n"
        )
    metric = metric or default_metric(prof)
    members = ranks["members"]
    n = len(members)
    out = [
        f"lprof ranks: {n} profiles merged; metric {metric} ({_TITLES.get(metric, metric)})"
        if metric
        else f"lprof ranks: {n} profiles merged"
    ]
    totals = [m.get("totals", {}).get(metric, 0) for m in members] if metric else []
    mean_total = sum(totals) / n if totals else 0.0
    out.append("")
    out.append(f"{'':>10} {'host':<16} {'pid':>8} {'run(s)':>8} {'total':>10} {'/mean':>6}")
    for i, m in enumerate(members):
        tot = totals[i] if totals else 0
        share = f"{tot / mean_total:6.2f}" if mean_total else ""
        out.append(
            f"{_who(m, i):>10} {str(m.get('hostname', ''))[:16]:<16} "
            f"{str(m.get('pid', '')):>8} {m.get('duration_s', 0.0):8.3f} "
            f"{_fmt(tot, metric) if metric else '':>10} {share}"
        )
    if not metric:
        return "\n".join(out + collectives(prof, limit)) + "\n"
    rows = []
    for path, line, func, values in ranks.get("lines", []):
        cell = values.get(metric)
        if cell and cell[1] > 0:
            rows.append((cell[1], cell[0] / n, cell[2], path, line, func))
    rows.sort(key=lambda r: -r[0])
    out.append("")
    out.append(
        f"Per-line imbalance, the {min(limit, len(rows))} lines with the largest maximum "
        f"(max/mean: the slowest rank over the mean of all {n}; 1.00 is balanced):"
    )
    out.append(f"{'mean':>10} {'max':>10} {'max/mean':>8} {'slowest':>10}  line")
    cache = {}
    for mx, mean, who, path, line, func in rows[:limit]:
        if path not in cache:
            cache[path] = read_lines(path)
        src = cache[path]
        text = src[line - 1].strip() if src and 0 < line <= len(src) else ""
        ratio = f"{mx / mean:8.2f}" if mean else f"{'':>8}"
        member = members[who] if 0 <= who < n else {}
        out.append(
            f"{_fmt(mean, metric):>10} {_fmt(mx, metric):>10} {ratio} "
            f"{_who(member, who):>10}  {os.path.basename(path)}:{line} ({func})  {text}"
        )
    if not rows:
        out.append("  (no line has this metric)")
    out.extend(collectives(prof, limit, cache))
    return "\n".join(out) + "\n"


def collectives(prof, limit=20, cache=None):
    """The collectives part of the view: per launching line and rank, device
    time in collective kernels, the wait for peers and the transfer
    (model/collectives.py); [] where no collective kernel ran."""
    ranks = prof.get("ranks") or {}
    coll = ranks.get("collectives")
    if not coll:
        return []
    members = ranks.get("members", [])
    cache = {} if cache is None else cache
    out = [
        "",
        "GPU collectives per launching line and rank (NCCL, oneCCL kernels): comm = their device "
        "time, wait = before the last rank's start (waiting for peers), transfer = from the last "
        "rank's start to its end:",
    ]
    if not coll.get("comparable"):
        out.append(f"  {coll.get('why', 'the ranks clocks are not comparable')}; comm time only")
    out.append(f"{'':>10} {'comm(s)':>10} {'wait(s)':>10} {'transfer(s)':>11} {'count':>6}  line")
    rows = sorted(coll.get("lines", []), key=lambda r: -sum(c[1] for c in r[3]))
    for path, line, func, cells in rows[:limit]:
        if path not in cache:
            cache[path] = read_lines(path)
        src = cache[path]
        text = src[line - 1].strip() if src and 0 < line <= len(src) else ""
        for i, (m, comm, wait, transfer, count) in enumerate(cells):
            member = members[m] if 0 <= m < len(members) else {}
            w = f"{wait:.6f}" if wait is not None else "-"
            t = f"{transfer:.6f}" if transfer is not None else "-"
            where = f"{os.path.basename(path)}:{line} ({func})  {text}" if i == 0 else ""
            out.append(f"{_who(member, m):>10} {comm:10.6f} {w:>10} {t:>11} {count:>6}  {where}".rstrip())
    said = []
    if coll.get("comparable"):
        said.append(
            f"{coll.get('matched', 0)} collectives matched across ranks (the k-th of a kernel "
            f"name on each rank)"
        )
    if coll.get("unmatched"):
        said.append(f"{coll['unmatched']} kernels without a peer on another rank (not in wait/transfer)")
    if coll.get("inconsistent"):
        said.append(
            f"{coll['inconsistent']} ended before the last rank started (clocks or matching "
            f"off: check these numbers)"
        )
    if coll.get("clock_note"):
        said.append(coll["clock_note"])
    out.extend(f"  {s}" for s in said)
    return out
