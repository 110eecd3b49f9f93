"""Runs the pytest suite against an ASan/UBSan build of the extension.

The instrumented copy of the package lives in build/asan/lprof; libasan is
preloaded into every Python process the tests start (LPROF_TEST_PKGDIR and
LD_PRELOAD are inherited). Leak detection is off: CPython keeps objects
alive at exit by design. The allocator shim cannot run under ASan, so tests
marked needs_shim are deselected."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    dest = os.path.join(ROOT, "build", "asan")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "python", "lprof"), os.path.join(dest, "lprof"),
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = dict(os.environ, LPROF_SANITIZE="1")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", dest,
                        "--build-temp", os.path.join(ROOT, "build", "asan-tmp")],
                       cwd=ROOT, env=env)
    if r.returncode:
        return r.returncode
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    env = dict(os.environ, LPROF_TEST_PKGDIR=dest, PYTHONPATH=dest, LD_PRELOAD=libasan,
               LPROF_SANITIZED="1",
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    print("== pytest under ASan/UBSan", flush=True)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not needs_shim",
                        "tests/python"], cwd=ROOT, env=env)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
