"""`lprof diff` output: text for the terminal, and a self-contained HTML page
(the report's style sheet, tables drawn here: no script needed)."""

import os
import textwrap
from html import escape

from ..model.stacks import CPU_COLUMNS
from .source import read_lines
from .memory_report import fmt_bytes


def fmt(v, unit, signed=False):
    sign = "+" if signed and v > 0 else ""
    if not v:
        return "0"
    if unit == "bytes":
        return sign + (fmt_bytes(v) or "0 B")
    if unit == "s":
        a = abs(v)
        text = f"{v:.3f} s" if a >= 1 else f"{v * 1e3:.1f} ms" if a >= 1e-3 else f"{v * 1e6:.0f} us"
        return sign + text
    return sign + (f"{v:g}" if isinstance(v, float) else str(v))


# every column a diff can show, in words (the profile's own names are for files)
_LABELS = {
    "cpu_s": "CPU total",
    "cpu_python_s": "CPU Python",
    "cpu_native_s": "CPU native",
    "cpu_system_s": "CPU system",
    "wall_s": "wall",
    "samples": "samples",
    "wait_s": "await wait",
    "time_s": "time (-l)",
    "hits": "hits (-l)",
    "line_wait_s": "wait (-l)",
    "alloc_bytes": "allocated",
    "alloc_count": "allocations",
    "python_bytes": "allocated by Python",
    "freed_bytes": "freed",
    "live_bytes": "live at end",
    "peak_bytes": "live at peak",
    "alloc_samples": "alloc samples",
    "free_samples": "free samples",
    "survivors": "survivors",
    "survivor_bytes": "survivor bytes",
    "gpu_kernel_s": "GPU kernel time",
    "gpu_copy_s": "GPU copy time",
    "gpu_kernels": "GPU kernels",
    "gpu_launches": "GPU launches",
    "gpu_h2d_bytes": "GPU host-to-device",
    "gpu_d2h_bytes": "GPU device-to-host",
    "gpu_d2d_bytes": "GPU device-to-device",
    "gpu_alloc_bytes": "GPU allocated",
    "gpu_peak_bytes": "GPU at peak",
}
# sampled time: a line's value is its samples times a sample's weight, so
# sampling alone moves it by about the square root of its samples
SAMPLED_TIME = ("cpu_s",) + CPU_COLUMNS + ("wall_s",)


NOISE_NOTE = (
    "noise: about two standard deviations of what sampling alone changes "
    "between two runs of the same code; '~' marks a change within it. The "
    "machine's own variation (load, caches, frequency) comes on top: compare "
    "several runs before trusting a small change."
)


def _label(col):
    return _LABELS.get(col) or col.replace("_", " ")


def sampling_noise(entry, metric):
    """About two standard deviations of the change in `metric` that sampling
    alone makes between two runs of the same code (Poisson counts of the
    entry's samples before and after); None where the metric is not sampled
    time or the samples are not known."""
    if metric not in SAMPLED_TIME:
        return None
    nb, na = entry["before"].get("samples", 0), entry["after"].get("samples", 0)
    b, a = entry["before"].get(metric, 0), entry["after"].get(metric, 0)
    if nb + na <= 0:
        return None
    per_sample = (a + b) / (na + nb)
    return 2.0 * per_sample * (na + nb) ** 0.5


def _change(b, a):
    if b:
        return f"{100.0 * (a - b) / abs(b):+.0f}%"
    return "new" if a else ""


class _Source:
    def __init__(self):
        self.cache = {}

    def line(self, path, line):
        if path not in self.cache:
            self.cache[path] = read_lines(path)
        lines = self.cache[path]
        return lines[line - 1].strip() if lines and 0 < line <= len(lines) else ""


def render_text(result, before_name, after_name, top=20):
    metric = result["metric"]
    units = dict(result["columns"])
    out = [f"lprof diff: {before_name} -> {after_name}"]
    if metric is None:
        out.append("(neither profile has lines of your code)")
        return "\n".join(out) + "\n"
    unit = units[metric]
    out.append("Totals (your code):")
    for col, (b, a) in result["totals"].items():
        out.append(
            f"  {_label(col):<14} {fmt(b, units[col]):>12} -> {fmt(a, units[col]):>12}"
            f"  {fmt(a - b, units[col], True):>12} {_change(b, a):>6}"
        )
    src = _Source()
    for title, entries, where in (
        ("Functions", result["functions"], lambda e: f"{e['name']} ({os.path.basename(e['key'][0])})"),
        (
            "Lines",
            result["lines"],
            lambda e: f"{os.path.basename(e['key'][0])}:{e['key'][1]} {e['name']}  {src.line(*e['key'])}",
        ),
    ):
        shown = [e for e in entries if e["after"].get(metric, 0) != e["before"].get(metric, 0)][:top]
        noisy = metric in SAMPLED_TIME
        out.append("")
        out.append(f"{title} by change in {_label(metric)} (largest first):")
        out.append(
            f"  {'change':>12} {'%':>6} {'before':>12} {'after':>12}"
            + (f" {'noise':>10}" if noisy else "")
            + "  where"
        )
        for e in shown:
            b, a = e["before"].get(metric, 0), e["after"].get(metric, 0)
            noise = sampling_noise(e, metric)
            mark = ""
            if noise is not None:
                mark = f" {'±' + fmt(noise, unit):>10}"
                if abs(a - b) <= noise:
                    mark += " ~"
            elif noisy:
                mark = f" {'':>10}"
            out.append(
                f"  {fmt(a - b, unit, True):>12} {_change(b, a):>6} {fmt(b, unit):>12} "
                f"{fmt(a, unit):>12}{mark}  {where(e)}".rstrip()
            )
        if not shown:
            out.append("  (no change)")
    if metric in SAMPLED_TIME:
        out.append("")
        out.append(textwrap.fill(NOISE_NOTE, width=80))
    return "\n".join(out) + "\n"


def render_html(result, before_name, after_name, top=100):
    from .html_report import asset

    units = dict(result["columns"])
    metric = result["metric"]
    src = _Source()
    parts = [
        f'<h1>lprof diff</h1><p class="meta">{escape(before_name)} &rarr; '
        f"{escape(after_name)}; sorted by the change in {escape(_label(metric or ''))}</p>"
    ]
    rows = []
    for col, (b, a) in result["totals"].items():
        rows.append(
            f"<tr><td>{escape(_label(col))}</td><td class=num>{fmt(b, units[col])}</td>"
            f"<td class=num>{fmt(a, units[col])}</td>"
            f"<td class=num>{fmt(a - b, units[col], True)}</td>"
            f"<td class=num>{_change(b, a)}</td></tr>"
        )
    parts.append(
        "<h2>Totals (your code)</h2><table class=hot><thead><tr><th>metric</th>"
        "<th class=num>before</th><th class=num>after</th><th class=num>change</th>"
        "<th class=num>%</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    for title, entries, first in (
        (
            "Functions",
            result["functions"],
            lambda e: f"<td>{escape(e['name'])}</td><td>{escape(os.path.basename(e['key'][0]))}</td>",
        ),
        (
            "Lines",
            result["lines"],
            lambda e: (
                f"<td>{escape(os.path.basename(e['key'][0]))}:{e['key'][1]}</td>"
                f"<td class=code>{escape(src.line(*e['key']))}</td>"
            ),
        ),
    ):
        biggest = (
            max((abs(e["after"].get(metric, 0) - e["before"].get(metric, 0)) for e in entries), default=0)
            or 1
        )
        head = "".join(f"<th class=num>{escape(_label(c))}</th>" for c, _u in result["columns"])
        body = []
        for e in entries[:top]:
            cells = []
            for col, unit in result["columns"]:
                b, a = e["before"].get(col, 0), e["after"].get(col, 0)
                bar = ""
                if col == metric and a != b:
                    w = 100.0 * abs(a - b) / biggest
                    bar = f'<span class="{"bar" if a > b else "cellbar"}" style="width:{w:.1f}%"></span>'
                cells.append(
                    f'<td class=num title="{fmt(b, unit)} &rarr; {fmt(a, unit)}">{bar}'
                    f"<span class=val>{fmt(a - b, unit, True) if a != b else ''}"
                    f"</span></td>"
                )
            body.append(f"<tr>{first(e)}{''.join(cells)}</tr>")
        parts.append(
            f"<h2>{title}: change per metric (after &minus; before)</h2>"
            f"<table class=hot><thead><tr><th></th><th></th>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>"
        )
    if metric in SAMPLED_TIME:
        parts.append(
            f'<p class="meta">{escape(NOISE_NOTE)} (The noise of each line is in the text diff.)</p>'
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>lprof diff</title><style>\n{asset('report.css')}</style></head>"
        f'<body><div id="app">{"".join(parts)}</div></body></html>\n'
    )
