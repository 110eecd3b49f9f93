"""Issue #34: every share is of the process's whole (its CPU time, or wall
time summed over its threads), and what a view does not show is stated with
where it went; a library program's run (a test suite) selects what it
exercised, the same in the listing, the HTML report and the JSON export."""
import json
import os
import re

from conftest import PKGDIR, line_of

# Main thread and a second thread burn known CPU in the shown file; a third
# thread runs only the standard library (json, started with a C callable as
# its target, so no line of the program is on its stack). Each part's CPU is
# measured by the program itself, on the thread's own clock.
KNOWN_PARTS = """
import itertools, json, queue, threading, time

def burn(seconds):
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < seconds:  # hot
        x += 1
    return time.thread_time() - t

measured = {}

def second():
    measured["second"] = burn(0.4)

big = [{"k": i, "v": "x" * 40, "l": [1, 2, 3]} for i in range(20000)]
done, wake = threading.Event(), queue.Queue()
# json.dumps over and over, then done.set(), then q.get() until None: C
# iterators drive it, so its stack is threading's and the stdlib's alone
work = itertools.chain(map(json.dumps, itertools.repeat(big, 25)),
                       itertools.starmap(done.set, [()]), iter(wake.get, None))
lib = threading.Thread(target=__import__("collections").deque, args=(work, 0))
lib.start()
t2 = threading.Thread(target=second)
t2.start()
measured["main"] = burn(0.6)
done.wait()
measured["stdlib"] = time.clock_gettime(time.pthread_getcpuclockid(lib.ident))
wake.put(None)
lib.join(); t2.join()
json.dump(measured, open("measured.json", "w"))
"""


def _flat(text):
    return " ".join(text.split())


def _share(text, pattern):
    m = re.search(pattern, _flat(text))
    assert m, (pattern, text)
    return float(m.group(1))


def test_shares_are_of_the_process_whole_and_the_rest_is_said(run_lprof, write_script,
                                                               load_profile, tmp_path):
    script = write_script("parts.py", KNOWN_PARTS)
    r = run_lprof("-o", "p.lprof", "parts.py")
    assert r.returncode == 0, r.stderr
    measured = json.loads((tmp_path / "measured.json").read_text())
    prof = load_profile(str(tmp_path / "p.lprof"))
    process = prof["sampling"]["process_cpu_s"]
    assert process >= measured["main"] + measured["second"] + measured["stdlib"] - 0.02, (process, measured)
    # the whole is the process's CPU clock, or the CPU on the samples where
    # that is more (model/shares.py): seen once on a busy CI machine, 465
    # samples of 4 ms beside a process clock of 1.854 s, before the drain
    # held each thread's samples to its own CPU clock (a task-clock event ran
    # ahead of it: docs/design-sampler.md)
    whole = max(process, prof["sampling"]["cpu_total_s"])
    out = r.stdout
    # the header's CPU is the whole, and its signals are per CPU second sampled
    flat = _flat(out)
    assert f"process CPU {whole:.3f} s" in flat, flat
    signals = prof["sampling"]["signals"]
    per = _share(flat, r"(\d+) per sampled CPU second")
    on_stacks = _share(flat, r"\(([\d.]+) s on sampled Python stacks\)")
    assert abs(per - signals / on_stacks) <= 1 + 0.01 * per, (per, signals, on_stacks)
    # the file's share: the two threads' burn (and a little more of the file) of the whole
    file_pct = _share(out, r"File: \S*parts\.py \(([\d.]+) s, [\d.]+% of the process's CPU time\)")
    file_share = _share(out, r"File: \S*parts\.py \([\d.]+ s, ([\d.]+)% of the process's CPU time\)")
    want = 100.0 * (measured["main"] + measured["second"]) / whole
    # timers fire on the kernel tick: each thread may lose its last partial
    # tick (4 ms at 250 Hz) and carry one tick of the other's; 3 points is
    # several ticks on a ~1.5 s whole
    assert want - 3 <= file_share <= want + 5, (file_share, want, out)
    assert abs(file_pct - file_share * whole / 100) < 0.01
    # the hot line's share, of the whole too (not of the file: 100% before)
    # The loop's time splits between its two lines in proportions that vary
    # by version and load, so the bound that must hold is on the pair; the
    # hot line alone is checked for being a share of the whole (below the
    # file's share), not of the file.
    hot = line_of(script, "hot")

    def row_share(lineno):
        """The line's CPU shares: the % cells before time(s) (a gil% cell,
        after it, is a share of the line's own time, not of the whole)."""
        row = next((ln for ln in out.splitlines() if ln.split()[:1] == [str(lineno)]), "")
        shares = []
        for cell in row.split()[1:]:
            if not cell.endswith("%"):
                break
            shares.append(float(cell[:-1]))
        return sum(shares), row

    hot_share, hot_row = row_share(hot)
    body_share, body_row = row_share(hot + 1)
    assert 0 < hot_share <= file_share + 0.2, hot_row
    assert want - 6 <= hot_share + body_share <= file_share + 0.2, (hot_row, body_row, want)
    # the standard library's thread: not shown, and said, with its share
    lib = _share(out, r"([\d.]+)% in the standard library \(")
    want_lib = 100.0 * measured["stdlib"] / whole
    assert want_lib - 3 <= lib <= want_lib + 3, (lib, want_lib, out)
    assert re.search(r"the standard library \(json [\d.]+%", _flat(out)), out
    # the parts add up to the whole
    shown = _share(out, r"Shown above: ([\d.]+)% of the process's CPU time")
    rest = [float(x) for x in re.findall(r"([\d.]+)% (?:on|in) ",
                                         _flat(out).split("Not shown:", 1)[1])]
    assert abs(shown + sum(rest) - 100.0) < 0.1 * (len(rest) + 1) + 0.05, (shown, rest, out)
    # the JSON export and the HTML report state the same whole and remainder
    exported = json.loads(run_lprof("export", "p.lprof", "--format", "json", "-o", "-").stdout)
    w = exported["sampling"]["whole"]
    assert abs(w["whole_s"] - whole) < 1e-9
    stdlib = next(h for h in w["hidden"] if h["where"] == "the standard library")
    assert abs(100 * stdlib["seconds"] / whole - lib) < 0.06
    from lprof.render import report_data
    page = report_data.build(prof)
    assert abs(page["whole"]["cpu_s"] - whole) < 1e-9 and page["whole"]["hidden"] == w["hidden"]


# The Timer thread of the issue: it waits the whole run in threading's code
WAITING_THREAD = """
import threading, time
t = threading.Timer(30.0, print)
t.start()
time.sleep(0.5)
t.cancel()
"""


def test_wall_shares_count_every_thread(run_lprof, write_script):
    write_script("timer.py", WAITING_THREAD)
    r = run_lprof("--wall", "-o", "w.lprof", "timer.py")
    assert r.returncode == 0, r.stderr
    out = _flat(r.stdout)
    share = _share(out, r"File: \S*timer\.py \([\d.]+ s, ([\d.]+)% of wall time, summed over threads\)")
    # two threads lived the same 0.5 s: the program's own lines hold half
    assert 40 <= share <= 60, out
    lib = _share(out, r"([\d.]+)% in the standard library \(threading")
    assert 40 <= lib <= 60, out
    # the header's wall is summed over threads and says so, beside the run's length
    m = re.search(r"wall ([\d.]+) s summed over 2 threads in a ([\d.]+) s run", out)
    assert m, out
    assert 1.7 <= float(m.group(1)) / float(m.group(2)) <= 2.05, out


# A package installed in site-packages, and its tests in the current folder
# half a CPU second in the package: pytest's own first-run work in the
# standard library (pathlib: 0.02 s in a fresh clone's CI) stays far under
# the 10% that would select it too
PACKAGE = """
import time

def work(seconds):
    total = 0
    end = time.process_time() + seconds
    while time.process_time() < end:
        total += sum(range(2000))  # pkg-hot
    return total
"""
TESTS = """
import fakepkg.core

def test_work():
    assert fakepkg.core.work(0.5) > 0
"""


def test_a_test_suite_shows_the_package_it_tests(run_lprof, write_script, tmp_path):
    site = tmp_path / "venv" / "lib" / "site-packages"
    pkg = write_script("venv/lib/site-packages/fakepkg/core.py", PACKAGE)
    write_script("venv/lib/site-packages/fakepkg/__init__.py", "")
    write_script("tests/test_core.py", TESTS)
    env = {"PYTHONPATH": PKGDIR + os.pathsep + str(site)}
    r = run_lprof("-o", "t.lprof", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                  env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert re.search(r"File: \S*site-packages/fakepkg/core\.py", out), out
    hot = line_of(pkg, "pkg-hot")
    assert any(ln.split()[:1] == [str(hot)] for ln in out.splitlines()), out
    assert "selected: your files and fakepkg (what the run exercised)" in _flat(out), out
    # pytest's own time is not the package's: said apart, in site-packages
    assert re.search(r"% in site-packages \(\S*pytest", _flat(out)), out
    # the HTML report charges the same lines
    from lprof.model import profile_file
    from lprof.render import report_data
    page = report_data.build(profile_file.load(str(tmp_path / "t.lprof")))
    charged = {(page["frames"][r[2]][1], page["frames"][r[2]][3]) for r in page["stacks"] if r[2] >= 0}
    assert (str(pkg), hot) in charged
    assert str(pkg) in page["sources"]


def test_a_library_program_shows_its_own_lines(run_lprof, write_script, tmp_path):
    """`lprof -m json.tool` runs the standard library's json: json's lines."""
    (tmp_path / "in.json").write_text(json.dumps([{"a": i, "b": [i] * 5} for i in range(60000)]))
    r = run_lprof("-m", "json.tool", "in.json", "out.json")
    assert r.returncode == 0, r.stderr
    assert "(no samples in the selected files)" not in r.stdout
    assert re.search(r"File: \S*/json/encoder\.py", r.stdout), r.stdout


def test_a_script_of_the_user_still_shows_only_its_code(run_lprof, write_script):
    """A program of the user's own that runs the stdlib in a thread keeps the
    default selection: the thread's json is said in the remainder, not listed."""
    write_script("mine.py", KNOWN_PARTS)
    r = run_lprof("mine.py")
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("File:")] == [
        ln for ln in r.stdout.splitlines() if ln.startswith("File:") and "mine.py" in ln]
    assert "selected:" not in r.stdout


def test_header_and_legend_fit_the_width():
    """The legend was one line of 145-278 characters, the header 165-187:
    both wrap to 80 columns (or $COLUMNS, or the terminal's width)."""
    from lprof.render import sampled_listing
    frames = [["/x/prog.py", "f", 1, 2]]
    prof = {"meta": {}, "memory": {"lines": [], "peak_bytes": 1, "sample_bytes": 16384},
            "gpu": {"lines": [["/x/prog.py", 2, "f"] + [0] * 10]},
            "sampling": {"mode": "wall", "rate_hz_requested": 1000.0, "rate_hz_effective": 990.0,
                         "signal": "SIGRTMIN+4", "duration_s": 1.13, "process_cpu_s": 0.2,
                         "wait_total_s": 0.5, "threads": {"1": "MainThread", "2": "Timer"},
                         "dropped": 3, "truncated": 2, "in_profiler": 7},
            "stacks": {"frames": frames, "columns": [],
                       "stacks": [[[0], 1, {"wall_s": 1.13, "cpu_python_s": 0.1, "wait_s": 0.5}],
                                  [[0], 2, {"wall_s": 1.13}]]}}
    text = sampled_listing.render(prof, cols=80)
    head = text.split("\n\n", 1)[0].splitlines()
    assert len(head) > 4 and all(len(ln) <= 80 for ln in head), head
    assert "wall% =" in text and "GPU mem =" in text and "alloc =" in text  # the long legend, whole
    wide = sampled_listing.render(prof, cols=200).split("\n\n", 1)[0].splitlines()
    assert max(len(ln) for ln in wide) > 100 and len(wide) < len(head)
    # the wall header: summed over the threads, beside the run's length
    flat = " ".join(" ".join(head).split())
    assert "wall 2.260 s summed over 2 threads in a 1.130 s run" in flat, flat
    import os
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "60"
    try:
        narrow = sampled_listing.render(prof).split("\n\n", 1)[0].splitlines()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    assert all(len(ln) <= 60 for ln in narrow), narrow


# Line timing beside the sampler: the tracer's callbacks are lprof's code on
# the program's thread, and on 3.10/3.11 a sweeper thread of lprof's gives
# new threads the tracer. One thread, no helper threads.
# sized in CPU time (0.8 s, ~200 samples at 250 Hz): a fixed count ran
# 0.13 s on 3.14+, and the few signals in the tracer's code came to 0 in CI
TRACED_LOOP = """
import time

@profile
def f(until):
    t = 0
    while time.process_time() < until:
        for i in range(20_000):
            t += i
    return t

f(time.process_time() + 0.4)
f(time.process_time() + 0.4)
"""


def test_lprof_own_cpu_is_its_own_share_not_another_threads(run_lprof, write_script, load_profile,
                                                              tmp_path):
    """The tracer's CPU time and the 3.10/3.11 sweeper's were 'on no sampled
    Python stack' at best, and the sweeper's showed as 1-3 ms of threads
    without Python in a program that has none; lprof's own time is now stated
    as such, in the profile and in the listing's remainder."""
    write_script("traced.py", TRACED_LOOP)
    r = run_lprof("-l", "--sample", "-o", "t.lprof", "traced.py")
    assert r.returncode == 0, r.stderr
    samp = load_profile(str(tmp_path / "t.lprof"))["sampling"]
    assert samp["threads_without_python"]["cpu_s"] == 0.0, samp["threads_without_python"]
    # the tracer runs on every line: signals land in its code, a period each
    assert samp["in_profiler"] > 0, samp
    own = samp["lprof_cpu_s"]
    assert own >= samp["in_profiler"] * 0.9 / samp["rate_hz_requested"], samp
    # lprof's part and the program's are the process's, neither counted twice
    whole = samp["process_cpu_s"]
    assert 0.9 * whole <= samp["cpu_total_s"] + own <= 1.05 * whole + 0.01, samp
    said = _share(r.stdout, r"([\d.]+)% in lprof itself")
    assert abs(said - 100 * min(own, whole - samp["cpu_total_s"]) / whole) < 0.6, (said, samp)
