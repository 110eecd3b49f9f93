"""Faults: the program dies by SIGTERM, a segfault, SIGKILL, os._exit, exec,
runs out of memory, recurses too deep, fails in a thread, closes its
descriptors or changes folder. Each keeps its profile (as far as the fault
allows, docs/usage.md "When the program does not end normally") and ends as
it would without lprof."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import SANITIZED, lprof_env

from lprof.model import profile_file

BURN = """
import time
def burn(seconds):
    t = time.time(); x = 0
    while time.time() - t < seconds:
        x += 1
    return x
"""

MODES = {
    "cpu": [],
    "wall": ["--wall"],
    "lines": ["-l", "-p", "prog.py"],
    "memory": pytest.param(["--memory"], marks=pytest.mark.needs_shim),
}
# the modes as parameters, each with its marks (--memory needs the shim: not under ASan)
MODE_PARAMS = [pytest.param(k, marks=v.marks) if hasattr(v, "marks") else k for k, v in MODES.items()]


def _spawn(tmp_path, source, lprof_args, env=None):
    (tmp_path / "prog.py").write_text(source)
    return subprocess.Popen([sys.executable, "-m", "lprof", *lprof_args, "-o", "out.lprof",
                             "prog.py"], cwd=tmp_path, env=lprof_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(tmp_path, source, lprof_args=(), plain=False, timeout=120):
    (tmp_path / "prog.py").write_text(source)
    cmd = [sys.executable] + ([] if plain else ["-m", "lprof", *lprof_args, "-o", "out.lprof"])
    return subprocess.run(cmd + ["prog.py"], cwd=tmp_path, env=lprof_env(), capture_output=True,
                          text=True, timeout=timeout)


def _wait_for_line(proc, text):
    line = proc.stdout.readline()
    if text not in line:
        proc.kill()
        _out, err = proc.communicate()
        raise AssertionError((line, err))


def _has_data(prof, mode):
    if mode == "lines":
        return any(row[1] > 0 for f in prof["functions"] for row in f["lines"])
    return prof["sampling"]["samples"] > 0 if mode != "memory" else bool(prof.get("memory"))


@pytest.mark.parametrize("mode", MODE_PARAMS, ids=list(MODES))
def test_sigterm_saves_profile_and_dies_by_sigterm(tmp_path, mode):
    args = MODES[mode]
    args = args.values[0] if hasattr(args, "values") else args
    src = BURN + ("import signal\nprint('handler', signal.getsignal(signal.SIGTERM) is "
                  "signal.SIG_DFL, flush=True)\nburn(60)\n")
    proc = _spawn(tmp_path, src, args)
    _wait_for_line(proc, "handler True")  # as python says: lprof's is unseen
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    assert "killed by SIGTERM" in err, err
    prof = profile_file.load(str(tmp_path / "out.lprof"))
    assert prof["meta"]["exit_code"] == -signal.SIGTERM
    assert _has_data(prof, mode), prof


def test_program_own_sigterm_handler_wins(tmp_path):
    """A program that handles SIGTERM itself keeps doing so (lprof's handler
    is replaced, as any earlier one would be); its profile is the normal one."""
    src = BURN + """
import signal, sys
def bye(signum, frame):
    print("bye", signum, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, bye)
print("ready", flush=True)
burn(60)
"""
    proc = _spawn(tmp_path, src, [])
    _wait_for_line(proc, "ready")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert out.startswith("bye 15"), out
    assert profile_file.load(str(tmp_path / "out.lprof"))["meta"]["exit_code"] == 3


def test_forked_child_sigterm_is_its_own(tmp_path):
    """A forked child killed by SIGTERM dies as without lprof, and never
    ends or saves the parent's run."""
    src = BURN + """
import os, signal, time
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
time.sleep(0.3)
os.kill(pid, signal.SIGTERM)
_, status = os.waitpid(pid, 0)
print("child", os.WIFSIGNALED(status) and os.WTERMSIG(status))
burn(0.3)
print("parent done")
"""
    r = _run(tmp_path, src)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"child {int(signal.SIGTERM)}\nparent done\n"), r.stdout
    assert "killed" not in r.stderr and r.stderr.count("wrote profile") == 1, r.stderr


SEGV = BURN + """
import ctypes
burn(1.2)
print("crashing", flush=True)
ctypes.string_at(0)
"""


@pytest.mark.skipif(SANITIZED, reason="ASan takes SIGSEGV itself and exits with its report")
@pytest.mark.parametrize("extra", [[], ["-i", "0.3"], ["-l", "-p", "prog.py"]],
                         ids=["memory-checkpoint", "interval", "lines"])
def test_segfault_writes_last_checkpoint_and_dies_by_sigsegv(tmp_path, extra):
    r = _run(tmp_path, SEGV, extra)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert "killed by SIGSEGV; wrote its profile as of" in r.stderr, r.stderr
    prof = profile_file.load(str(tmp_path / "out.lprof"))
    assert _has_data(prof, "lines" if "-l" in extra else "cpu")


@pytest.mark.skipif(SANITIZED, reason="ASan takes SIGSEGV itself and exits with its report")
def test_segfault_before_first_checkpoint_says_so(tmp_path):
    r = _run(tmp_path, "import ctypes\nctypes.string_at(0)\n")
    assert r.returncode == -signal.SIGSEGV
    assert "before lprof's first checkpoint; no profile was written" in r.stderr, r.stderr


def test_abort_writes_checkpoint(tmp_path):
    r = _run(tmp_path, BURN + "burn(1.2)\nimport os\nos.abort()\n")
    assert r.returncode == -signal.SIGABRT, r.stderr
    assert "killed by SIGABRT; wrote its profile" in r.stderr
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_abort_under_quiet_writes_checkpoint_and_says_nothing(tmp_path):
    """-q: no lprof messages, the fatal signal's line included."""
    r = _run(tmp_path, BURN + "burn(1.2)\nimport os\nos.abort()\n", ["-q"])
    assert r.returncode == -signal.SIGABRT, r.stderr
    assert r.stderr == ""
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_sigterm_after_closing_every_descriptor_still_saves(tmp_path):
    """The SIGTERM watcher was woken through a pipe at descriptors 900 and
    901; a program that closed every descriptor and was then terminated
    died at once and its profile was lost. The wake-up holds no descriptor."""
    src = BURN + """
import os, signal
burn(0.3)
os.closerange(3, 4096)
os.kill(os.getpid(), signal.SIGTERM)
burn(5)
"""
    r = _run(tmp_path, src, ["-q"])
    assert r.returncode == -signal.SIGTERM, r.stderr
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_sigkill_leaves_complete_checkpoints(tmp_path):
    """-i rewrites the file atomically: read while it is being rewritten, and
    after SIGKILL, it is always a complete profile."""
    proc = _spawn(tmp_path, BURN + "print('go', flush=True)\nburn(60)\n", ["-i", "0.2"])
    _wait_for_line(proc, "go")
    path = str(tmp_path / "out.lprof")
    reads, deadline = 0, time.time() + 2.5
    while time.time() < deadline:
        if os.path.exists(path):
            profile_file.load(path)  # never a half-written file
            reads += 1
        time.sleep(0.02)
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert reads > 20
    prof = profile_file.load(path)
    assert prof["sampling"]["samples"] > 0
    # a SIGKILL during a rewrite can leave that one rewrite's temporary file (no
    # process is left to remove it); the profile itself is always complete
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".tmp")]) <= 1


def test_os_exit_saves_profile_once(tmp_path):
    """os._exit(7): the profile is saved first, in lprof's process only (a
    forked child's os._exit, as multiprocessing's fork workers do, saves nothing)."""
    src = BURN + """
import os
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
burn(0.5)
print("bye", flush=True)
os._exit(7)
"""
    r = _run(tmp_path, src)
    assert r.returncode == 7, r.stderr
    assert r.stdout.startswith("bye\n") and "File:" in r.stdout, r.stdout
    assert r.stderr.count("before os._exit: wrote profile") == 1, r.stderr
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_exec_saves_profile_then_execs(tmp_path):
    src = BURN + """
import os, sys
burn(0.5)
os.execv(sys.executable, [sys.executable, "-c", "print('exec ok')"])
"""
    r = _run(tmp_path, src)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exec ok\n", r.stdout  # no listing: an exec may fail
    assert "before exec: wrote profile" in r.stderr
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_failed_exec_keeps_running(tmp_path):
    src = BURN + """
import os
try:
    os.execv("/nonexistent/program", ["x"])
except OSError as e:
    print("failed", e.errno)
burn(0.3)
"""
    plain = _run(tmp_path, src, plain=True)
    r = _run(tmp_path, src)
    assert r.returncode == plain.returncode == 0
    assert r.stdout.startswith(plain.stdout), (r.stdout, plain.stdout)
    assert profile_file.load(str(tmp_path / "out.lprof"))["meta"]["exit_code"] == 0


def _same_as_plain(tmp_path, src, args=(), depth_note=False):
    plain = _run(tmp_path, src, plain=True)
    r = _run(tmp_path, src, args)
    assert r.returncode == plain.returncode, (r.returncode, plain.returncode, r.stderr)
    # the program's own stderr comes first; lprof's lines follow it
    prog_err = "".join(ln for ln in r.stderr.splitlines(True) if not ln.startswith("lprof: "))
    if depth_note:  # lprof's launcher frames are below the program's (docs/usage.md)
        import re
        prog_err = re.sub(r"repeated \d+ more", "repeated N more", prog_err)
        plain.stderr = re.sub(r"repeated \d+ more", "repeated N more", plain.stderr)
    assert prog_err == plain.stderr, (prog_err, plain.stderr)
    return r, plain


def test_recursion_error(tmp_path):
    src = "import sys\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    r, plain = _same_as_plain(tmp_path, src, depth_note=True)
    assert r.returncode == 1 and "RecursionError" in plain.stderr
    assert profile_file.load(str(tmp_path / "out.lprof"))["meta"]["exit_code"] == 1


def test_exception_in_thread(tmp_path):
    src = BURN + """
import threading
def bad():
    burn(0.2)
    raise ValueError("in thread")
t = threading.Thread(target=bad); t.start(); t.join()
print("main goes on")
"""
    r, plain = _same_as_plain(tmp_path, src)
    assert "ValueError: in thread" in plain.stderr and r.stdout.startswith("main goes on")
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_program_closes_stdout(tmp_path):
    src = BURN + "import os, sys\nburn(0.3)\nsys.stdout.flush()\nos.close(1)\nprint('lost')\n"
    r, plain = _same_as_plain(tmp_path, src)
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


@pytest.mark.parametrize("mode", ["cpu", "memory"])
def test_program_closes_every_descriptor(tmp_path, mode):
    """os.closerange over everything, then files opened again: the program
    runs as without lprof and lprof never touches the program's new files."""
    if mode == "memory" and SANITIZED:
        pytest.skip("needs the shim")
    src = BURN + """
import os
burn(0.3)
os.closerange(0, 4096)
fds = [os.open("f%d.txt" % i, os.O_CREAT | os.O_WRONLY, 0o644) for i in range(5)]
for fd in fds:
    os.write(fd, b"mine")
    os.close(fd)
burn(0.3)
"""
    plain = _run(tmp_path, src, plain=True)
    r = _run(tmp_path, src, ["--memory"] if mode == "memory" else [])
    assert r.returncode == plain.returncode == 0, r.stderr
    for i in range(5):
        assert (tmp_path / f"f{i}.txt").read_bytes() == b"mine"
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")


def test_chdir_keeps_output_path(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    src = BURN + "import os\nos.chdir('elsewhere')\nburn(0.3)\nprint(os.getcwd())\n"
    r, plain = _same_as_plain(tmp_path, src)
    assert r.stdout.startswith(plain.stdout)
    assert _has_data(profile_file.load(str(tmp_path / "out.lprof")), "cpu")
    assert not (tmp_path / "elsewhere" / "out.lprof").exists()


@pytest.mark.needs_shim
def test_out_of_memory_under_ulimit(tmp_path):
    """--memory under `ulimit -v`: the program's MemoryError is its own to
    catch, and the profile is saved."""
    src = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
blocks = []
try:
    while True:
        blocks.append(bytearray(50 << 20))
except MemoryError:
    n = len(blocks)
    blocks.clear()
    print("memoryerror", n > 5)
"""
    r = _run(tmp_path, src, ["--memory"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("memoryerror True"), r.stdout
    assert profile_file.load(str(tmp_path / "out.lprof"))["meta"]["exit_code"] == 0
