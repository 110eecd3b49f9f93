"""Run with the bench venv's python: summarise a memray capture per line of one
script (deepest frame in that script) as JSON on stdout."""

import json
import os
import sys

import memray

ALLOCATING = {
    "MALLOC",
    "CALLOC",
    "REALLOC",
    "POSIX_MEMALIGN",
    "ALIGNED_ALLOC",
    "MEMALIGN",
    "VALLOC",
    "PVALLOC",
    "MMAP",
    "PYMALLOC_MALLOC",
    "PYMALLOC_CALLOC",
    "PYMALLOC_REALLOC",
}


def line_of(rec, base):
    try:
        for _fn, fname, lineno in rec.stack_trace():  # innermost first
            if os.path.basename(fname) == base:
                return lineno
    except Exception:
        return None
    return None


def main(path, script):
    base = os.path.basename(script)
    r = memray.FileReader(path)
    lines = {}

    def slot(no):
        return lines.setdefault(no, {"alloc_bytes": 0, "peak_bytes": 0, "leak_bytes": 0})

    for rec in r.get_allocation_records():
        try:
            name = memray.AllocatorType(rec.allocator).name
        except (ValueError, AttributeError):
            name = getattr(rec.allocator, "name", str(rec.allocator))
        if name in ALLOCATING and rec.size > 0:
            no = line_of(rec, base)
            if no is not None:
                slot(no)["alloc_bytes"] += rec.size
    for rec in r.get_high_watermark_allocation_records(merge_threads=True):
        no = line_of(rec, base)
        if no is not None:
            slot(no)["peak_bytes"] += rec.size
    for rec in r.get_leaked_allocation_records(merge_threads=True):
        no = line_of(rec, base)
        if no is not None:
            slot(no)["leak_bytes"] += rec.size
    rank = lambda key: [no for no, v in sorted(lines.items(), key=lambda kv: -kv[1][key]) if v[key] > 0]
    json.dump(
        {"lines": lines, "leak_lines": rank("leak_bytes"), "peak_lines": rank("peak_bytes")}, sys.stdout
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
