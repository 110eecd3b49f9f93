"""Builds and tests lprof on CPython releases newer than this Debian carries
(3.14, 3.15), inside a Debian unstable chroot under build/sid-chroot.

usage: sid_matrix.py [--shell | --bench DIR [--rounds N]] 3.14 3.15
  Creates the chroot once (debootstrap --variant=minbase from the Debian
  mirror the host's apt uses), installs pythonX.Y-dev, -venv, gcc,
  libunwind-dev, libjemalloc-dev and libze-dev there, and reuses it
  afterwards. Each run copies the repository's files (tracked and
  untracked-not-ignored) to /lprof inside, gives each version a venv
  (/venv-X.Y with pytest, numpy, IPython), builds the extension, runs the
  pytest suite and the sdist check.
  --shell opens a shell in the prepared chroot instead (for debugging).
  --bench DIR runs bench/version_bench.py on each version instead of the
  tests (kernprof installed in the venv for it) and leaves its JSON in
  DIR/version-bench-X.Y.json (make bench's section 7).

Needs root and debootstrap. Where either is missing the versions are skipped
with one line, except under CI (CI=true), where that is a failure: CI runs as
root and `make deps` installs debootstrap.

The host's CUDA headers, where it has a toolkit, are bind-mounted read-only
at /opt/host-cuda (CUDA_HOME inside), so the GPU stand-in tests build there.
The chroot's /proc, /dev/shm and /dev/pts are mounted for the run and always
unmounted after it (`make clean` unmounts too before removing build/): a
recursive delete must never walk into a mounted host file system."""

import fcntl
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROOT = os.path.join(ROOT, "build", "sid-chroot")
SUITE = "sid"
# libze-dev: unstable's Level Zero loader (1.32 when added) and headers, so the
# Level Zero tests run against a loader newer than 1.16 (tracing layer always
# loaded, switched at run time) beside Debian 12's 1.8 on the host.
BASE_PACKAGES = [
    "gcc",
    "g++",
    "libc6-dev",
    "make",
    "libunwind-dev",
    "libjemalloc-dev",
    "binutils",
    "libze-dev",
]
VENV_PACKAGES = ["pytest", "pytest-xdist", "setuptools", "wheel", "numpy", "ipython"]
# Debian unstable's Release files can outlive their Valid-Until on a mirror
# snapshot; the packages are still signed, only freshness is waived.
APT_OPTS = ["-o", "Acquire::Check-Valid-Until=false", "-o", "APT::Install-Recommends=false"]
MOUNTS = [("proc", "proc", "proc"), ("tmpfs", "dev/shm", "tmpfs"), ("devpts", "dev/pts", "devpts")]
# The host's CUDA headers, where it has a toolkit, read-only inside: the
# GPU tests build their stand-in libcupti against them (Debian has none)
CUDA_INSIDE = "opt/host-cuda"


def say(msg):
    print(msg, flush=True)


def host_mirror(paths=None):
    """The Debian mirror the host's apt uses, so the chroot comes from the
    same place (a newcomer behind a local mirror keeps using it)."""
    if paths is None:
        paths = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*"))
    for path in paths:
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        for m in re.finditer(r"^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            uri = m.group(1)
            if "security" not in uri and uri.startswith(("http://", "https://", "file:")):
                return uri.rstrip("/")
    return "http://deb.debian.org/debian"


def mounted_under(path):
    path = os.path.realpath(path)
    found = []
    with open("/proc/self/mounts") as fh:
        for line in fh:
            point = line.split()[1].replace("\\040", " ")
            if point == path or point.startswith(path + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def is_mounted(path):
    """From the mount table: os.path.ismount misses a bind mount of the
    same file system (the same device as its parent)."""
    return os.path.realpath(path) in mounted_under(path)


def unmount_all():
    for point in mounted_under(CHROOT):
        subprocess.run(["umount", "-l", point], check=False)
    left = mounted_under(CHROOT)
    if left:
        sys.exit(f"sid-matrix: could not unmount {', '.join(left)}")


def host_cuda_include():
    """The host's folder with cupti.h, found as setup.py finds it; None."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    for root in filter(None, roots):
        inc = os.path.join(root, "include")
        if os.path.exists(os.path.join(inc, "cupti.h")):
            return os.path.realpath(inc)
    return None


def mount_all():
    for source, target, fstype in MOUNTS:
        where = os.path.join(CHROOT, target)
        os.makedirs(where, exist_ok=True)
        if not os.path.ismount(where):
            subprocess.run(["mount", "-t", fstype, source, where], check=True)
    cuda = host_cuda_include()
    where = os.path.join(CHROOT, CUDA_INSIDE, "include")
    if cuda and not is_mounted(where):
        os.makedirs(where, exist_ok=True)
        subprocess.run(["mount", "--bind", cuda, where], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", where], check=True)


def in_chroot(command, check=True, **kw):
    """Runs a bash command inside the chroot with a plain environment."""
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for key in (
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_DEFAULT_TIMEOUT",
        "CI",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    ):
        if key in os.environ:
            env[key] = os.environ[key]
    if is_mounted(os.path.join(CHROOT, CUDA_INSIDE, "include")):
        env["CUDA_HOME"] = "/" + CUDA_INSIDE
    r = subprocess.run(
        ["chroot", CHROOT, "bash", "-c", command],
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **kw,
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"in chroot ({r.returncode}): {command}")
    return r


def packages_for(versions):
    pkgs = list(BASE_PACKAGES)
    for v in versions:
        pkgs += [f"python{v}-dev", f"python{v}-venv"]
    return pkgs


def ensure_chroot(versions):
    if not os.path.exists(os.path.join(CHROOT, "usr", "bin", "apt-get")):
        shutil.rmtree(CHROOT, ignore_errors=True)
        mirror = host_mirror()
        say(f"sid-matrix: creating the Debian {SUITE} chroot from {mirror} (a few minutes)")
        r = subprocess.run(
            ["debootstrap", "--variant=minbase", "--include=ca-certificates", SUITE, CHROOT, mirror],
            stdout=subprocess.DEVNULL,
        )
        if r.returncode != 0:
            raise RuntimeError("debootstrap failed")
    # pip inside reaches PyPI with the host's CA bundle (and its proxies' roots)
    for bundle in ("/etc/ssl/certs/ca-certificates.crt",):
        if os.path.exists(bundle):
            shutil.copy2(bundle, os.path.join(CHROOT, bundle.lstrip("/")))
    shutil.copy2("/etc/resolv.conf", os.path.join(CHROOT, "etc", "resolv.conf"))
    pkgs = packages_for(versions)
    stamp = os.path.join(CHROOT, ".lprof-packages")
    want = hashlib.sha256(" ".join(pkgs).encode()).hexdigest()
    if not (os.path.exists(stamp) and open(stamp).read().strip() == want):
        opts = " ".join(APT_OPTS)
        say(f"sid-matrix: installing {' '.join(pkgs)} in the chroot")
        in_chroot(
            f"apt-get {opts} update -qq && apt-get {opts} install -y -qq {' '.join(pkgs)}"
            " >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }"
        )
        with open(stamp, "w") as fh:
            fh.write(want + "\n")


def copy_tree():
    """The repository's own files (what a fresh clone plus uncommitted work
    holds) into /lprof; build outputs stay there between runs."""
    dest = os.path.join(CHROOT, "lprof")
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for top in ("python", "src", "include", "tests", "tools", "examples", "docs"):
        # a file deleted in the repo must not linger; compiled .so files go too
        shutil.rmtree(os.path.join(dest, top), ignore_errors=True)
    for rel in files:
        if not rel:
            continue
        rel = rel.decode()
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(src, out)


def prepare_venv(version):
    venv = f"/venv-{version}"
    py = f"{venv}/bin/python"
    if (
        in_chroot(
            f"{py} -c 'import pytest, xdist, numpy, IPython'", check=False, capture_output=True
        ).returncode
        != 0
    ):
        in_chroot(
            f"rm -rf {venv} && python{version} -m venv {venv} && "
            f"{py} -m pip install -q {' '.join(VENV_PACKAGES)}"
        )
    return py


# as `make build`: the package's bytecode compiled too, as `pip install`
# leaves it (start-up then skips compiling: the benchmarks time start-up)
BUILD = (
    "rm -rf src/collect/shim/build && {py} setup.py -q build_ext --inplace && "
    "{py} -m compileall -q python/lprof"
)


def test_version(version):
    py = prepare_venv(version)
    say(
        f"== {version}: build and test in the {SUITE} chroot "
        f"({in_chroot(f'{py} -VV', capture_output=True, text=True).stdout.strip()})"
    )
    parallel = " ".join(pytest_jobs.args(True))  # prepare_venv installed xdist
    steps = [
        BUILD.format(py=py),
        f"PYTHONPATH=/lprof/python {py} -m pytest -q -p no:cacheprovider {parallel} tests/python",
        f"{py} tools/sdist_check.py",
    ]
    for step in steps:
        if in_chroot(f"cd /lprof && {step}", check=False).returncode != 0:
            say(f"== {version}: FAILED: {step}")
            return False
    return True


def bench_version(version, outdir, rounds):
    py = prepare_venv(version)
    # kernprof beside lprof -l; where line_profiler cannot be installed for
    # this version, its column says n/a
    in_chroot(f"{py} -c 'import kernprof' 2>/dev/null || {py} -m pip install -q line_profiler", check=False)
    say(f"== {version}: benchmark in the {SUITE} chroot")
    inside = f"/lprof/build/version-bench-{version}.json"
    if (
        in_chroot(
            f"cd /lprof && {BUILD.format(py=py)} && nice {py} bench/version_bench.py "
            f"--rounds {rounds} --json {inside}",
            check=False,
        ).returncode
        != 0
    ):
        return False
    os.makedirs(outdir, exist_ok=True)
    shutil.copy2(
        os.path.join(CHROOT, inside.lstrip("/")), os.path.join(outdir, f"version-bench-{version}.json")
    )
    return True


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        say(__doc__.split("\n\n", 1)[1].split("\n\nNeeds root")[0])
        return 0
    shell = "--shell" in argv
    bench = rounds = None
    if "--bench" in argv:
        i = argv.index("--bench")
        bench = os.path.abspath(argv[i + 1])
        del argv[i : i + 2]
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i : i + 2]
    versions = [a for a in argv if a != "--shell"]
    wrong = [a for a in versions if not re.fullmatch(r"3\.\d+", a)]
    if wrong or not versions:
        say(
            f"sid-matrix: {wrong[0] + ': not a CPython version (3.14, 3.15)' if wrong else 'no version given'}"
            f"; usage: sid_matrix.py [--shell | --bench DIR [--rounds N]] 3.14 3.15"
        )
        return 2
    ci = os.environ.get("CI") == "true"
    why = None
    if os.geteuid() != 0:
        why = "it needs root (chroot)"
    elif shutil.which("debootstrap") is None and not os.path.exists(
        os.path.join(CHROOT, "usr", "bin", "apt-get")
    ):
        why = "debootstrap is not installed (make deps installs it)"
    if why:
        say(f"sid-matrix: CPython {' '.join(versions)} skipped: {why}")
        return 1 if ci else 0
    failed = []
    os.makedirs(os.path.dirname(CHROOT), exist_ok=True)
    # one run at a time: a second would unmount the first's /proc under it
    lock = open(CHROOT + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        ensure_chroot(versions)
        mount_all()
        copy_tree()
        if shell:
            return in_chroot("cd /lprof && exec bash -i", check=False).returncode
        for version in versions:
            ok = bench_version(version, bench, rounds or 9) if bench else test_version(version)
            if not ok:
                failed.append(version)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        say(f"sid-matrix: {exc}")
        return 1
    finally:
        unmount_all()
    if failed:
        say(f"sid-matrix: FAILED on {' '.join(failed)}")
        return 1
    say(f"sid-matrix: passed on {' '.join(versions)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--unmount"]:  # make clean, before removing build/
        if os.path.isdir(CHROOT):
            unmount_all()
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
