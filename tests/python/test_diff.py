"""lprof diff: per-line and per-function changes between two profiles, sorted
by impact, in text and HTML."""
import re

import pytest

from conftest import line_of

SCRIPT = """\
import os
K = int(os.environ.get("K", "1"))

@profile
def steady(n):
    return sum(i for i in range(n))  # steady

@profile
def grows(n):
    s = 0
    for i in range(n * K):  # loop
        s += i  # grows
    return s

def main():
    steady(200000)
    grows(200000)

main()
"""


@pytest.fixture
def two_runs(tmp_path, run_lprof, write_script):
    script = write_script("app.py", SCRIPT)
    for k, name in (("1", "before"), ("4", "after")):
        r = run_lprof("-l", "--sample", "--rate", "2000", "-q", "-o", f"{name}.lprof", script,
                      env={"K": k})
        assert r.returncode == 0, r.stderr
    return script


def test_diff_exact_lines(two_runs, run_lprof, load_profile, tmp_path):
    script = two_runs
    r = run_lprof("diff", "before.lprof", "after.lprof", "--metric", "hits")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    grows = line_of(script, "grows")
    # the loop's two lines ran 600000 more times each: first among the lines
    at = lines.index(next(l for l in lines if l.startswith("Lines by")))
    top2 = lines[at + 2:at + 4]
    for ln in (grows, line_of(script, "loop")):
        (row,) = [t for t in top2 if f"app.py:{ln} grows" in t]
        assert row.split()[:2] == ["+600000", "+300%"]
    # steady's lines did not change: not listed
    assert f"app.py:{line_of(script, 'steady')} " not in r.stdout
    first_fn = lines[lines.index(next(l for l in lines if l.startswith("Functions by"))) + 2]
    assert "grows (app.py)" in first_fn


def test_diff_sampled_time_and_html(two_runs, run_lprof, tmp_path):
    r = run_lprof("diff", "before.lprof", "after.lprof", "--html", "d.html")
    assert r.returncode == 0, r.stderr
    assert "by change in CPU total" in r.stdout
    fn_block = r.stdout.split("Functions by", 1)[1]
    first = fn_block.splitlines()[2]
    assert "grows (app.py)" in first and first.strip().startswith("+")
    html = (tmp_path / "d.html").read_text()
    assert "<script" not in html and "http" not in html.split("</style>")[1]
    rows = re.findall(r"<tr><td>([^<]*)</td><td>app.py</td>", html)
    assert rows and rows[0].startswith("grows")


def test_diff_errors(two_runs, run_lprof):
    r = run_lprof("diff", "before.lprof", "missing.lprof")
    assert r.returncode == 2 and r.stderr.startswith("lprof: ") and "Traceback" not in r.stderr
    r = run_lprof("diff", "before.lprof", "after.lprof", "--metric", "bogus")
    assert r.returncode == 2 and "--metric bogus" in r.stderr


def _seconds(text):
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]


def _change_and_noise(row):
    """(change, noise, marked within) of a text diff row, in seconds."""
    m = re.match(r"\s*([+-]?[\d.]+ (?:s|ms|us))\s.*?±([\d.]+ (?:s|ms|us))( ~)?", row)
    assert m, row
    return abs(_seconds(m.group(1))), _seconds(m.group(2)), bool(m.group(3))


def test_diff_says_labels_and_sampling_noise(two_runs, run_lprof, write_script):
    """Every total has a label in words (it mixed 'CPU total' with raw keys
    like cpu_python_s), and sampled time says its sampling noise (two
    standard deviations from the samples): a change of 4x the work is far
    outside it; two runs of the same code differ by less than twice it
    (four standard deviations: a bound the samples make near certain)."""
    r = run_lprof("diff", "before.lprof", "after.lprof")
    assert r.returncode == 0, r.stderr
    totals = r.stdout.split("Totals (your code):", 1)[1].split("\n\n", 1)[0]
    assert "CPU Python" in totals and not re.search(r"\b[a-z]+_[a-z_]+\b", totals), totals
    assert "noise: about two standard deviations" in r.stdout
    rows = [ln for ln in r.stdout.split("Lines by", 1)[1].splitlines()[2:] if " grows " in ln]
    assert rows, r.stdout
    change, noise, within = _change_and_noise(rows[0])  # the line that changed most
    assert change > noise and not within, rows[0]
    write_script("same.py", "import time\n\ndef burn():\n    end = time.process_time() + 0.3\n"
                            "    while time.process_time() < end:\n        pass\n\nburn()\n")
    for name in ("one", "two"):
        assert run_lprof("-q", "-o", f"{name}.lprof", "same.py").returncode == 0
    r = run_lprof("diff", "one.lprof", "two.lprof")
    assert r.returncode == 0, r.stderr
    for row in r.stdout.split("Lines by", 1)[1].splitlines()[2:]:
        if "same.py:" in row:
            change, noise, _within = _change_and_noise(row)
            assert change <= 2 * noise, r.stdout
