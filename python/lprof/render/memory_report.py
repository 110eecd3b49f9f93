"""Memory parts of the listings: per-line columns, the peak, the leak report."""

import os


def fmt_bytes(n):
    if not n:
        return ""
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1000.0
    return ""


def memory_lines(profile, accept=None):
    """{(file, line): fields} of the profile's memory section, filtered by accept(path)."""
    if not profile.get("memory"):
        return {}
    from ..model.sections import memory_line_columns

    cols = memory_line_columns(profile)
    if accept is None:
        return cols
    return {k: v for k, v in cols.items() if accept(k[0])}


def memory_summary(profile):
    """Lines of text: process peak, and the leak report."""
    mem = profile.get("memory")
    if not mem:
        return []
    out = [
        "",
        f"Memory (sampled every {mem.get('sample_bytes', 0)} bytes on average"
        f"{'' if mem.get('native_covered') else '; Python objects only: native allocations not covered'}):"
        f" peak {fmt_bytes(mem.get('peak_bytes', 0)) or '0 B'}"
        f" at {mem.get('peak_time_s', 0.0):.2f} s",
    ]
    leaks = mem.get("leaks") or []
    if leaks:
        out.append("Possible leaks (live memory growing steadily):")
        for path, line, func, slope, score in leaks[:10]:
            out.append(
                f"  {os.path.basename(path)}:{line} ({func}): "
                f"+{fmt_bytes(slope) or '0 B'}/s, score {score:.2f}"
            )
    return out
