"""Memory profiling with the LD_PRELOAD shim: known workloads in
subprocesses (tests/scripts/memory_workloads.py), the C stress test, a C++
extension using operator new, fork, and output identical with the shim."""
import json
import os
import subprocess
import sys
import sysconfig

import pytest

from conftest import ROOT, SANITIZED, lprof_env

pytestmark = [pytest.mark.needs_shim,
              pytest.mark.skipif(SANITIZED, reason="ASan cannot run with an interposed allocator")]

MB = 1 << 20
SHIM = os.path.join(ROOT, "src", "collect", "shim", "build", "liblprof_shim.so")
WORKLOADS = os.path.join(ROOT, "tests", "scripts", "memory_workloads.py")


@pytest.fixture(scope="module")
def shim():
    if not os.path.exists(SHIM):
        r = subprocess.run(["make", "-C", os.path.join(ROOT, "src", "collect", "shim")], capture_output=True)
        if r.returncode != 0 or not os.path.exists(SHIM):
            pytest.fail("shim not built: " + r.stderr.decode()[-300:])
    return SHIM


def run_case(shim, tmp_path, case, *extra, env_extra=None):
    out = tmp_path / (case + ".json")
    env = lprof_env({"LD_PRELOAD": shim, **(env_extra or {})})
    r = subprocess.run([sys.executable, WORKLOADS, case, str(out), *map(str, extra)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    snap = json.loads(out.read_text())
    m = snap["memory"]
    assert m["native_covered"] is True
    return snap, m, rows_by_line(m["lines"], snap["file"])


def rows_by_line(rows, path):
    """Memory rows of `path` summed per line number: on 3.9-3.11 a comprehension
    is its own function, so one line can have a row per function."""
    out = {}
    for row in rows:
        if row[0] != path:
            continue
        f, line, func, alloc, freed, net, peak, py_share, count = row
        if line in out:
            o = out[line]
            py_bytes = o[7] * o[3] + py_share * alloc
            o[3] += alloc
            o[4] += freed
            o[5] += net
            o[6] += peak
            o[7] = py_bytes / o[3] if o[3] else 0.0
            o[8] += count
        else:
            out[line] = [f, line, func, alloc, freed, net, peak, py_share, count]
    return out


def near(value, expected, rel=0.10):
    return abs(value - expected) <= rel * expected


def test_kept_bytearray_and_numpy(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "keep")
    mk = snap["marks"]
    b, n = lines[mk["KEEP_BYTES"]], lines[mk["KEEP_NUMPY"]]
    # [file, line, function, alloc, freed, net, peak, python_share, count]
    assert near(b[3], 200 * MB) and near(b[5], 200 * MB) and near(b[6], 200 * MB)
    assert b[7] > 0.99                      # bytearray: Python object memory
    assert near(n[5], 200 * MB) and n[7] < 0.01  # numpy data: native
    assert m["peak_bytes"] >= 380 * MB


def test_alloc_free_loop(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "loop")
    loop = lines[snap["marks"]["LOOP"]]
    assert near(loop[3], 500 * MB) and near(loop[4], 500 * MB)
    assert abs(loop[5]) < 5 * MB
    assert near(loop[6], 50 * MB, 0.2)      # one 50 MB block live at the peak
    assert not m["leaks"]


def test_slow_leak_named(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "leak")
    mk = snap["marks"]
    leak_lines = {l[1] for l in m["leaks"]}
    assert mk["LEAK"] in leak_lines, m["leaks"]
    assert mk["ONCE"] not in leak_lines and mk["CHURN"] not in leak_lines
    assert near(lines[mk["LEAK"]][5], 6_000_000, 0.25)


def test_leak_in_one_phase_named_first(shim, tmp_path):
    # the leak spans a small share of the run; a kept burst is not growth
    snap, m, lines = run_case(shim, tmp_path, "phase_leak")
    mk = snap["marks"]
    assert m["leaks"] and m["leaks"][0][1] == mk["PHASE_LEAK"], m["leaks"]
    assert mk["BURST"] not in {l[1] for l in m["leaks"]}, m["leaks"]
    assert near(lines[mk["BURST"]][5], 200_000 * 24 + 8 * 200_000, 0.25)


def test_pure_python_objects(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "objects")
    objs = lines[snap["marks"]["OBJECTS"]]
    assert near(objs[5], snap["expected_objects"], 0.15)
    assert objs[7] > 0.95


def test_objects_counted_once_without_pymalloc(shim, tmp_path):
    # PYTHONMALLOC=malloc: every object request reaches malloc (the shim), so
    # the unguarded small-object fast path must stay off or bytes count twice
    snap, m, lines = run_case(shim, tmp_path, "objects", env_extra={"PYTHONMALLOC": "malloc"})
    objs = lines[snap["marks"]["OBJECTS"]]
    assert near(objs[5], snap["expected_objects"], 0.15)
    assert objs[7] > 0.95


def test_threads(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "threads")
    t = lines[snap["marks"]["THREAD"]]
    assert near(t[3], 4 * 20 * 5 * MB)
    assert abs(t[5]) < 10 * MB
    threads = {thread for _ids, thread, _m in snap["stacks"]["stacks"]}
    assert len(threads) >= 4  # four workers alive at once (main may have no sample)


def test_realloc_growth(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "realloc")
    mk = snap["marks"]
    native, py = lines[mk["NATIVE_REALLOC"]], lines[mk["PY_REALLOC"]]
    assert near(native[5], 64 * MB) and near(native[3], 64 * 65 // 2 * MB)
    assert near(py[5], 64 * MB)


def test_frees_of_memory_allocated_before_start(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "prefree")
    mk = snap["marks"]
    assert near(lines[mk["AFTER"]][5], 10 * MB)
    assert all(l[4] <= l[3] * 1.001 + 1 for l in m["lines"])  # never more freed than allocated
    assert m["peak_bytes"] < 40 * MB        # the 100 MB freed is not counted as ours


OWN_THREAD_FIRST = """
import _thread, ctypes, sys
from lprof import _lprof
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
go, done, started = (_thread.allocate_lock() for _ in range(3))
go.acquire(); done.acquire(); started.acquire()
kept = []

def allocate():
    started.release()  # on lprof's thread its guard is set by now (C start)
    go.acquire()
    # 100 MB of native blocks, straight to the shim's malloc
    kept.extend(libc.malloc(200_000) for _ in range(500))
    done.release()

def shim_samples():
    return _lprof.memory_snapshot()["stats"]["shim_samples"]

if sys.argv[1] == "own":
    _lprof.own_thread_start(allocate)
    started.acquire()  # the thread and its guard exist before memory_start
    _lprof.memory_start(16384)
    before = shim_samples()
    go.release(); done.acquire()
else:
    _lprof.memory_start(16384)
    before = shim_samples()
    go.release(); allocate()
print(shim_samples() - before)
_lprof.memory_stop()
"""


def test_own_thread_started_before_memory(shim, tmp_path):
    """An lprof thread started before memory_start (the sampler's drain
    thread is) kept a guard of its own, not the shim's: the shim sampled
    its mallocs and a profile showed a thread of lprof's (1 run in 4 of
    test_lprof_threads_are_invisible_and_unsampled[--memory] on 3.10)."""
    script = tmp_path / "own_first.py"
    script.write_text(OWN_THREAD_FIRST)
    samples = {}
    for who in ("own", "program"):
        r = subprocess.run([sys.executable, str(script), who], capture_output=True, text=True,
                           timeout=60, env=lprof_env({"LD_PRELOAD": shim}))
        assert r.returncode == 0, r.stderr
        samples[who] = int(r.stdout.split()[-1])
    # blocks over the 16 KiB mean are each sampled: 500 on the program's
    # thread (the count works), none on lprof's
    assert samples["program"] >= 450, samples
    assert samples["own"] < 25, samples


def test_fork_child(shim, tmp_path):
    snap, m, lines = run_case(shim, tmp_path, "fork")
    assert near(lines[snap["marks"]["PARENT"]][5], 10 * MB)


def test_cxx_operator_new_seen(shim, tmp_path):
    src = os.path.join(ROOT, "tests", "shim", "cxx_alloc.cpp")
    so = tmp_path / ("lprof_cxx_alloc" + sysconfig.get_config_var("EXT_SUFFIX"))
    r = subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-I" + sysconfig.get_paths()["include"],
                        src, "-o", str(so)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot build the C++ test extension: " + r.stderr[-300:])
    snap, m, lines = run_case(shim, tmp_path, "cxx", tmp_path)
    cxx = lines[snap["marks"]["CXX"]]
    assert near(cxx[3], 200 * 100_000) and near(cxx[4], 200 * 100_000)


def test_stress_program(shim, tmp_path):
    exe = tmp_path / "stress"
    r = subprocess.run(["gcc", "-std=gnu11", "-O2", "-I" + os.path.join(ROOT, "include"),
                        os.path.join(ROOT, "tests", "shim", "stress.c"), "-o", str(exe),
                        "-pthread", "-ldl"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], env=dict(os.environ, LD_PRELOAD=shim), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stress ok" in r.stdout


def test_output_identical_under_shim(shim, write_script, tmp_path):
    script = write_script("det.py", """
        import hashlib, json, numpy as np
        d = {str(i): [i] * (i % 7) for i in range(20000)}
        a = np.arange(1_000_000, dtype=np.int64) * 3
        print(hashlib.sha256(json.dumps(d).encode()).hexdigest(), int(a.sum()))
        print(sorted(d)[:5], len(bytearray(10**7)))
    """)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60,
                           env=lprof_env())
    shimmed = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60,
                             env=lprof_env({"LD_PRELOAD": shim}))
    assert plain.returncode == shimmed.returncode == 0
    assert plain.stdout == shimmed.stdout and plain.stdout


def test_cli_reexecs_with_shim(shim, write_script, run_lprof, load_profile, tmp_path):
    script = write_script("prog.py", """
        import numpy as np
        big = np.ones(8_000_000)
        print("sum", int(big.sum()))
    """)
    env = {"LPROF_SHIM": shim}
    r = run_lprof("-l", "--memory", "-o", tmp_path / "p.lprof", script, env=env)
    assert r.returncode == 0, r.stderr
    assert "sum 8000000" in r.stdout
    prof = load_profile(str(tmp_path / "p.lprof"))
    m = prof["memory"]
    assert m["native_covered"] is True
    row = [l for l in m["lines"] if l[0] == str(script) and l[1] == 3]
    assert row and near(row[0][5], 64_000_000)


def test_lprofs_own_tables_are_not_the_programs(shim, write_script, run_lprof, load_profile,
                                                tmp_path):
    """lprof maps its tables (stack table 98 MB, sample rings, live blocks,
    timeline) past the shim's mmap: through it they were sampled as the
    program's mappings, shim_mmaps 3 and 159 MB of start-up bytes for a
    program that maps nothing large (issue #38)."""
    script = write_script("tiny.py", """
        x = sum(range(1000))
        print("ok", x)
    """)
    r = run_lprof("--memory", "-o", tmp_path / "p.lprof", script, env={"LPROF_SHIM": shim})
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(tmp_path / "p.lprof"))["memory"]["stats"]
    assert stats["shim_mmaps"] == 0, stats
    assert stats["shim_startup_bytes"] < 64 * MB, stats  # the interpreter's start-up, not tables
