"""Child processes followed: fork, multiprocessing (each start method),
subprocesses running Python; one merged profile, exact hits summed across
processes, --per-process, --no-follow, and a parent profile that survives a
child killed or ending by os._exit."""
import os
import shutil
import signal
import sys
import tempfile

import pytest

from conftest import SANITIZED

METHODS = ["fork", "spawn", "forkserver"]

POOL = """
import multiprocessing as mp, sys, time

def child_work(n):
    s = 0
    for i in range(n):
        s += i * i
    end = time.thread_time() + 0.1  # the same sum again for 0.1 s of CPU: a fixed
    while time.thread_time() < end:  # count ran 0.015 s on 3.14, under the workers' start-up
        t = 0
        for i in range(n):
            t += i * i
    return s

if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    with ctx.Pool(2) as pool:
        print(sum(pool.map(child_work, [int(sys.argv[2])] * 4)))
"""

PROCESSES = """
import multiprocessing as mp, sys

def child_work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    procs = [ctx.Process(target=child_work, args=(int(sys.argv[2]),)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print([p.exitcode for p in procs])
"""

LINES = """
import multiprocessing as mp, os, subprocess, sys

@profile
def work(n):
    s = 0
    for i in range(n):
        s += i
    return s

if __name__ == "__main__":
    how = sys.argv[1]
    if how == "os.fork":
        pid = os.fork()
        if pid == 0:
            work(1000)
            os._exit(0)
        os.waitpid(pid, 0)
    elif how == "subprocess":
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, '.'); "
                        "import lines; lines.work(1000)"], check=True)
    else:
        with mp.get_context(how).Pool(2) as pool:
            pool.map(work, [1000] * 4)
    work(10)
"""


def _line_row(prof, path, line):
    for row in prof["sampling"]["lines"]:
        if row[0] == str(path) and row[1] == line:
            return row
    return None


def _cpu(row):
    return sum(row[3:6]) if row else 0.0


@pytest.mark.parametrize("method", METHODS)
def test_pool_children_are_merged(method, run_lprof, write_script, load_profile, tmp_path):
    script = write_script("pool.py", POOL)
    # a short folder of its own: forkserver's socket path (in TMPDIR, under the
    # children's session folder) must stay within AF_UNIX's 108 bytes, and
    # pytest's tmp_path is long under pytest-xdist
    scratch = tempfile.mkdtemp(prefix="lpf", dir="/tmp")
    try:
        r = run_lprof("-q", "-o", "out.lprof", script, method, 600000, env={"TMPDIR": scratch})
        assert r.returncode == 0, r.stderr
        assert os.listdir(scratch) == []  # the children's session folder is removed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert r.stdout.strip() == str(4 * sum(i * i for i in range(600000)))  # the program's output
    prof = load_profile(str(tmp_path / "out.lprof"))
    # the parent and the workers (a spawned worker the pool terminates while its
    # interpreter still starts has no profile yet: it did no task either)
    assert prof["meta"]["processes"] >= 2
    # the workers' loop carries most of the run's CPU time (the rest: start-up, imports)
    loop = sum(_cpu(_line_row(prof, script, n)) for n in (6, 7, 9, 10, 11, 12))
    assert loop > 0.4 * prof["sampling"]["cpu_total_s"] > 0
    r = run_lprof("-q", "--no-follow", "-o", "main.lprof", script, method, 600000)
    assert r.returncode == 0, r.stderr
    main = load_profile(str(tmp_path / "main.lprof"))
    assert "processes" not in main["meta"] and "ranks" not in main
    assert _line_row(main, script, 7) is None  # the parent never runs the loop


@pytest.mark.parametrize("method", METHODS)
def test_each_process_has_its_profile(method, run_lprof, write_script, load_profile, tmp_path):
    script = write_script("procs.py", PROCESSES)
    # each child's loop long enough (~0.15 s of CPU) that a busy machine
    # still lands timer ticks in it: with 300,000 rounds (~20 ms) one child in
    # three had no sample on its loop while benchmarks ran beside
    r = run_lprof("-q", "-o", "out.lprof", script, method, 2000000)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 0]"
    prof = load_profile(str(tmp_path / "out.lprof"))
    assert prof["meta"]["processes"] == 3
    members = prof["ranks"]["members"]
    assert members[0]["ppid"] == os.getpid()  # the lprof command's parent: this test
    assert len({m["pid"] for m in members}) == 3
    assert all(m["ppid"] == members[0]["pid"] for m in members[1:]) or method == "forkserver"
    # each child's loop time is its own: the slowest holds at most what all hold together
    (row,) = [r for r in prof["ranks"]["lines"] if r[1] == 7]
    total, peak, who = row[3]["cpu_s"]
    assert who in (1, 2) and 0 < peak < total


@pytest.mark.parametrize("how", ["os.fork", "subprocess"] + METHODS)
def test_exact_hits_summed_across_processes(how, run_lprof, write_script, load_profile,
                                            tmp_path):
    script = write_script("lines.py", LINES)
    r = run_lprof("-l", "-q", script, how)
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "lines.py.lprof"))
    (fn,) = [f for f in prof["functions"] if f["name"] == "work"]
    hits = {ln: h for ln, h, _t in fn["lines"]}
    calls = 1 if how in ("os.fork", "subprocess") else 4
    assert hits[8] == calls * 1000 + 10  # `s += i`: every child's hits and the parent's
    assert hits[9] == calls + 1           # `return s`: one per call
    assert prof["meta"]["processes"] >= 2
    if how == "os.fork":  # the imbalance view of processes: exact line time, by pid
        r = run_lprof("view", "lines.py.lprof", "--ranks")
        assert r.returncode == 0, r.stderr
        assert "metric line_time_s" in r.stdout
        (row,) = [ln for ln in r.stdout.splitlines() if "lines.py:8 (work)" in ln]
        child = prof["ranks"]["members"][1]["pid"]
        assert f"pid {child}" in row  # the child made 1000 of the 1010 hits: the slowest


def test_per_process_listing(run_lprof, write_script):
    script = write_script("procs.py", PROCESSES)
    r = run_lprof("--per-process", script, "fork", 200000)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("== process ") == 3
    assert r.stdout.count("(parent)") == 1 and r.stdout.count("child of ") == 2


def test_killed_child_loses_only_its_own_part(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("kill.py", """
        import os, signal

        def busy():
            s = 0
            for i in range(300000):
                s += i
            return s

        for how in ("kill", "exit"):
            pid = os.fork()
            if pid == 0:
                busy()
                if how == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                os._exit(3)
            _, status = os.waitpid(pid, 0)
            print(how, os.WIFSIGNALED(status), os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1)
        busy()
    """)
    r = run_lprof("-q", "-o", "k.lprof", script)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["kill True -1", "exit False 3"]  # as without lprof
    prof = load_profile(str(tmp_path / "k.lprof"))
    # the parent and the child that ended by os._exit; the killed child's part is lost
    assert prof["meta"]["processes"] == 2
    assert [m.get("exit_code") for m in prof["ranks"]["members"]] == [0, 3]


def test_sigterm_child_still_dies_by_sigterm(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("term.py", """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c",
            "import sys, time\\n"
            "s = 0\\n"
            "for i in range(400000): s += i\\n"
            "print('ready', flush=True)\\n"
            "time.sleep(60)\\n"], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\\n"
        child.terminate()
        print(child.wait())
    """)
    r = run_lprof("-q", "-o", "t.lprof", script, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(-signal.SIGTERM)
    prof = load_profile(str(tmp_path / "t.lprof"))
    assert prof["meta"]["processes"] == 2
    files = {row[0] for row in prof["sampling"]["lines"]}
    assert "<string>" in files  # the child's -c code, profiled before it was terminated


def test_nested_lprof_command_keeps_its_own_profile(run_lprof, write_script, load_profile,
                                                    tmp_path):
    write_script("inner.py", "print(sum(range(1000)))\n")
    script = write_script("outer.py", """
        import subprocess, sys
        subprocess.run([sys.executable, "-m", "lprof", "-q", "-o", "inner.lprof", "inner.py"],
                       check=True)
    """)
    r = run_lprof("-q", "-o", "outer.lprof", script)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sum(range(1000)))
    inner = load_profile(str(tmp_path / "inner.lprof"))
    assert inner["meta"]["argv"][0].endswith("inner.py")
    outer = load_profile(str(tmp_path / "outer.lprof"))
    assert "processes" not in outer["meta"]  # the inner command is not a followed child


@pytest.mark.needs_shim  # --memory preloads the allocator shim, which cannot run under ASan
def test_memory_children_followed(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("mem.py", """
        import multiprocessing as mp

        def child_alloc(n):
            keep = [bytearray(100_000) for _ in range(n)]
            return len(keep)

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(1) as pool:
                print(pool.map(child_alloc, [200]))
    """)
    r = run_lprof("--memory", "-q", "-o", "m.lprof", script, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "m.lprof"))
    assert prof["meta"]["processes"] == 2
    rows = [row for row in prof["memory"]["lines"] if row[0] == str(script) and row[1] == 5]
    assert rows and rows[0][3] > 10_000_000  # 20 MB allocated in the child, within sampling


def test_wall_children_followed(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("wall.py", """
        import multiprocessing as mp, time

        def child_sleep(t):
            time.sleep(t)

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(1) as pool:
                pool.map(child_sleep, [0.4])
    """)
    r = run_lprof("--wall", "-q", "-o", "w.lprof", script, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "w.lprof"))
    row = [row for row in prof["sampling"]["lines"] if row[0] == str(script) and row[1] == 5]
    assert row and 0.3 < row[0][6] < 1.5  # the child's 0.4 s sleep, in wall seconds


@pytest.mark.skipif(SANITIZED, reason="under ASan a thread started in the forked child of a "
                    "multi-threaded process can block in ASan's allocator before it runs (the "
                    "checkpoint thread never started in 3 of 30 loaded runs, none without ASan); "
                    "the test runs in every other tier")
def test_checkpoints_keep_a_killed_childs_part(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("ckpt.py", """
        import os, signal, time

        def child_busy():  # 0.2 s of CPU (1.5M iterations took 0.04 s on 3.14)
            s = 0
            end = time.thread_time() + 0.2
            while time.thread_time() < end:
                for i in range(20_000):
                    s += i
            return s

        pid = os.fork()
        if pid == 0:
            child_busy()
            time.sleep(0.5)  # a few checkpoints after the work
            os.kill(os.getpid(), signal.SIGKILL)
        os.waitpid(pid, 0)
    """)
    r = run_lprof("-q", "-i", "0.1", "-o", "c.lprof", script)
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "c.lprof"))
    assert prof["meta"]["processes"] == 2  # the killed child's last checkpoint is merged
    assert any(row[2] == "child_busy" for row in prof["sampling"]["lines"])


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_sigterm_ends_a_child_stuck_in_an_uninterruptible_wait(method, run_lprof, run_python,
                                                              write_script, load_profile,
                                                              tmp_path):
    """A followed child took SIGTERM with a Python-level handler, which runs
    only when its main thread next runs bytecode: a child blocked in a wait
    that signals do not interrupt (here a mutex it already holds; in CI a
    pool worker whose sem_wait began just after the signal) never died, and
    its parent hung in join(). lprof's C handler now has a watcher thread
    save the child's part, then the child dies by SIGTERM as without lprof."""
    script = write_script("stuck.py", """
        import ctypes, multiprocessing as mp, sys, time

        def stuck(ready):
            s = 0
            for i in range(3_000_000):  # ~0.2 s: some ticks land here on a busy machine too
                s += i
            libc = ctypes.CDLL(None)
            mutex = ctypes.create_string_buffer(64)  # zeroed: a default glibc mutex
            libc.pthread_mutex_lock(mutex)
            ready.set()
            libc.pthread_mutex_lock(mutex)  # never returns, whatever signal comes

        if __name__ == "__main__":
            ctx = mp.get_context(sys.argv[1])
            ready = ctx.Event()
            p = ctx.Process(target=stuck, args=(ready,))
            p.start()
            ready.wait(60)
            time.sleep(0.2)
            p.terminate()
            p.join(30)
            print("exitcode", p.exitcode)
    """)
    plain = run_python(script, method, timeout=90)
    assert plain.stdout == "exitcode -15\n", plain.stderr
    r = run_lprof("-q", "-o", "s.lprof", script, method, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout, r.stderr
    prof = load_profile(str(tmp_path / "s.lprof"))
    assert prof["meta"]["processes"] == 2  # the child's part, saved before it died
    assert any(row[2] == "stuck" for row in prof["sampling"]["lines"]), prof["sampling"]["lines"]


def test_no_children_no_folder(run_lprof, write_script, tmp_path):
    """A run without children leaves nothing in the temporary folder, even one
    that ends by os._exit (nothing of lprof runs then)."""
    script = write_script("plain.py", "import os\nprint(sum(range(100)))\nos._exit(4)\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = run_lprof("-q", script, env={"TMPDIR": str(scratch)})
    assert r.returncode == 4 and r.stdout == "4950\n"
    assert os.listdir(scratch) == []


DESCRIPTORS = """
import os, subprocess, sys
LIST = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
child = subprocess.run([sys.executable, "-c", LIST], capture_output=True, text=True, check=True)
print(sorted(int(f) for f in os.listdir('/proc/self/fd')), child.stdout.strip())
"""


@pytest.mark.parametrize("mode", [[], ["--wall"], pytest.param(["--memory"], marks=pytest.mark.needs_shim),
                                  ["-l", "--sample"]])
def test_program_and_child_see_only_their_own_descriptors(run_lprof, run_python, write_script, mode):
    """CPython's test_subprocess (test_pass_fds_redirected) under lprof: a
    followed child listed 3 and 4 (libunwind's memory-check pipe, opened by
    the walk that finds the eval loop) and 900 and 901 (the SIGTERM
    watcher's pipe); a program that lists, closes or reuses descriptors must
    meet none of lprof's."""
    write_script("fds.py", DESCRIPTORS)
    plain = run_python("fds.py")
    assert plain.returncode == 0, plain.stderr
    r = run_lprof(*mode, "-q", "-o", "fds.lprof", "fds.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout


@pytest.mark.skipif(sys.version_info < (3, 10), reason="-X warn_default_encoding is 3.10+")
def test_followed_child_warns_of_nothing_under_warn_default_encoding(run_lprof, write_script):
    """CPython's test_subprocess (test_encoding_warning): a child run with
    -X warn_default_encoding printed EncodingWarnings for lprof's own files
    (its marker in the session folder, /proc/self/status)."""
    write_script("enc.py", """
        import subprocess, sys
        r = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-c", "pass"],
                           capture_output=True, text=True)
        print(repr(r.stderr), r.returncode)
        """)
    r = run_lprof("-q", "-o", "enc.lprof", "enc.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "'' 0"


def test_followed_child_killed_by_a_fatal_signal_says_nothing(run_lprof, write_script):
    """A followed child's stderr is the program's: CPython's test_subprocess
    saw lprof's "killed by SIGABRT ... no profile was written" line from a
    child that aborts on purpose."""
    write_script("abrt.py", """
        import subprocess, sys
        r = subprocess.run([sys.executable, "-c", "import os; os.abort()"],
                           capture_output=True, text=True)
        print(repr(r.stderr), r.returncode)
        """)
    r = run_lprof("-q", "-o", "abrt.lprof", "abrt.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "'' -6"
