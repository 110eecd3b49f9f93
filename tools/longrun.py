"""Long runs: tools/longrun_workload.py for SECONDS under plain python,
plain python on lprof's allocator shim alone (preloaded, nothing attached:
the allocator --memory brings, without lprof's data), lprof
sampling and lprof --memory (side by side, niced), with the resident memory
of each process polled every 2 s. Reports lprof's extra resident memory over
its baseline (peak, and its growth over the second half of the run: bounded
means flat), lprof's own stack table (resident bytes, fill, overflow) read
from the profile that -i rewrites every CHECKPOINT_S, the profile's size,
and what `lprof export --format json` of it takes (time, peak memory).

glibc malloc is held to one arena (MALLOC_ARENA_MAX=1) in every run: with
200 threads it otherwise makes a 64 MiB arena per core-multiple at random,
a noise of hundreds of MB between runs of the same program.

usage: longrun.py [--seconds 600] [--report FILE]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "tools", "longrun_workload.py")
MODES = {"plain": None, "plain-shim": None, "sampling": [], "memory": ["--memory"]}
BASELINE = {"sampling": "plain", "memory": "plain-shim"}
CHECKPOINT_S = 30


def shim_path():
    """lprof's allocator shim, as --memory preloads it (built by make build)."""
    path = os.path.join(ROOT, "python", "lprof", "liblprof_shim.so")
    return path if os.path.exists(path) else None


def table_of(path):
    """meta.stack_table of the profile at path (a checkpoint), or None."""
    try:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from lprof.model import profile_file

        return profile_file.load(path)["meta"].get("stack_table")
    except Exception:
        return None


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--report")
    opts = p.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), MALLOC_ARENA_MAX="1")
    scratch = tempfile.mkdtemp(prefix="lprof-longrun-")
    shim = shim_path()
    procs = {}
    for mode, extra in MODES.items():
        if mode == "plain-shim" and not shim:
            continue
        out = os.path.join(scratch, f"{mode}.lprof")
        cmd = (
            [sys.executable]
            if extra is None
            else [sys.executable, "-m", "lprof", "-q", "-i", str(CHECKPOINT_S), "-o", out, *extra]
        )
        run_env = dict(env, LD_PRELOAD=shim) if mode == "plain-shim" else env
        procs[mode] = (
            subprocess.Popen(
                ["nice", "-n", "10"] + cmd + [WORKLOAD, str(opts.seconds)],
                env=run_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
            out,
        )
    began = time.time()
    timeline = {mode: [] for mode in procs}
    tables = {mode: [] for mode in procs}
    next_table = began + CHECKPOINT_S + 5
    while any(pr.poll() is None for pr, _ in procs.values()):
        for mode, (pr, _) in procs.items():
            if pr.poll() is None:
                r = rss_mib(pr.pid)
                if r is not None:
                    timeline[mode].append((round(time.time() - began, 1), round(r, 1)))
        if time.time() >= next_table:
            next_table += CHECKPOINT_S
            for mode, (pr, out) in procs.items():
                t = table_of(out) if mode in BASELINE and pr.poll() is None else None
                if t:
                    tables[mode].append((round(time.time() - began, 1), t))
        time.sleep(2)
    result = {"seconds": opts.seconds, "python": sys.version.split()[0], "modes": {}}
    for mode, (pr, out) in procs.items():
        stdout, stderr = pr.communicate()
        points = timeline[mode]
        half = [r for t, r in points if t >= opts.seconds / 2]
        first = [r for t, r in points if t < opts.seconds / 2]
        row = {
            "exit": pr.returncode,
            "workload": stdout.strip().splitlines()[-1:] or [""],
            "peak_rss_mib": max((r for _, r in points), default=None),
            "rss_first_half_max_mib": max(first, default=None),
            "rss_second_half_max_mib": max(half, default=None),
            "rss_every_30s_mib": [r for t, r in points[::15]],
            "stderr_tail": stderr[-400:],
        }
        if mode in BASELINE and os.path.exists(out):
            row["profile_bytes"] = os.path.getsize(out)
            row["export_json"] = export_cost(out, env)
            final = table_of(out)
            if final:
                tables[mode].append((round(time.time() - began, 1), final))
            row["stack_table"] = summarize_tables(tables[mode], opts.seconds)
        result["modes"][mode] = row
    for mode, row in result["modes"].items():
        base = result["modes"].get(BASELINE.get(mode, ""), {}).get("peak_rss_mib")
        if base and row["peak_rss_mib"] is not None:
            row["baseline"] = BASELINE[mode]
            row["extra_rss_mib"] = round(row["peak_rss_mib"] - base, 1)
    print(json.dumps(result, indent=1))
    if opts.report:
        with open(opts.report, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    return 0 if all(r["exit"] == 0 for r in result["modes"].values()) else 1


def summarize_tables(points, seconds):
    """lprof's stack table over the run: resident MiB at its largest in each
    half, and at the end its fill and the events that overflowed."""
    if not points:
        return None
    mib = [(t, p["resident_bytes"] / 2**20) for t, p in points]
    last = points[-1][1]
    return {
        "resident_first_half_max_mib": round(max((m for t, m in mib if t < seconds / 2), default=0), 1),
        "resident_second_half_max_mib": round(max((m for t, m in mib if t >= seconds / 2), default=0), 1),
        "reserved_mib": round(last["reserved_bytes"] / 2**20, 1),
        "nodes": last["nodes"],
        "node_capacity": last["node_capacity"],
        "rows": last["rows"],
        "row_capacity": last["row_capacity"],
        "overflows": last["overflows"],
    }


def export_cost(path, env):
    code = (
        "import resource, sys, time; from lprof import cli; t = time.time(); "
        "rc = cli.main(['export', sys.argv[1], '--format', 'json', '-o', sys.argv[1] + '.json']); "
        "print(rc, round(time.time() - t, 2), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True)
    try:
        rc, seconds, kib = r.stdout.split()
        return {
            "exit": int(rc),
            "seconds": float(seconds),
            "peak_rss_mib": round(int(kib) / 1024, 1),
            "json_bytes": os.path.getsize(path + ".json"),
        }
    except (ValueError, OSError):
        return {"error": r.stderr[-300:]}


if __name__ == "__main__":
    sys.exit(main())
