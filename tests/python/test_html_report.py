"""The HTML report (lprof --html, lprof export --format html): a self-contained
page whose numbers are the profile's, checked in a real headless Chromium:
it loads without console errors, shows the hot lines, and a real click on
the flame graph zooms it."""
import json
import os
import re
import struct
import zlib

import pytest

from conftest import line_of
from headless_browser import Browser, find_chromium

HOT = """\
import threading

def hot(n):
    s = 0
    for i in range(n):
        s += i * i  # hot
    return s

def cold(n):
    s = 0
    for i in range(n):
        s += i  # cold
    return s

def main():
    for _ in range(4):
        hot(300000)
    cold(150000)

t = threading.Thread(target=main, name="worker")
t.start()
main()
t.join()
"""

needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="chromium not installed (make deps installs "
                                           "Debian's chromium package)")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def page_data(html):
    m = re.search(r'<script type="application/json" id="lprof-data">(.*?)</script>', html, re.S)
    assert m, "no data block in the page"
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.fixture
def hot_report(tmp_path, run_lprof, write_script):
    script = write_script("hot.py", HOT)
    r = run_lprof("-q", "--rate", "2000", "--html", "report.html", "-o", "hot.lprof", script)
    assert r.returncode == 0, r.stderr
    return script, tmp_path / "report.html", tmp_path / "hot.lprof"


def test_report_is_self_contained(hot_report):
    _script, html_path, _prof = hot_report
    html = html_path.read_text()
    # nothing fetched at view time: no external script, style, image or font
    assert not re.search(r'<(script|link|img|iframe)[^>]*\b(src|href)=', html)
    assert "@import" not in html and "url(" not in html
    assert "http://" not in html.split('id="lprof-data"')[0]
    assert "<script>" in html and "<style>" in html


def test_report_numbers_are_the_profile_s(hot_report, load_profile):
    script, html_path, prof_path = hot_report
    data = page_data(html_path.read_text())
    prof = load_profile(str(prof_path))
    names = [c["name"] for c in data["columns"]]
    declared = {c[0] for c in prof["stacks"]["columns"]}
    # every column shown is declared by the profile (or the CPU total of its split)
    assert set(names) - {"cpu_s"} <= declared
    assert "cpu_python_s" in names and "cpu_s" in names
    parts = [n for n in names if n.startswith("cpu_") and n != "cpu_s"]
    for name in parts + ["samples"]:
        want = sum(m.get(name, 0) for _ids, _t, m in prof["stacks"]["stacks"])
        got = sum(r[3][names.index(name)] for r in data["stacks"])
        assert want > 0 and got == pytest.approx(want, rel=1e-6)
    for r in data["stacks"]:  # the CPU total is the sum of its parts, row by row
        assert r[3][names.index("cpu_s")] == pytest.approx(
            sum(r[3][names.index(n)] for n in parts), rel=1e-6, abs=1e-9)
    # the line charged most CPU by the attribution rule is the hot loop
    per_line = {}
    for ids, _t, charged, values in data["stacks"]:
        f = data["frames"][charged]
        per_line[(f[1], f[3])] = per_line.get((f[1], f[3]), 0) + values[names.index("cpu_s")]
    top = max(per_line, key=per_line.get)
    # the hot loop: its body, or its `for` line (a short run's samples split
    # between the two by chance)
    hot = line_of(script, "hot")
    assert top in ((str(script), hot), (str(script), hot - 1)), per_line
    # the program's two threads; thread 0, when the run has one, is no thread:
    # CPU time of threads without Python that no Python thread took, named so
    named = dict(data["threads"])
    assert sorted(v for k, v in named.items() if k != "0") == ["MainThread", "worker"], named
    assert named.get("0", "no Python thread") == "no Python thread"
    assert data["sources"][str(script)][str(line_of(script, "hot"))].strip().startswith("s += i * i")


def test_export_html_matches_run(hot_report, run_lprof, tmp_path):
    _script, html_path, prof_path = hot_report
    r = run_lprof("export", prof_path, "--format", "html", "-o", "again.html")
    assert r.returncode == 0, r.stderr
    assert page_data((tmp_path / "again.html").read_text()) == page_data(html_path.read_text())
    r = run_lprof("export", prof_path, "--format", "html", "-o", "-")
    assert r.returncode == 2 and r.stderr.startswith("lprof: ") and "Traceback" not in r.stderr
    # a device is written through, never replaced by a renamed file
    r = run_lprof("export", prof_path, "--format", "html", "-o", "/dev/stdout")
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>"), r.stderr
    import stat
    assert not stat.S_ISREG(os.lstat("/dev/stdout").st_mode)
    # a regular file gets the usual mode, and no temporary file is left behind
    mode = os.stat(tmp_path / "again.html").st_mode & 0o777
    assert mode == 0o666 & ~_umask()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_report_of_line_profile(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("lp.py", """\
        @profile
        def f(n):
            s = 0
            for i in range(n):
                s += i * i  # loop
            return s
        f(20000)
        """)
    r = run_lprof("-l", "-q", "--html", "lp.html", script)
    assert r.returncode == 0, r.stderr
    data = page_data((tmp_path / "lp.html").read_text())
    prof = load_profile(str(tmp_path / "lp.py.lprof"))
    assert data["stacks"] == []
    (fn,) = data["functions"]
    assert fn["name"] == "f"
    hits = {ln: h for ln, h, _t in fn["lines"]}
    assert hits[line_of(script, "loop")] == 20000
    assert fn["lines"] == prof["functions"][0]["lines"]
    assert fn["source"][str(line_of(script, "loop"))].strip() == "s += i * i  # loop"


@needs_chromium
def test_report_in_chromium(hot_report, tmp_path):
    script, html_path, _prof = hot_report
    # the hot loop's two lines (its body and its for line) share its samples; which
    # gets more varies from run to run (the for line led once in ~12 suite runs)
    loop = (line_of(script, "hot") - 1, line_of(script, "hot"))
    hot_lines = {f"{os.path.basename(script)}:{ln}" for ln in loop}
    with Browser(1400, 900) as b:
        b.load(html_path.as_uri())
        assert b.errors() == []
        # the hot lines table, sorted by CPU, starts with the hot loop
        first = b.eval("document.querySelector('#hotlines tbody tr td').textContent")
        assert first in hot_lines
        assert b.eval("document.querySelectorAll('#source tr.hotline').length") >= 2
        # a real click on the frame of hot() zooms the flame graph to it
        box = b.eval("""(() => {
            const g = [...document.querySelectorAll('#flame g.fr')]
                .filter(g => /^hot \\(/.test(g.textContent))[0];
            g.scrollIntoView({block: 'center'});
            const r = g.querySelector('rect').getBoundingClientRect();
            const svg = g.ownerSVGElement.getBoundingClientRect();
            return {x: r.x + Math.min(r.width / 2, 20), y: r.y + r.height / 2,
                    w: r.width, svgw: svg.width, path: g.dataset.path};
        })()""")
        assert box["w"] < box["svgw"] * 0.95  # not already full width
        b.click(box["x"], box["y"])
        after = b.eval(f"""(() => {{
            const g = document.querySelector('#flame g.fr[data-path="{box['path']}"]');
            return {{zoom: window.lprofReport.state.zoom,
                    w: g.querySelector('rect').getBoundingClientRect().width,
                    cold: [...document.querySelectorAll('#flame g.fr')]
                        .filter(g => /^cold \\(/.test(g.textContent)).length}};
        }})()""")
        assert after["zoom"] == box["path"]
        assert after["w"] > box["svgw"] * 0.95  # the zoomed frame spans the graph
        assert after["cold"] == 0              # its siblings are out of view
        # search highlights, reset brings the whole graph back
        n_hit = b.eval("""(() => { const s = document.getElementById('search');
            s.value = '^cold'; s.dispatchEvent(new Event('input'));
            document.getElementById('reset').click();
            return document.querySelectorAll('#flame g.hit').length; })()""")
        assert n_hit >= 1
        assert b.eval("window.lprofReport.state.zoom") is None
        # the thread filter keeps one thread's stacks
        threads = b.eval("""(() => { const s = document.getElementById('thread');
            s.value = '0'; s.dispatchEvent(new Event('change'));
            return document.getElementById('thread').value; })()""")
        assert threads == "0"
        # the source view's column picker adds a quieter column's bars
        heads = b.eval("""(() => { const box = document.querySelector('#source input[data-col="samples"]');
            const before = [...document.querySelectorAll('#source th')].map(t => t.textContent);
            box.click();
            return [before, [...document.querySelectorAll('#source th')].map(t => t.textContent)]; })()""")
        assert "samples" not in heads[0] and "samples" in heads[1]
        assert b.errors() == []


def _png_pixels(path):
    """(width, height, distinct byte values of the image data)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return width, height, len(set(zlib.decompress(idat)))


@needs_chromium
def test_report_screenshot(hot_report, tmp_path):
    _script, html_path, _prof = hot_report
    shot = tmp_path / "report.png"
    with Browser(1400, 900) as b:
        b.load(html_path.as_uri())
        b.screenshot(str(shot))
        assert b.errors() == []
    width, height, distinct = _png_pixels(shot)
    assert (width, height) == (1400, 900)
    assert distinct > 50  # a drawn page, not a blank one


def test_report_of_kernprof_file_and_old_profile(run_lprof, tmp_path):
    """line_profiler's own file and a format 1 profile make reports too."""
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "fixtures")
    r = run_lprof("export", os.path.join(fixtures, "kernprof_5_1.lprof"), "--format", "html",
                  "-o", "kp.html")
    assert r.returncode == 0, r.stderr
    (fn,) = page_data((tmp_path / "kp.html").read_text())["functions"]
    assert fn["name"] == "work" and [ln for ln, _h, _t in fn["lines"]] == [3, 4, 5, 6]
    r = run_lprof("export", os.path.join(fixtures, "v1_sampled_memory.lprof"), "--format",
                  "html", "-o", "v1.html")
    assert r.returncode == 0, r.stderr
    data = page_data((tmp_path / "v1.html").read_text())
    assert data["stacks"] and data["memory"] is not None


def test_report_written_when_the_program_fails(run_lprof, write_script, tmp_path):
    script = write_script("boom.py", "def f():\n    return sum(range(3000000))\nf()\n"
                                     "raise SystemExit(4)\n")
    r = run_lprof("-q", "--html", "boom.html", script)
    assert r.returncode == 4
    assert page_data((tmp_path / "boom.html").read_text())["stacks"]


def test_bad_html_path_refused_before_the_run(run_lprof, write_script, tmp_path):
    script = write_script("ok.py", "open('ran', 'w').close()\n")
    for bad in ("nodir/r.html", str(tmp_path)):
        r = run_lprof("-q", "--html", bad, script)
        assert r.returncode == 2 and r.stderr.startswith("lprof: --html ")
        assert not (tmp_path / "ran").exists()
    r = run_lprof("-q", "--html", "same", "-o", "same", script)
    assert r.returncode == 2 and "also given" in r.stderr


@needs_chromium
def test_line_profile_report_in_chromium(tmp_path, run_lprof, write_script):
    script = write_script("lp.py", """\
        @profile
        def f(n):
            s = 0
            for i in range(n):
                s += i * i  # loop
            return s
        f(20000)
        """)
    assert run_lprof("-l", "-q", "--html", "lp.html", script).returncode == 0
    with Browser(1200, 900) as b:
        b.load((tmp_path / "lp.html").as_uri())
        assert b.errors() == []
        first = b.eval("[...document.querySelectorAll('#lhot tbody tr')[0].children]"
                       ".map(td => td.textContent)")
        # sorted by time: the loop body or its header, with their exact hits
        assert (first[1], first[2]) in ((str(line_of(script, "loop")), "20000"),
                                        (str(line_of(script, "loop") - 1), "20001"))
        assert b.eval("document.querySelectorAll('#lines details tr.hotline').length") == 4
        assert b.eval("document.querySelectorAll('#lhot td.wait, #lines details td.wait').length") == 0


@needs_chromium
def test_line_profile_report_shows_waits(tmp_path, run_lprof, write_script):
    """A coroutine's table gets a wait column, filled at its await line only."""
    script = write_script("aw.py", """\
        import asyncio

        @profile
        async def f():
            await asyncio.sleep(0.05)  # await
            return 1
        asyncio.run(f())
        """)
    assert run_lprof("-l", "-q", "--html", "aw.html", script).returncode == 0
    data = page_data((tmp_path / "aw.html").read_text())
    (fn,) = data["functions"]
    assert [ln for ln, _w in fn["wait"]] == [line_of(script, "await")]
    with Browser(1200, 900) as b:
        b.load((tmp_path / "aw.html").as_uri())
        assert b.errors() == []
        heads = b.eval("[...document.querySelectorAll('#lines details thead th')].map(t => t.textContent)")
        assert heads == ["line", "hits", "time", "per hit", "% time", "wait", "code"]
        filled = b.eval("[...document.querySelectorAll('#lines details td.wait')]"
                        ".filter(td => td.textContent).map(td => td.parentNode.firstChild.textContent)")
        assert filled == [str(line_of(script, "await"))]
        # the hot-lines table: a wait column, and sorting by it puts the await line first
        hot = "[...document.querySelectorAll('#lhot thead th')]"
        assert b.eval(hot + ".map(t => t.textContent.split(' ')[0])") == \
            ["function", "line", "hits", "time", "per", "wait", "code"]
        b.eval(hot + ".find(t => t.textContent.startsWith('wait')).click()")
        first = b.eval("[...document.querySelectorAll('#lhot tbody tr')[0].children].map(td => td.textContent)")
        assert first[1] == str(line_of(script, "await")) and first[5].endswith("s")


def test_columns_come_from_the_profile(tmp_path):
    """A column the profile declares (as a GPU column from metrics.h would be)
    shows in the report and in lprof diff without any edit to them."""
    from lprof.model.compare import compare
    from lprof.render import report_data
    script = tmp_path / "g.py"
    script.write_text("def k():\n    launch()\nk()\n")
    frames = [[str(script), "<module>", 1, 3], [str(script), "k", 1, 2]]

    def prof(gpu):
        return {"meta": {"argv": ["g.py"], "modes": ["cpu"]},
                "stacks": {"frames": frames,
                           "columns": [["cpu_python_s", "ns", "sum"],
                                       ["gpu_time_s", "ns", "sum"], ["h2d_bytes", "bytes", "sum"]],
                           "stacks": [[[0, 1], 7, {"cpu_python_s": 0.5, "gpu_time_s": gpu,
                                                   "h2d_bytes": 4096}]]}}
    data = report_data.build(prof(2.0))
    cols = {c["name"]: c for c in data["columns"]}
    assert cols["gpu_time_s"]["unit"] == "s" and cols["gpu_time_s"]["label"] == "gpu time"
    assert cols["h2d_bytes"]["unit"] == "bytes"
    names = [c["name"] for c in data["columns"]]
    (row,) = data["stacks"]
    assert row[3][names.index("gpu_time_s")] == 2.0
    assert data["frames"][row[2]][2] == "k"  # charged to k's line
    diff = compare(prof(2.0), prof(3.5), metric="gpu_time_s")
    (line,) = diff["lines"]
    assert line["key"] == (str(script), 2)
    assert line["after"]["gpu_time_s"] - line["before"]["gpu_time_s"] == pytest.approx(1.5)
    assert ("h2d_bytes", "bytes") in diff["columns"]


@needs_chromium
def test_heatmap_shades_hot_line_strongest(hot_report):
    """The source view's heatmap: toggled on, the hottest line (the hot loop)
    has the strongest shade, a line without samples none, and
    the shaded lines' shares add up to at most the whole."""
    script, html_path, _prof = hot_report
    loop = {line_of(script, "hot") - 1, line_of(script, "hot")}
    # the blank line above cold's def: shown, never sampled (a def line runs
    # once, for a microsecond, and could be)
    blank = open(script).read().splitlines().index("def cold(n):")
    with Browser(1400, 900) as b:
        b.load(html_path.as_uri())
        assert b.eval("document.querySelectorAll('#source tr.heat').length") == 0  # off by default
        b.eval("document.getElementById('heatmap').click()")
        rows = b.eval("""[...document.querySelectorAll('#source table.src tbody tr')]
            .filter(tr => tr.querySelector('td.ln')).map(tr => {
              const bg = getComputedStyle(tr.querySelector('td.code')).backgroundColor;
              const m = bg.match(/rgba?\\(([^)]*)\\)/)[1].split(',').map(Number);
              return {ln: +tr.querySelector('td.ln').textContent, heat: +(tr.dataset.heat || 0),
                      alpha: m.length === 4 ? m[3] : 1, rgb: m.slice(0, 3)};
            })""")
        assert b.errors() == []
    by_line = {r["ln"]: r for r in rows}
    shaded = [r for r in rows if r["heat"] > 0]
    assert len(shaded) >= 3
    hottest = max(rows, key=lambda r: r["alpha"] if r["heat"] else -1)
    assert hottest["ln"] in loop and hottest["heat"] == max(r["heat"] for r in rows)
    assert hottest["rgb"] == [230, 70, 20] and hottest["alpha"] > 0.75
    cold = by_line[blank]
    assert cold["heat"] == 0 and cold["alpha"] == 0   # no samples: unshaded
    # cold's loop (its two lines share its samples, which gets them varies)
    # has fewer samples: lighter than the hottest
    cold_body = max((by_line[ln] for ln in (line_of(script, "cold") - 1, line_of(script, "cold"))),
                    key=lambda r: r["heat"])
    assert 0 < cold_body["heat"] < hottest["heat"] and cold_body["alpha"] < hottest["alpha"]
    assert sum(r["heat"] for r in shaded) <= 1.0 + 1e-6
