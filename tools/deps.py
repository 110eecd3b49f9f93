"""Install what the project needs, quietly and only when missing.

usage: deps.py apt PKG...          (Debian packages, via apt-get when root)
       deps.py pip PYTHON PKG...   (PyPI packages into that interpreter)
       deps.py pip-local PYTHON PKG==V...  (only from local wheels; optional)
"""

import os
import shutil
import subprocess
import sys
import tempfile


def missing_apt(packages):
    out = []
    for pkg in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            out.append(pkg)
    return out


def apt(packages):
    if not shutil.which("dpkg-query"):
        print("deps: not a Debian system; install by hand:", " ".join(packages))
        return 0
    need = missing_apt(packages)
    if not need:
        return 0
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print("deps: apt-get install", " ".join(need))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, check=False)
    r = subprocess.run(sudo + ["apt-get", "install", "-y", "-qq"] + need, env=env)
    return r.returncode


def pip(python, packages):
    probe = (
        "import importlib.util, sys; "
        "print(' '.join(p for p in sys.argv[1:] "
        "if importlib.util.find_spec(p.replace('-', '_')) is None))"
    )
    r = subprocess.run([python, "-c", probe] + packages, capture_output=True, text=True)
    need = r.stdout.split() if r.returncode == 0 else packages
    if not need:
        return 0
    print(f"deps: pip install {' '.join(need)} ({python})")
    r = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + need)
    return r.returncode


def optional_local(python, packages):
    """Installs packages only from pip's configured local wheels (--no-index):
    e.g. a CPU build of torch lying on disk; never a multi-GB download.
    Where none is found, the tests that need them are skipped."""
    probe = (
        "import importlib.util, sys; "
        "print(' '.join(p for p in sys.argv[1:] "
        "if importlib.util.find_spec(p.split('=')[0]) is None))"
    )
    r = subprocess.run([python, "-c", probe] + packages, capture_output=True, text=True)
    for pkg in r.stdout.split() if r.returncode == 0 else []:
        with tempfile.TemporaryDirectory() as tmp:
            local = subprocess.run(
                [python, "-m", "pip", "download", "-q", "--no-deps", "--no-index", "-d", tmp, pkg],
                capture_output=True,
            )
        if local.returncode != 0:
            print(f"deps: {pkg}: no local wheel; its tests will be skipped")
            continue
        # the local wheel wins for the pinned version; its dependencies come from PyPI
        r = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", pkg])
        print(f"deps: {pkg}: " + ("installed" if r.returncode == 0 else "install failed"))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "apt":
        return apt(argv[1:])
    if len(argv) >= 3 and argv[0] == "pip":
        return pip(argv[1], argv[2:])
    if len(argv) >= 3 and argv[0] == "pip-local":
        return optional_local(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
