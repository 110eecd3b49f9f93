"""Shared fixtures: run lprof in a subprocess, load its profile."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKGDIR = os.environ.get("LPROF_TEST_PKGDIR", os.path.join(ROOT, "python"))
if PKGDIR not in sys.path:
    sys.path.insert(0, PKGDIR)

SANITIZED = os.environ.get("LPROF_SANITIZED") == "1"

# A suite started from a background job (`make test &`, nohup) inherits SIGINT
# ignored, and so would every lprof it starts: Python then installs no
# KeyboardInterrupt handler and the Ctrl-C tests would wait forever. The
# tests stand in for a user at a terminal, where SIGINT is live.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def lprof_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKGDIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


@pytest.fixture
def run_lprof(tmp_path):
    """run_lprof(*args, env=None, timeout=120) -> CompletedProcess (text), cwd tmp_path."""
    def run(*args, env=None, timeout=120, cwd=None, input=None):
        return subprocess.run([sys.executable, "-m", "lprof", *map(str, args)],
                              cwd=cwd or tmp_path, env=lprof_env(env), capture_output=True,
                              text=True, timeout=timeout, input=input)
    return run


@pytest.fixture
def run_python(tmp_path):
    """Runs a script without lprof, for comparisons."""
    def run(*args, env=None, timeout=120, cwd=None):
        return subprocess.run([sys.executable, *map(str, args)], cwd=cwd or tmp_path,
                              env=lprof_env(env), capture_output=True, text=True,
                              timeout=timeout)
    return run


@pytest.fixture
def write_script(tmp_path):
    def write(name, source):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path
    return write


@pytest.fixture
def load_profile():
    from lprof.model import profile_file
    return profile_file.load


def function_lines(profile, name):
    """{lineno: (hits, time_s)} of the function called `name` (qualname or name)."""
    for fn in profile["functions"]:
        if fn["name"] == name or fn["name"].split(".")[-1] == name:
            return {ln: (h, t) for ln, h, t in fn["lines"]}
    raise AssertionError(f"function {name} not in profile: "
                         f"{[f['name'] for f in profile['functions']]}")


def line_of(path, marker):
    """1-based number of the line containing `# <marker>` in path."""
    for i, text in enumerate(open(path).read().splitlines(), 1):
        if text.rstrip().endswith("# " + marker):
            return i
    raise AssertionError(f"marker {marker} not in {path}")


def without_kernprof_lines(stdout):
    """A -l run's stdout less kernprof's lines lprof prints after it
    ("Wrote profile results to ...", "Inspect results with:" and the command)."""
    lines = stdout.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("Wrote profile results to "):
            end = i + 1
            if end < len(lines) and lines[end].startswith("Inspect results with:"):
                end += 2
            return "".join(lines[:i] + lines[end:])
    return stdout
