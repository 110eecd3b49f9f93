"""lprof's threads have finished starting before the program runs.

A thread's start-up allocates outside the GIL (the C runtime's and a
sanitizer's thread set-up, CPython's thread state). A program that forked
during it could fork inside an allocator that takes no lock around fork:
under the CI's ASan run (GCC 12's runtime has no fork handler),
test_exec_guard's fork loop under --wall left a child hung at its first
thread start about one run in six. The starters now wait for the thread."""
import subprocess
import sys

from conftest import lprof_env

PROBE = r"""
import sys
from lprof.common.own_thread import OwnThread
ran = []
t = OwnThread(lambda: ran.append(1))
t.start()
print(len(ran))  # read before anything here lets the GIL go
t.join(5)
"""


def test_own_thread_start_returns_once_the_thread_runs(tmp_path):
    """OwnThread.start() returns after the target's first statement: the
    starter holds the GIL when start() returns, so without the wait the
    target could not have run yet."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    for _ in range(5):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=60, env=lprof_env())
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["1"]


FORK_AT_ONCE = """
import os
bad = []
for i in range(20):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        bad.append(status)
print("bad", bad)
"""


def test_program_that_forks_at_once_under_wall_sampling(run_lprof, write_script):
    """The program's first line forks, while (before the fix) lprof's wall,
    drain and fault threads could still be starting: every child exits."""
    write_script("f.py", FORK_AT_ONCE)
    for _ in range(4):
        r = run_lprof("--wall", "--rate", "5000", "-q", "f.py", timeout=90)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == "bad []"
