"""Builds the extension and runs the pytest suite on each CPython version.

usage: matrix.py 3.9 3.10 ...   Interpreters are looked up in pyenv's
versions directory, then as pythonX.Y on PATH. Each gets a virtualenv in
build/venv-X.Y with pytest (and numpy and mpi4py, for the tests that use them). The version
`make pytest` already covered (the default python3) is skipped."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_interpreter(version):
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(
        glob.glob(os.path.join(pyenv_root, "versions", version + ".*", "bin", "python" + version))
    )
    # skip free-threaded builds (versions/3.13.0t): lprof needs the GIL
    candidates = [
        c for c in candidates if not os.path.basename(os.path.dirname(os.path.dirname(c))).endswith("t")
    ]
    if candidates:
        return candidates[-1]
    return shutil.which("python" + version)


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, **kw).returncode


def main(versions):
    if any(a in ("-h", "--help") for a in versions):
        print(__doc__)
        return 0
    wrong = [a for a in versions if not re.fullmatch(r"3\.\d+", a)]
    if wrong:
        print(
            f"matrix: not a CPython version: {' '.join(wrong)}; usage: matrix.py 3.9 3.10 ...",
            file=sys.stderr,
        )
        return 2
    current = "%d.%d" % sys.version_info[:2]
    failed, missing = [], []
    for version in versions:
        if version == current:
            print(f"== {version}: covered by `make pytest`", flush=True)
            continue
        interp = find_interpreter(version)
        if interp is None:
            missing.append(version)
            print(f"== {version}: interpreter not found", flush=True)
            continue
        venv = os.path.join(ROOT, "build", f"venv-{version}")
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            if run([interp, "-m", "venv", venv]) != 0:
                failed.append(version)
                continue
        check = subprocess.run([py, "-c", "import pytest, xdist"], capture_output=True)
        if check.returncode != 0:
            run(
                [
                    py,
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "pytest",
                    "pytest-xdist",
                    "setuptools",
                    "wheel",
                ]
            )
            run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "numpy"])
        if subprocess.run([py, "-c", "import IPython"], capture_output=True).returncode != 0:
            # the magics' tests (%load_ext lprof) run in a real IPython shell
            run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "ipython"])
        if (
            shutil.which("mpicc")
            and subprocess.run([py, "-c", "import mpi4py"], capture_output=True).returncode != 0
        ):
            # the mpirun test; built against libopenmpi-dev, skipped where it fails
            run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "mpi4py"])
        if (
            version in ("3.9", "3.10")
            and subprocess.run([py, "-c", "import tomli"], capture_output=True).returncode != 0
        ):
            # lprof's install_requires there: pyproject.toml without tomllib
            run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "tomli"])
        print(f"== {version}: build and test with {interp}", flush=True)
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        if (
            run([py, "setup.py", "-q", "build_ext", "--inplace"], env=env) != 0
            or run(
                [
                    py,
                    "-m",
                    "pytest",
                    "-q",
                    "-x",
                    *pytest_jobs.args(pytest_jobs.has_xdist(py)),
                    "tests/python",
                ],
                env=env,
            )
            != 0
        ):
            failed.append(version)
    if missing:
        print(f"matrix: interpreters not found: {' '.join(missing)}")
    if failed:
        print(f"matrix: FAILED on {' '.join(failed)}")
        return 1
    print("matrix: passed on every interpreter found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
