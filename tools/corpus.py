"""Differential corpus: programs nobody on the project wrote, run with plain
python and under each lprof mode; their stdout, exit status and stderr must
not change (lprof runs with -q: no listing, no lprof lines).

usage: corpus.py quick|all [--report FILE] [--python PYTHON]

quick (in `make test`): a handful of CPython test modules and an example.
all (`make reliability`): a few dozen CPython test modules (json, re,
threading, subprocess, signal, asyncio, pickle, sqlite3, tempfile, decimal,
zlib, csv, ...), the pytest suites of more-itertools and toolz from their
sdists (downloaded once into build/corpus with pip), and the examples.

Outputs are compared after taking out what changes between any two runs of
the same program (durations, dates, load averages, random seeds). Each
program's profile must also be written and readable."""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "corpus")

CPYTHON_QUICK = ["test_json", "test_csv", "test_zlib"]
CPYTHON_ALL = [
    "test_json",
    "test_re",
    "test_csv",
    "test_zlib",
    "test_pickle",
    "test_tempfile",
    "test_decimal",
    "test_sqlite3",
    "test_signal",
    "test_threading",
    "test_subprocess",
    "test_asyncio.test_locks",
    "test_asyncio.test_queues",
    "test_asyncio.test_sock_lowlevel",
    "test_string",
    "test_textwrap",
    "test_difflib",
    "test_heapq",
    "test_bisect",
    "test_collections",
    "test_functools",
    "test_itertools",
    "test_statistics",
    "test_fractions",
    "test_base64",
    "test_struct",
    "test_enum",
    "test_contextlib",
    "test_queue",
    "test_glob",
    "test_shutil",
    "test_fnmatch",
    "test_configparser",
    "test_argparse",
    "test_gzip",
    "test_hashlib",
    "test_uuid",
    "test_secrets",
]
PYPI = {  # sdist name: (version, import name, test folder inside the sdist)
    "more-itertools": ("11.2.1", "more_itertools", "tests"),
    "toolz": ("1.2.0", "toolz", "toolz/tests"),
}
MODES = ["plain", "lines", "cpu", "wall", "memory"]


class Program:
    def __init__(self, name, argv, prof_target, cwd=None, env=None, timeout=600, expected=None):
        self.name, self.argv, self.prof_target = name, argv, prof_target
        self.cwd, self.env, self.timeout = cwd, env or {}, timeout
        self.expected = expected or {}  # mode -> why a difference is the point of that mode


def cpython_programs(names):
    return [Program(f"cpython:{n}", ["-m", "test", n], "test." + n) for n in names]


def example_programs(quick):
    names = (
        ["hot_lines.py"]
        if quick
        else sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "examples", "*.py")))
    )
    progs = []
    for n in names:
        path = os.path.join(ROOT, "examples", n)
        with open(path) as f:
            bare = "\n@profile" in f.read() and "import profile" not in open(path).read()
        why = (
            (
                "uses the bare @profile that lprof -l puts into builtins, as kernprof does: "
                "plain python stops with NameError"
            )
            if bare
            else None
        )
        progs.append(Program(f"example:{n}", [path], path, expected={"lines": why} if why else None))
    return progs


def pypi_programs(python):
    progs = []
    for name, (version, module, tests) in PYPI.items():
        folder = _sdist(python, name, version)
        progs.append(
            Program(
                f"pypi:{name}-{version}",
                ["-m", "pytest", "-q", "-p", "no:cacheprovider", tests],
                module,
                cwd=folder,
            )
        )
    return progs


def _sdist(python, name, version):
    """The sdist unpacked under build/corpus (pip downloads it once)."""
    os.makedirs(WORK, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    folder = os.path.join(WORK, stem)
    if os.path.isdir(folder):
        return folder
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{name}=={version}",
            "-d",
            WORK,
        ],
        check=True,
    )
    archive = glob.glob(os.path.join(WORK, f"{stem}.tar.gz"))[0]
    with tarfile.open(archive) as tar:
        tar.extractall(WORK)
    return folder


_VOLATILE = [
    (re.compile(r"\d+:\d\d:\d\d( load avg: [\d.]+)?"), "T"),
    (re.compile(r"Using random seed:? \d+"), "Using random seed N"),
    (re.compile(r"\b\d+(\.\d+)? ?(sec|ms|s|seconds|min)\b"), "D"),
    (re.compile(r"\d+ (hour|min)\w* \d+ sec"), "D"),
    (re.compile(r"/tmp/[\w.-]+"), "/tmp/X"),
    (re.compile(r"\bpid[ =]?\d+", re.I), "pid N"),
    # regrtest names a test that ran over 30 s: its own timing, not lprof's output
    (re.compile(r"^\S+ passed in D\n", re.M), ""),
    # pytest adds (h:mm:ss) to its summary past a minute
    (re.compile(r"in D \(T\)"), "in D"),
]


def normalise(text):
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def command(python, prog, mode, outfile):
    if mode == "plain":
        return [python] + prog.argv
    extra = {"lines": ["-l", "-p", prog.prof_target], "cpu": [], "wall": ["--wall"], "memory": ["--memory"]}[
        mode
    ]
    return [python, "-m", "lprof", "-q", "-o", outfile, *extra] + prog.argv


def run_one(python, prog, mode, scratch):
    stem = re.sub(r"[^\w.-]", "_", prog.name)
    outfile = os.path.join(scratch, f"{stem}.{mode}.lprof")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **prog.env)
    env.pop("PYTHONSTARTUP", None)
    cwd = prog.cwd or scratch
    if prog.cwd:  # a package's own folder: its modules import from there
        env["PYTHONPATH"] += os.pathsep + prog.cwd
    began = time.time()
    try:
        r = subprocess.run(
            command(python, prog, mode, outfile),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=prog.timeout,
            errors="replace",
            stdin=subprocess.DEVNULL,
        )
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", "", ""
    seconds = time.time() - began
    profile_ok = None
    if mode != "plain":
        profile_ok = _readable(python, outfile)
    return {
        "rc": rc,
        "out": normalise(out),
        "err": normalise(err),
        "seconds": round(seconds, 1),
        "profile_ok": profile_ok,
    }


def _readable(python, path):
    code = "import sys; from lprof.model import profile_file; profile_file.load(sys.argv[1])"
    r = subprocess.run(
        [python, "-c", code, path],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")),
    )
    return r.returncode == 0


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: plain {x[:120]!r} vs lprof {y[:120]!r}"
    if len(la) != len(lb):
        return f"{len(la)} lines plain vs {len(lb)} under lprof"
    return None


def compare(plain, other):
    """None when the run under lprof is the same as the plain one."""
    if other["rc"] != plain["rc"]:
        return f"exit status {plain['rc']} plain vs {other['rc']} under lprof"
    for stream in ("out", "err"):
        why = first_difference(plain[stream], other[stream])
        if why:
            return f"std{stream} differs, {why}"
    if not other["profile_ok"]:
        return "no readable profile written"
    return None


def _write_report(opts, version, results):
    programs = dict(results)
    if opts.merge and os.path.exists(opts.report):
        with open(opts.report) as f:
            programs = dict(json.load(f)["programs"], **results)
    os.makedirs(os.path.dirname(os.path.abspath(opts.report)), exist_ok=True)
    tmp = opts.report + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"which": opts.which, "python": version, "programs": programs}, f, indent=1, sort_keys=True)
    os.replace(tmp, opts.report)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("which", choices=["quick", "all"])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--report", help="write the results here as JSON")
    p.add_argument("--only", help="only programs whose name contains one of these (comma-separated)")
    p.add_argument(
        "--merge",
        action="store_true",
        help="update the programs run in an existing --report file, keep the others",
    )
    opts = p.parse_args()
    quick = opts.which == "quick"
    progs = cpython_programs(CPYTHON_QUICK if quick else CPYTHON_ALL) + example_programs(quick)
    if not quick:
        progs += pypi_programs(opts.python)
    if opts.only:
        progs = [g for g in progs if any(w in g.name for w in opts.only.split(","))]
    version = subprocess.run(
        [opts.python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    results, failures = {}, 0
    with tempfile.TemporaryDirectory(prefix="lprof-corpus-") as scratch:
        for prog in progs:
            runs = {mode: run_one(opts.python, prog, mode, scratch) for mode in MODES}
            row = {"plain_rc": runs["plain"]["rc"], "modes": {}}
            for mode in MODES[1:]:
                why = compare(runs["plain"], runs[mode])
                expected = prog.expected.get(mode) if why else None
                row["modes"][mode] = {
                    "same": why is None,
                    "why": expected or why,
                    "expected": bool(expected),
                    "seconds": runs[mode]["seconds"],
                }
                failures += why is not None and not expected
            row["plain_seconds"] = runs["plain"]["seconds"]
            results[prog.name] = row
            verdict = ", ".join(
                f"{m} {'same' if r['same'] else 'differs as intended' if r['expected'] else 'DIFFERS'}"
                for m, r in row["modes"].items()
            )
            print(
                f"corpus: {prog.name} (plain exit {row['plain_rc']}, {row['plain_seconds']} s): {verdict}",
                flush=True,
            )
            for m, r in row["modes"].items():
                if not r["same"]:
                    print(f"    {m}: {r['why']}", flush=True)
            if opts.report:  # after each program: a long run cut short keeps what it measured
                _write_report(opts, version, results)
    total = len(results) * (len(MODES) - 1)
    print(
        f"corpus: {total - failures} of {total} runs unchanged ({len(results)} programs x "
        f"{len(MODES) - 1} modes, python {version})"
    )
    if opts.report:
        _write_report(opts, version, results)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
