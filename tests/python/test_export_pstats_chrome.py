"""pstats and Chrome trace exports: round trips from a profile's stacks to each
format and back to the same values."""
import json
import pstats

import pytest

SCRIPT = """\
import threading

def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def middle(n):
    return leaf(n) + leaf(n // 2)

def main():
    for _ in range(3):
        middle(200000)

t = threading.Thread(target=main, name="worker")
t.start()
main()
t.join()
"""

CPU = ("cpu_python_s", "cpu_native_s", "cpu_system_s")


@pytest.fixture
def sampled(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("work.py", SCRIPT)
    r = run_lprof("-q", "--rate", "2000", "-o", "p.lprof", script)
    assert r.returncode == 0, r.stderr
    return tmp_path, load_profile(str(tmp_path / "p.lprof"))


def _cpu(m):
    return sum(m.get(c, 0) for c in CPU)


def test_pstats_round_trip(sampled, run_lprof):
    tmp, prof = sampled
    r = run_lprof("export", "p.lprof", "--format", "pstats", "-o", "p.pstats")
    assert r.returncode == 0, r.stderr
    st = pstats.Stats(str(tmp / "p.pstats"))
    total = sum(_cpu(m) for _ids, _t, m in prof["stacks"]["stacks"])
    assert st.total_tt == pytest.approx(total, rel=1e-9)
    by_name = {}
    for (file, _line, name), (cc, nc, tt, ct, callers) in st.stats.items():
        by_name[name] = (cc, nc, tt, ct, {k[2]: v for k, v in callers.items()})
    # leaf's self time: every stack that ends in it
    frames = prof["stacks"]["frames"]
    want_leaf = sum(_cpu(m) for ids, _t, m in prof["stacks"]["stacks"]
                    if frames[ids[-1]][1] == "leaf")
    assert by_name["leaf"][2] == pytest.approx(want_leaf, rel=1e-9)
    assert want_leaf > 0.5 * total
    # cumulative: main holds middle and leaf
    assert by_name["main"][3] >= by_name["middle"][3] >= by_name["leaf"][3] - 1e-9
    # callers: leaf is called by middle, middle by main
    assert "middle" in by_name["leaf"][4] and "main" in by_name["middle"][4]
    assert by_name["leaf"][4]["middle"][3] == pytest.approx(by_name["leaf"][3], rel=1e-9)
    # the call columns hold samples
    samples = sum(m.get("samples", 0) for ids, _t, m in prof["stacks"]["stacks"]
                  if frames[ids[-1]][1] == "leaf")
    assert by_name["leaf"][1] == samples


def test_pstats_of_line_profile_is_refused(tmp_path, run_lprof, write_script):
    script = write_script("lp.py", "@profile\ndef f():\n    return 1\nf()\n")
    assert run_lprof("-l", "-q", script).returncode == 0
    r = run_lprof("export", "lp.py.lprof", "--format", "pstats", "-o", "x.pstats")
    assert r.returncode == 2 and r.stderr.startswith("lprof: ") and "no stacks" in r.stderr
    r = run_lprof("export", "lp.py.lprof", "--format", "chrome", "--metric", "alloc",
                  "-o", "x.json")
    assert r.returncode == 2 and "cpu or wall" in r.stderr


def validate_trace(doc):
    """Checks a trace against the trace-event format (JSON object form): the
    fields each phase needs, their types, and that complete events of one
    thread (pid, tid) nest (what Perfetto requires of X events on one track).
    Returns {(pid, tid): [X events]}."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    required = {"X": {"name", "ph", "ts", "dur", "pid", "tid"}, "M": {"name", "ph", "pid", "args"},
                "C": {"name", "ph", "ts", "pid", "args"}}
    by_tid = {}
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "M", "C"), e
        assert required[e["ph"]] <= set(e), e
        assert isinstance(e["name"], str) and isinstance(e["pid"], int)
        assert isinstance(e.get("tid", 0), int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index",
                                 "thread_sort_index")
            assert isinstance(e["args"]["name"], str)
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    for events in by_tid.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ = []
        for e in events:
            while open_ and open_[-1] <= e["ts"]:
                open_.pop()
            assert not open_ or e["ts"] + e["dur"] <= open_[-1], "X events overlap"
            open_.append(e["ts"] + e["dur"])
    return by_tid


def test_chrome_trace_round_trip(sampled, run_lprof):
    """A profile without a sample timeline (older files): each thread's
    stacks laid end to end. (The timeline: test_chrome_timeline.py.)"""
    tmp, prof = sampled
    from lprof.model import profile_file
    assert prof.pop("timeline")
    profile_file.save(prof, str(tmp / "old.lprof"))
    r = run_lprof("export", "old.lprof", "--format", "chrome", "-o", "t.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp / "t.json").read_text())
    assert "no sample timeline" in doc["otherData"]["layout"]
    by_tid = validate_trace(doc)
    # CPU of threads without Python that no line took (a thread's time before
    # the sampler registers it; more of it on a busy machine) is a track of its own
    by_tid = {tid: ev for tid, ev in by_tid.items()
              if not all(e["name"].startswith("[threads without Python]") for e in ev)}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["name"] == "thread_name" and (e["pid"], e["tid"]) in by_tid}
    assert len(by_tid) == 2 and set(by_tid) == set(names)
    assert any(n.startswith("worker (") for n in names.values())
    assert any(n.startswith("MainThread (") for n in names.values())
    # per thread: stacks laid end to end from 0 span that thread's CPU time
    for tid, events in by_tid.items():
        thread = names[tid].split("(", 1)[1].split(")", 1)[0]
        want = sum(round(_cpu(m) * 1e6) for _ids, t, m in prof["stacks"]["stacks"]
                   if str(t) == thread)
        assert min(e["ts"] for e in events) == 0
        assert max(e["ts"] + e["dur"] for e in events) == pytest.approx(want, abs=len(events))
        # leaf's frames carry their source place
        leaf = [e for e in events if e["args"]["function"] == "leaf"]
        assert leaf and all(e["args"]["file"].endswith("work.py") for e in leaf)


@pytest.mark.needs_shim  # lprof --memory preloads the allocator shim
def test_chrome_trace_memory_counter(tmp_path, run_lprof, write_script):
    script = write_script("m.py", "keep = []\nfor i in range(200):\n"
                                  "    keep.append(bytearray(100000))\n")
    r = run_lprof("-q", "--memory", "-o", "m.lprof", script)
    assert r.returncode == 0, r.stderr
    r = run_lprof("export", "m.lprof", "--format", "chrome", "-o", "m.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    validate_trace(doc)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters and max(e["args"]["bytes"] for e in counters) > 15_000_000
    ts = [e["ts"] for e in counters]
    assert ts == sorted(ts)
