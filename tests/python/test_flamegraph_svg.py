"""The SVG flame graph: importlib's frames folded into one `import module`
frame (whole on request), thread labels, full width, and click-to-zoom in a
real headless Chromium."""
import re
import xml.etree.ElementTree as ET

import pytest

from headless_browser import Browser, find_chromium

SVG = "{http://www.w3.org/2000/svg}"
BOOT = "<frozen importlib._bootstrap>"
EXT = "<frozen importlib._bootstrap_external>"

SLOW_IMPORT = """\
import threading
import slowmod  # the import

def spin(n):
    s = 0
    for i in range(n):
        s += i
    return s

t = threading.Thread(target=spin, args=(3000000,), name="spinner")
t.start()
spin(3000000)
t.join()
"""
SLOWMOD = """\
def _busy():
    s = 0
    for i in range(1500000):
        s += i
    return s
VALUE = _busy()  # module body
TOTAL = 0
for _i in range(600000):
    TOTAL += _i  # module loop
"""


def test_fold_columns_unit():
    from lprof.model import import_fold, stacks
    frames = [["/app/main.py", "<module>", 1, 3],                       # 0
              [BOOT, "_find_and_load", 1, 1176],                        # 1
              [BOOT, "_load_unlocked", 1, 690],                         # 2
              [EXT, "exec_module", 1, 940],                             # 3
              [BOOT, "_call_with_frames_removed", 1, 241],              # 4
              ["/v/lib/python3.11/site-packages/pkg/__init__.py", "<module>", 1, 7],  # 5
              ["/v/lib/python3.11/site-packages/pkg/core.py", "work", 2, 9],          # 6
              [EXT, "get_data", 1, 1130],                               # 7
              ["/app/main.py", "main", 5, 6]]                           # 8
    section = {"frames": frames, "columns": [["cpu_python_s", "ns", "sum"]],
               "stacks": [[[0, 1, 2, 3, 4, 5, 6], 1, {"cpu_python_s": 2.0}],
                          [[0, 1, 2, 3, 7], 1, {"cpu_python_s": 0.5}],
                          [[0, 8], 1, {"cpu_python_s": 1.0}]]}
    out = stacks.from_columns(stacks.fold_imports(stacks.to_columns(section)))
    # the row form folds to the same rows (put in a trie once, read back)
    assert stacks.fold_imports(section) == dict(out, columns=section["columns"])
    named = sorted(([out["frames"][i][1] for i in ids], m["cpu_python_s"])
                   for ids, _t, m in out["stacks"])
    assert named == [(["<module>", "import (importlib)"], 0.5),
                     (["<module>", "import pkg", "work"], 2.0),
                     (["<module>", "main"], 1.0)]
    # the import frame keeps the module's file and the line it was at
    imp = [f for f in out["frames"] if f[1] == "import pkg"][0]
    assert imp[0].endswith("pkg/__init__.py") and imp[3] == 7
    assert import_fold.module_name("/usr/lib/python3/dist-packages/a/b/c.py") == "a.b.c"
    assert stacks.fold_imports({"frames": frames[8:], "stacks": []}) == \
        {"frames": frames[8:], "stacks": []}  # nothing to fold: the same section


def test_columnar_svg_of_several_threads_equals_the_row_form_s(tmp_path):
    """The SVG's thread frames on the file's columnar form are added in the C
    fold (a root per row), not by turning every row into Python objects (1 M
    rows took 14.7 s so): the picture must be the row form's, byte for byte."""
    from lprof import _lprof, export
    from lprof.model.stacks import from_columns, to_columns
    frames = [["/app/main.py", "<module>", 1, 3], ["/app/main.py", "work", 5, 6],
              ["/app/main.py", "io", 8, 9], ["/app/other.py", "spin", 1, 2]]
    rows = [[[0, 1], 1, {"cpu_python_s": 2.0}], [[0, 1, 3], 2, {"cpu_python_s": 1.5}],
            [[0, 2], 1, {"cpu_python_s": 0.25}], [[0, 1], 3, {"cpu_python_s": 0.75}],
            [[0, 1, 3], 2, {"cpu_python_s": 0.5}]]
    section = {"frames": frames, "columns": [["cpu_python_s", "ns", "sum"]], "stacks": rows}
    prof = {"sampling": {"threads": {"1": "MainThread", "2": "worker"}}}
    columnar = to_columns(section)
    assert "nodes" in columnar
    export.write(dict(prof, stacks=columnar), "svg", str(tmp_path / "c.svg"), "cpu")
    export.write(dict(prof, stacks=from_columns(columnar)), "svg",
                 str(tmp_path / "r.svg"), "cpu")
    assert (tmp_path / "c.svg").read_text() == (tmp_path / "r.svg").read_text()
    _root, titles = _titles(tmp_path / "c.svg")
    assert any(t.startswith("thread worker (2)") for t in titles), titles
    with pytest.raises(ValueError, match="bad row root"):
        from array import array
        _lprof.fold_columns(["a"], array("i", [-1]), array("i", [0]), array("i", [0]),
                            [array("d", [1.0])], 1.0, None, 0.0, array("i", [5]))


def _titles(path):
    root = ET.parse(str(path)).getroot()
    return root, [t.text for t in root.iter(SVG + "title")]


@pytest.fixture
def import_profile(tmp_path, run_lprof, write_script):
    write_script("slowmod.py", SLOWMOD)
    script = write_script("main.py", SLOW_IMPORT)
    r = run_lprof("-q", "--rate", "2000", "--flamegraph", "f.svg", "-o", "p.lprof", script)
    assert r.returncode == 0, r.stderr
    return tmp_path


def test_imports_folded_by_default(import_profile, run_lprof):
    tmp = import_profile
    root, titles = _titles(tmp / "f.svg")
    assert any(t.startswith("import slowmod (") for t in titles), titles
    assert not any("_find_and_load" in t or "_call_with_frames_removed" in t for t in titles)
    r = run_lprof("export", "p.lprof", "-f", "svg", "--full-imports", "-o", "full.svg")
    assert r.returncode == 0, r.stderr
    full, full_titles = _titles(tmp / "full.svg")
    assert any("_find_and_load" in t for t in full_titles)
    assert not any(t.startswith("import slowmod") for t in full_titles)
    # folding moves frames, never time: the same total, a shorter picture
    assert root.get("data-total") == full.get("data-total")
    assert int(root.get("height")) < int(full.get("height"))
    # the module body's time is under the import frame
    slow = [t for t in titles if t.startswith("_busy (")]
    assert slow


def test_svg_total_is_the_profile_s(import_profile, load_profile):
    root, _titles_ = _titles(import_profile / "f.svg")
    prof = load_profile(str(import_profile / "p.lprof"))
    cpu = sum(sum(m.get(c, 0) for c in ("cpu_python_s", "cpu_native_s", "cpu_system_s"))
              for _ids, _t, m in prof["stacks"]["stacks"])
    assert int(root.get("data-total")) == pytest.approx(cpu * 1e6, abs=len(prof["stacks"]["stacks"]))
    # the top-level frames (the threads) add up to the total
    top = [int(g.get("data-w")) for g in root.iter(SVG + "g") if g.get("data-d") == "0"]
    assert sum(top) == int(root.get("data-total"))


def test_svg_percents_are_shares_of_the_process(import_profile, load_profile, tmp_path):
    """A frame's percent is its share of the process's CPU time (issue #34),
    which the flame may not hold whole (lprof's own code, CPU on no sampled
    stack): the title says both; a flame holding a quarter of the whole says
    25%, not 100%."""
    from lprof.export.svg import write_svg
    from lprof.model import shares
    root, titles = _titles(import_profile / "f.svg")
    prof = load_profile(str(import_profile / "p.lprof"))
    whole_us = shares.breakdown(prof)["cpu_whole_s"] * 1e6
    head = next(t.text for t in root.iter(SVG + "text") if t.text and t.text.startswith("lprof"))
    assert "percents are shares of the process's CPU time" in head, head
    for g in root.iter(SVG + "g"):
        if g.get("data-d") == "0":
            title = next(g.iter(SVG + "title")).text
            pct = float(re.search(r", ([\d.]+)%\)$", title).group(1))
            assert pct == pytest.approx(100.0 * int(g.get("data-w")) / max(whole_us, float(
                root.get("data-total"))), abs=0.011), title
    write_svg(["all"], [(0, 0, 0, 100)], 100, str(tmp_path / "q.svg"), whole=400,
              whole_name="the process's CPU time")
    q_root, q_titles = _titles(tmp_path / "q.svg")
    assert q_titles == ["all (100 us, 25.00%)"]
    assert "25.0% of the process's CPU time (400 us)" in ET.tostring(q_root, encoding="unicode")


def test_thread_labels_and_width(import_profile):
    root, titles = _titles(import_profile / "f.svg")
    assert root.get("width") == "100%"
    threads = [t for t in titles if t.startswith("thread ")]
    assert any("MainThread" in t for t in threads) and any("spinner" in t for t in threads)
    # labels drawn in the boxes carry no folders (the hover title does)
    texts = [t.text for t in root.iter(SVG + "text") if t.text]
    assert not any("/" in t and "(" in t for t in texts)


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (make deps "
                                                   "installs Debian's chromium package)")
def test_svg_click_zooms_in_chromium(import_profile):
    with Browser(1400, 900) as b:
        b.load((import_profile / "f.svg").as_uri())
        assert b.errors() == []
        box = b.eval("""(() => {
            const g = [...document.querySelectorAll('g.f')]
                .filter(g => /^spin \\(/.test(g.querySelector('title').textContent))[0];
            const r = g.querySelector('rect').getBoundingClientRect();
            return {x: r.x + Math.min(r.width / 2, 20), y: r.y + r.height / 2, w: r.width,
                    W: document.documentElement.getBoundingClientRect().width,
                    label: g.querySelector('text').textContent};
        })()""")
        assert box["W"] == pytest.approx(1400, abs=2)  # full width of the window
        assert box["w"] < 0.9 * box["W"]
        # labelled, not clipped away (fitted to the box: "spin (...)" or "spin …")
        assert box["label"].startswith("spin")
        b.click(box["x"], box["y"])
        after = b.eval("""(() => {
            const g = [...document.querySelectorAll('g.f')]
                .filter(g => /^spin \\(/.test(g.querySelector('title').textContent)
                             && g.style.display !== 'none')[0];
            return {w: g.querySelector('rect').getBoundingClientRect().width,
                    reset: document.getElementById('reset').style.display,
                    hidden: [...document.querySelectorAll('g.f')]
                        .filter(g => g.style.display === 'none').length};
        })()""")
        assert after["w"] > 0.95 * (box["W"] - 20)
        assert after["reset"] == "inline" and after["hidden"] > 0
        b.eval("document.getElementById('reset').dispatchEvent(new MouseEvent('click'))")
        assert b.eval("[...document.querySelectorAll('g.f')]"
                      ".filter(g => g.style.display === 'none').length") < after["hidden"]
        assert b.errors() == []


def test_report_charges_lines_as_the_listing_does(import_profile, run_lprof, load_profile):
    """Folding the imports changes the picture, not which line is charged: the
    report's per-line sums are the profile's own per-line rows."""
    import json
    import re
    tmp = import_profile
    r = run_lprof("export", "p.lprof", "-f", "html", "-o", "r.html")
    assert r.returncode == 0, r.stderr
    html = (tmp / "r.html").read_text()
    data = json.loads(re.search(r'id="lprof-data">(.*?)</script>', html, re.S)
                      .group(1).replace("<\\/", "</"))
    assert data["folded_imports"]
    names = [c["name"] for c in data["columns"]]
    got = {}
    for _ids, _t, fid, values in data["stacks"]:
        if fid < 0:  # on no shown line (threading's own frames): the page skips it too
            continue
        f = data["frames"][fid]
        key = (f[1], f[3], f[2])
        got[key] = got.get(key, 0) + values[names.index("cpu_python_s")]
    prof = load_profile(str(tmp / "p.lprof"))
    want = {}
    for file, line, func, py, *_rest in prof["sampling"]["lines"]:
        if not file.startswith(str(tmp)):  # a stack with no program frame (the main
            continue                        # thread in threading._shutdown): no shown line
        want[(file, line, func)] = want.get((file, line, func), 0) + py
    want = {k: v for k, v in want.items() if v}
    got = {k: v for k, v in got.items() if v}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-6, abs=1e-9)
    # the module's own loop is charged to its line in <module>, not to the import frame
    assert any(k[0].endswith("slowmod.py") and k[2] == "<module>" for k in got)
