"""line_profiler's own .lprof files (kernprof -l, LineProfiler.dump_stats),
read into an lprof profile dict so `lprof view` and `lprof export` take them.

Those files are pickles of line_profiler's LineStats: {"timings": {(file,
first line, function): [(line, hits, time in units)]}, "unit": seconds}.
Unpickling runs code named by the file, so the reader admits one class
(LineStats, under any of the module names line_profiler has used) and the
plain containers; anything else is refused as not a line_profiler file.
line_profiler need not be installed."""

import io
import pickle

from ..common.errors import ProfileFileError

_LINESTATS_MODULES = ("line_profiler.line_profiler", "line_profiler._line_profiler", "line_profiler")
# a real profile is small; refuse absurd sizes before unpickling
_MAX_BYTES = 256 << 20


class _LineStats:
    """Stands in for line_profiler's LineStats while unpickling."""

    def __init__(self, *args):
        if len(args) == 2:
            self.timings, self.unit = args

    def __setstate__(self, state):
        self.__dict__.update(state if isinstance(state, dict) else {})


class _Unpickler(pickle._Unpickler):
    """Python's own unpickler, not the C one: it checks frames and keeps its
    memo in a dict (the C one grows a table to the largest index and read
    fuzzed frames to GBs of memory)."""

    def find_class(self, module, name):
        if name == "LineStats" and module in _LINESTATS_MODULES:
            return _LineStats
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed")


def _opcodes_bounded(data):
    """False for a pickle no line_profiler wrote whose unpickling could
    take unbounded memory, all found by tools/fuzz_reader.py: opcodes that
    cannot all be read (the C unpickler allocates a counted opcode's length
    before reading it: 19 GB for a 326-byte file); a memo index beyond what
    a file of this size could reach (the memo table grows to it first: 5.6 GB
    for 200 bytes); a frame opening inside another (the C unpickler accepts
    it and went to 19 GB for 323 bytes; the Python one refuses it).
    pickletools walks the opcodes, reading each argument, building nothing."""
    import pickletools

    ops = pickletools.genops(io.BytesIO(bytes(data)))
    frame_end = 0
    try:
        for op, arg, pos in ops:
            if op.name == "FRAME":
                if pos < frame_end or not isinstance(arg, int) or pos + 9 + arg > len(data):
                    return False
                frame_end = pos + 9 + arg
            elif "PUT" in op.name or "GET" in op.name:
                if isinstance(arg, int) and not 0 <= arg <= len(data):
                    return False
            elif op.name == "STOP":
                break
    except Exception:  # a length past the data's end, an unknown opcode: no real pickle
        return False
    finally:
        ops.close()
    return True


def pickle_end(data):
    """Where the pickle that starts `data` ends (the byte after its STOP), or
    None when no whole, bounded pickle starts it."""
    if not _opcodes_bounded(data):
        return None
    import pickletools

    try:
        for op, _arg, pos in pickletools.genops(io.BytesIO(bytes(data))):
            if op.name == "STOP":
                return pos + 1
    except Exception:
        return None
    return None


# The unit of the times written for line_profiler: kernprof 5.1's own (ns).
WRITE_UNIT_S = 1e-9


def encode(profile):
    """The traced functions of an lprof profile as line_profiler's file: a
    pickle of line_profiler.line_profiler.LineStats, exactly as kernprof -l
    writes it (an empty NEWOBJ, then BUILD with {"timings", "unit"}), so
    `python -m line_profiler FILE` reads what `lprof -l` wrote. Written
    opcode by opcode: lprof never imports line_profiler."""
    timings = {}
    for fn in profile.get("functions", []):
        if fn["file"].startswith("<") and fn["file"].endswith(">"):
            continue  # -c / - code: no file line_profiler could show (kernprof leaves it out too)
        key = (fn["file"], int(fn["first_line"]), fn["name"])
        rows = timings.setdefault(key, [])
        rows.extend((int(ln), int(hits), int(round(t / WRITE_UNIT_S))) for ln, hits, t in fn["lines"])
    state = pickle.dumps({"timings": timings, "unit": WRITE_UNIT_S}, protocol=2)
    # state: PROTO 2 ... STOP; its memo numbering starts at 0, and the
    # opcodes before it memoize nothing
    return b"\x80\x02" + b"cline_profiler.line_profiler\nLineStats\n" + b")\x81" + state[2:-1] + b"b."


def decode(data, name):
    if len(data) > _MAX_BYTES:
        raise ProfileFileError(f"{name}: too large for a line_profiler file")
    if not _opcodes_bounded(data):
        raise ProfileFileError(f"{name}: not an lprof or line_profiler profile file")
    try:
        stats = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # any malformed pickle: one line, never a traceback
        raise ProfileFileError(f"{name}: not an lprof or line_profiler profile file") from None
    timings = getattr(stats, "timings", None)
    unit = getattr(stats, "unit", None)
    if (
        not isinstance(stats, _LineStats)
        or not isinstance(timings, dict)
        or not isinstance(unit, (int, float))
        or not unit > 0
    ):
        raise ProfileFileError(f"{name}: not an lprof or line_profiler profile file")
    functions = []
    for key, rows in timings.items():
        try:
            path, first, func = key
            lines = [[int(ln), int(hits), float(t) * unit] for ln, hits, t in rows]
        except (TypeError, ValueError):
            raise ProfileFileError(f"{name}: malformed line_profiler profile") from None
        if not isinstance(path, str) or not isinstance(func, str) or not isinstance(first, int):
            raise ProfileFileError(f"{name}: malformed line_profiler profile")
        functions.append(
            {
                "file": path,
                "name": func,
                "first_line": first,
                "total_s": sum(r[2] for r in lines),
                "lines": sorted(lines),
            }
        )
    functions.sort(key=lambda f: (f["file"], f["first_line"], f["name"]))
    return {
        "format": "lprof",
        "version": 2,
        "meta": {
            "argv": [],
            "modes": ["lines"],
            "timer_unit_s": unit,
            "source": "line_profiler",
            "exit_code": None,
        },
        "functions": functions,
    }
