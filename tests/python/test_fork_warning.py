"""os.fork under lprof warns as it would without lprof (3.12+).

CPython 3.12+ warns at a fork when the process has more than one OS thread,
and it counts lprof's (the drain, the fault watcher, the clocks): a
single-threaded program forking in __main__ printed "This process (pid=N) is
multi-threaded, use of fork() may lead to deadlocks in the child." under
lprof only. A program with threads of its own keeps the warning, on its own
line."""

import re
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="the warning is 3.12's")

ALONE = """\
import inspect, os
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
pid, fd = os.forkpty()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
f, p = os.fork, os.forkpty
print("forked", f.__name__, f.__qualname__, f.__module__, inspect.signature(f), p.__qualname__, inspect.signature(p))
"""

WITH_A_THREAD = """\
import os, threading
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
ev.set()
t.join()
print("forked")
"""


def _warnings(stderr):
    return re.sub(r"pid=\d+", "pid=N", "".join(l for l in stderr.splitlines(True) if "lprof:" not in l))


@pytest.mark.parametrize("mode", [[], ["-l"], ["--wall"]], ids=["cpu", "lines", "wall"])
def test_a_single_threaded_program_forks_without_the_warning(run_lprof, run_python, write_script, mode):
    write_script("alone.py", ALONE)
    plain = run_python("-W", "always::DeprecationWarning", "alone.py")
    assert plain.returncode == 0, plain.stderr
    r = run_lprof(
        *mode, "-q", "-o", "a.lprof", "alone.py", env={"PYTHONWARNINGS": "always::DeprecationWarning"}
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout == "forked fork fork posix () forkpty ()\n"  # named as the real ones
    assert "multi-threaded" not in r.stderr, r.stderr  # before: two warnings
    assert _warnings(r.stderr) == _warnings(plain.stderr)


def test_a_program_with_its_own_thread_keeps_the_warning_on_its_line(run_lprof, run_python, write_script):
    write_script("threaded.py", WITH_A_THREAD)
    plain = run_python("-W", "always::DeprecationWarning", "threaded.py")
    r = run_lprof("-q", "-o", "t.lprof", "threaded.py", env={"PYTHONWARNINGS": "always::DeprecationWarning"})
    assert r.returncode == 0, r.stderr
    assert "threaded.py:5: DeprecationWarning: This process" in plain.stderr, plain.stderr
    assert _warnings(r.stderr) == _warnings(plain.stderr)
