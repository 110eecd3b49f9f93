"""The shape of a profile dict, checked once when a file is read, so that no
renderer or exporter meets a malformed value (a traceback), a line number of
a billion (a listing of a billion rows) or a frame id out of range (a frame
silently named after another). Every value the renderers read is checked
here; unknown keys are left alone (later versions may add some)."""

import math

from ..common.errors import ProfileFileError

# the numbers of the sampling section's "waits" (merge.py adds them up)
WAITS_COUNTS = (
    "suspensions",
    "resumes",
    "evicted",
    "charged_s",
    "task_notes",
    "task_serials",
    "task_serials_refused",
)

# far above any real source file, far below a listing that would never end
MAX_LINE = 10_000_000


class _Bad(Exception):
    pass


def _fail(what):
    raise _Bad(what)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _num(v, what):
    if not _is_num(v):
        _fail(what)


def _line(v, what, low=0):
    if not (isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_LINE):
        _fail(what)


def _str(v, what):
    if not isinstance(v, str):
        _fail(what)


def _list(v, what):
    if not isinstance(v, list):
        _fail(what)
    return v


def _dict(v, what):
    if not isinstance(v, dict):
        _fail(what)
    return v


def _optional_nums(section, keys, where):
    for key in keys:
        if key in section:
            _num(section[key], f"{where} {key}")


def _code_frame(v, what, size):
    """[file, function, first_line] (size 3) or with its line (size 4)."""
    if not (isinstance(v, list) and len(v) == size):
        _fail(what)
    _str(v[0], what)
    _str(v[1], what)
    for n in v[2:]:
        _line(n, what)


def _task_id(v, what):
    if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
        _fail(what)


def _task(task):
    """One record of the sampling section's "tasks" (docs/formats.md)."""
    if "id" in task:
        _task_id(task["id"], "sampling task id")
    _code_frame(task.get("root"), "sampling task root", 3)
    for name in _list(task.get("names", []), "sampling task names"):
        _str(name, "sampling task name")
    parent = task.get("parent")
    if parent is not None:
        _dict(parent, "sampling task parent")
        _str(parent.get("name"), "sampling task parent name")
        _code_frame(parent.get("root"), "sampling task parent root", 3)
        if "id" in parent:
            _task_id(parent["id"], "sampling task parent id")
        for f in _list(parent.get("chain"), "sampling task parent chain"):
            _code_frame(f, "sampling task parent chain", 4)


def _meta(meta):
    _dict(meta, "meta")
    if "modes" in meta:
        for m in _list(meta["modes"], "meta modes"):
            _str(m, "meta modes")
    if "argv" in meta:
        _list(meta["argv"], "meta argv")
    _optional_nums(meta, ("started", "duration_s", "timer_unit_s"), "meta")
    if "stack_table" in meta:
        for key, value in _dict(meta["stack_table"], "meta stack_table").items():
            _count(value, f"meta stack_table {key}")
    for key in ("pid", "ppid", "rank", "local_rank", "world_size", "processes"):
        if meta.get(key) is not None:
            _count(meta[key], f"meta {key}")
    for key in ("hostname", "launcher"):
        if meta.get(key) is not None:
            _str(meta[key], f"meta {key}")
    code = meta.get("exit_code")
    if code is not None and not (isinstance(code, int) and not isinstance(code, bool)):
        _fail("meta exit_code")


def _functions(funcs):
    for fn in _list(funcs, "functions is not a list"):
        _dict(fn, "function entry")
        _str(fn.get("file"), "function file")
        _str(fn.get("name"), "function name")
        _line(fn.get("first_line"), "function first_line")
        _optional_nums(fn, ("total_s",), "function")
        for row in _list(fn.get("lines"), "function entry"):
            if not isinstance(row, list) or len(row) != 3:
                _fail("line row")
            _line(row[0], "line row", low=1)
            _num(row[1], "line row")
            _num(row[2], "line row")
        for key in ("wait", "gpu_idle"):
            for row in _list(fn.get(key, []), f"function {key}"):
                if not isinstance(row, list) or len(row) != 2:
                    _fail(f"{key} row")
                _line(row[0], f"{key} row", low=1)
                _num(row[1], f"{key} row")


def _named_rows(rows, numbers, where):
    """Rows [file, line, function, number x `numbers`] (`numbers` an int or
    a tuple of the counts allowed)."""
    allowed = numbers if isinstance(numbers, tuple) else (numbers,)
    for row in _list(rows, f"{where} rows"):
        if not isinstance(row, list) or len(row) - 3 not in allowed:
            _fail(f"{where} row")
        _str(row[0], f"{where} row file")
        _line(row[1], f"{where} row line")
        _str(row[2], f"{where} row function")
        for v in row[3:]:
            _num(v, f"{where} row value")


def _sampling(s):
    _dict(s, "sampling")
    if "mode" in s and s["mode"] not in ("cpu", "wall"):
        _fail("sampling mode")
    if s.get("cpu_source") is not None and s["cpu_source"] not in ("perf", "thread", "timers", "outside"):
        _fail("sampling cpu_source")  # what made CPU-mode signals (collect/sampler.h)
    _optional_nums(
        s,
        (
            "rate_hz_requested",
            "rate_hz_effective",
            "samples",
            "signals",
            "dropped",
            "in_profiler",
            "drains_behind",
            "truncated",
            "stack_overflows",
            "native_mismatch",
            "threads_unsampled",
            "duration_s",
            "cpu_total_s",
            "wall_total_s",
            "process_cpu_s",
            "lprof_cpu_s",
            "wait_total_s",
            "perf_stalled",
            "outside_samples",
            "outside_retries",
            "split_samples",
        ),
        "sampling",
    )
    if "waits" in s:  # --wall's await waits: counts, and why there are none
        waits = _dict(s["waits"], "sampling waits")
        _optional_nums(waits, WAITS_COUNTS, "sampling waits")
        if "note" in waits:
            _str(waits["note"], "sampling waits note")
    if "tasks" in s:  # the asyncio tasks of the task view (model/task_stacks.py)
        for task in _list(s["tasks"], "sampling tasks"):
            _task(_dict(task, "sampling task"))
    if "threads_without_python" in s:  # CPU of threads that run no Python
        others = _dict(s["threads_without_python"], "sampling threads_without_python")
        _optional_nums(others, ("cpu_s", "charged_s", "uncharged_s"), "sampling threads_without_python")
    if "threads" in s:
        for k, v in _dict(s["threads"], "sampling threads").items():
            _str(v, "sampling thread name")
    if "lines" in s:
        _named_rows(s["lines"], 5, "sampling")


def _memory(m):
    _dict(m, "memory")
    _optional_nums(m, ("sample_bytes", "peak_bytes", "peak_time_s", "live_bytes"), "memory")
    if "lines" in m:
        _named_rows(m["lines"], 6, "memory")
    if "leaks" in m:
        _named_rows(m["leaks"], 2, "memory leak")
    for point in _list(m.get("timeline", []), "memory timeline"):
        if not isinstance(point, list) or len(point) != 2:
            _fail("memory timeline point")
        _num(point[0], "memory timeline point")
        _num(point[1], "memory timeline point")
    if "stats" in m:
        _dict(m["stats"], "memory stats")


def _gpu(g):
    _dict(g, "gpu")
    for k, v in _dict(g.get("backends", {}), "gpu backends").items():
        _str(v, "gpu backend status")
    for note in _list(g.get("notes", []), "gpu notes"):
        _str(note, "gpu note")
    if "lines" in g:
        _named_rows(g["lines"], (10, 11, 12), "gpu")  # 11: with comm_s, 12: backward_s (older files: 10)
    if "idle_lines" in g:
        _named_rows(g["idle_lines"], 2, "gpu idle")
    if "stats" in g:
        _dict(g["stats"], "gpu stats")


def _task_rows(s, n):
    """sampling.task_rows: [frame ids (n frames), thread, task id, {column: value}]."""
    if "task_rows_refused" in s:
        _count(s["task_rows_refused"], "sampling task_rows_refused")
    for row in _list(s.get("task_rows", []), "sampling task_rows"):
        if not isinstance(row, list) or len(row) != 4:
            _fail("sampling task row")
        ids, thread, task, metrics = row
        for fid in _list(ids, "sampling task row frames"):
            if not (isinstance(fid, int) and not isinstance(fid, bool) and 0 <= fid < n):
                _fail("sampling task row frame id")
        if not isinstance(thread, (int, str)) or isinstance(thread, bool):
            _fail("sampling task row thread")
        _task_id(task, "sampling task row task")
        for v in _dict(metrics, "sampling task row metrics").values():
            _num(v, "sampling task row metric")


def _stacks(st):
    _dict(st, "stacks")
    frames = _list(st.get("frames", []), "stacks frames")
    for f in frames:
        if not isinstance(f, list) or len(f) != 4:
            _fail("stack frame")
        _str(f[0], "stack frame file")
        _str(f[1], "stack frame function")
        _line(f[2], "stack frame first line")
        _line(f[3], "stack frame line")
    for col in _list(st.get("columns", []), "stacks columns"):
        if not isinstance(col, list) or len(col) != 3 or not all(isinstance(c, str) for c in col):
            _fail("stacks column")
    n = len(frames)
    rows = st.get("stacks", [])
    if isinstance(rows, list):
        for row in rows:
            if not isinstance(row, list) or len(row) != 3:
                _fail("stack row")
            ids, thread, metrics = row
            for fid in _list(ids, "stack row frames"):
                if not (isinstance(fid, int) and not isinstance(fid, bool) and 0 <= fid < n):
                    _fail("stack row frame id")
            if not isinstance(thread, (int, str)) or isinstance(thread, bool):
                _fail("stack row thread")
            for k, v in _dict(metrics, "stack row metrics").items():
                _num(v, "stack row metric")


def _int_column(v, what, low, high):
    """A list of ints (not bools) in [low, high]: checked at C speed, a
    timeline holds up to a million entries per column."""
    _list(v, what)
    if v and (set(map(type, v)) != {int} or min(v) < low or max(v) > high):
        _fail(what)
    return v


# a timeline's times: microseconds within +-100 years; weights: a uint32 of ns
_MAX_US = 100 * 366 * 86400 * 10**6


def _timeline(tl, frames):
    _dict(tl, "timeline")
    for part in _list(tl.get("parts", []), "timeline parts"):
        _dict(part, "timeline part")
        if part.get("pid") is not None:
            _count(part["pid"], "timeline pid")
        _num(part.get("start_s"), "timeline start_s")
        if abs(part["start_s"]) > 1e11:  # unix seconds: within the next 3000 years
            _fail("timeline start_s")
        stride = part.get("stride")
        if not (isinstance(stride, int) and not isinstance(stride, bool) and 1 <= stride <= 2**32):
            _fail("timeline stride")
        threads = _list(part.get("threads"), "timeline threads")
        for th in threads:
            if not (
                isinstance(th, list)
                and len(th) == 2
                and isinstance(th[0], (int, str))
                and not isinstance(th[0], bool)
                and isinstance(th[1], str)
            ):
                _fail("timeline thread")
        nodes = _dict(part.get("nodes"), "timeline nodes")
        parent = _int_column(nodes.get("parent"), "timeline node parent", -1, MAX_LINE)
        _int_column(nodes.get("frame"), "timeline node frame", 0, frames - 1)
        if len(parent) != len(nodes["frame"]) or any(p >= i for i, p in enumerate(parent)):
            _fail("timeline node parent")
        t_us = _int_column(part.get("t_us"), "timeline t_us", -_MAX_US, _MAX_US)
        if len(t_us) > 1 and min(t_us[1:]) < 0:
            _fail("timeline t_us")  # sorted by time: deltas after the first are >= 0
        n = len(t_us)
        for key, high in (("node", len(parent) - 1), ("thread", len(threads) - 1), ("weight_us", 2**32)):
            if len(_int_column(part.get(key), f"timeline {key}", 0, high)) != n:
                _fail(f"timeline {key}")


_MAX_NS = _MAX_US * 1000


def _gpu_timeline(tl, frames):
    _dict(tl, "gpu_timeline")
    for part in _list(tl.get("parts", []), "gpu_timeline parts"):
        _dict(part, "gpu_timeline part")
        if part.get("pid") is not None:
            _count(part["pid"], "gpu_timeline pid")
        _num(part.get("start_s"), "gpu_timeline start_s")
        if abs(part["start_s"]) > 1e11:
            _fail("gpu_timeline start_s")
        for key in ("capacity", "dropped", "origin_ns"):
            _count(part.get(key, 0), f"gpu_timeline {key}")
        _dict(part.get("clock", {}), "gpu_timeline clock")
        names = _list(part.get("names"), "gpu_timeline names")
        if any(not isinstance(n, str) for n in names):
            _fail("gpu_timeline name")
        stacks = _list(part.get("stacks"), "gpu_timeline stacks")
        for ids in stacks:
            _int_column(ids, "gpu_timeline stack", 0, frames - 1)
        threads = _list(part.get("threads"), "gpu_timeline threads")
        if any(not isinstance(t, (int, str)) or isinstance(t, bool) for t in threads):
            _fail("gpu_timeline thread")
        n = len(_int_column(part.get("start_ns"), "gpu_timeline start_ns", -_MAX_NS, _MAX_NS))
        launch = _list(part.get("launch_ns"), "gpu_timeline launch_ns")
        if len(launch) != n or any(
            t is not None and (not isinstance(t, int) or isinstance(t, bool) or abs(t) > _MAX_NS)
            for t in launch
        ):
            _fail("gpu_timeline launch_ns")
        for key, low, high in (
            ("dur_ns", 0, _MAX_NS),
            ("device", 0, 2**32),
            ("stream", 0, 2**32),
            ("op", 0, 2),
            ("dir", 0, 3),
            ("bytes", 0, 2**64),
            ("corr", 0, 2**32),
            ("name", 0, len(names) - 1),
            ("stack", -1, len(stacks) - 1),
            ("thread", -1, len(threads) - 1),
        ):
            if len(_int_column(part.get(key), f"gpu_timeline {key}", low, high)) != n:
                _fail(f"gpu_timeline {key}")


def _count(v, what):
    if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        _fail(what)


def _cells(values, members, where):
    """{column: [sum, max, member index]} of the ranks section."""
    for k, cell in _dict(values, where).items():
        if not isinstance(cell, list) or len(cell) != 3:
            _fail(where)
        _num(cell[0], where)
        _num(cell[1], where)
        if not (isinstance(cell[2], int) and not isinstance(cell[2], bool) and 0 <= cell[2] < members):
            _fail(f"{where} member")


def _ranks(r, frames):
    _dict(r, "ranks")
    members = _list(r.get("members", []), "ranks members")
    for m in members:
        _dict(m, "ranks member")
        for key in ("pid", "ppid", "rank", "local_rank", "world_size"):
            if m.get(key) is not None:
                _count(m[key], f"ranks member {key}")
        for key in ("hostname", "launcher", "file"):
            if m.get(key) is not None:
                _str(m[key], f"ranks member {key}")
        _optional_nums(m, ("duration_s",), "ranks member")
        for v in _dict(m.get("totals", {}), "ranks member totals").values():
            _num(v, "ranks member total")
    n = len(members)
    for row in _list(r.get("lines", []), "ranks lines"):
        if not isinstance(row, list) or len(row) != 4:
            _fail("ranks line")
        _str(row[0], "ranks line file")
        _line(row[1], "ranks line line")
        _str(row[2], "ranks line function")
        _cells(row[3], n, "ranks line values")
    for row in _list(r.get("stacks", []), "ranks stacks"):
        if not isinstance(row, list) or len(row) != 2:
            _fail("ranks stack")
        for fid in _list(row[0], "ranks stack frames"):
            if not (isinstance(fid, int) and not isinstance(fid, bool) and 0 <= fid < frames):
                _fail("ranks stack frame id")
        _cells(row[1], n, "ranks stack values")
    if "collectives" in r:
        _collectives(r["collectives"], n)


def _collectives(c, members):
    """The ranks section's "collectives" (model/collectives.py)."""
    _dict(c, "ranks collectives")
    if not isinstance(c.get("comparable"), bool):
        _fail("ranks collectives comparable")
    for key in ("matched", "unmatched", "inconsistent"):
        _count(c.get(key, 0), f"ranks collectives {key}")
    for h in _list(c.get("hosts", []), "ranks collectives hosts"):
        _str(h, "ranks collectives host")
    for row in _list(c.get("lines", []), "ranks collectives lines"):
        if not isinstance(row, list) or len(row) != 4:
            _fail("ranks collectives line")
        _str(row[0], "ranks collectives line file")
        _line(row[1], "ranks collectives line line")
        _str(row[2], "ranks collectives line function")
        for cell in _list(row[3], "ranks collectives cells"):
            if not isinstance(cell, list) or len(cell) != 5:
                _fail("ranks collectives cell")
            if not (isinstance(cell[0], int) and 0 <= cell[0] < members):
                _fail("ranks collectives member")
            _num(cell[1], "ranks collectives comm_s")
            for v in cell[2:4]:
                if v is not None:
                    _num(v, "ranks collectives wait/transfer")
            _count(cell[4], "ranks collectives count")


def check(profile, name):
    """Raises ProfileFileError naming the first malformed part."""
    try:
        if not isinstance(profile, dict) or profile.get("format") != "lprof":
            _fail("not an lprof profile dict")
        if "meta" not in profile:
            _fail("missing meta")
        _meta(profile["meta"])
        _functions(profile.get("functions", []))
        if "waits_evicted" in profile:
            _count(profile["waits_evicted"], "waits_evicted")
        if "sampling" in profile:
            _sampling(profile["sampling"])
        if "memory" in profile:
            _memory(profile["memory"])
        if "gpu" in profile:
            _gpu(profile["gpu"])
        if "stacks" in profile:
            _stacks(profile["stacks"])
        if isinstance(profile.get("sampling"), dict):
            st = profile.get("stacks")
            _task_rows(profile["sampling"], len(st.get("frames", [])) if isinstance(st, dict) else 0)
        if "timeline" in profile:
            st = profile.get("stacks")
            _timeline(profile["timeline"], len(st.get("frames", [])) if isinstance(st, dict) else 0)
        if "gpu_timeline" in profile:
            st = profile.get("stacks")
            _gpu_timeline(profile["gpu_timeline"], len(st.get("frames", [])) if isinstance(st, dict) else 0)
        if "ranks" in profile:
            st = profile.get("stacks")
            _ranks(profile["ranks"], len(st.get("frames", [])) if isinstance(st, dict) else 0)
    except _Bad as exc:
        raise ProfileFileError(f"{name}: malformed profile ({exc})") from None
