"""Runs the pytest suite against an ASan/UBSan build of the extension.

The instrumented copy of the package lives in build/asan/lprof; libasan is
preloaded into every Python process the tests start (LPROF_TEST_PKGDIR and
LD_PRELOAD are inherited). Leak detection is off: CPython keeps objects
alive at exit by design. The allocator shim cannot run under ASan, so tests
marked needs_shim are deselected. Below 3.12 the interpreter has no
sys.monitoring, so the tests of its callers run a second time under the
newest 3.12+ venv `make matrix` left in build/."""

import os
import shutil
import subprocess
import sys

import pytest_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# sys.monitoring's callers (3.12+: the -l tracer's events, --wall's await
# waits), run again under the newest interpreter `make matrix` left a venv for
MONITORING_TESTS = [
    "tests/python/test_await_waits.py",
    "tests/python/test_lineprof_wait.py",
    "tests/python/test_lineprof.py",
]


def run_sanitized(python, name, tests):
    """Builds an instrumented copy for `python` in build/<name> and runs
    pytest on `tests` with libasan preloaded; its exit status."""
    dest = os.path.join(ROOT, "build", name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(
        os.path.join(ROOT, "python", "lprof"),
        os.path.join(dest, "lprof"),
        ignore=shutil.ignore_patterns("*.so", "__pycache__"),
    )
    env = dict(os.environ, LPROF_SANITIZE="1")
    r = subprocess.run(
        [
            python,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            dest,
            "--build-temp",
            os.path.join(ROOT, "build", name + "-tmp"),
        ],
        cwd=ROOT,
        env=env,
    )
    if r.returncode:
        return r.returncode
    libasan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    env = dict(
        os.environ,
        LPROF_TEST_PKGDIR=dest,
        PYTHONPATH=dest,
        LD_PRELOAD=libasan,
        LPROF_SANITIZED="1",
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    return subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-m",
            "not needs_shim",
            *pytest_jobs.args(pytest_jobs.has_xdist(python)),
            *tests,
        ],
        cwd=ROOT,
        env=env,
    ).returncode


def newest_monitoring_venv():
    """build/venv-3.X's python for the newest 3.12+ there is, or None."""
    found = []
    for entry in (
        os.listdir(os.path.join(ROOT, "build")) if os.path.isdir(os.path.join(ROOT, "build")) else []
    ):
        parts = entry[len("venv-") :].split(".") if entry.startswith("venv-") else []
        py = os.path.join(ROOT, "build", entry, "bin", "python")
        if len(parts) == 2 and all(p.isdigit() for p in parts) and os.path.exists(py):
            found.append(((int(parts[0]), int(parts[1])), py))
    found = [f for f in found if f[0] >= (3, 12)]
    return max(found)[1] if found else None


def main():
    print("== pytest under ASan/UBSan", flush=True)
    rc = run_sanitized(sys.executable, "asan", ["tests/python"])
    if rc or sys.version_info >= (3, 12):
        return rc
    newer = newest_monitoring_venv()
    if newer is None:
        print("== sys.monitoring under ASan/UBSan: skipped (no build/venv-3.12+; make matrix makes one)")
        return 0
    print(f"== sys.monitoring under ASan/UBSan ({newer})", flush=True)
    return run_sanitized(newer, "asan-monitoring", MONITORING_TESTS)


if __name__ == "__main__":
    sys.exit(main())
