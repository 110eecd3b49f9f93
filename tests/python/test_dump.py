"""`lprof dump PID`: stacks read from outside a process that runs no code
for lprof (asleep, in a C call), on each CPython the reader knows, its
one-line refusals, and `lprof attach`'s fallback to sampling from outside.

The child processes say they are ready through a file; nothing here waits on
a clock for correctness (a busy machine only makes it slower)."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import PKGDIR, lprof_env

# main thread asleep in leaf() under outer(); a worker blocked in select()
# inside in_select(); "ready" is written once the worker is on its way there
CHILD = """\
import select, sys, threading, time

def in_select(started):
    started.set()
    select.select([], [], [], 120)  # SELECT LINE

def leaf(count, label):
    ratio, nothing, many = -0.5, None, [1, 2]
    with open(sys.argv[1], "w") as f:
        f.write("ready")
    time.sleep(120)  # SLEEP LINE

def outer():
    leaf(7, "tag")  # OUTER LINE

started = threading.Event()
threading.Thread(target=in_select, args=(started,), name="selector", daemon=True).start()
started.wait()
outer()  # MODULE LINE
"""


def _line(marker):
    return next(i for i, text in enumerate(CHILD.splitlines(), 1) if marker in text)


def _interpreter(version):
    """An interpreter of `version` ("3.X"): this one, pyenv's, or the
    system's (the sid chroot's 3.14 and 3.15); None if absent."""
    if "%d.%d" % sys.version_info[:2] == version:
        return sys.executable
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))
    if not found and os.access(f"/usr/bin/python{version}", os.X_OK):
        found = [f"/usr/bin/python{version}"]
    return found[-1] if found else None


@pytest.fixture
def child(tmp_path):
    """child(python) -> (Popen, script path) of CHILD, once it is ready."""
    procs = []

    def start(python):
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        ready = tmp_path / "ready"
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        p = subprocess.Popen([python, str(script), str(ready)], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(p)
        while not (ready.exists() and ready.read_text() == "ready"):
            if p.poll() is not None:
                pytest.fail(f"the child ended: {p.stderr.read()}")
            time.sleep(0.05)  # a poll, not a bound: the child says when it is ready
        return p, str(script)
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _lprof(tmp_path, *args, python=None):
    return subprocess.run([python or sys.executable, "-m", "lprof", *map(str, args)],
                          cwd=tmp_path, env=lprof_env(), capture_output=True, text=True,
                          timeout=300)


def _dump_until_settled(tmp_path, pid):
    """The worker sets its event, and the main thread writes "ready", a few
    instructions before their blocking calls: dumps are read until both are
    in them (each read a fresh look; a count of tries, not a clock)."""
    for _ in range(100):
        r = _lprof(tmp_path, "dump", pid, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        inner = {(t["frames"][0]["function"], t["frames"][0]["line"])
                 for t in doc["threads"] if t["frames"]}
        if {("in_select", _line("SELECT LINE")), ("leaf", _line("SLEEP LINE"))} <= inner:
            return doc
    return doc


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15", "system"])
def test_dump_prints_every_threads_stack(tmp_path, child, version):
    if version == "system":  # Debian's: a non-PIE executable, _PyRuntime at a fixed address
        version = "%d.%d" % sys.version_info[:2]
        python = f"/usr/bin/python{version}"
        if not os.access(python, os.X_OK) or os.path.realpath(python) == \
                os.path.realpath(sys.executable):
            pytest.skip(f"no system python{version} besides this one")
    else:
        python = _interpreter(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    v = tuple(map(int, version.split(".")))
    if v < (3, 13) and v != sys.version_info[:2] and \
            not glob.glob(os.path.join(PKGDIR, "lprof", "_lprof.cpython-%d%d-*.so" % v)):
        pytest.skip(f"lprof's extension is not built for {version} (its frame layout comes "
                    f"from there)")
    p, script = child(python)
    doc = _dump_until_settled(tmp_path, p.pid)
    assert doc["pid"] == p.pid and doc["python"] == version
    stacks = {}
    for t in doc["threads"]:
        ours = [(f["function"], f["line"]) for f in t["frames"] if f["file"] == script]
        stacks[ours[0][0] if ours else None] = (t, ours)
    assert set(stacks) == {"leaf", "in_select"}, doc
    main, frames = stacks["leaf"]
    assert frames == [("leaf", _line("SLEEP LINE")), ("outer", _line("OUTER LINE")),
                      ("<module>", _line("MODULE LINE"))]
    assert main["complete"]
    worker, frames = stacks["in_select"]
    assert worker["frames"][0]["function"] == "in_select"  # innermost first in JSON
    assert frames == [("in_select", _line("SELECT LINE"))]
    # threading's own frames below it, read too
    assert any(f["file"].endswith("threading.py") for f in worker["frames"][1:])
    if v >= (3, 11):  # native thread ids: the main thread's is the pid
        assert main["native_id"] == p.pid and worker["native_id"] not in (0, p.pid)

    # the text: a traceback's order, innermost last, the main thread first
    r = _lprof(tmp_path, "dump", p.pid)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert text.startswith(f"Process {p.pid} (Python {version}): 2 threads, read from outside")
    at = [text.index(f'File "{script}", line {_line(m)}, in {fn}')
          for m, fn in (("MODULE LINE", "<module>"), ("OUTER LINE", "outer"),
                        ("SLEEP LINE", "leaf"))]
    assert at == sorted(at)
    assert f'File "{script}", line {_line("SELECT LINE")}, in in_select' in text
    assert p.poll() is None  # the process goes on, untouched

    # --locals: leaf's variables, by value where simple, by type otherwise
    r = _lprof(tmp_path, "dump", p.pid, "--locals", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    leaf = next(f for t in doc["threads"] for f in t["frames"] if f["function"] == "leaf")
    assert {k: leaf["locals"][k] for k in ("count", "label", "ratio", "nothing", "many")} == \
        {"count": "7", "label": "'tag'", "ratio": "-0.5", "nothing": "None",
         "many": "<list of 2>"}, leaf
    assert leaf["locals"]["f"].startswith("<_io.TextIOWrapper object at 0x")
    r = _lprof(tmp_path, "dump", p.pid, "--locals")
    assert "      label = 'tag'\n" in r.stdout


def _one_line_error(r, code, says):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("lprof: dump: ") and r.stderr.count("\n") == 1, r.stderr
    assert says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_a_pid_that_does_not_exist(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    _one_line_error(_lprof(tmp_path, "dump", gone.pid), 2, f"no process {gone.pid}")
    _one_line_error(_lprof(tmp_path, "dump", 0), 2, "0 is not a process id")


def test_a_process_that_is_not_python(tmp_path):
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        r = _lprof(tmp_path, "dump", sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    _one_line_error(r, 2, f"process {sleeper.pid} (sleep) is not a CPython process")


def test_a_python_the_reader_does_not_know(tmp_path, child):
    python = _interpreter("3.9")
    if python is None:
        pytest.skip("no python3.9 on this machine")
    p, _ = child(python)
    _one_line_error(_lprof(tmp_path, "dump", p.pid), 2, "runs Python 3.9; lprof reads 3.10 and later")


def test_a_debug_offsets_table_not_read_is_one_line():
    # a table of a version after 3.15, or of a free-threaded build: the
    # reader's status (tests/c/test_remote.c) said in one line each
    from lprof import _lprof
    from lprof.collect import remote_stacks
    msg, code = remote_stacks._message(_lprof.REMOTE_VERSION, 42, 0x031000F0, "dump")
    assert code == 2 and msg == ("dump: process 42 runs Python 3.16, whose debug offsets lprof "
                                 "does not read yet (3.10-3.15 only)")
    msg, code = remote_stacks._message(_lprof.REMOTE_FREE_THREADED, 42, 0x030E0AF0, "dump")
    assert code == 2 and msg == ("dump: process 42 runs a free-threaded Python 3.14, whose "
                                 "threads lprof does not read from outside")
    assert "\n" not in msg


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run lprof as another user")
def test_no_permission_is_one_line(tmp_path, child):
    # lprof as nobody, the process root's: /proc says no, as process_vm_readv would
    system_python = "/usr/bin/python%d.%d" % sys.version_info[:2]
    if not os.access(system_python, os.X_OK) or sys.version_info[:2] != (3, 11):
        pytest.skip("needs the system's python3.11 (readable by nobody) as this interpreter")
    p, _ = child(sys.executable)
    r = subprocess.run([system_python, "-m", "lprof", "dump", str(p.pid)], cwd="/",
                       env=dict(lprof_env(), HOME="/"), capture_output=True, text=True,
                       timeout=300, user="nobody", group="nogroup", extra_groups=[])
    _one_line_error(r, 1, f"not permitted to read process {p.pid}")
    assert "/proc/sys/kernel/yama/ptrace_scope" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run lprof as another user")
def test_process_vm_readv_refused_is_one_line(tmp_path, child):
    # the memory read itself refused (EPERM), past /proc: the reader's own message
    system_python = "/usr/bin/python%d.%d" % sys.version_info[:2]
    if not os.access(system_python, os.X_OK) or sys.version_info[:2] != (3, 11):
        pytest.skip("needs the system's python3.11 (readable by nobody) as this interpreter")
    from lprof.process import remote_target
    p, _ = child(sys.executable)
    target = remote_target.find(p.pid)
    code = ("import sys; from lprof.collect import remote_stacks; "
            "from lprof.common.errors import LprofError\n"
            "try:\n remote_stacks.read(int(sys.argv[1]), int(sys.argv[2]), None)\n"
            "except LprofError as e:\n print(e.exit_code, e.message)")
    r = subprocess.run([system_python, "-c", code, str(p.pid), str(target.runtime)], cwd="/",
                       env=dict(lprof_env(), HOME="/"), capture_output=True, text=True,
                       timeout=300, user="nobody", group="nogroup", extra_groups=[])
    assert r.stdout.startswith(f"1 dump: not permitted to read process {p.pid}'s memory "
                               f"(process_vm_readv: EPERM)"), (r.stdout, r.stderr)
    assert "/proc/sys/kernel/yama/ptrace_scope" in r.stdout


# 3.14+ asks the process to run lprof's code first (sys.remote_exec); its
# main thread asleep in C never does, and after --start-timeout attach reads
# it from outside as it does a 3.10-3.13 process at once
_START_TIMEOUT = ["--start-timeout", 0.5] if sys.version_info >= (3, 14) else []
_WHY = (" ran no Python code on its main thread within 0.5 s" if sys.version_info >= (3, 14)
        else " runs Python %d.%d" % sys.version_info[:2])


def test_attach_falls_back_to_sampling_from_outside(tmp_path, child):
    p, script = child(sys.executable)
    r = _lprof(tmp_path, "attach", p.pid, "-d", 1, *_START_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and f"process {p.pid}{_WHY}" in r.stderr, r.stderr
    assert "sampling it from outside instead" in r.stderr and "no profile file" in r.stderr
    out = r.stdout
    assert out.startswith(f"Process {p.pid}: ") and "wall-clock samples" in out, out
    blocks = out.split("\n\nThread ")[1:]
    assert len(blocks) == 2, out
    # the main thread asleep in leaf(), called from outer()
    main = next(b for b in blocks if f"{script}:{_line('SLEEP LINE')} leaf" in b)
    if sys.version_info >= (3, 11):  # native thread ids: the main thread's is the pid
        assert main.startswith(f"{p.pid} ") and "(main)" in main.splitlines()[0], out
    assert f"{script}:{_line('OUTER LINE')} outer" in main, out
    assert f"{script}:{_line('SELECT LINE')} in_select" in out
    assert not os.path.exists(tmp_path / f"attach-{p.pid}.sample.lprof")
    assert p.poll() is None


def test_attach_from_outside_stops_at_ctrl_c_and_prints(tmp_path, child):
    p, script = child(sys.executable)
    a = subprocess.Popen([sys.executable, "-m", "lprof", "attach", str(p.pid),
                          *map(str, _START_TIMEOUT)], cwd=tmp_path,
                         env=lprof_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        said = a.stderr.readline()  # once said, it samples
        assert "sampling it from outside instead" in said and "until Ctrl-C" in said, said
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert a.returncode == 0, err
    assert err == "" and "(stopped by Ctrl-C)" in out, (out, err)
    assert f"{script}:{_line('SLEEP LINE')} leaf" in out
    assert p.poll() is None
