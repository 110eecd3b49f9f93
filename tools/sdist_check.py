"""The source archive installs and works: `python setup.py sdist`, then
`pip install` of the tarball into a fresh virtual environment (pip builds it
there, fetching setuptools from PyPI as any user's pip would), then the
installed `lprof` command profiles a script with --memory (the shim must
have been built from the archive's sources) from a folder outside the tree.

usage: sdist_check.py        (make sdist-check; part of make test)"""

import os
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "sdist-check")

SCRIPT = """\
def grow(n):
    blocks = []
    for i in range(n):
        blocks.append(bytearray(64 * 1024))
    return len(blocks)

print(grow(400))
"""


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        sys.exit(f"sdist-check: failed ({r.returncode}): {' '.join(cmd)}")
    return r


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    dist = os.path.join(WORK, "dist")
    run(
        [sys.executable, "setup.py", "-q", "sdist", "--formats=gztar", "-d", dist],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    (tarball,) = [os.path.join(dist, f) for f in os.listdir(dist)]
    with tarfile.open(tarball) as tf:
        names = tf.getnames()
    for must in (
        "src/collect/shim/Makefile",
        "src/collect/shim/shim.c",
        "LICENSE",
        "include/lprof/shim.h",
        "README.md",
    ):
        if not any(n.endswith("/" + must) for n in names):
            sys.exit(f"sdist-check: {must} is missing from {os.path.basename(tarball)}")
    venv = os.path.join(WORK, "venv")
    run([sys.executable, "-m", "venv", venv])
    py = os.path.join(venv, "bin", "python")
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", tarball])
    elsewhere = os.path.join(WORK, "run")
    os.makedirs(elsewhere)
    with open(os.path.join(elsewhere, "grow.py"), "w") as fh:
        fh.write(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    where = run(
        [py, "-c", "import lprof, os; print(os.path.dirname(lprof.__file__))"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not where.startswith(venv):
        sys.exit(f"sdist-check: lprof imported from {where}, not from the venv")
    lprof = os.path.join(venv, "bin", "lprof")
    r = run(
        [lprof, "--memory", "-o", "grow.lprof", "grow.py"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    if r.stdout.splitlines()[0] != "400":
        sys.exit(f"sdist-check: the program's output changed: {r.stdout[:200]!r}")
    if "shim" in r.stderr:  # the shim missing or not loading is reported on stderr
        sys.exit(f"sdist-check: {r.stderr.strip()}")
    view = run([lprof, "view", "grow.lprof"], cwd=elsewhere, env=env, capture_output=True, text=True).stdout
    line = [ln for ln in view.splitlines() if "bytearray(64 * 1024)" in ln]
    if not line or "MB" not in line[0]:
        sys.exit(f"sdist-check: no memory charged to the allocating line:\n{view}")
    print(
        f"sdist-check: {os.path.basename(tarball)} installs in a fresh venv and profiles "
        f"memory: {line[0].strip()}"
    )


if __name__ == "__main__":
    main()
