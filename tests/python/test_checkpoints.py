"""Long runs: -i N rewrites the profile (and the --html report) every N
seconds in every mode, so a program that ends by os._exit, which runs no
Python code at exit, still leaves its profile."""
import pytest

from conftest import line_of

SCRIPT = """\
import os, time
try:
    profile
except NameError:  # sampling runs: no decorator in builtins
    profile = lambda f: f

@profile
def work():
    keep = []
    t0 = time.time()
    while time.time() - t0 < 1.2:
        keep.append(bytearray(20000))  # alloc
        sum(range(20000))  # spin
    return keep

work()
os._exit(3)
"""


@pytest.mark.parametrize("mode", [[], ["--wall"], ["-l"],
                                  pytest.param(["--memory"], marks=pytest.mark.needs_shim)])
def test_checkpoints_survive_os_exit(run_lprof, write_script, tmp_path, load_profile, mode):
    script = write_script("long.py", SCRIPT)
    r = run_lprof(*mode, "-q", "-i", "0.25", "-o", "long.ck", "--html", "long.html", script)
    assert r.returncode == 3, r.stderr  # the program's own status
    prof = load_profile(str(tmp_path / "long.ck"))
    assert prof["meta"]["duration_s"] > 0.5  # a checkpoint taken while it ran
    if mode == ["-l"]:
        hits = {ln: h for fn in prof["functions"] for ln, h, _t in fn["lines"]}
        assert hits[line_of(script, "spin")] > 10
    else:
        assert prof["sampling"]["samples"] > 10
        charged = prof["sampling"]["lines"]
        assert any(row[1] == line_of(script, "spin") for row in charged)
    if mode == ["--memory"]:
        assert prof["memory"]["peak_bytes"] > 1_000_000
    html = (tmp_path / "long.html").read_text()
    assert 'id="lprof-data"' in html and html.rstrip().endswith("</html>")
