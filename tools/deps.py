"""Install what the project needs, quietly and only when missing.

usage: deps.py apt PKG...          (Debian packages, via apt-get when root)
       deps.py pip PYTHON PKG...   (PyPI packages into that interpreter)
"""
import os
import shutil
import subprocess
import sys


def missing_apt(packages):
    out = []
    for pkg in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                           capture_output=True, text=True)
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
    probe = ("import importlib.util, sys; "
             "print(' '.join(p for p in sys.argv[1:] "
             "if importlib.util.find_spec(p.replace('-', '_')) is None))")
    r = subprocess.run([python, "-c", probe] + packages, capture_output=True, text=True)
    need = r.stdout.split() if r.returncode == 0 else packages
    if not need:
        return 0
    print(f"deps: pip install {' '.join(need)} ({python})")
    r = subprocess.run([python, "-m", "pip", "install", "-q",
                        "--disable-pip-version-check"] + need)
    return r.returncode


def main(argv):
    if len(argv) >= 2 and argv[0] == "apt":
        return apt(argv[1:])
    if len(argv) >= 3 and argv[0] == "pip":
        return pip(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
