"""The peer profilers: a private virtualenv, their command lines, and readers
for their outputs. Peers are only measured here; lprof never uses them."""

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

from common import BASE_ENV, BENCH, ROOT, SCRATCH, Failed, Run, short_reason

VENV = os.path.join(ROOT, "build", "bench-venv")
VPY = os.path.join(VENV, "bin", "python")
# PyPI distribution -> module that proves it is installed
PEERS = {
    "line_profiler": "line_profiler",
    "scalene": "scalene",
    "py-spy": None,
    "memray": "memray",
    "pyinstrument": "pyinstrument",
    "memory_profiler": "memory_profiler",
}


def vbin(name):
    return os.path.join(VENV, "bin", name)


def ensure_venv(log=print):
    """Create build/bench-venv and pip-install missing peers, quietly."""
    if not os.path.exists(VPY):
        log("bench: creating build/bench-venv for the peer profilers")
        # system site packages: the same numpy as the plain runs
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", VENV], check=True)
    missing = []
    for dist, mod in PEERS.items():
        if mod is None:
            ok = os.path.exists(vbin(dist))
        else:
            ok = subprocess.run([VPY, "-c", f"import {mod}"], capture_output=True).returncode == 0
        if not ok:
            missing.append(dist)
    if missing:
        log("bench: pip install " + " ".join(missing) + " (into build/bench-venv)")
        r = subprocess.run(
            [VPY, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + missing,
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            log("bench: pip failed; the affected peers will show n/a\n" + r.stderr[-2000:])


def versions():
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for d in sys.argv[1:]:\n"
        "    try: out[d] = m.version(d)\n"
        "    except Exception: out[d] = 'not installed'\n"
        "print(json.dumps(out))"
    )
    try:
        r = subprocess.run([VPY, "-c", code] + list(PEERS), capture_output=True, text=True)
        return json.loads(r.stdout)
    except (OSError, ValueError):
        return {d: "not installed" for d in PEERS}


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_timed_group(argv, env_extra=None, timeout=300, cwd=None):
    """common.run_timed for tools that start a child of their own (the `scalene`
    launcher re-runs itself as `python -m scalene` with its allocator preloaded
    and waits for it). run_timed kills only the launcher on a timeout, which
    leaves the child running (and holding the machine) after the row is marked
    timed out. Here the tool gets its own process group and the whole group is
    killed on a timeout (and any leftover member when it ends)."""
    env = dict(os.environ)
    env.update(BASE_ENV)
    for k, v in (env_extra or {}).items():
        if k == "PYTHONPATH":
            v = v + os.pathsep + BASE_ENV["PYTHONPATH"]
        env[k] = v
    try:
        c0 = _children_cpu()
        t0 = time.perf_counter()
        p = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd or SCRATCH,
            start_new_session=True,
        )
    except OSError as e:
        raise Failed(f"cannot start: {e}")
    try:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            try:
                p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            raise Failed(f"timed out after {timeout} s")
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - c0
    finally:
        _kill_group(p)  # nothing of the run outlives it (also on Ctrl-C)
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        raise Failed(f"exit {p.returncode}: {short_reason(stderr)}")
    return Run(wall, stdout, stderr, cpu)


# ---- command lines -------------------------------------------------------


def kernprof_cmd(script, args, out):
    return [vbin("kernprof"), "-l", "-o", out, script] + args


def scalene_cmd(script, args, out, memory=False):
    """CPU-only, or CPU + memory (`--memory`).

    Memory mode names `--memory` explicitly. Plain `scalene run` means CPU +
    memory + GPU, and with GPU on Scalene 2.4.0 starts its PyTorch integration
    whenever torch imports (the venv sees the system torch through
    --system-site-packages), even on a machine without a GPU and for a
    program that never imports torch: torch.profiler(with_stack=True) traces
    the program's calls, and Scalene parses all those events when profiling
    stops (torch's _parse_kineto_results, then a long gc at exit). Measured
    on allocs.py at 1/10 of the bench's work: 104 s and 5.8 GB with the plain
    command line, 8 s and 0.3 GB with `--memory`; mixed.py at 1/10: 175 s
    and 7.4 GB. The same memory profiling either way; only the torch
    profiler differs."""
    opts = ["--memory" if memory else "--cpu-only", "--cpu-percent-threshold", "0"]
    return [vbin("scalene"), "run", "-o", out] + opts + [script] + (["---"] + args if args else [])


def pyspy_cmd(script, args, out, wall=False, rate=None, native=False, nonblocking=False):
    cmd = [vbin("py-spy"), "record", "-f", "raw", "-o", out]
    if nonblocking:
        cmd.append("--nonblocking")
    if native:
        cmd.append("--native")
    if wall:
        cmd.append("--idle")
    if rate:
        cmd += ["--rate", str(rate)]
    return cmd + ["--", VPY, script] + args


def memray_cmd(script, args, out):
    return [vbin("memray"), "run", "-q", "-f", "-o", out, script] + args


def mprof_cmd(script, args):
    return [VPY, "-m", "memory_profiler", script] + args


# ---- output readers: {lineno: metrics} for one workload file -------------


def _same_file(a, b):
    return os.path.basename(a) == os.path.basename(b)


def scalene_lines(json_path, script):
    """{lineno: {"cpu": pct, "native_frac": f, "alloc_mb": MB, "peak_mb": MB}}, leaks, peak line."""
    try:
        with open(json_path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise Failed(f"scalene output unreadable: {e}")
    out, leaks = {}, []
    for fname, fd in d.get("files", {}).items():
        if not _same_file(fname, script):
            continue
        for ln in fd.get("lines", []):
            py = ln.get("n_cpu_percent_python", 0.0)
            c = ln.get("n_cpu_percent_c", 0.0)
            sysp = ln.get("n_sys_percent", 0.0)
            out[ln["lineno"]] = {
                "cpu": py + c + sysp,
                "native_frac": c / (py + c) if py + c > 0 else None,
                "alloc_mb": ln.get("n_malloc_mb", 0.0) * 1.048576,  # MiB -> MB
                "peak_mb": ln.get("n_peak_mb", 0.0) * 1.048576,
            }
        lk = fd.get("leaks") or {}
        leaks = sorted(lk.items(), key=lambda kv: -kv[1].get("velocity_mb_s", 0.0))
    return out, [int(k) for k, _ in leaks]


_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def pyspy_lines(raw_path, script):
    """{lineno: {"samples": n}} charged to the deepest frame in `script`."""
    out = {}
    try:
        f = open(raw_path)
    except OSError as e:
        raise Failed(f"py-spy output unreadable: {e}")
    with f:
        for row in f:
            row = row.rstrip("\n")
            stack, _, count = row.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            line = None
            for fr in stack.split(";"):
                m = _FRAME.match(fr)
                if m and _same_file(m.group(2), script):
                    line = int(m.group(3))
            if line is not None:
                out.setdefault(line, {"samples": 0})["samples"] += int(count)
    return out


MEMRAY_READER = os.path.join(BENCH, "memray_read.py")


def memray_lines(bin_path, script):
    r = subprocess.run([VPY, MEMRAY_READER, bin_path, script], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed("memray reader: " + (r.stderr.strip().splitlines() or ["?"])[-1][:80])
    d = json.loads(r.stdout)
    return {int(k): v for k, v in d["lines"].items()}, d["leak_lines"], d["peak_lines"]


_MPROF = re.compile(r"^\s*(\d+)\s+([\d.]+) MiB\s+(-?[\d.]+) MiB\s+(\d+)\s")


def mprof_lines(stdout):
    """memory_profiler listing -> {lineno: {"incr_mb": MB}} (RSS increments)."""
    out = {}
    for row in stdout.splitlines():
        m = _MPROF.match(row)
        if m:
            out[int(m.group(1))] = {"incr_mb": float(m.group(3)) * 1.048576}
    if not out:
        raise Failed("no memory_profiler listing in output")
    return out
