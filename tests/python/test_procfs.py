"""lprof.process.procfs: one reader of other processes' state for the
runner, the attach command and the attach agent."""
import os
import subprocess
import sys
import time

from lprof.process import procfs


def test_a_running_process_and_itself():
    me = os.getpid()
    assert procfs.exists(me) and procfs.alive(me) and not procfs.gone(me)
    assert procfs.parent_of(me) == os.getppid()
    assert procfs.multiprocessing_helper() is None


def test_a_zombie_exists_but_has_ended():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while not procfs.gone(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert procfs.gone(child.pid)                 # a zombie has ended
    assert procfs.exists(child.pid)               # but is still there to signal
    assert not procfs.alive(child.pid)
    assert procfs.parent_of(child.pid) == os.getpid()
    child.wait()
    assert procfs.gone(child.pid) and not procfs.exists(child.pid) and not procfs.alive(child.pid)
    assert procfs.parent_of(child.pid) is None


def test_a_name_with_parentheses_and_spaces(tmp_path):
    """The command name in /proc/PID/stat may hold ") " itself."""
    exe = tmp_path / "odd ) name"
    os.symlink(sys.executable, exe)
    child = subprocess.Popen([str(exe), "-c", "import time; time.sleep(30)"])
    try:
        assert procfs.parent_of(child.pid) == os.getpid()
        assert procfs.alive(child.pid) and not procfs.gone(child.pid)
        assert child.pid in procfs.descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
