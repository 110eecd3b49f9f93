"""IPython magics (%load_ext lprof): %lprun as line_profiler's, %lprof and
%%lprof sampling, run in a real IPython shell (from PyPI)."""
import subprocess
import sys
import textwrap

import pytest

from conftest import lprof_env

pytest.importorskip("IPython", reason="IPython not installed (make deps installs it)")

SESSION = """\
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "lprof")
ip.run_cell('''
def f(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def g():
    return [bytearray(1000) for _ in range(20000)]
''')
"""


def run_session(tmp_path, body):
    script = tmp_path / "session.py"
    script.write_text(SESSION + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=lprof_env(),
                          capture_output=True, text=True, timeout=120)


def test_lprun(tmp_path):
    r = run_session(tmp_path, """\
        prof = ip.run_line_magic("lprun", "-r -f f -D f.lprof -T f.txt f(50000)")
        print("RETURNED", type(prof).__name__)
        ip.run_line_magic("lprun", "-s -u 1e-3 -f g f(10)")
        """)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Function: f at line 1" in out  # IPython drops the cell's first empty line
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.strip()[:1].isdigit() and len(line.split()) > 4}
    assert rows["3"][1] == "50001" and rows["4"][1] == "50000"  # exact hits
    assert "RETURNED LineProfiler" in out
    assert "Timer unit: 0.001 s" in out
    assert "Function: g" not in out  # -s: g never ran, stripped
    assert (tmp_path / "f.txt").read_text().count("s += i * i") == 1
    from lprof.model import profile_file
    prof = profile_file.load(str(tmp_path / "f.lprof"))
    (fn,) = prof["functions"]
    assert dict((ln, h) for ln, h, _t in fn["lines"])[4] == 50000


def test_lprof_line_and_cell(tmp_path):
    r = run_session(tmp_path, """\
        prof = ip.run_line_magic("lprof", "-r -o s.lprof --html s.html f(1500000)")
        print("SAMPLES", prof["sampling"]["samples"])
        ip.run_cell_magic("lprof", "--wall", "import time\\nf(10)\\ntime.sleep(0.3)\\n")
        mem = ip.run_line_magic("lprof", "-r --memory g()")
        print("MEMORY", mem["memory"]["peak_bytes"])
        ip.run_cell("%lprof")
        """)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # the loop body of f, a cell's line, is in the listing
    assert "s += i * i" in out and "File: <ipython-input-" in out
    assert int(out.split("SAMPLES ")[1].split()[0]) > 0
    assert "time.sleep(0.3)" in out and "lprof sampled wall time" in out
    assert int(out.split("MEMORY ")[1].split()[0]) > 10_000_000
    assert (tmp_path / "s.lprof").exists() and (tmp_path / "s.html").exists()
    # a bad call is one line from IPython, not a traceback
    assert "UsageError: %lprof needs a statement" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
