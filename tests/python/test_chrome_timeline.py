"""The sample timeline (issue #15): profile section "timeline" and the Chrome
trace's per-thread tracks drawn from it. A program with a known phase order
(f, then g, on the main thread; h on a thread of its own) must come out in
that order, with the phases' durations, as valid trace events; the section's
values are checked on reading; merged profiles keep each process apart."""
import json
import subprocess
import sys

import pytest

from conftest import lprof_env
from test_export_pstats_chrome import validate_trace

from lprof.model import profile_file
from lprof.export.stack_rows import frame_name

# f and g each take `seconds` of the main thread's CPU (cpu) or of wall time
# (wall: g sleeps); h runs on its own thread meanwhile, mostly outside the GIL
# (hashing), so the main thread's phases stay whole. The program writes when
# each phase began and ended (unix time) to marks.json.
PHASES = """\
import hashlib, json, sys, threading, time

WALL = sys.argv[1] == "wall"

def burn(seconds):
    clock = time.perf_counter if WALL else time.thread_time
    t0 = clock()
    x = 0
    while clock() - t0 < seconds:
        x += 1
    return x

def f():
    return burn(0.3)

def g():
    if WALL:
        time.sleep(0.3)
    else:
        burn(0.3)

def h(stop):
    data = b"x" * (1 << 20)
    while not stop.is_set():
        hashlib.sha256(data).digest()

stop = threading.Event()
th = threading.Thread(target=h, args=(stop,), name="hasher")
th.start()
marks = {}
t = time.time(); f(); marks["f"] = [t, time.time()]
t = time.time(); g(); marks["g"] = [t, time.time()]
stop.set()
th.join()
json.dump(marks, open("marks.json", "w"))
"""


def _lprof(cwd, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lprof", *map(str, args)], cwd=cwd,
                          env=lprof_env(), capture_output=True, text=True, timeout=timeout)


def _phases(tmp, mode):
    (tmp / "phases.py").write_text(PHASES)
    extra = ["--wall"] if mode == "wall" else []
    r = _lprof(tmp, "-q", *extra, "-o", "p.lprof", "phases.py", mode)
    assert r.returncode == 0, r.stderr
    r = _lprof(tmp, "export", "p.lprof", "--format", "chrome", "-o", "t.json")
    assert r.returncode == 0, r.stderr
    return (profile_file.load(str(tmp / "p.lprof")), json.loads((tmp / "t.json").read_text()),
            json.loads((tmp / "marks.json").read_text()))


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cpu")
    return (tmp,) + _phases(tmp, "cpu")


def _tracks(doc):
    """{thread label: [X events]} and the label of each (pid, tid)."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    out = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out.setdefault(names[(e["pid"], e["tid"])].split(" (")[0], []).append(e)
    return out


def _spans(events, function):
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["args"]["function"] == function)


def _main_samples(prof):
    """The main thread's samples [(end_us, covered_us, frame ids)]."""
    from lprof.model import timeline
    part = prof["timeline"]["parts"][0]
    main = next(i for i, (_k, name) in enumerate(part["threads"]) if name == "MainThread")
    return timeline.samples(part)[main]


def _check_phases(prof, doc, marks, tolerance_s):
    """The timeline against the phases' times as the program measured them.
    Exact where sampling is (every sample in its phase, spans in order and
    within the phase up to one sample's coverage); durations within
    tolerance_s plus the longest gap between samples (a loaded machine
    samples late: the timeline is as exact as its samples)."""
    validate_trace(doc)
    assert doc["otherData"]["layout"].startswith("timeline")
    tracks = _tracks(doc)
    assert {"MainThread", "hasher"} <= set(tracks), tracks.keys()
    main, hasher = tracks["MainThread"], tracks["hasher"]
    # each thread's work is on its own track only
    assert {"f", "g"} <= {e["args"]["function"] for e in main}
    assert "h" in {e["args"]["function"] for e in hasher}
    assert not {"f", "g"} & {e["args"]["function"] for e in hasher}
    assert "h" not in {e["args"]["function"] for e in main}
    f, g = _spans(main, "f"), _spans(main, "g")
    assert f[-1][1] <= g[0][0], (f[-1], g[0])  # all of f before g
    frames = prof["stacks"]["frames"]
    samples = _main_samples(prof)
    shift = -doc["otherData"]["time_origin_us"]
    assert prof["timeline"]["parts"][0]["start_s"] == prof["meta"]["started"]
    max_cover = max(c for _t, c, _ids in samples)
    for name, spans in (("f", f), ("g", g)):
        begin, end = ((t - prof["meta"]["started"]) * 1e6 + shift for t in marks[name])
        # a sample taken with the function on the stack was taken during it
        # (2 ms: the program's clock read and the sampler's)
        times = [t + shift for t, _c, ids in samples if any(frames[i][1] == name for i in ids)]
        assert times and begin - 2000 <= min(times) and max(times) <= end + 2000, (name, begin, end)
        # its spans: inside the phase, up to a sample's coverage and the gap
        # merged before it
        slack = 2 * max_cover + 10_000 + 2000
        assert spans[0][0] >= begin - slack and spans[-1][1] <= end + 2000, (name, spans[0], spans[-1], begin, end)
        inside = sorted(times)
        gap = max([b - a for a, b in zip(inside, inside[1:])] + [inside[0] - begin, end - inside[-1]])
        envelope = spans[-1][1] - spans[0][0]
        assert abs(envelope - (end - begin)) < tolerance_s * 1e6 + gap + max_cover, (name, envelope, end - begin, gap)
    return f, g


def test_cpu_timeline_phases_in_order(cpu_run):
    _tmp, prof, doc, marks = cpu_run
    f, g = _check_phases(prof, doc, marks, tolerance_s=0.05)
    # CPU mode: each phase's samples weigh its CPU time (0.3 s each)
    frames = prof["stacks"]["frames"]
    for name in ("f", "g"):
        weight = sum(c for _t, c, ids in _main_samples(prof) if any(frames[i][1] == name for i in ids))
        assert weight / 1e6 == pytest.approx(0.3, abs=0.05), name


def _phase_samples(prof, name):
    frames = prof["stacks"]["frames"]
    return sum(1 for _t, _c, ids in _main_samples(prof) if any(frames[i][1] == name for i in ids))


def test_wall_timeline_phases_in_order(tmp_path):
    """Wall mode, where f burns 0.3 s and g sleeps 0.3 s (a sleeping thread
    is sampled too). The wall sampler is a thread: on a machine loaded many
    times over its cores it may not run for a whole phase, so the run is
    tried twice for phases with samples (~300 each when it runs)."""
    for attempt in range(2):
        run = tmp_path / str(attempt)
        run.mkdir()
        prof, doc, marks = _phases(run, "wall")
        if min(_phase_samples(prof, "f"), _phase_samples(prof, "g")) >= 10:
            break
    _check_phases(prof, doc, marks, tolerance_s=0.05)


def test_trace_round_trip_of_samples(cpu_run):
    """Every sample of the profile's timeline is, in the trace, inside the
    innermost event of its own leaf frame on its own thread's track, at the
    depth of its stack."""
    _tmp, prof, doc, _marks = cpu_run
    part = prof["timeline"]["parts"][0]
    assert part["stride"] == 1 and len(part["t_us"]) > 100
    frames = prof["stacks"]["frames"]
    shift = -doc["otherData"]["time_origin_us"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["name"] == "thread_name"}
    by_track = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_track.setdefault(names[(e["pid"], e["tid"])], []).append(e)
    from lprof.model import timeline
    checked = 0
    for index, samples in timeline.samples(part).items():
        thread, label = part["threads"][index]
        events = by_track[f"{label} ({thread})"]
        for end, cover, ids in samples:
            if cover < 2:
                continue
            at = end + shift - 1
            inside = [e for e in events if e["ts"] <= at < e["ts"] + e["dur"]]
            assert len(inside) == len(ids), (at, ids, inside)
            innermost = max(inside, key=lambda e: e["ts"] * 0 - e["dur"])
            assert innermost["name"] == frame_name(frames[ids[-1]])
            checked += 1
    assert checked > 100


def test_timeline_section_in_file(cpu_run):
    _tmp, prof, _doc, _marks = cpu_run
    part = prof["timeline"]["parts"][0]
    assert part["pid"] == prof["meta"]["pid"]
    assert {name for _id, name in part["threads"]} == {"MainThread", "hasher"}
    n = len(part["t_us"])
    assert len(part["node"]) == len(part["thread"]) == len(part["weight_us"]) == n
    assert all(d >= 0 for d in part["t_us"][1:])
    # samples of the main thread: about the weight of its CPU columns
    main = next(i for i, (_k, name) in enumerate(part["threads"]) if name == "MainThread")
    weight = sum(w for th, w in zip(part["thread"], part["weight_us"]) if th == main) / 1e6
    main_id = part["threads"][main][0]
    cpu = sum(m.get(c, 0) for _ids, th, m in prof["stacks"]["stacks"] if th == main_id
              for c in ("cpu_python_s", "cpu_native_s", "cpu_system_s"))
    assert weight == pytest.approx(cpu, rel=0.02)


BAD = [
    (("node", 0), 10 ** 6), (("node", 0), -1), (("node", 0), True), (("node", 0), "x"),
    (("thread", 0), 99), (("t_us", 1), -5), (("t_us", 0), 1.5), (("weight_us", 0), -1),
    (("stride",), 0), (("stride",), None), (("start_s",), "x"), (("start_s",), 1e300),
    (("threads", 0), [1]),
    (("nodes", "frame", 0), 10 ** 6), (("nodes", "parent", 0), 5), (("node",), []),
    (("t_us",), None), (("nodes",), []), (("threads",), {}),
]


@pytest.mark.parametrize("path,value", BAD, ids=[str(i) for i in range(len(BAD))])
def test_malformed_timeline_refused(cpu_run, path, value, tmp_path):
    """A damaged timeline value: one line and exit status 2 from view and
    from the Chrome export, never a traceback."""
    tmp, prof, _doc, _marks = cpu_run
    bad = json.loads(json.dumps(prof))
    node = bad["timeline"]["parts"][0]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    profile_file.save(bad, str(tmp_path / "bad.lprof"))
    for argv in (["view", "bad.lprof"], ["export", "bad.lprof", "--format", "chrome", "-o", "x.json"]):
        r = _lprof(tmp_path, *argv)
        assert r.returncode == 2, (path, value, r.stdout[-300:], r.stderr)
        assert r.stderr.startswith("lprof: ") and len(r.stderr.strip().splitlines()) == 1
        assert "timeline" in r.stderr


def test_profile_without_timeline_falls_back(cpu_run, tmp_path):
    """Older profiles (no timeline) still open; the trace says it lays
    stacks end to end."""
    _tmp, prof, _doc, _marks = cpu_run
    old = dict(prof)
    del old["timeline"]
    profile_file.save(old, str(tmp_path / "old.lprof"))
    assert _lprof(tmp_path, "view", "old.lprof").returncode == 0
    r = _lprof(tmp_path, "export", "old.lprof", "--format", "chrome", "-o", "o.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "o.json").read_text())
    validate_trace(doc)
    assert "no sample timeline" in doc["otherData"]["layout"]


def test_merged_timelines_stay_per_process(cpu_run, tmp_path):
    """lprof merge: each profile's timeline is its own part and, in the
    trace, its own process (pid); frames map to the merged frame table."""
    tmp, prof, _doc, _marks = cpu_run
    (tmp_path / "other.py").write_text(
        "def other():\n    s = 0\n    for i in range(3_000_000):\n        s += i\n    return s\nother()\n")
    r = _lprof(tmp_path, "-q", "-o", "b.lprof", "other.py")
    assert r.returncode == 0, r.stderr
    r = _lprof(tmp_path, "merge", str(tmp / "p.lprof"), "b.lprof", "-o", "m.lprof")
    assert r.returncode == 0, r.stderr
    merged = profile_file.load(str(tmp_path / "m.lprof"))
    parts = merged["timeline"]["parts"]
    other_pid = profile_file.load(str(tmp_path / "b.lprof"))["meta"]["pid"]
    assert [p["pid"] for p in parts] == [prof["meta"]["pid"], other_pid]
    frames = merged["stacks"]["frames"]
    from lprof.model import timeline
    leaves = {frames[s[-1]][1] for s in timeline.stacks_of(parts[1])}
    assert "other" in leaves and "f" not in {frames[s[-1]][1] for s in timeline.stacks_of(parts[1])}
    r = _lprof(tmp_path, "export", "m.lprof", "--format", "chrome", "-o", "m.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    validate_trace(doc)
    pids = {e["args"]["function"]: e["pid"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert pids["other"] == other_pid and pids["f"] == prof["meta"]["pid"]


def test_periodic_rewrite_has_timeline(tmp_path):
    """-i: a checkpoint written while the program runs holds the timeline."""
    (tmp_path / "cp.py").write_text(
        "import shutil, time\n"
        "def spin(s):\n    t = time.thread_time()\n    while time.thread_time() - t < s:\n        pass\n"
        "spin(0.6)\n"
        "deadline = time.time() + 5\n"
        "while time.time() < deadline:\n"
        "    try:\n        shutil.copy('cp.lprof', 'copy.lprof'); break\n"
        "    except FileNotFoundError:\n        time.sleep(0.05)\n")
    r = _lprof(tmp_path, "-q", "-i", "0.2", "-o", "cp.lprof", "cp.py")
    assert r.returncode == 0, r.stderr
    cp = profile_file.load(str(tmp_path / "copy.lprof"))
    assert cp["meta"]["exit_code"] is None  # a checkpoint, not the final file
    part = cp["timeline"]["parts"][0]
    frames = cp["stacks"]["frames"]
    from lprof.model import timeline
    assert "spin" in {frames[s[-1]][1] for s in timeline.stacks_of(part)}


def test_followed_children_each_own_process(tmp_path):
    """A run whose pool workers are followed: the merged profile holds one
    timeline part per process, and the trace one process per pid, each with
    its own work."""
    (tmp_path / "pool.py").write_text(
        "import multiprocessing as mp\n"
        "def work(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('fork').Pool(2) as p:\n"
        "        p.map(work, [2_000_000] * 4)\n")
    r = _lprof(tmp_path, "-q", "-o", "pool.lprof", "pool.py")
    assert r.returncode == 0, r.stderr
    prof = profile_file.load(str(tmp_path / "pool.lprof"))
    parts = prof["timeline"]["parts"]
    pids = [p["pid"] for p in parts]
    assert pids[0] == prof["meta"]["pid"] and len(set(pids)) == len(pids) >= 2
    r = _lprof(tmp_path, "export", "pool.lprof", "--format", "chrome", "-o", "pool.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "pool.json").read_text())
    validate_trace(doc)
    named = {e["pid"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert named == set(pids)
    workers = {e["pid"] for e in doc["traceEvents"] if e["ph"] == "X" and e["args"]["function"] == "work"}
    assert workers and workers <= set(pids[1:])  # the work ran in the children, on their tracks


def _synthetic(t_us, node, weight_us, stride=1):
    """A profile of one thread whose timeline is given: frames a > b and a > c."""
    frames = [["s.py", "a", 1, 2], ["s.py", "b", 5, 6], ["s.py", "c", 8, 9]]
    return {"format": "lprof", "version": 2,
            "meta": {"argv": ["s.py"], "started": 1000.0, "pid": 7},
            "sampling": {"mode": "cpu", "threads": {"5": "MainThread"}},
            "stacks": {"frames": frames, "columns": [], "stacks": [[[0, 1], 5, {"cpu_python_s": 1.0}]]},
            "timeline": {"parts": [{
                "pid": 7, "start_s": 1000.0, "stride": stride, "threads": [[5, "MainThread"]],
                "nodes": {"parent": [-1, 0, 0], "frame": [0, 1, 2]},
                "t_us": t_us, "node": node, "thread": [0] * len(t_us), "weight_us": weight_us}]}}


def test_spans_merge_and_gaps_close():
    """Consecutive samples of one stack are one span per frame; a change of
    leaf closes only the leaf; a gap (not sampled) closes everything."""
    from lprof.export import chrome_trace as export_chrome
    # b at 4, 8, 12 ms; c at 16 ms; 100 ms without samples; b at 120 ms
    prof = _synthetic([4000, 4000, 4000, 4000, 104000], [1, 1, 1, 2, 1], [4000] * 5)
    doc = export_chrome.trace(prof)
    validate_trace(doc)
    spans = sorted((e["name"].split(" ")[0], e["ts"], e["dur"]) for e in doc["traceEvents"]
                   if e["ph"] == "X")
    assert spans == [("a", 0, 16000), ("a", 116000, 4000), ("b", 0, 12000), ("b", 116000, 4000),
                     ("c", 12000, 4000)]
    # thinned: each entry stands for `stride` samples, so it covers stride times more
    doc = export_chrome.trace(_synthetic([8000, 8000], [1, 1], [4000, 4000], stride=2))
    assert sorted((e["name"].split(" ")[0], e["ts"], e["dur"]) for e in doc["traceEvents"]
                  if e["ph"] == "X") == [("a", 0, 16000), ("b", 0, 16000)]


def test_same_pid_twice_stays_apart(cpu_run):
    """Merged profiles whose processes share a pid (two hosts) are still two
    trace processes: their tracks would overlap otherwise."""
    from lprof.export import chrome_trace as export_chrome
    from lprof.model.merge import merge_profiles
    _tmp, prof, _doc, _marks = cpu_run
    merged = merge_profiles([(prof, "a"), (json.loads(json.dumps(prof)), "b")])
    assert len(merged["timeline"]["parts"]) == 2
    doc = export_chrome.trace(merged)
    validate_trace(doc)
    assert len({e["pid"] for e in doc["traceEvents"] if e["name"] == "process_name"}) == 2
