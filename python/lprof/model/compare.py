"""Differences between two profiles, per line and per function.

Per-line values come from the one attribution rule (lprof.model.stacks.lines)
for every stack column the profiles declare, plus the exact tracer's time,
hits and waits (`lprof -l`). Lines match by (file, line), functions by (file,
qualified name); only the program's own files count (as in the listing)
unless `accept` says otherwise. Entries are sorted by the size of their
change in the chosen metric."""

from .stacks import CPU_COLUMNS, INTERNAL_COLUMNS, is_user_file, lines as stack_lines, row_form

CPU_TOTAL = "cpu_s"
# the exact tracer's (lprof -l); its waits are line_wait_s: wait_s is the
# stack column of --wall's await waits
TRACED = (("time_s", "s"), ("hits", "count"), ("line_wait_s", "s"))


def _units(profile):
    units = {}
    for name, unit, _merge in (profile.get("stacks") or {}).get("columns") or []:
        units[name] = {"ns": "s", "milli": "count"}.get(unit, unit)
    return units


def _stacks_rows(profile):
    return row_form(profile.get("stacks") or {})


def per_line(profile, accept=is_user_file):
    """({(file, line): {column: value}}, {(file, line): function},
    {(file, function): {column: value}}, {column: unit})."""
    units = _units(profile)
    cpu_parts = [n for n in units if n in CPU_COLUMNS]
    values, names, funcs = {}, {}, {}

    def add(file, line, func, col, v):
        row = values.setdefault((file, line), {})
        row[col] = row.get(col, 0) + v
        names.setdefault((file, line), func)
        frow = funcs.setdefault((file, func), {})
        frow[col] = frow.get(col, 0) + v

    for (file, line, func), cols in stack_lines(_stacks_rows(profile), accept).items():
        if not accept(file):
            continue
        for col, v in cols.items():
            if col not in INTERNAL_COLUMNS:
                add(file, line, func, col, v)
        if cpu_parts:
            add(file, line, func, CPU_TOTAL, sum(cols.get(c, 0) for c in cpu_parts))
    for fn in profile.get("functions", []):
        if not accept(fn["file"]):
            continue
        for line, hits, t in fn["lines"]:
            add(fn["file"], line, fn["name"], "time_s", t)
            add(fn["file"], line, fn["name"], "hits", hits)
        for line, w in fn.get("wait", []):  # time suspended at a yield or await
            add(fn["file"], line, fn["name"], "line_wait_s", w)
    if cpu_parts:
        units[CPU_TOTAL] = "s"
    units.update(dict(TRACED))
    return values, names, funcs, units


def default_metric(columns):
    for name in (CPU_TOTAL, "wall_s", "time_s", "alloc_bytes", "peak_bytes"):
        if name in columns:
            return name
    return sorted(columns)[0] if columns else None


def compare(before, after, metric=None, accept=is_user_file):
    """{"metric", "columns": [(name, unit)], "totals": {col: (before, after)},
    "lines": [entry], "functions": [entry]}; entry: {"key", "name",
    "before": {col: v}, "after": {col: v}}, sorted by |change of metric|."""
    b_lines, b_names, b_funcs, b_units = per_line(before, accept)
    a_lines, a_names, a_funcs, a_units = per_line(after, accept)
    units = dict(b_units)
    units.update(a_units)
    used = set()
    for table in (b_lines, a_lines):
        for row in table.values():
            used.update(k for k, v in row.items() if v)
    columns = [(c, units.get(c, "count")) for c in _ordered(used, before, after)]
    metric = metric or default_metric([c for c, _u in columns])
    if metric is not None and metric not in used:
        choices = ", ".join(c for c, _u in columns) or "none"
        raise ValueError(f"--metric {metric}: neither profile has it (they have: {choices})")

    def entries(b, a, label):
        out = []
        for key in set(b) | set(a):
            out.append({"key": key, "name": label(key), "before": b.get(key, {}), "after": a.get(key, {})})
        out.sort(key=lambda e: (-abs(e["after"].get(metric, 0) - e["before"].get(metric, 0)), str(e["key"])))
        return out

    totals = {}
    for col, _u in columns:
        totals[col] = (
            sum(r.get(col, 0) for r in b_lines.values()),
            sum(r.get(col, 0) for r in a_lines.values()),
        )
    return {
        "metric": metric,
        "columns": columns,
        "totals": totals,
        "lines": entries(b_lines, a_lines, lambda k: a_names.get(k) or b_names.get(k)),
        "functions": entries(b_funcs, a_funcs, lambda k: k[1]),
    }


def _ordered(used, *profiles):
    """Columns in the profiles' declared order, the derived and traced ones first."""
    order = [CPU_TOTAL]
    for p in profiles:
        for c in (p.get("stacks") or {}).get("columns") or []:
            if c[0] not in order:
                order.append(c[0])
    order += [c for c, _u in TRACED]
    return [c for c in order if c in used] + sorted(c for c in used if c not in order)
