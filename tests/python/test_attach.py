"""`lprof attach PID`: sampling a process that is already running.

The attach itself needs sys.remote_exec (Python 3.14+) in the suite's
interpreter, which starts the targets; the refusals run on every version."""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from conftest import lprof_env

needs_remote_exec = pytest.mark.skipif(not hasattr(sys, "remote_exec"),
                                       reason="sys.remote_exec needs Python 3.14+")

# A program that knows nothing of lprof: a worker thread and the main thread
# compute in two functions; it reports what the profiler must leave alone.
TARGET = """\
import os, sys, threading, time

def worker_spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def main_spin(n):
    s = 0
    for i in range(n):
        s ^= i
    return s

def worker():
    while True:
        worker_spin(20000)
        time.sleep(0.001)

path_before = list(sys.path)
threading.Thread(target=worker, daemon=True).start()
t0 = time.time()
names_before = set(globals()) | {"names_before"}
print("ready", flush=True)
while time.time() - t0 < float(sys.argv[1]):
    main_spin(50000)
print("path kept", sys.path == path_before, flush=True)
print("names kept", set(globals()) == names_before, flush=True)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def _plain_env():
    """The target's environment: lprof nowhere on its path."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def target(tmp_path):
    """target(source, *args) -> a running Popen that printed its first line."""
    procs = []

    def start(source, *args):
        script = tmp_path / "target.py"
        script.write_text(textwrap.dedent(source))
        p = subprocess.Popen([sys.executable, str(script), *map(str, args)], cwd=tmp_path,
                             env=_plain_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "ready"
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _attach(tmp_path, *args, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "lprof", "attach", *map(str, args)],
                          cwd=tmp_path, env=lprof_env(), capture_output=True, text=True,
                          timeout=timeout, **kw)


def _start_attach(tmp_path, *args):
    return subprocess.Popen([sys.executable, "-m", "lprof", "attach", *map(str, args)],
                            cwd=tmp_path, env=lprof_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _load(path):
    from lprof.model import profile_file
    return profile_file.load(str(path))


def _line_seconds(prof, text, source, wall=False, path="target.py"):
    """CPU (or wall) seconds the profile gives the source line holding text;
    rows are [file, line, function, cpu python, native, system, wall, samples]."""
    lineno = next(i for i, line in enumerate(source.splitlines(), 1) if text in line)
    return sum((row[6] if wall else row[3] + row[4] + row[5])
               for row in prof["sampling"]["lines"]
               if row[0].endswith(path) and row[1] == lineno)


@needs_remote_exec
def test_attach_samples_every_thread_and_leaves_the_program_as_it_was(tmp_path, target):
    p = target(TARGET, 12)
    r = _attach(tmp_path, p.pid, "-d", 1.5, "-o", tmp_path / "a.lprof")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert f"attached to process {p.pid}" in r.stderr
    # the listing names both threads' hot lines
    assert "s += i * i" in r.stdout and "s ^= i" in r.stdout
    prof = _load(tmp_path / "a.lprof")
    assert prof["meta"]["pid"] == p.pid
    assert prof["meta"]["attached"]["ended_by"] == "stopped"
    assert prof["meta"]["argv"][0].endswith("target.py")
    # both threads were sampled: the one started before the attach too (its
    # CPU share of the GIL is what a busy machine leaves it: 0.048 s of 1.5 s
    # under two CPU hogs and two test workers; a few samples prove it)
    assert _line_seconds(prof, "s += i * i", TARGET) > 0.01
    assert _line_seconds(prof, "s ^= i", TARGET) > 0.2
    assert 0.8 < prof["sampling"]["duration_s"] < 10
    assert not _control_folders(p.pid)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert err == ""  # nothing printed into the program's stderr
    assert out.splitlines() == ["path kept True", "names kept True"]


@needs_remote_exec
def test_top_prints_frames_of_the_hottest_lines(tmp_path, target):
    p = target(TARGET, 20)
    r = _attach(tmp_path, p.pid, "--top", "--interval", 0.5, "--top-lines", 3, "-d", 2.6, "-q",
                "-o", tmp_path / "t.lprof")
    assert r.returncode == 0, r.stderr
    frames = [f for f in r.stdout.split("\n\n") if f.strip()]
    assert 2 <= len(frames) <= 6, r.stdout  # one each 0.5 s, while the process runs Python
    for f in frames:
        lines = f.splitlines()
        assert lines[0].startswith(f"lprof attach {p.pid}: CPU time by line")
        assert len(lines) <= 2 + 3  # header, column names, --top-lines rows
    last = frames[-1].splitlines()
    # the main thread's loop leads; "now" and "total" are shares of the whole CPU time
    assert any("s ^= i" in row or "for i in range(n)" in row for row in last[2:])
    assert "\x1b[" not in r.stdout  # no terminal codes into a pipe
    p.kill()


def test_top_frame_now_is_the_last_interval():
    """render() on two snapshots built by hand: "now" is the growth between
    them, "total" the whole."""
    from lprof.render import top
    here = os.path.abspath(__file__)

    def prof(a, b):
        return {"sampling": {"mode": "cpu", "duration_s": 1.0},
                "stacks": {"frames": [[here, "f", 1, 10], [here, "g", 1, 20]],
                           "stacks": [[[0], 1, {"cpu_python_s": a}], [[1], 1, {"cpu_python_s": b}]]}}
    text = top.render([prof(1.0, 1.0)], [prof(1.0, 3.0)], 42)
    rows = text.splitlines()[2:]
    assert rows[0].split()[:3] == ["100.0%", "75.0%", "3.000"]  # g grew by 2 s of the 2 s
    assert rows[1].split()[:3] == ["0.0%", "25.0%", "1.000"]
    # --children: the processes' lines are added up; a process new since the
    # last frame has all of its time in "now"
    text = top.render([prof(1.0, 1.0)], [prof(1.0, 3.0), prof(2.0, 0.5)], 42)
    assert text.startswith("lprof attach 42 and 1 child process(es): CPU time by line")
    rows = text.splitlines()[2:]
    assert rows[0].split()[:3] == ["55.6%", "53.8%", "3.500"]  # g: 2.5 s of the 4.5 s new
    assert rows[1].split()[:3] == ["44.4%", "46.2%", "3.000"]  # f: 3 s of the 6.5 s in all
    # shares of the process's whole CPU time, not of the lines shown: a
    # process that spent as much again elsewhere (lprof's own code, a
    # thread without Python) halves every percent (issue #34)
    before, now = prof(1.0, 1.0), prof(1.0, 3.0)
    before["sampling"]["process_cpu_s"], now["sampling"]["process_cpu_s"] = 4.0, 8.0
    text = top.render([before], [now], 42)
    assert "4.00 s on the program's lines of 8.00 s CPU time" in text, text
    rows = text.splitlines()[2:]
    assert rows[0].split()[:3] == ["50.0%", "37.5%", "3.000"]  # 2 s of the 4 s now; 3 of 8


@needs_remote_exec
def test_native_frames(tmp_path, target):
    from lprof import _lprof
    p = target(TARGET, 20)
    r = _attach(tmp_path, p.pid, "--native", "-d", 1, "-o", tmp_path / "n.lprof", "-q")
    p.kill()
    why = _lprof.native_unwind_check()
    if why:  # no libunwind here: refused in one line, nothing started
        assert r.returncode == 1 and r.stderr == f"lprof: attach: --native: {why}\n"
        return
    assert r.returncode == 0, r.stderr
    prof = _load(tmp_path / "n.lprof")
    assert prof["sampling"]["native"] == "on"
    assert _line_seconds(prof, "s ^= i", TARGET) > 0.1


@needs_remote_exec
def test_the_example_service(tmp_path):
    """examples/busy_service.py (examples/README.md): the slow path's loop
    is where its time goes."""
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "examples", "busy_service.py")
    p = subprocess.Popen([sys.executable, example, "30"], env=_plain_env(),
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().startswith(f"busy_service: pid {p.pid}")
        r = _attach(tmp_path, p.pid, "-d", 1.5, "-o", tmp_path / "s.lprof", "-q")
        assert r.returncode == 0, r.stderr
        source = open(example).read()
        prof = _load(tmp_path / "s.lprof")
        hot = _line_seconds(prof, 'total += (i * payload["n"]) % 7', source, path=example)
        # the CPU it got in 1.5 s depends on the machine's load (0.184 s
        # under two CPU hogs): that it is the hottest line is what holds
        rows = [r[3] + r[4] + r[5] for r in prof["sampling"]["lines"] if r[0] == example]
        assert hot > 0.02 and max(rows) <= hot, (hot, rows)
    finally:
        p.kill()
        p.wait()


@needs_remote_exec
def test_attach_twice_in_a_row(tmp_path, target):
    p = target(TARGET, 20)
    for name in ("one.lprof", "two.lprof"):
        r = _attach(tmp_path, p.pid, "-d", 0.7, "-o", tmp_path / name, "-q")
        assert r.returncode == 0, r.stderr
        assert _line_seconds(_load(tmp_path / name), "s ^= i", TARGET) > 0.05
    p.kill()


@needs_remote_exec
def test_program_that_ends_while_attached_keeps_its_profile_and_exit_status(tmp_path, target):
    p = target(TARGET, 2.5, 3)
    r = _attach(tmp_path, p.pid, "-o", tmp_path / "end.lprof")  # no duration: until it ends
    assert r.returncode == 0, r.stderr
    assert p.wait(timeout=60) == 3
    prof = _load(tmp_path / "end.lprof")
    assert prof["meta"]["attached"]["ended_by"] == "program exited"
    # sampled until its end (0.30 s of its loop when the machine is idle; a
    # busy one leaves it less: some samples prove the line)
    assert _line_seconds(prof, "s ^= i", TARGET) > 0.05


@needs_remote_exec
def test_ctrl_c_stops_and_prints(tmp_path, target):
    p = target(TARGET, 30)
    a = _start_attach(tmp_path, p.pid, "-o", tmp_path / "c.lprof")
    _wait_for(lambda: a.poll() is not None or _attached_said(a), 60)
    time.sleep(1.0)
    a.send_signal(signal.SIGINT)
    out, err = a.communicate(timeout=90)
    assert a.returncode == 0, err
    assert "Traceback" not in err
    assert "s ^= i" in out
    assert _load(tmp_path / "c.lprof")["meta"]["attached"]["ended_by"] == "stopped"
    assert p.poll() is None  # the program goes on
    p.kill()


_said = {}


def _attached_said(proc):
    """True once the attach command said it attached (reads stderr's first line)."""
    if proc not in _said:
        _said[proc] = proc.stderr.readline()
    return "attached to process" in _said[proc]


def _wait_for(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    raise AssertionError("timed out")


WATCHER = """\
import sys, time
print("ready", flush=True)
seen = False
end = time.time() + 60
while time.time() < end:
    mod = sys.modules.get("lprof.collect.sampling")
    running = bool(mod and mod.running())
    if running and not seen:
        seen = True
        print("sampling", flush=True)
    if seen and not running:
        print("stopped", flush=True)
        break
    time.sleep(0.02)
print("ends", flush=True)
"""


@needs_remote_exec
def test_killed_command_stops_sampling_in_the_program(tmp_path, target):
    p = target(WATCHER)
    a = _start_attach(tmp_path, p.pid, "-o", tmp_path / "k.lprof")
    assert p.stdout.readline().strip() == "sampling"
    a.kill()
    a.wait()
    t0 = time.monotonic()
    assert p.stdout.readline().strip() == "stopped"
    assert time.monotonic() - t0 < 10
    assert p.wait(timeout=60) == 0
    assert not (tmp_path / "k.lprof").exists()
    _wait_for(lambda: not _control_folders(p.pid), 10)  # the program removed it


def _control_folders(pid):
    return glob.glob(os.path.join(tempfile.gettempdir(), f"lprof-attach-{pid}-*"))


EXECS = """\
import os, sys, time
print("ready", flush=True)
def busy(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
busy(2.0)
os.execv(sys.executable, [sys.executable, "-c", "print('replaced')"])
"""


@needs_remote_exec
def test_a_program_that_execs_keeps_its_profile(tmp_path, target):
    p = target(EXECS)
    r = _attach(tmp_path, p.pid, "-o", tmp_path / "x.lprof", "-q")
    assert r.returncode == 0, r.stderr
    out, _ = p.communicate(timeout=60)
    assert out.strip() == "replaced" and p.returncode == 0
    prof = _load(tmp_path / "x.lprof")
    assert prof["meta"]["attached"]["ended_by"] == "program exec'd"
    assert _line_seconds(prof, "while time.time() < end", EXECS) > 0.3


ALLOCATES = """\
import time
print("ready", flush=True)
keep = []
end = time.time() + 5
while time.time() < end:
    keep.append([0] * 20000)      # about 160 kB a list, kept
    if len(keep) > 50:
        keep = []
    time.sleep(0.002)
print("done", len(keep) <= 51, flush=True)
"""


@needs_remote_exec
def test_memory_columns_of_python_allocations(tmp_path, target):
    p = target(ALLOCATES)
    r = _attach(tmp_path, p.pid, "--memory", "-d", 1.5, "-o", tmp_path / "m.lprof")
    assert r.returncode == 0, r.stderr
    assert "Python objects' allocations (native ones are not covered" in r.stderr
    prof = _load(tmp_path / "m.lprof")
    assert "memory" in prof["meta"]["modes"]
    lineno = next(i for i, line in enumerate(ALLOCATES.splitlines(), 1) if "[0] * 20000" in line)
    rows = [row for row in prof["memory"]["lines"]
            if row[0].endswith("target.py") and row[1] == lineno]
    # about 1.5 s / 2.2 ms a list x 160 kB: ~100 MB; sampled, so a wide margin
    assert rows and rows[0][3] > 20e6, prof["memory"]["lines"]
    out, err = p.communicate(timeout=60)  # unhooked, it runs on to the end
    assert p.returncode == 0 and out.strip() == "done True" and err == ""


LINES = """\
import sys, time

def work(n):
    s = 0
    for i in range(n):
        s += i * i
    time.sleep(0.001)
    return s

class Server:
    def handle(self):
        return work(3000)

def main(seconds):
    t0 = time.time()
    calls = 0
    while time.time() - t0 < seconds:
        Server().handle()
        calls += 1
    return calls

print("ready", flush=True)
main(float(sys.argv[1]))
print("tools free", all(sys.monitoring.get_tool(i) is None for i in range(6)), flush=True)
"""


@needs_remote_exec
def test_line_by_line_times_the_named_code(tmp_path, target):
    p = target(LINES, 4)
    r = _attach(tmp_path, p.pid, "-l", "-p", "__main__:work", "-p", "__main__:Server.handle,"
                "__main__.main", "-d", 1.5)
    assert r.returncode == 0, r.stderr
    assert "timing the lines of 3 function(s) for 1.5 s" in r.stderr
    prof = _load(tmp_path / f"attach-{p.pid}.lprof")
    assert prof["meta"]["modes"] == ["lines"]
    funcs = {f["name"]: {ln: (hits, t) for ln, hits, t in f["lines"]} for f in prof["functions"]}
    assert set(funcs) == {"work", "Server.handle", "main"}
    body = LINES.splitlines()
    at = {text.strip(): i for i, text in enumerate(body, 1)}
    calls = funcs["work"][at["s = 0"]][0]
    assert calls > 50  # a call every ~2 ms for 1.5 s
    assert funcs["work"][at["s += i * i"]][0] > 2900 * calls  # 3000 a call, a call cut at each end
    sleep_s = funcs["work"][at["time.sleep(0.001)"]][1]
    assert 0.001 * calls * 0.9 < sleep_s < 1.5
    # main was running when the attach came: its loop's lines are timed all the same
    assert funcs["main"][at["Server().handle()"]][0] >= calls - 2
    assert "Function: work" in r.stdout and "Line #" in r.stdout
    out, err = p.communicate(timeout=60)
    assert out.strip() == "tools free True" and err == ""  # sys.monitoring given back


@needs_remote_exec
@pytest.mark.parametrize("args, says", [
    (["-l"], "-l: name the code to time with -p"),
    (["-p", "x"], "-p names the code -l times: add -l"),
    (["-l", "-p", "x", "--wall"], "--wall is for sampling"),
])
def test_line_by_line_refusals(tmp_path, target, args, says):
    p = target(LINES, 30)
    r = _attach(tmp_path, p.pid, *args, "-d", 1)
    assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    p.kill()


@needs_remote_exec
def test_line_by_line_target_not_in_the_process(tmp_path, target):
    p = target(LINES, 30)
    r = _attach(tmp_path, p.pid, "-l", "-p", "__main__:nowhere", "-d", 1)
    assert r.returncode == 1
    assert r.stderr == ("lprof: attach: -p __main__:nowhere: not found in the process (only "
                        "what it has imported can be traced)\n")
    p.kill()


PARENT = """\
import subprocess, sys, time
CHILD = '''
import sys, time
def child_spin():
    s = 0
    end = time.time() + 20
    while time.time() < end:
        for i in range(10000):
            s += i
print("child up", flush=True)
child_spin()
'''
import os
env = dict(os.environ)
if sys.argv[1:] == ["one-off"]:  # the second child refuses remote debugging
    env["PYTHON_DISABLE_REMOTE_DEBUG"] = "1"
kids = [subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                         env=env if n else None) for n in range(2)]
for k in kids:
    k.stdout.readline()
# a child that is no Python: skipped without a word
sleeper = subprocess.Popen(["sleep", "30"])
print("ready", flush=True)
def parent_wait():
    time.sleep(0.01)
end = time.time() + 20
while time.time() < end:
    parent_wait()
"""


@needs_remote_exec
def test_children_are_attached_and_merged(tmp_path, target):
    p = target(PARENT)
    try:
        r = _attach(tmp_path, p.pid, "--children", "-d", 1.5, "-o", tmp_path / "c.lprof")
        assert r.returncode == 0, r.stderr
        assert f"attached to process {p.pid} and 2 child process(es)" in r.stderr
        assert "left out" not in r.stderr
        assert "and 2 child process(es), merged" in r.stderr
        prof = _load(tmp_path / "c.lprof")
        assert prof["meta"]["attached"]["processes"] == 3
        # the children's loop holds the CPU time: most of the three processes'
        # (the parent sleeps), whatever a busy machine leaves them (0.77-0.94 s
        # of it under two hogs and two test workers, ~2 s when idle)
        spin = sum(row[3] + row[4] + row[5] for row in prof["sampling"]["lines"]
                   if row[2] == "child_spin")
        cpu = prof["sampling"]["process_cpu_s"]
        assert cpu > 0.2 and spin > 0.7 * cpu, (spin, cpu)
        assert len(prof["ranks"]["members"]) == 3
    finally:
        _kill_children(p.pid)


@needs_remote_exec
def test_a_child_that_refuses_is_left_out_in_one_line(tmp_path, target):
    p = target(PARENT, "one-off")
    try:
        kids = [c for c in _children_of(p.pid)
                if os.readlink(f"/proc/{c}/exe").split("/")[-1].startswith("python")]
        r = _attach(tmp_path, p.pid, "--children", "-d", 1, "-o", tmp_path / "o.lprof", "-q")
        assert r.returncode == 0, r.stderr
        left = [line for line in r.stderr.splitlines() if line.endswith("; left out")]
        assert len(left) == 1 and f"process {kids[1]}" in left[0], r.stderr
        assert _load(tmp_path / "o.lprof")["meta"]["attached"]["processes"] == 2
    finally:
        _kill_children(p.pid)


POOL = """\
import multiprocessing as mp, os, sys, time

def task(n):
    s = 0
    end = time.time() + 1.0
    while time.time() < end:
        for i in range(10000):
            s += i
    return s

if __name__ == "__main__":
    mp.set_start_method(sys.argv[1])
    with mp.Pool(2, maxtasksperchild=1) as pool:  # a new worker for every task
        # chunksize given: map's own reckoning divides by the number of
        # workers, which the pool's handler thread can have at 0 for a
        # moment while it replaces them (seen once in ~40 runs, without lprof's part)
        pool.map(task, range(2), chunksize=1)
        print("ready", flush=True)
        end = time.time() + 30
        while time.time() < end:
            pool.map(task, range(2), chunksize=1)
"""


@needs_remote_exec
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_workers_started_while_attached_join_and_save_at_os_exit(tmp_path, target, method):
    """A pool that replaces its workers: those started while attached join,
    those that end (by os._exit) keep their part; multiprocessing's
    forkserver, blocked in select, is not waited for; with the fork method
    the workers, forked from the pool's handler thread (out of
    sys.remote_exec's reach), start their recording from the attached
    parent's fork hook."""
    p = target(POOL, method)
    try:
        r = _attach(tmp_path, p.pid, "--children", "--start-timeout", 2, "-d", 5,
                    "-o", tmp_path / "p.lprof", "-q")
        assert r.returncode == 0, r.stderr
        said = r.stderr.splitlines()
        left = [line for line in said if line.endswith("; left out")]
        if method == "fork":
            # the workers forked (from the handler thread) before the agent
            # started are out of reach: two alive, and those forked while
            # the attach started (~2 a second)
            assert all("forked from a thread" in line for line in left), said
            more = sum(int(line.split()[1]) for line in said if " more child process(es) " in line)
            assert len(left) + more <= 6, said
        else:
            assert not left, said
        prof = _load(tmp_path / "p.lprof")
        # ~2 new workers a second; each saved when it ended or at the stop
        assert prof["meta"]["attached"]["processes"] >= 4, prof["meta"]["attached"]
        assert _line_seconds(prof, "for i in range(10000)", POOL) + \
            _line_seconds(prof, "s += i", POOL) > 1.0
    finally:
        _kill_children(p.pid)


@needs_remote_exec
def test_workers_forked_from_a_thread_are_named_once(tmp_path, target):
    """With --memory the fork hook does not follow (the memory hooks come
    into the child installed), and sys.remote_exec finds no main thread in
    a worker forked from the pool's handler thread: each is left out, the
    reason said once, the others counted."""
    p = target(POOL, "fork")
    try:
        r = _attach(tmp_path, p.pid, "--children", "--memory", "-d", 3,
                    "-o", tmp_path / "p.lprof", "-q")
        assert r.returncode == 0, r.stderr
        said = r.stderr.splitlines()
        left = [line for line in said if line.endswith("; left out")]
        assert len(left) == 1 and "forked from a thread other than its main one" in left[0], said
        pid = left[0].split("process ")[1].split()[0]
        more = [line for line in said if line.endswith(f"left out as process {pid} was")]
        assert len(more) == 1 and int(more[0].split()[1]) >= 2, said  # ~2 workers a second
    finally:
        _kill_children(p.pid)


EXITS = """\
import os, time
def spin():
    s = 0
    for i in range(100000):
        s += i
print("ready", flush=True)
end = time.time() + 2
while time.time() < end:
    spin()
os._exit(3)
"""


@needs_remote_exec
def test_a_process_that_ends_by_os_exit_keeps_its_profile(tmp_path, target):
    p = target(EXITS)
    r = _attach(tmp_path, p.pid, "-o", tmp_path / "x.lprof", "-q")
    assert r.returncode == 0, r.stderr
    prof = _load(tmp_path / "x.lprof")
    assert prof["meta"]["attached"]["ended_by"] == "program exited"
    assert _line_seconds(prof, "s += i", EXITS) > 0.3
    assert p.wait(timeout=60) == 3


# The agent alone (any Python version): the command's stop has the lprof
# thread saving (made slow here) when the program ends by os._exit.
EXIT_DURING_SAVE = """\
import os, sys, time
from lprof.process import attach_agent
from lprof.model import profile_file
control = sys.argv[1]
real_save = profile_file.save
def slow_save(prof, path):
    time.sleep(0.5)
    real_save(prof, path)
profile_file.save = slow_save
attach_agent.begin(control, {"cli_pid": os.getppid(), "mode": "cpu"})
s = 0
for i in range(300000):
    s += i
open(os.path.join(control, "stop"), "w").close()
time.sleep(0.25)  # the lprof thread (50 ms polls) is inside the save
os._exit(7)
"""


def test_the_program_ending_waits_for_a_save_in_progress(tmp_path):
    control = tmp_path / "control"
    control.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(EXIT_DURING_SAVE)
    r = subprocess.run([sys.executable, str(script), str(control)], env=lprof_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 7, r.stderr
    status = json.loads((control / "status").read_text())
    assert status["state"] == "saved" and status["ended_by"] == "stopped", status
    assert _load(control / "profile.lprof")["meta"]["attached"]["ended_by"] == "stopped"


def _kill_children(pid):
    for child in _children_of(pid):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _children_of(pid):
    from lprof.process.procfs import descendants
    return descendants(pid)


@needs_remote_exec
def test_top_with_children_adds_their_lines_up(tmp_path, target):
    p = target(PARENT)
    try:
        r = _attach(tmp_path, p.pid, "--children", "--top", "--interval", 0.5, "--top-lines", 3,
                    "-d", 2.6, "-q", "-o", tmp_path / "t.lprof")
        assert r.returncode == 0, r.stderr
        frames = [f for f in r.stdout.split("\n\n") if f.strip()]
        # about one each 0.5 s once the three have written, at least 0.4 s apart
        # (not one per process's write: that would be ~15)
        assert 2 <= len(frames) <= 8, r.stdout
        last = frames[-1].splitlines()
        assert last[0].startswith(f"lprof attach {p.pid} and 2 child process(es): CPU time by line")
        # the two children's loop leads, its seconds those of both: most of the
        # processes' CPU time, whatever a busy machine leaves them (its top line
        # had 0.95 of 1.37 s in a CI run, ~2 s when idle)
        assert "child_spin" in last[2]
        total_s = sum(float(row.split()[2]) for row in last[2:] if "child_spin" in row)
        cpu = float(re.search(r"of ([0-9.]+) s CPU time", last[0]).group(1))
        assert cpu > 0.2 and total_s > 0.7 * cpu, r.stdout
    finally:
        _kill_children(p.pid)
        p.kill()


FORKS = """\
import os, subprocess, sys, time
print("ready", flush=True)
end = time.time() + 3
while time.time() < end:
    subprocess.run([sys.executable, "-c", "pass"])  # fork + exec in the child
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/true", ["true"])
    os.waitpid(pid, 0)
"""


@needs_remote_exec
def test_children_that_exec_do_not_end_the_recording(tmp_path, target):
    p = target(FORKS)
    r = _attach(tmp_path, p.pid, "-d", 1.5, "-o", tmp_path / "f.lprof", "-q")
    assert r.returncode == 0, r.stderr
    assert _load(tmp_path / "f.lprof")["meta"]["attached"]["ended_by"] == "stopped"
    assert p.wait(timeout=60) == 0


@needs_remote_exec
@pytest.mark.parametrize("run, says", [
    ([], "lprof is already sampling this process"),
    (["-l", "--memory"], "lprof is already recording this process's memory"),
])
def test_a_process_lprof_already_profiles_is_refused(tmp_path, run, says):
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    p = subprocess.Popen([sys.executable, "-m", "lprof", *run, "-q", "-o", tmp_path / "run.lprof",
                          str(script), "4"], cwd=tmp_path, env=lprof_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        r = _attach(tmp_path, p.pid, "-d", 1)
        assert r.returncode == 1
        assert r.stderr == f"lprof: attach: {says}\n"
        p.wait(timeout=60)
        assert p.returncode == 0  # and its own run is whole
        assert (tmp_path / "run.lprof").exists()
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


BLOCKED = """\
import sys, time
print("ready", flush=True)
time.sleep(4)   # the main thread runs no Python code meanwhile
time.sleep(0.5)
print("lprof imported", any(m == "lprof" or m.startswith("lprof.") for m in sys.modules),
      flush=True)
"""


@needs_remote_exec
def test_start_timeout_leaves_nothing_behind(tmp_path, target):
    p = target(BLOCKED)
    r = _attach(tmp_path, p.pid, "--start-timeout", 0.5, "-d", 1)
    # nothing started in it: its stacks were read from outside instead (test_dump.py)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "ran no Python code on its main thread" in r.stderr
    assert "sampling it from outside instead" in r.stderr, r.stderr
    out, err = p.communicate(timeout=60)
    # the script ran once the sleep was over, found the attach given up, did nothing
    assert out.strip() == "lprof imported False", err
    assert err == ""
    assert not _control_folders(p.pid)


@needs_remote_exec
def test_start_timeout_where_code_must_run_is_the_error(tmp_path, target):
    # --memory needs lprof's code in the process: no outside fallback, the give-up stands
    p = target(BLOCKED)
    r = _attach(tmp_path, p.pid, "--start-timeout", 0.5, "-d", 1, "--memory")
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "ran no Python code on its main thread" in r.stderr
    assert "outside" not in r.stderr, r.stderr
    out, err = p.communicate(timeout=60)
    assert out.strip() == "lprof imported False", err
    assert not _control_folders(p.pid)


@needs_remote_exec
def test_a_long_wait_for_the_main_thread_is_said(tmp_path, target):
    p = target(BLOCKED)
    r = _attach(tmp_path, p.pid, "-d", 0.3, "-o", tmp_path / "b.lprof")
    assert r.returncode == 0, r.stderr
    said = r.stderr.splitlines()
    assert said[0].startswith(f"lprof: waiting for process {p.pid}'s main thread to run Python "
                              f"code"), said
    assert said[1].startswith(f"lprof: attached to process {p.pid}"), said
    out, err = p.communicate(timeout=60)
    assert out.strip() == "lprof imported True" and err == ""


@needs_remote_exec
def test_wall_mode_sees_a_sleeping_program(tmp_path, target):
    src = """\
        import time
        print("ready", flush=True)
        def nap():
            time.sleep(0.05)
        for _ in range(400):
            nap()
        """
    p = target(src)
    r = _attach(tmp_path, p.pid, "--wall", "-d", 1.5, "-o", tmp_path / "w.lprof", "-q")
    assert r.returncode == 0, r.stderr
    prof = _load(tmp_path / "w.lprof")
    assert prof["sampling"]["mode"] == "wall"
    assert _line_seconds(prof, "time.sleep(0.05)", textwrap.dedent(src), wall=True) > 0.8
    p.kill()


@needs_remote_exec
def test_a_process_with_remote_debugging_off_is_refused_in_one_line(tmp_path):
    env = _plain_env()
    env["PYTHON_DISABLE_REMOTE_DEBUG"] = "1"
    p = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); "
                          "time.sleep(60)"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        r = _attach(tmp_path, p.pid, "-d", 1)
        assert r.returncode == 1
        assert r.stderr.startswith(f"lprof: attach: process {p.pid}") and r.stderr.count("\n") == 1
    finally:
        p.kill()
        p.wait()


def test_the_script_reports_an_lprof_it_cannot_import(tmp_path):
    """The script the process runs, on a package folder without lprof: an
    error status, nothing raised, the program's sys.path as it was."""
    from lprof.process import attach_session as attach
    control = tmp_path / "control"
    control.mkdir()
    code = attach._SCRIPT + textwrap.dedent(f"""
        import sys
        before = list(sys.path)
        _lprof_attach({str(control)!r}, {str(tmp_path / "nowhere")!r}, {{"cli_pid": 1}})
        assert sys.path == before
        """)
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    status = json.loads((control / "status").read_text())
    assert status["state"] == "error"
    assert "cannot import lprof in the process" in status["message"]
    # a second run finds it claimed and does nothing
    (control / "status").unlink()
    subprocess.run([sys.executable, "-I", "-c", code], check=True, timeout=60)
    assert not (control / "status").exists()


def test_the_script_says_when_the_c_extension_is_missing(tmp_path):
    """lprof's package without its C extension for the process's Python."""
    import shutil
    from lprof.process import attach_session as attach
    parent = tmp_path / "pkg"
    shutil.copytree(os.path.join(attach.PACKAGE_PARENT, "lprof"),
                    parent / "lprof", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    control = tmp_path / "control"
    control.mkdir()
    code = attach._SCRIPT + f"\n_lprof_attach({str(control)!r}, {str(parent)!r}, {{'cli_pid': 1}})\n"
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    message = json.loads((control / "status").read_text())["message"]
    assert "lprof's C extension is not built for that Python version" in message


@pytest.mark.parametrize("args, says", [
    (["999999999"], "no process 999999999"),
    (["0"], "0 is not a process id"),
    (["{sleep}", "-d", "0"], "--duration 0.0: must be more than 0 seconds"),
    (["{sleep}", "--rate", "0"], "--rate 0: must be between 1 and"),
    (["{self}"], "that is lprof's own process"),
    (["{sleep}"], "no Python executable"),
])
def test_refusals_are_one_line(tmp_path, args, says):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        # {self}: the attach command's own pid, known only inside it
        args = [a.replace("{sleep}", str(sleeper.pid)) for a in args]
        if "{self}" in args:
            code = ("import os, sys; from lprof.cli import main; "
                    "sys.exit(main(['attach', str(os.getpid())] + sys.argv[1:]))")
            r = subprocess.run([sys.executable, "-c", code, *args[1:]], cwd=tmp_path,
                               env=lprof_env(), capture_output=True, text=True, timeout=60)
        else:
            r = _attach(tmp_path, *args)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert r.returncode == 2
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="needs a Python without remote_exec")
def test_a_python_before_3_14_is_refused_with_its_version_where_code_must_run(tmp_path):
    # plain sampling falls back to reading from outside (tests/python/test_dump.py);
    # -l needs lprof's code in the process
    p = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); "
                          "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        r = _attach(tmp_path, p.pid, "-d", 1, "-l", "-p", "mod:func")
    finally:
        p.kill()
        p.wait()
    assert r.returncode == 2
    v = "%d.%d" % sys.version_info[:2]
    assert f"runs Python {v}, which cannot be asked to run lprof's code" in r.stderr
    assert f"-l needs lprof's code in the process (lprof dump {p.pid}" in r.stderr
    assert r.stderr.count("\n") == 1


MID_IMPORT = """\
    import glob, importlib.abc, os, sys, tempfile, time

    class SlowEncoder(importlib.abc.MetaPathFinder):
        # json's own import stops at its encoder, json half initialized (no
        # dumps yet), until lprof's attach script has found the main thread
        # there and said so (at most 10 s)
        def find_spec(self, name, path, target=None):
            if name != "json.encoder":
                return None
            sys.meta_path.remove(self)
            pattern = os.path.join(tempfile.gettempdir(), f"lprof-attach-{os.getpid()}-*", "deferred")
            end = time.monotonic() + 10
            while time.monotonic() < end and not glob.glob(pattern):
                pass
            return None

    sys.meta_path.insert(0, SlowEncoder())
    print("ready")
    import json
    print("json whole", hasattr(json, "dumps"))
    t = time.perf_counter() + 60
    n = 0
    while time.perf_counter() < t:  # after the import
        n += 1  # counted
        if n % 10000 == 0 and os.path.exists("attached"):  # the test's attach is over
            break
    print("done")
    """


@needs_remote_exec
def test_an_attach_inside_an_import_waits_for_its_end(tmp_path, target):
    """The attach script ran where the main thread stood, inside an import
    of a module lprof uses too: lprof's own `import json` got the half
    initialized json and the agent failed. It now waits for the import."""
    p = target(MID_IMPORT)
    r = _attach(tmp_path, p.pid, "-d", 1, "-o", tmp_path / "a.lprof")
    assert r.returncode == 0, r.stderr
    # not timed: what fails without the deferral is the agent's error; (this
    # loop's stat starves lprof's thread of the GIL: the stop is saved by the
    # command's nudge, test_a_stop_is_saved_while_the_program_starves_...)
    (tmp_path / "attached").touch()
    prof = _load(tmp_path / "a.lprof")
    # sampled after the import, in the loop (its CPU: what a busy machine
    # leaves it, 0.17 s of the second under two hogs and two test workers)
    loop = ("# after the import", "# counted", "# the test's attach is over")
    assert sum(_line_seconds(prof, text, MID_IMPORT) for text in loop) > 0.05
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and err == "", err
    assert out.splitlines() == ["json whole True", "done"]


# The main thread releases and retakes the GIL thousands of times a second
# (a stat every few thousand loops): CPython then never asks it to give way,
# and another thread waiting for the GIL sleeps for seconds at a time.
STARVING = """\
    import os, sys, threading, time
    print("ready")
    t = time.perf_counter() + 60
    n = 0
    while time.perf_counter() < t:
        n += 1  # spinning
        if n % 3000 == 0 and os.path.exists("attached"):  # the test's attach is over
            break
    print("done", threading.active_count())
    """


@needs_remote_exec
def test_a_stop_is_saved_while_the_program_starves_lprofs_thread(tmp_path, target):
    """The agent's thread needs the GIL to save; this program kept it from
    that thread for 18-60 s after the stop (the save waited for the
    program's end). The command now asks the main thread to save."""
    p = target(STARVING)
    t0 = time.monotonic()
    r = _attach(tmp_path, p.pid, "-d", 1, "-o", tmp_path / "a.lprof")
    took = time.monotonic() - t0
    (tmp_path / "attached").touch()
    assert r.returncode == 0, r.stderr
    # 1 s of sampling, 1 s before the nudge, its request and the save: far
    # from the program's own 60 s, even on a busy machine
    assert took < 20, (took, r.stderr)
    prof = _load(tmp_path / "a.lprof")
    assert prof["meta"]["attached"]["ended_by"] == "stopped"
    assert _line_seconds(prof, "# spinning", STARVING) > 0.05
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and err == "", err
    assert out.splitlines() == ["done 1"]  # lprof's threads are over and unseen
    # the nudge ran (or was claimed and cleaned up after): no folder left
    assert glob.glob(os.path.join(tempfile.gettempdir(), f"lprof-attach-{p.pid}-*")) == []
