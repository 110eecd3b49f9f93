"""line_profiler's own kernprof tests, with lprof in kernprof's place.

Downloads line_profiler 5.1.0's sdist (its tests) with pip, makes a venv
with line_profiler 5.1.0, pytest and ubelt, installs lprof from this
checkout into it, and puts lprof where kernprof was:
- `kernprof` on PATH runs `lprof "$@"` under kernprof's name (a link named
  kernprof to the lprof command: run so, lprof is kernprof, defaults too);
- the `kernprof` module is lprof.kernprof (`main(args)`, `python -m kernprof`).
`python -m line_profiler FILES` stays line_profiler's own (it reads the
files lprof writes, as a kernprof user's habit expects), or, with --reader
lprof, runs `lprof view FILES` instead.

Each stand-in notes the test that started it ($PYTEST_CURRENT_TEST), so the
count is of the tests that really start kernprof, found by running them, not
by a list. A test in tests/kernprof_differences.txt is a deliberate difference
(its reason is there and in docs/usage.md); any other failing test that
starts kernprof fails this run.

usage: kernprof_conformance.py [--inplace | --installed] [--reader R] [-k EXPR]
  --inplace    use this checkout's built package (a .pth file) instead of
               installing it: for quick runs while working on lprof
  --installed  use the lprof a run before installed in the venv
  --reader     line_profiler (default): line_profiler's own `python -m
               line_profiler` reads lprof's files; lprof: `lprof view` in
               its place (line_profiler's CLI flags, several files, config)"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "kernprof-conformance")
VERSION = "5.1.0"
TEST_FILES = (
    "test_cli.py",
    "test_autoprofile.py",
    "test_kernprof.py",
    "test_child_procs.py",
    "test_complex_case.py",
    "test_explicit_profile.py",
)
DIFFERENCES = os.path.join(ROOT, "tests", "kernprof_differences.txt")

KERNPROF_SCRIPT = """\
#!/bin/sh
# {who} in kernprof's place (tools/kernprof_conformance.py)
if [ -n "$KC_STARTED_LOG" ]; then echo "$PYTEST_CURRENT_TEST" >> "$KC_STARTED_LOG"; fi
exec {command} "$@"
"""


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        sys.exit(f"kernprof-conformance: failed ({r.returncode}): {' '.join(cmd)}")
    return r


def fetch_tests():
    src = os.path.join(WORK, f"line_profiler-{VERSION}")
    if not os.path.isdir(os.path.join(src, "tests")):
        dl = os.path.join(WORK, "sdist")
        os.makedirs(dl, exist_ok=True)
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--disable-pip-version-check",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"line_profiler=={VERSION}",
                "-d",
                dl,
            ]
        )
        (tarball,) = glob.glob(os.path.join(dl, f"line_profiler-{VERSION}.tar.gz"))
        with tarfile.open(tarball) as tf:
            tf.extractall(WORK, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(WORK)
    return os.path.join(src, "tests")


def make_venv(inplace, reinstall=True):
    venv = os.path.join(WORK, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        run([sys.executable, "-m", "venv", venv])
        run(
            [
                py,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                f"line_profiler=={VERSION}",
                "pytest",
                "ubelt",
                "xdoctest",
            ]
        )
    site = run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    pth = os.path.join(site, "lprof-checkout.pth")
    if inplace:
        # an installed lprof would come first on sys.path, before the .pth's folder
        subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "lprof"], capture_output=True)
        with open(pth, "w") as fh:
            fh.write(os.path.join(ROOT, "python") + "\n")
        lprof = os.path.join(venv, "bin", "lprof-inplace")
        with open(lprof, "w") as fh:
            fh.write(f"#!{py}\nimport sys\nfrom lprof.cli import entry\nsys.exit(entry())\n")
        os.chmod(lprof, 0o755)
    else:
        if os.path.exists(pth):
            os.remove(pth)
        lprof = os.path.join(venv, "bin", "lprof")
        if reinstall or not os.path.exists(lprof):
            run(
                [
                    py,
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "--force-reinstall",
                    "--no-deps",
                    ROOT,
                ]
            )
    # line_profiler's own kernprof, kept to find the tests that start it
    for path in (os.path.join(site, "kernprof.py"), os.path.join(venv, "bin", "kernprof")):
        if not os.path.exists(path + ".reference"):
            shutil.copy(path, path + ".reference")
    return venv, lprof, site


# Both kernprofs note the test that started them: put after a module's
# `from __future__` imports (NOTE) and after its main's definition (MAIN).
REFERENCE_NOTE = """\
import os as _kc_os
def _kc_note():
    log = _kc_os.environ.get("KC_STARTED_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(_kc_os.environ.get("PYTEST_CURRENT_TEST", "") + "\\n")
if __name__ == "__main__":
    _kc_note()
"""
REFERENCE_MAIN = """
_kc_main = main
def main(*args, **kwargs):
    _kc_note()
    return _kc_main(*args, **kwargs)
"""


VIEWER_MODULE = '''\
"""lprof view in `python -m line_profiler`'s place (tools/kernprof_conformance.py)."""
import sys

from lprof.cli import main

if __name__ == "__main__":
    status = main(["view", *sys.argv[1:]])
    if status:  # line_profiler's main() returns on success (the tests run it in-process)
        sys.exit(status)
'''


def place_reader(site, reader):
    """`python -m line_profiler` is line_profiler's own reader, or lprof view."""
    main = os.path.join(site, "line_profiler", "__main__.py")
    if not os.path.exists(main + ".reference"):
        shutil.copy(main, main + ".reference")
    if reader == "lprof":
        with open(main, "w") as fh:
            fh.write(VIEWER_MODULE)
    else:
        shutil.copy(main + ".reference", main)


def place(venv, site, lprof):
    """Puts lprof in kernprof's place or, with lprof=None, line_profiler's
    own kernprof back, noting the tests that start it."""
    script, module = os.path.join(venv, "bin", "kernprof"), os.path.join(site, "kernprof.py")
    if lprof:
        # lprof under kernprof's name (a link, as a user makes one): lprof is kernprof then
        link_dir = os.path.join(WORK, "lprof-as-kernprof")
        os.makedirs(link_dir, exist_ok=True)
        link = os.path.join(link_dir, "kernprof")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(lprof, link)
        with open(script, "w") as fh:
            fh.write(KERNPROF_SCRIPT.format(command=f'"{link}"', who="lprof"))
        with open(module, "w") as fh:
            fh.write(
                '"""lprof in kernprof\'s place (tools/kernprof_conformance.py)."""\n'
                + REFERENCE_NOTE
                + "import sys\nfrom lprof.kernprof import *  # noqa: F401,F403\n"
                "from lprof.kernprof import ContextualProfile, main  # noqa: F401\n"
                + REFERENCE_MAIN
                + "\nif __name__ == '__main__':\n    sys.exit(main())\n"
            )
    else:
        shutil.copy(script + ".reference", script)
        with open(module + ".reference") as fh:
            original = fh.read()
        # the note goes after `from __future__` imports, which must come first
        lines = original.splitlines(keepends=True)
        at = max((i + 1 for i, ln in enumerate(lines) if ln.startswith("from __future__")), default=0)
        with open(module, "w") as fh:
            fh.write("".join(lines[:at]) + REFERENCE_NOTE + "".join(lines[at:]))
        # kernprof.main, as the console script and in-process callers take it
        text = open(module).read()
        guard = "\nif __name__ == '__main__':"
        if guard in text:
            head, _, tail = text.rpartition(guard)
            text = head + REFERENCE_MAIN + guard + tail
        else:
            text += REFERENCE_MAIN
        with open(module, "w") as fh:
            fh.write(text)
    os.chmod(script, 0o755)


def run_suite(venv, tests, k=None):
    """({test id: passed, or None if skipped}, {tests that started kernprof})."""
    started_log = os.path.join(WORK, "started.log")
    junit = os.path.join(WORK, "junit.xml")
    for f in (started_log, junit):
        if os.path.exists(f):
            os.remove(f)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD", "LINE_PROFILE")}
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    env["KC_STARTED_LOG"] = started_log
    env["VIRTUAL_ENV"] = venv
    cmd = [
        os.path.join(venv, "bin", "python"),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit1",
        *TEST_FILES,
    ]
    if k:
        cmd += ["-k", k]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=tests, env=env)
    if not os.path.exists(junit):
        sys.exit("kernprof-conformance: pytest wrote no results (see above)")
    started = set()
    if os.path.exists(started_log):
        with open(started_log) as fh:
            for line in fh:
                # "tests/test_x.py::test_y[param] (call)"
                tid = line.strip().rsplit(" (", 1)[0].removeprefix("tests/")
                if tid:
                    started.add(tid)
    return results(junit), started


def read_differences(reader):
    """{test id: "difference: why" or "todo: why"} for this reader (test ids
    hold spaces: a tab ends them). A kind written `difference@lprof` holds
    only where `python -m line_profiler` is lprof view."""
    out = {}
    with open(DIFFERENCES) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                test, _, reason = line.partition("\t")
                kind, _, why = reason.partition(":")
                kind, _, only = kind.strip().partition("@")
                if kind not in ("difference", "todo") or only not in ("", "lprof", "line_profiler"):
                    sys.exit(
                        f"kernprof-conformance: {DIFFERENCES}: '{line}' is neither a difference nor a todo"
                    )
                if only in ("", reader):
                    out[test] = f"{kind}: {why.strip()}"
    return out


def results(junit):
    """{test id: passed?} from pytest's junit XML."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        # classname is "tests.test_file" or "tests.test_file.Class"
        parts = case.get("classname", "").split(".")
        at = next((i for i, p in enumerate(parts) if p.startswith("test_")), 0)
        tid = "::".join([parts[at] + ".py"] + parts[at + 1 :] + [case.get("name")])
        bad = any(c.tag in ("failure", "error") for c in case)
        skipped = any(c.tag == "skipped" for c in case)
        out[tid] = None if skipped else not bad
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inplace", action="store_true")
    ap.add_argument(
        "--installed", action="store_true", help="use the lprof the venv holds (a run before installed it)"
    )
    ap.add_argument("-k", default=None)
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--reader",
        choices=["line_profiler", "lprof"],
        default="line_profiler",
        help="what `python -m line_profiler FILES` runs: line_profiler's own "
        "reader of lprof's files (default), or `lprof view FILES`",
    )
    opts = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    tests = fetch_tests()
    venv, lprof, site = make_venv(opts.inplace, reinstall=not opts.installed)
    # which tests start kernprof: those that start line_profiler's own
    reference_file = os.path.join(WORK, "reference-started.txt")
    if not os.path.exists(reference_file):
        place(venv, site, None)
        place_reader(site, "line_profiler")
        ref_outcome, ref_started = run_suite(venv, tests)
        broken = sorted(t for t, ok in ref_outcome.items() if ok is False)
        if broken:
            sys.exit("kernprof-conformance: line_profiler's own kernprof fails " + ", ".join(broken))
        with open(reference_file, "w") as fh:
            fh.write("".join(t + "\n" for t in sorted(ref_started)))
    with open(reference_file) as fh:
        driving_ids = set(fh.read().splitlines())
    place(venv, site, lprof)
    place_reader(site, opts.reader)
    try:
        outcome, started = run_suite(venv, tests, opts.k)
    finally:
        if not opts.keep:
            place_reader(site, "line_profiler")
    driving = {t: ok for t, ok in outcome.items() if t in driving_ids}
    passed = sorted(t for t, ok in driving.items() if ok)
    failed = sorted(t for t, ok in driving.items() if ok is False)
    differences = read_differences(opts.reader)
    unexpected = [t for t in failed if t not in differences]
    reader = "line_profiler's own" if opts.reader == "line_profiler" else "lprof view"
    print(
        f"\nkernprof-conformance: {len(passed)} of {len(driving)} tests that start kernprof "
        f"pass with lprof in its place, {reader} as `python -m line_profiler` "
        f"({len(outcome)} tests run in all; "
        f"{len(driving_ids - set(outcome))} of the kernprof tests not run)"
    )
    kinds = [differences.get(t, "").partition(":")[0] for t in failed]
    print(
        f"  failing: {kinds.count('difference')} deliberate differences, "
        f"{kinds.count('todo')} not done yet, {len(unexpected)} unexpected"
    )
    for t in failed:
        why = differences.get(t)
        print(
            f"  {why.partition(':')[0] if why else 'FAILED'}: {t}"
            + (f" ({why.partition(':')[2].strip()})" if why else "")
        )
    for t in sorted(started - driving_ids):
        print(f"  (started lprof, though it starts no kernprof: {t})")
    for t in (t for t in differences if t in passed):
        print(f"  passes now, listed as a difference: {t}")
    others = sorted(t for t, ok in outcome.items() if ok is False and t not in driving_ids)
    for t in others:
        print(f"  FAILED (starts no kernprof): {t}")
    if unexpected or others:
        sys.exit(
            f"kernprof-conformance: {len(unexpected) + len(others)} failing test(s) not "
            f"listed in {os.path.relpath(DIFFERENCES, ROOT)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
