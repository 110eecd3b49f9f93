"""`lprof dump PID --native`: a process stopped for the read (ptrace), its C
stacks unwound and merged with its Python stacks, then released: a main
thread asleep in time.sleep, a worker in select(), a worker in libc's
pause() called through ctypes. The process must run on as before: after
the dump it answers a signal (its handler writes a file). Its refusals:
a thread already traced by another process (a real EPERM), an lprof built
without libunwind-ptrace (simulated).

Readiness is said through files, never waited for on a clock."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import PKGDIR, lprof_env

CHILD = """\
import ctypes, os, select, signal, sys, threading, time

def answer(signo, frame):
    with open(sys.argv[2], "w") as f:
        f.write("alive")

signal.signal(signal.SIGUSR1, answer)
started = []

def in_select(ev):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])  # the main thread answers
    ev.set()
    select.select([], [], [], 120)  # SELECT LINE

def in_pause(ev):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    ev.set()
    ctypes.CDLL(None).pause()  # PAUSE LINE

def leaf():
    with open(sys.argv[1], "w") as f:
        f.write("ready")
    for _ in range(4):
        time.sleep(120)  # SLEEP LINE

def outer():
    leaf()  # OUTER LINE

for fn, name in ((in_select, "selector"), (in_pause, "pauser")):
    ev = threading.Event()
    threading.Thread(target=fn, args=(ev,), name=name, daemon=True).start()
    ev.wait()
outer()  # MODULE LINE
"""

SLEEP_CALLS = {"nanosleep", "clock_nanosleep", "__clock_nanosleep", "__nanosleep", "select", "__select"}


def _line(marker):
    return next(i for i, text in enumerate(CHILD.splitlines(), 1) if marker in text)


@pytest.fixture
def child(tmp_path):
    """child(python=this one) -> (Popen, script, answer path) of CHILD, once it says it is ready."""
    procs = []

    def start(python=sys.executable):
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        ready, answer = tmp_path / "ready", tmp_path / "answer"
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        p = subprocess.Popen(
            [python, str(script), str(ready), str(answer)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(p)
        while not (ready.exists() and ready.read_text() == "ready"):
            if p.poll() is not None:
                pytest.fail(f"the child ended: {p.stderr.read()}")
            time.sleep(0.05)  # a poll, not a bound: the child says when it is ready
        return p, str(script), answer

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _lprof(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "lprof", *map(str, args)],
        cwd=tmp_path,
        env=lprof_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _native_available(tmp_path):
    r = subprocess.run(
        [sys.executable, "-c", "from lprof import _lprof as c; print(c.remote_native_available())"],
        env=lprof_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "0"


def _innermost_python(t):
    return next((f for f in t["stack"] if f["kind"] == "python"), None)


def _innermost_named(stack):
    """The innermost frame with a name. glibc 2.41+ (Debian sid's 2.43) makes
    a cancellable syscall (clock_nanosleep, select, pause) through helpers of
    its own that its stripped libc.so.6 does not name: up to three unnamed
    libc frames may come first, none from anywhere else."""
    i = next(i for i, f in enumerate(stack) if f["kind"] != "native" or f["function"])
    assert i <= 3 and all((f["library"] or "").startswith("libc.so") for f in stack[:i]), stack[: i + 1]
    return stack[i]


def _dump_until_settled(tmp_path, pid):
    """Each thread announces itself a few instructions before its blocking
    call: dumps are taken until all three are in them (a count of tries)."""
    want = {("in_select", _line("SELECT LINE")), ("in_pause", _line("PAUSE LINE")), ("leaf", _line("SLEEP LINE"))}
    for _ in range(100):
        r = _lprof(tmp_path, "dump", pid, "--native", "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        inner = {(f["function"], f["line"]) for f in map(_innermost_python, doc["threads"]) if f}
        if want <= inner:
            return doc
    return doc


def _assert_answers(p, answer):
    """The child runs on: its main thread takes SIGUSR1 and writes the file."""
    os.kill(p.pid, signal.SIGUSR1)
    while not (answer.exists() and answer.read_text() == "alive"):
        assert p.poll() is None, p.stderr.read()
        time.sleep(0.05)


def test_native_dump_merges_c_and_python_frames(tmp_path, child):
    if not _native_available(tmp_path):
        pytest.skip("lprof built without libunwind-ptrace")
    p, script, answer = child()
    doc = _dump_until_settled(tmp_path, p.pid)
    assert doc["native"] is True
    # by their innermost Python function (OS thread names are set from 3.14 on only)
    threads = {(_innermost_python(t) or {}).get("function"): t for t in doc["threads"]}
    assert {"in_select", "in_pause", "leaf"} == set(threads), threads.keys()
    assert len(doc["threads"]) == 3
    main = next(t for t in doc["threads"] if t["native_id"] == p.pid)
    for t in doc["threads"]:
        assert t["merge"] == "ok", t
        kinds = {f["kind"] for f in t["stack"]}
        assert kinds == {"python", "native"}, t
        # no eval-loop frame is left: each was replaced by its Python frames
        assert not any(f["kind"] == "native" and (f["function"] or "").startswith("_PyEval_EvalFrameDefault")
                       for f in t["stack"])

    # main: a libc sleep innermost, then leaf, outer, <module> in that order
    stack = main["stack"]
    sleep = _innermost_named(stack)
    assert sleep["kind"] == "native" and sleep["function"] in SLEEP_CALLS, stack[:4]
    py = [(f["function"], f["line"]) for f in stack if f["kind"] == "python" and f["file"] == script]
    assert py == [("leaf", _line("SLEEP LINE")), ("outer", _line("OUTER LINE")), ("<module>", _line("MODULE LINE"))]
    first_py = next(i for i, f in enumerate(stack) if f["kind"] == "python")
    assert all(f["kind"] == "native" for f in stack[:first_py])
    # C frames rootward of Python: the interpreter's start-up (main, Py_RunMain...)
    assert stack[-1]["kind"] == "native"

    sel = threads["in_select"]["stack"]
    assert _innermost_named(sel)["function"] in ("select", "__select"), sel[:4]
    assert _innermost_python(threads["in_select"])["function"] == "in_select"
    pause = threads["in_pause"]["stack"]
    assert _innermost_named(pause)["function"] in ("pause", "__libc_pause", "__pause"), pause[:4]
    assert _innermost_python(threads["in_pause"])["function"] == "in_pause"
    # ctypes' libffi call lies between pause() and the Python frame
    i = next(i for i, f in enumerate(pause) if f["kind"] == "python")
    assert any(f["library"] and "ffi" in f["library"] or "ctypes" in (f["library"] or "") for f in pause[1:i])
    for f in sel + pause + stack:
        if f["kind"] == "native":
            assert f["library"] and f["library_offset"] is not None, f
    _assert_answers(p, answer)


def _interpreter(version):
    """pyenv's (or the system's) python`version`, else None."""
    if "%d.%d" % sys.version_info[:2] == version:
        return sys.executable
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))
    if not found and os.access(f"/usr/bin/python{version}", os.X_OK):
        found = [f"/usr/bin/python{version}"]
    return found[-1] if found else None


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15"])
def test_native_dump_of_each_version(tmp_path, child, version):
    """This lprof reading a target of another version: 3.10-3.12 with the
    layout of lprof's extension built for it (its entry rule: 3.10 each
    frame, 3.11 is_entry, 3.12+ owner), 3.13+ from the target's offsets;
    its eval calls found by name up to 3.13, from 3.14 by the entry frame
    on their stack (the sid chroot has 3.14 and 3.15 side by side)."""
    if not _native_available(tmp_path):
        pytest.skip("lprof built without libunwind-ptrace")
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    v = tuple(map(int, version.split(".")))
    if v < (3, 13) and v != sys.version_info[:2] and not glob.glob(
        os.path.join(PKGDIR, "lprof", "_lprof.cpython-%d%d-*.so" % v)
    ):
        pytest.skip(f"no lprof extension built for {version} (its layout)")
    p, script, answer = child(python)
    doc = _dump_until_settled(tmp_path, p.pid)
    assert doc["python"] == version
    assert len(doc["threads"]) == 3
    for t in doc["threads"]:
        assert t["merge"] == "ok", t
    main = next(t for t in doc["threads"] if t["native_id"] == p.pid)
    py = [(f["function"], f["line"]) for f in main["stack"] if f["kind"] == "python" and f["file"] == script]
    assert py == [("leaf", _line("SLEEP LINE")), ("outer", _line("OUTER LINE")), ("<module>", _line("MODULE LINE"))]
    sleep = _innermost_named(main["stack"])
    assert sleep["kind"] == "native" and sleep["function"] in SLEEP_CALLS, main["stack"][:4]
    _assert_answers(p, answer)


def test_native_dump_text_marks_c_frames(tmp_path, child):
    if not _native_available(tmp_path):
        pytest.skip("lprof built without libunwind-ptrace")
    p, script, answer = child()
    _dump_until_settled(tmp_path, p.pid)
    r = _lprof(tmp_path, "dump", p.pid, "--native")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "3 threads" in lines[0]
    sleep = lines.index(f'  File "{script}", line {_line("SLEEP LINE")}, in leaf')
    outer = lines.index(f'  File "{script}", line {_line("OUTER LINE")}, in outer')
    assert outer < sleep  # outermost first, as a traceback
    after = lines[sleep + 1 :]
    libc_sleep = next(i for i, text in enumerate(after) if text.startswith("  [native] "))
    tail = after[libc_sleep:]
    assert any(name in tail[-1] or name in " ".join(tail[:6]) for name in SLEEP_CALLS), tail
    assert any("(libc.so" in text for text in lines if text.startswith("  [native] "))
    assert "_PyEval_EvalFrameDefault" not in r.stdout
    # --locals: under their Python frame, as without --native
    r = _lprof(tmp_path, "dump", p.pid, "--native", "--locals")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = lines.index(f'  File "{script}", line {_line("SELECT LINE")}, in in_select')
    assert lines[at + 1].startswith("      ev = <Event object at 0x"), lines[at : at + 3]
    _assert_answers(p, answer)


def test_native_dump_thread_traced_by_another_is_eperm(tmp_path, child):
    """A thread already traced by another process cannot be seized: a real
    EPERM, even as root. The threads lprof stopped before it are released."""
    if not _native_available(tmp_path):
        pytest.skip("lprof built without libunwind-ptrace")
    p, _script, answer = child()
    tids = sorted(int(t) for t in os.listdir(f"/proc/{p.pid}/task"))
    victim = tids[-1]  # not the main thread: /proc lists the main one first, stopped, then released
    tracer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "ok = libc.ptrace(0x4206, int(sys.argv[1]), None, None) == 0\n"  # PTRACE_SEIZE
            "print('seized' if ok else 'failed %d' % ctypes.get_errno(), flush=True)\n"
            "sys.stdin.read()\n",
            str(victim),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        got = tracer.stdout.readline().strip()
        if got != "seized":
            pytest.skip(f"this machine does not let a process ptrace another ({got})")
        r = _lprof(tmp_path, "dump", p.pid, "--native")
        assert r.returncode == 1
        assert r.stdout == ""
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and "not permitted to ptrace" in err[0] and "ptrace_scope" in err[0], r.stderr
        assert "Traceback" not in r.stderr
    finally:
        tracer.stdin.close()
        tracer.wait()
    _assert_answers(p, answer)


@pytest.mark.parametrize("status", ["REMOTE_NATIVE_UNAVAILABLE", "REMOTE_NATIVE_NOLIB"])
def test_native_dump_without_libunwind_says_so(tmp_path, child, status):
    """Simulated: the binding answers as an lprof built without
    libunwind-ptrace (or without its libraries at run time) does."""
    p, _script, _answer = child()
    code = (
        "import sys\n"
        "from lprof import _lprof as c, cli\n"
        f"c.remote_dump_native = lambda *a: (c.REMOTE_OK, c.{status}, 0, [], [], 0)\n"
        f"sys.argv = ['lprof', 'dump', '{p.pid}', '--native']\n"
        "sys.exit(cli.entry())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=lprof_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "libunwind" in err[0] and "Traceback" not in r.stderr, r.stderr


def test_dump_without_native_does_not_ptrace(tmp_path, child):
    """Plain dump stays ptrace-free: it works while another process traces
    every thread of the target (a ptrace stop would be refused)."""
    p, _script, _answer = child()
    tids = os.listdir(f"/proc/{p.pid}/task")
    tracer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, sys\n"
            "libc = ctypes.CDLL(None)\n"
            "ok = all(libc.ptrace(0x4206, int(t), None, None) == 0 for t in sys.argv[1:])\n"
            "print('seized' if ok else 'failed', flush=True)\n"
            "sys.stdin.read()\n",
            *tids,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if tracer.stdout.readline().strip() != "seized":
            pytest.skip("this machine does not let a process ptrace another")
        r = _lprof(tmp_path, "dump", p.pid)
        assert r.returncode == 0, r.stderr
        assert "in leaf" in r.stdout
    finally:
        tracer.stdin.close()
        tracer.wait()


def test_native_dump_says_which_threads_exited(tmp_path, child):
    """A thread that exits between its listing and its stop is skipped and
    said (simulated: the real answer of the binding, plus such a thread)."""
    if not _native_available(tmp_path):
        pytest.skip("lprof built without libunwind-ptrace")
    p, _script, answer = child()
    code = (
        "import sys\n"
        "from lprof import _lprof as c, cli\n"
        "real = c.remote_dump_native\n"
        "def with_gone(*a):\n"
        "    st, nst, v, threads, natives, more = real(*a)\n"
        "    return st, nst, v, threads, natives + [(4194000, c.REMOTE_NATIVE_GONE, 0, 0, [])], more\n"
        "c.remote_dump_native = with_gone\n"
        f"sys.argv = ['lprof', 'dump', '{p.pid}', '--native']\n"
        "sys.exit(cli.entry())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=lprof_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "(thread 4194000 exited during the dump: skipped)" in r.stdout
    assert r.stdout.count("\nThread ") == 3
    _assert_answers(p, answer)
