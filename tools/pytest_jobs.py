"""The pytest-xdist arguments every pytest tier runs with (make pytest, the
version matrix, the sid chroot, ASan).

The suite is mostly one core's work at a time (each test starts a profiled
program and waits for it), so two workers on two cores halve a tier's time;
the tests hold on a busy machine by design (../shared/tools/under-load), so
the load the second worker adds is what they already stand. Workers:
PYTEST_JOBS if set (1: serial), else the machine's cores, at most 4: more
workers than cores only adds load. Serial where the interpreter lacks xdist.

    python tools/pytest_jobs.py PYTHON   prints the arguments for PYTHON"""

import os
import subprocess
import sys

MAX_JOBS = 4


def jobs():
    wanted = os.environ.get("PYTEST_JOBS", "").strip()
    if wanted.isdigit() and int(wanted) >= 1:
        return int(wanted)
    return max(1, min(MAX_JOBS, len(os.sched_getaffinity(0))))


def args(has_xdist):
    """["-n", N] where xdist is there and more than one worker is wanted."""
    n = jobs()
    return ["-n", str(n)] if has_xdist and n > 1 else []


def has_xdist(python):
    check = [python, "-c", "import xdist"]
    return subprocess.run(check, capture_output=True).returncode == 0


if __name__ == "__main__":
    print(" ".join(args(has_xdist(sys.argv[1] if len(sys.argv) > 1 else sys.executable))))
