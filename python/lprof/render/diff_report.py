"""`lprof diff` output: text for the terminal, and a self-contained HTML page
(the report's style sheet, tables drawn here: no script needed)."""
import os
from html import escape

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
        text = (f"{v:.3f} s" if a >= 1 else f"{v * 1e3:.1f} ms" if a >= 1e-3
                else f"{v * 1e6:.0f} us")
        return sign + text
    return sign + (f"{v:g}" if isinstance(v, float) else str(v))


def _label(col):
    return {"cpu_s": "CPU total", "time_s": "time (-l)", "line_wait_s": "wait (-l)", "wait_s": "await wait"}.get(col, col)


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
        out.append(f"  {_label(col):<14} {fmt(b, units[col]):>12} -> {fmt(a, units[col]):>12}"
                   f"  {fmt(a - b, units[col], True):>12} {_change(b, a):>6}")
    src = _Source()
    for title, entries, where in (
            ("Functions", result["functions"], lambda e: f"{e['name']} ({os.path.basename(e['key'][0])})"),
            ("Lines", result["lines"],
             lambda e: f"{os.path.basename(e['key'][0])}:{e['key'][1]} {e['name']}  "
                       f"{src.line(*e['key'])}")):
        shown = [e for e in entries
                 if e["after"].get(metric, 0) != e["before"].get(metric, 0)][:top]
        out.append("")
        out.append(f"{title} by change in {_label(metric)} (largest first):")
        out.append(f"  {'change':>12} {'%':>6} {'before':>12} {'after':>12}  where")
        for e in shown:
            b, a = e["before"].get(metric, 0), e["after"].get(metric, 0)
            out.append(f"  {fmt(a - b, unit, True):>12} {_change(b, a):>6} {fmt(b, unit):>12} "
                       f"{fmt(a, unit):>12}  {where(e)}".rstrip())
        if not shown:
            out.append("  (no change)")
    return "\n".join(out) + "\n"


def render_html(result, before_name, after_name, top=100):
    from .html_report import asset
    units = dict(result["columns"])
    metric = result["metric"]
    src = _Source()
    parts = [f"<h1>lprof diff</h1><p class=\"meta\">{escape(before_name)} &rarr; "
             f"{escape(after_name)}; sorted by the change in {escape(_label(metric or ''))}</p>"]
    rows = []
    for col, (b, a) in result["totals"].items():
        rows.append(f"<tr><td>{escape(_label(col))}</td><td class=num>{fmt(b, units[col])}</td>"
                    f"<td class=num>{fmt(a, units[col])}</td>"
                    f"<td class=num>{fmt(a - b, units[col], True)}</td>"
                    f"<td class=num>{_change(b, a)}</td></tr>")
    parts.append("<h2>Totals (your code)</h2><table class=hot><thead><tr><th>metric</th>"
                 "<th class=num>before</th><th class=num>after</th><th class=num>change</th>"
                 "<th class=num>%</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    for title, entries, first in (
            ("Functions", result["functions"],
             lambda e: f"<td>{escape(e['name'])}</td><td>{escape(os.path.basename(e['key'][0]))}</td>"),
            ("Lines", result["lines"],
             lambda e: f"<td>{escape(os.path.basename(e['key'][0]))}:{e['key'][1]}</td>"
                       f"<td class=code>{escape(src.line(*e['key']))}</td>")):
        biggest = max((abs(e["after"].get(metric, 0) - e["before"].get(metric, 0))
                       for e in entries), default=0) or 1
        head = "".join(f"<th class=num>{escape(_label(c))}</th>" for c, _u in result["columns"])
        body = []
        for e in entries[:top]:
            cells = []
            for col, unit in result["columns"]:
                b, a = e["before"].get(col, 0), e["after"].get(col, 0)
                bar = ""
                if col == metric and a != b:
                    w = 100.0 * abs(a - b) / biggest
                    bar = f"<span class=\"{'bar' if a > b else 'cellbar'}\" style=\"width:{w:.1f}%\"></span>"
                cells.append(f"<td class=num title=\"{fmt(b, unit)} &rarr; {fmt(a, unit)}\">{bar}"
                             f"<span class=val>{fmt(a - b, unit, True) if a != b else ''}"
                             f"</span></td>")
            body.append(f"<tr>{first(e)}{''.join(cells)}</tr>")
        parts.append(f"<h2>{title}: change per metric (after &minus; before)</h2>"
                     f"<table class=hot><thead><tr><th></th><th></th>{head}</tr></thead>"
                     f"<tbody>{''.join(body)}</tbody></table>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>lprof diff</title><style>\n{asset('report.css')}</style></head>"
            f"<body><div id=\"app\">{''.join(parts)}</div></body></html>\n")
