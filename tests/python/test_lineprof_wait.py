"""`lprof -l` on generators and coroutines: the time a frame spends
suspended at a yield or an await goes to that line's Wait column (and the
JSON export's wait_s), not to Time; profiles merge it; malformed wait rows
are refused."""
import json

import pytest

from lprof.common.errors import ProfileFileError
from lprof.model import profile_file
from lprof.model.merge import Merger

ASYNC = """
import asyncio, time

@profile
async def worker(n):
    total = 0
    for i in range(n):
        await asyncio.sleep(0.05)
        total += i
    return total

@profile
def numbers():
    for i in range(3):
        yield i

async def main():
    await asyncio.gather(worker(4), worker(2))
    for _ in numbers():
        time.sleep(0.04)

asyncio.run(main())
print("done")
"""


def _lines(doc, name):
    (fn,) = [f for f in doc["functions"] if f["name"].endswith(name)]
    return {row["line"]: row for row in fn["lines"]}


def test_wait_at_await_and_yield_lines(run_lprof, write_script, tmp_path):
    write_script("aw.py", ASYNC)
    r = run_lprof("-l", "-v", "-o", "aw.lprof", "aw.py")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "done" in r.stdout
    assert "Total wait:" in r.stdout and " Wait " in r.stdout
    e = run_lprof("export", "aw.lprof", "--format", "json", "-o", "aw.json")
    assert e.returncode == 0, e.stderr
    doc = json.loads((tmp_path / "aw.json").read_text())
    worker = _lines(doc, "worker")
    # six awaits of 0.05 s (the two tasks each wait at the same line)
    assert 0.29 <= worker[8]["wait_s"] <= 1.5, worker[8]
    assert worker[8]["time_s"] < 0.05, worker[8]  # the sleep is not in Time
    assert [ln for ln, row in worker.items() if "wait_s" in row] == [8]
    numbers = _lines(doc, "numbers")
    # three suspensions while the consumer sleeps 0.04 s each
    assert 0.11 <= numbers[15]["wait_s"] <= 1.0, numbers[15]
    assert [ln for ln, row in numbers.items() if "wait_s" in row] == [15]
    assert "waits_evicted" not in doc


PLAIN = """
@profile
def f():
    x = 0
    for i in range(1000):
        x += i
    return x
f()
"""


def test_no_wait_column_without_suspension(run_lprof, write_script):
    write_script("p.py", PLAIN)
    r = run_lprof("-l", "-v", "p.py")
    assert r.returncode == 0, r.stderr
    assert "Line #" in r.stdout and "Wait" not in r.stdout


def _fn(wait):
    fn = {"file": "/app.py", "name": "step", "first_line": 3, "total_s": 1.0,
          "lines": [[5, 1, 1.0]]}
    if wait is not None:
        fn["wait"] = wait
    return fn


def _prof(pid, fn, evicted=0):
    p = {"format": "lprof", "version": 2,
         "meta": {"pid": pid, "hostname": "h", "modes": ["lines"], "duration_s": 1.0, "argv": []},
         "functions": [fn]}
    if evicted:
        p["waits_evicted"] = evicted
    return p


def test_merge_adds_waits_per_line(tmp_path):
    m = Merger()
    m.add(_prof(1, _fn([[5, 0.25]]), evicted=2))
    m.add(_prof(2, _fn([[5, 0.5], [6, 1.0]])))
    m.add(_prof(3, _fn(None)))
    out = m.result()
    profile_file.save(out, tmp_path / "m.lprof")
    back = profile_file.load(tmp_path / "m.lprof")  # validated on the way in
    (fn,) = back["functions"]
    assert fn["wait"] == [[5, 0.75], [6, 1.0]]
    assert back["waits_evicted"] == 2


@pytest.mark.parametrize("bad", [[[5]], [[0, 1.0]], [[5, "x"]], "rows", [[5, 1.0, 2.0]]])
def test_malformed_wait_rows_are_refused(tmp_path, bad):
    profile_file.save(_prof(1, _fn(bad)), tmp_path / "bad.lprof")
    with pytest.raises(ProfileFileError):
        profile_file.load(tmp_path / "bad.lprof")


def test_diff_compares_waits():
    """lprof diff ranks lines by the change of their wait (--metric line_wait_s)."""
    from lprof.model.compare import compare
    before = _prof(1, _fn([[5, 0.25]]))
    after = _prof(2, _fn([[5, 1.0], [6, 0.5]]))
    result = compare(before, after, metric="line_wait_s", accept=lambda path: True)
    assert ("line_wait_s", "s") in result["columns"]
    first = result["lines"][0]
    assert first["key"] == ("/app.py", 5)
    assert (first["before"]["line_wait_s"], first["after"]["line_wait_s"]) == (0.25, 1.0)
    assert result["totals"]["line_wait_s"] == (0.25, 1.5)
