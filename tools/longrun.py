"""Long runs: tools/longrun_workload.py for SECONDS under plain python,
lprof sampling and lprof --memory (the three side by side, niced), with the
resident memory of each process polled every 2 s. Reports lprof's extra
resident memory over plain python (peak, and its growth over the second
half of the run: bounded means flat), the profile's size, and what
`lprof export --format json` of it takes (time, peak memory).

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
MODES = {"plain": None, "sampling": [], "memory": ["--memory"]}


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
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    scratch = tempfile.mkdtemp(prefix="lprof-longrun-")
    procs = {}
    for mode, extra in MODES.items():
        out = os.path.join(scratch, f"{mode}.lprof")
        cmd = ([sys.executable] if extra is None else
               [sys.executable, "-m", "lprof", "-q", "-o", out, *extra])
        procs[mode] = (subprocess.Popen(["nice", "-n", "10"] + cmd + [WORKLOAD, str(opts.seconds)],
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True), out)
    began = time.time()
    timeline = {mode: [] for mode in MODES}
    while any(pr.poll() is None for pr, _ in procs.values()):
        for mode, (pr, _) in procs.items():
            if pr.poll() is None:
                r = rss_mib(pr.pid)
                if r is not None:
                    timeline[mode].append((round(time.time() - began, 1), round(r, 1)))
        time.sleep(2)
    result = {"seconds": opts.seconds, "python": sys.version.split()[0], "modes": {}}
    for mode, (pr, out) in procs.items():
        stdout, stderr = pr.communicate()
        points = timeline[mode]
        half = [r for t, r in points if t >= opts.seconds / 2]
        first = [r for t, r in points if t < opts.seconds / 2]
        row = {"exit": pr.returncode, "workload": stdout.strip().splitlines()[-1:] or [""],
               "peak_rss_mib": max((r for _, r in points), default=None),
               "rss_first_half_max_mib": max(first, default=None),
               "rss_second_half_max_mib": max(half, default=None),
               "stderr_tail": stderr[-400:]}
        if mode != "plain" and os.path.exists(out):
            row["profile_bytes"] = os.path.getsize(out)
            row["export_json"] = export_cost(out, env)
        result["modes"][mode] = row
    plain = result["modes"]["plain"]["peak_rss_mib"] or 0
    for mode, row in result["modes"].items():
        if mode != "plain" and row["peak_rss_mib"] is not None:
            row["extra_rss_mib"] = round(row["peak_rss_mib"] - plain, 1)
    print(json.dumps(result, indent=1))
    if opts.report:
        with open(opts.report, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    return 0 if all(r["exit"] == 0 for r in result["modes"].values()) else 1


def export_cost(path, env):
    code = ("import resource, sys, time; from lprof import cli; t = time.time(); "
            "rc = cli.main(['export', sys.argv[1], '--format', 'json', '-o', sys.argv[1] + '.json']); "
            "print(rc, round(time.time() - t, 2), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True)
    try:
        rc, seconds, kib = r.stdout.split()
        return {"exit": int(rc), "seconds": float(seconds), "peak_rss_mib": round(int(kib) / 1024, 1),
                "json_bytes": os.path.getsize(path + ".json")}
    except (ValueError, OSError):
        return {"error": r.stderr[-300:]}


if __name__ == "__main__":
    sys.exit(main())
