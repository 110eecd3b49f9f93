"""lprof command lines and a defensive reader of `lprof export --format json`.

lprof is run from the source tree (PYTHONPATH=python) with the same
interpreter as the peers; a mode that is missing or fails shows as n/a."""

import json
import os
import re

from common import ROOT, Failed, run_timed
from peers import VPY

ENV = {"PYTHONPATH": os.path.join(ROOT, "python")}


def not_built(reason):
    low = reason.lower()
    if any(
        k in low
        for k in (
            "modulenotfounderror",
            "importerror",
            "attributeerror",
            "notimplementederror",
            "unrecognized arguments",
            "invalid choice",
            "no module named",
        )
    ):
        return "not built: " + re.sub(r"^exit \d+: ", "", reason)
    return reason


def line_cmd(script, args, out):
    return [VPY, "-m", "lprof", "-l", "-o", out, script] + args


def sample_cmd(script, args, out, wall=False, rate=None, memory=False, native=False):
    cmd = [VPY, "-m", "lprof", "-o", out]
    if native:
        cmd.append("--native")
    if wall:
        cmd.append("--wall")
    if rate:
        cmd += ["--rate", str(rate)]
    if memory:
        cmd.append("--memory")
    return cmd + [script] + args


def run(argv, env_extra=None, **kw):
    env = dict(env_extra or {})
    env.update(ENV)
    try:
        return run_timed(argv, env_extra=env, **kw)
    except Failed as e:
        raise Failed(not_built(str(e)))


def export_json(prof_path):
    """The exported JSON dict of a .lprof file."""
    if not os.path.exists(prof_path):
        raise Failed("not built: no profile file written")
    out = prof_path + ".json"
    run([VPY, "-m", "lprof", "export", prof_path, "--format", "json", "-o", out])
    try:
        with open(out) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Failed(f"export unreadable: {e}")


def _rows(section, key, names):
    """Rows of section[key] as dicts, whether stored as lists or dicts."""
    rows = (section or {}).get(key)
    if rows is None:
        raise Failed(f"not built: no {key} in export")
    out = []
    for r in rows:
        if isinstance(r, dict):
            out.append(r)
        elif isinstance(r, (list, tuple)):
            out.append(dict(zip(names, r)))
    return out


SAMPLING_COLS = [
    "file",
    "line",
    "function",
    "cpu_python_s",
    "cpu_native_s",
    "cpu_system_s",
    "wall_s",
    "samples",
]
MEMORY_COLS = [
    "file",
    "line",
    "function",
    "alloc_bytes",
    "freed_bytes",
    "net_bytes",
    "peak_bytes",
    "python_share",
    "count",
]


def _same(a, b):
    return a and os.path.basename(str(a)) == os.path.basename(b)


def sampling_lines(prof, script):
    """{lineno: {"cpu": s, "wall": s, "native_frac": f|None}} for `script`."""
    out = {}
    for r in _rows(prof.get("sampling"), "lines", SAMPLING_COLS):
        if not _same(r.get("file"), script):
            continue
        py = float(r.get("cpu_python_s") or 0)
        nat = float(r.get("cpu_native_s") or 0)
        sy = float(r.get("cpu_system_s") or 0)
        d = out.setdefault(int(r["line"]), {"cpu": 0.0, "wall": 0.0, "py": 0.0, "nat": 0.0})
        d["cpu"] += py + nat + sy
        d["wall"] += float(r.get("wall_s") or 0)
        d["py"] += py
        d["nat"] += nat
    for d in out.values():
        d["native_frac"] = d["nat"] / (d["py"] + d["nat"]) if d["py"] + d["nat"] > 0 else None
    return out


def memory_lines(prof, script):
    """({lineno: {"alloc_mb", "peak_mb"}}, [leak lines, most likely first])."""
    mem = prof.get("memory")
    out = {}
    for r in _rows(mem, "lines", MEMORY_COLS):
        if not _same(r.get("file"), script):
            continue
        d = out.setdefault(int(r["line"]), {"alloc_mb": 0.0, "peak_mb": 0.0})
        d["alloc_mb"] += float(r.get("alloc_bytes") or 0) / 1e6
        d["peak_mb"] += float(r.get("peak_bytes") or 0) / 1e6
    leaks = []
    for lk in (mem or {}).get("leaks") or []:
        if isinstance(lk, dict):
            f, no = lk.get("file"), lk.get("line")
        elif isinstance(lk, (list, tuple)) and len(lk) >= 2:
            f, no = lk[0], lk[1]
        else:
            continue
        if _same(f, script) and isinstance(no, int):
            leaks.append(no)
    return out, leaks
