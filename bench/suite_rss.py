"""Section 3: peak memory (RSS) of memory profilers on real test suites.

A test suite has many distinct stacks (pytest's are 60-80 frames deep) and
many small allocations: what a memory profiler keeps per stack shows there,
not on a synthetic loop. Each tool runs the suite once (peak RSS barely
varies between runs); the number is the largest ru_maxrss of the process
tree (RUSAGE_CHILDREN of a probe process: a tool's own children, such as
Scalene's re-run of itself, are waited by it and counted)."""

import glob
import json
import os
import subprocess
import sys
import tarfile

import peers
from common import ROOT, SCRATCH, fmt

# the standard library's own tests: nothing to download
STDLIB = [
    "-m",
    "unittest",
    "-q",
    "test.test_json",
    "test.test_re",
    "test.test_statistics",
    "test.test_itertools",
]
DATEUTIL = "python-dateutil"
SUITES_DIR = os.path.join(ROOT, "build", "bench-suites")
LIMIT = 3.0  # lprof --memory's peak at most this many times the plain run's
TOOLS = ["plain", "lprof", "memray", "scalene"]

PROBE = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[2:], cwd=sys.argv[1], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, text=True)
print(json.dumps({"rc": p.returncode, "tail": p.stderr[-300:],
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def _dateutil_suite(log):
    """(cwd, argv after the interpreter) of dateutil's pytest suite from its
    sdist (pip download, kept in build/bench-suites), or None."""
    found = sorted(glob.glob(os.path.join(SUITES_DIR, "python_dateutil-*", "tests")))
    if not found:
        os.makedirs(SUITES_DIR, exist_ok=True)
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-d",
                SUITES_DIR,
                DATEUTIL,
            ],
            capture_output=True,
            text=True,
        )
        sdists = sorted(glob.glob(os.path.join(SUITES_DIR, "python_dateutil-*.tar.gz")))
        if r.returncode != 0 or not sdists:
            log(f"  memory/suites: no {DATEUTIL} sdist ({r.stderr.strip()[-120:]})")
            return None
        with tarfile.open(sdists[-1]) as tar:
            if hasattr(tarfile, "data_filter"):  # 3.12+, and 3.10/3.11 security releases
                tar.extractall(SUITES_DIR, filter="data")
            else:
                tar.extractall(SUITES_DIR)
        found = sorted(glob.glob(os.path.join(SUITES_DIR, "python_dateutil-*", "tests")))
    if not found:
        return None
    cwd = os.path.dirname(found[-1])
    return cwd, [
        "-m",
        "pytest",
        "-q",
        "tests",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
        "-o",
        "filterwarnings=",
    ]


def _runner_script():
    """A script that runs `python -m X ARGS` as the program (Scalene and
    memray take a script, not -m)."""
    path = os.path.join(SCRATCH, "run_module.py")
    with open(path, "w") as f:
        f.write(
            "import runpy, sys\nmod = sys.argv.pop(1)\nsys.argv[0] = mod\n"
            "runpy.run_module(mod, run_name='__main__', alter_sys=True)\n"
        )
    return path


def _command(tool, argv, out):
    module, args = argv[1], argv[2:]
    runner = _runner_script()
    if tool == "plain":
        return [peers.VPY, "-m", module] + args
    if tool == "lprof":
        return [peers.VPY, "-m", "lprof", "--memory", "-q", "-o", out + ".lprof", "-m", module] + args
    if tool == "memray":
        return peers.memray_cmd(runner, [module] + args, out + ".memray.bin")
    return peers.scalene_cmd(runner, [module] + args, out + ".scalene.json", memory=True)


def _peak_mb(tool, cwd, argv, out, env):
    cmd = [sys.executable, "-c", PROBE, cwd] + _command(tool, argv, out)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    try:
        d = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, (r.stderr.strip() or "no result")[-90:]
    # a suite's own failures (dateutil's tz data differs by machine) still measure
    return d["maxrss_kb"] / 1024.0, None if d["rc"] in (0, 1) else f"exit {d['rc']}"


def run(log):
    suites = [("CPython's test_json, test_re, test_statistics, test_itertools (unittest)", (SCRATCH, STDLIB))]
    dateutil = _dateutil_suite(log)
    if dateutil:
        suites.append((f"{DATEUTIL}'s suite (pytest, {os.path.basename(dateutil[0])})", dateutil))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), PYTHONDONTWRITEBYTECODE="1")
    rows, targets = [], []
    for title, (cwd, argv) in suites:
        if cwd != SCRATCH:
            env_suite = dict(env, PYTHONPATH=env["PYTHONPATH"] + os.pathsep + os.path.join(cwd, "src"))
        else:
            env_suite = env
        peaks, errors = {}, {}
        for tool in TOOLS:
            out = os.path.join(SCRATCH, f"suite.{len(rows)}.{tool}")
            peaks[tool], errors[tool] = _peak_mb(tool, cwd, argv, out, env_suite)
        log(
            f"  memory/suites/{len(rows)}: "
            + ", ".join(
                f"{t}: {fmt(peaks[t], '.0f')} MB{' (' + errors[t] + ')' if errors[t] else ''}" for t in TOOLS
            )
        )
        plain = peaks["plain"] if not errors["plain"] else None
        row = [title, fmt(plain, ".0f")]
        for tool in TOOLS[1:]:
            mb = peaks[tool] if not errors[tool] else None
            row.append(
                f"{mb:.0f} ({mb / plain:.2f}x)" if mb and plain else f"n/a ({errors[tool] or 'no result'})"
            )
        lp = peaks["lprof"] / plain if plain and peaks["lprof"] and not errors["lprof"] else None
        sc = peaks["scalene"] if not errors["scalene"] else None
        met = None if lp is None else lp <= LIMIT and (sc is None or peaks["lprof"] < sc)
        row.append({True: "yes", False: "**no**", None: "n/a"}[met])
        rows.append(row)
        targets.append(
            (
                f"peak RSS on {title.split(' (')[0]}: lprof --memory <= {LIMIT:.0f}x plain and below scalene",
                met,
                fmt(lp, ".2f") + "x" if lp else "n/a",
            )
        )
    header = [
        "suite",
        "plain MB",
        "lprof --memory MB",
        "memray run MB",
        "scalene run --memory MB",
        "target met",
    ]
    return (header, rows), targets
