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


def _stacks_profile(rows, threads=None):
    """A sampled profile of the given rows: [[frame names, root first], thread, CPU s]."""
    frames, index, stacks = [], {}, []
    for names, thread, cpu in rows:
        ids = []
        for n in names:
            if n not in index:
                index[n] = len(frames)
                frames.append(["/app/w.py", n, 1, 10 + len(frames)])
            ids.append(index[n])
        stacks.append([ids, thread, {"cpu_python_s": cpu}])
    return {"format": "lprof", "version": 2, "meta": {"argv": ["w.py"], "started": 1.0},
            "sampling": {"mode": "cpu", "threads": threads or {}},
            "stacks": {"frames": frames, "columns": [["cpu_python_s", "ns", "sum"]],
                       "stacks": stacks}}


def _diff_frames(path):
    import xml.etree.ElementTree as ET
    svg = "{http://www.w3.org/2000/svg}"
    out = {}
    for g in ET.parse(str(path)).getroot().iter(svg + "g"):
        title = g.find(svg + "title").text
        out[title.split(" (")[0]] = (set(g.get("class").split()), title,
                                     g.find(svg + "rect").get("fill"), int(g.get("data-w")))
    return out


def test_diff_flamegraph_colours_by_change(tmp_path):
    """f shrank by 1 s, g grew by 2 s, h is gone, k is new, main's own time
    is the same: each frame's class, colour and title say so; widths are
    the after profile's."""
    from lprof.export import diff_svg
    before = _stacks_profile([(["main"], 1, 1.0), (["main", "f"], 1, 2.0),
                              (["main", "g"], 1, 1.0), (["main", "h"], 1, 0.5)])
    after = _stacks_profile([(["main"], 1, 1.0), (["main", "f"], 1, 1.0),
                             (["main", "g"], 1, 3.0), (["main", "k"], 1, 0.5)])
    counts = diff_svg.write(before, after, str(tmp_path / "d.svg"), "cpu",
                            names=("a.lprof", "b.lprof"))
    assert counts == {"grew": 3, "shrank": 1, "same": 0, "new": 1, "gone": 1}
    got = _diff_frames(tmp_path / "d.svg")
    assert set(got) == {"main", "f", "g", "k"}     # h is only in before: no width
    cls, title, fill, w = got["g"]
    assert "grew" in cls and "new" not in cls and w == 3_000_000
    assert "a.lprof: 1000000 us" in title and "change +2000000 us, +36.36% of the whole" in title
    assert fill == "rgb(214,39,40)"                 # 36% of the whole: full red
    cls, title, fill, w = got["f"]
    assert "shrank" in cls and "change -1000000 us, -18.18% of the whole" in title
    assert fill == "rgb(31,90,200)"
    cls, title, _fill, _w = got["k"]
    assert {"grew", "new"} <= cls and "new: not in a.lprof" in title
    cls, title, _fill, w = got["main"]               # 5.5 s after, 4.5 s before
    assert "grew" in cls and w == 5_500_000
    assert "1 frame below only in a.lprof (500000 us)" in title
    # a small change is a faint colour: main grew by 1 s of 5.5 s (18%): full;
    # a 0.55% change is about a twentieth of the way from grey to red
    after2 = _stacks_profile([(["main"], 1, 1.0), (["main", "f"], 1, 2.0),
                              (["main", "g"], 1, 1.03), (["main", "h"], 1, 0.5)])
    diff_svg.write(before, after2, str(tmp_path / "e.svg"), "cpu")
    _cls, _t, fill, _w = _diff_frames(tmp_path / "e.svg")["g"]
    r, g_, b = map(int, fill[4:-1].split(","))
    assert 228 <= r <= 232 and 210 < g_ < 230 and r > b
    cls, _t, fill, _w = _diff_frames(tmp_path / "e.svg")["f"]
    assert "same" in cls and fill == "rgb(232,232,232)"


def test_diff_flamegraph_threads_match_by_name(tmp_path):
    """A thread's root matches by its name: its id differs between runs."""
    from lprof.export import diff_svg
    before = _stacks_profile([(["main"], 11, 1.0), (["work"], 12, 1.0)],
                             {"11": "MainThread", "12": "worker"})
    after = _stacks_profile([(["main"], 21, 1.0), (["work"], 22, 2.0)],
                            {"21": "MainThread", "22": "worker"})
    diff_svg.write(before, after, str(tmp_path / "t.svg"), "cpu")
    got = _diff_frames(tmp_path / "t.svg")
    assert "same" in got["thread MainThread"][0] and "new" not in got["thread MainThread"][0]
    assert "grew" in got["thread worker"][0] and "new" not in got["thread worker"][0]


def test_diff_flamegraph_cli(two_runs, run_lprof, tmp_path):
    r = run_lprof("diff", "before.lprof", "after.lprof", "--metric", "cpu_s",
                  "--flamegraph", "d.svg")
    assert r.returncode == 0, r.stderr
    got = _diff_frames(tmp_path / "d.svg")
    (grows,) = [v for k, v in got.items() if k == "grows"]
    assert "grew" in grows[0] and "change +" in grows[1]
