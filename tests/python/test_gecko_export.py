"""Firefox Profiler export (issue #35): `lprof export --format gecko` writes
the processed-profile format (export/gecko.py). check_processed() holds the
format's structural rules as the Profiler's own loading relies on them; it
runs on a real sampled profile of a two-thread program, on a merged profile
of two processes, and on hand-made profiles whose numbers are known."""
import gzip
import json
import math
import subprocess
import sys

import pytest

from conftest import lprof_env

from lprof.export import gecko
from lprof.model import profile_file

PALETTE = {"transparent", "purple", "green", "orange", "yellow", "lightblue", "blue",
           "brown", "magenta", "red", "lightred", "darkgray", "grey"}
TABLES = {
    "frameTable": ("address", "inlineDepth", "category", "subcategory", "func", "nativeSymbol",
                   "innerWindowID", "line", "column"),
    "funcTable": ("name", "isJS", "relevantForJS", "resource", "fileName", "lineNumber",
                  "columnNumber"),
    "resourceTable": ("lib", "name", "host", "type"),
    "nativeSymbols": ("libIndex", "address", "name", "functionSize"),
    "stackTable": ("frame", "prefix"),
    "samples": ("stack", "time", "weight"),
    "markers": ("data", "name", "startTime", "endTime", "phase", "category"),
}
THREAD_KEYS = ("name", "pid", "tid", "isMainThread", "processType", "processStartupTime",
               "processShutdownTime", "registerTime", "unregisterTime", "pausedRanges",
               "stringArray")


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _index(v, n, what, nullable=False):
    if v is None:
        assert nullable, f"{what}: null where an index is needed"
        return
    assert isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n, \
        f"{what}: {v!r} not an index below {n}"


def check_processed(doc):
    """The structural rules of the processed format at gecko.PROCESSED_VERSION
    (AssertionError naming the first one broken)."""
    json.loads(json.dumps(doc, allow_nan=False))   # plain JSON, no NaN or Infinity
    meta = doc["meta"]
    assert meta["preprocessedProfileVersion"] == gecko.PROCESSED_VERSION
    assert isinstance(meta["version"], int)
    for key in ("interval", "startTime"):
        assert _num(meta[key]), key
    assert meta["interval"] > 0
    assert meta["product"] == "lprof"
    assert meta["processType"] == 0 and meta["stackwalk"] in (0, 1)
    cats = meta["categories"]
    assert cats and any(c["color"] == "grey" for c in cats), "a grey default category"
    for c in cats:
        assert isinstance(c["name"], str) and c["color"] in PALETTE, c
        assert c["subcategories"] and isinstance(c["subcategories"][0], str), c
    schemas = {}
    for s in meta["markerSchema"]:
        assert isinstance(s["name"], str) and isinstance(s["display"], list)
        assert "data" not in s   # v55: fields, not data
        for f in s["fields"]:
            assert isinstance(f["key"], str) and isinstance(f["format"], str), f
        schemas[s["name"]] = {f["key"] for f in s["fields"]}
    assert doc["libs"] == [] and isinstance(doc["threads"], list) and doc["threads"]
    assert "shared" not in doc   # before v56 each thread has its strings
    seen = set()
    for th in doc["threads"]:
        for key in THREAD_KEYS:
            assert key in th, f"thread lacks {key}"
        assert isinstance(th["pid"], str), "pid is a string since v47"
        assert isinstance(th["tid"], (int, str)) and isinstance(th["isMainThread"], bool)
        assert (th["pid"], th["tid"]) not in seen, "one thread per (pid, tid)"
        seen.add((th["pid"], th["tid"]))
        strings = th["stringArray"]
        assert all(isinstance(s, str) for s in strings)
        for name, cols in TABLES.items():
            table = th[name]
            n = table["length"]
            assert isinstance(n, int) and n >= 0
            for col in cols:
                assert len(table[col]) == n, f"{name}.{col}: {len(table[col])} rows of {n}"
        ft, fn, rt, st = th["frameTable"], th["funcTable"], th["resourceTable"], th["stackTable"]
        assert "implementation" not in ft, "v54 removed frameTable.implementation"
        assert "category" not in st, "v53 removed stackTable.category"
        for i in range(ft["length"]):
            _index(ft["func"][i], fn["length"], "frameTable.func")
            _index(ft["category"][i], len(cats), "frameTable.category", nullable=True)
            if ft["category"][i] is not None:
                _index(ft["subcategory"][i], len(cats[ft["category"][i]]["subcategories"]),
                       "frameTable.subcategory")
            assert ft["address"][i] == -1 or ft["address"][i] >= 0
            assert ft["line"][i] is None or (isinstance(ft["line"][i], int) and ft["line"][i] > 0)
        for i in range(fn["length"]):
            _index(fn["name"][i], len(strings), "funcTable.name")
            _index(fn["fileName"][i], len(strings), "funcTable.fileName", nullable=True)
            assert fn["resource"][i] == -1 or 0 <= fn["resource"][i] < rt["length"]
            assert isinstance(fn["isJS"][i], bool) and isinstance(fn["relevantForJS"][i], bool)
        for i in range(rt["length"]):
            _index(rt["name"][i], len(strings), "resourceTable.name")
        for i in range(st["length"]):
            _index(st["frame"][i], ft["length"], "stackTable.frame")
            p = st["prefix"][i]
            assert p is None or (isinstance(p, int) and 0 <= p < i), \
                f"stack {i}: prefix {p} must come before it (a tree)"
        # distinct stacks: no two nodes with the same (prefix, frame)
        assert len(set(zip(st["prefix"], st["frame"]))) == st["length"]
        sm = th["samples"]
        assert sm["weightType"] in ("samples", "tracing-ms", "bytes")
        last = -math.inf
        for i in range(sm["length"]):
            _index(sm["stack"][i], st["length"], "samples.stack", nullable=True)
            t = sm["time"][i]
            assert _num(t) and t >= last, "samples in time order"
            last = t
            assert _num(sm["weight"][i]) and sm["weight"][i] >= 0
        mk = th["markers"]
        for i in range(mk["length"]):
            _index(mk["name"][i], len(strings), "markers.name")
            _index(mk["category"][i], len(cats), "markers.category")
            assert mk["phase"][i] in (0, 1, 2, 3)
            s, e = mk["startTime"][i], mk["endTime"][i]
            if mk["phase"][i] == 1:
                assert _num(s) and _num(e) and e >= s, (s, e)
            data = mk["data"][i]
            if data is not None:
                assert data["type"] in schemas, data
                assert set(data) - {"type"} <= schemas[data["type"]], data
    return doc


def _stacks_of(th):
    """Per sample: its frames' function names, root first."""
    st, ft, fn, strings = th["stackTable"], th["frameTable"], th["funcTable"], th["stringArray"]
    out = []
    for s in th["samples"]["stack"]:
        names = []
        while s is not None:
            names.append(strings[fn["name"][ft["func"][st["frame"][s]]]])
            s = st["prefix"][s]
        out.append(names[::-1])
    return out


TWO_THREADS = """\
import threading, time

def spin(seconds):
    t = time.thread_time()
    while time.thread_time() - t < seconds:
        pass

def worker():
    spin(0.3)

def main_work():
    spin(0.3)

th = threading.Thread(target=worker, name="worker")
th.start()
main_work()
th.join()
"""


def _lprof(cwd, *args):
    return subprocess.run([sys.executable, "-m", "lprof", *map(str, args)], cwd=cwd,
                          env=lprof_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def two_threads(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gecko")
    (tmp / "two.py").write_text(TWO_THREADS)
    r = _lprof(tmp, "-q", "-o", "two.lprof", "two.py")
    assert r.returncode == 0, r.stderr
    return tmp


def test_two_thread_run_exports_valid(two_threads):
    tmp = two_threads
    r = _lprof(tmp, "export", "two.lprof", "--format", "gecko", "-o", "two.json")
    assert r.returncode == 0, r.stderr
    doc = check_processed(json.loads((tmp / "two.json").read_text()))
    threads = {th["name"]: th for th in doc["threads"]}
    assert {"MainThread", "worker"} <= set(threads)
    assert threads["MainThread"]["isMainThread"] and not threads["worker"]["isMainThread"]
    main_leaves = {s[-1] for s in _stacks_of(threads["MainThread"]) if s}
    worker_stacks = _stacks_of(threads["worker"])
    assert "main_work" in main_leaves or "spin" in main_leaves
    assert any("worker" in s for s in worker_stacks)
    assert not any("worker" in s for s in _stacks_of(threads["MainThread"]))
    # CPU time weighted: each thread's weights sum to about its 0.3 s of CPU
    for name in ("MainThread", "worker"):
        sm = threads[name]["samples"]
        assert sm["weightType"] == "tracing-ms"
        assert 150 < sum(sm["weight"]) < 600, (name, sum(sm["weight"]))
    # one run marker per span, covering the samples
    mk = threads["worker"]["markers"]
    strings = threads["worker"]["stringArray"]
    runs = [i for i in range(mk["length"]) if strings[mk["name"][i]] == "On CPU"]
    assert runs
    assert sum(mk["data"][i]["samples"] for i in runs) == threads["worker"]["samples"]["length"]


def test_gz_output(two_threads):
    tmp = two_threads
    r = _lprof(tmp, "export", "two.lprof", "--format", "gecko", "-o", "two.json.gz")
    assert r.returncode == 0, r.stderr
    with gzip.open(tmp / "two.json.gz", "rt") as fh:
        check_processed(json.load(fh))


def test_merged_profile_exports_valid(two_threads, tmp_path):
    (tmp_path / "other.py").write_text(
        "def other():\n    s = 0\n    for i in range(3_000_000):\n        s += i\n    return s\n"
        "other()\n")
    r = _lprof(tmp_path, "-q", "-o", "b.lprof", "other.py")
    assert r.returncode == 0, r.stderr
    r = _lprof(tmp_path, "merge", str(two_threads / "two.lprof"), "b.lprof", "-o", "m.lprof")
    assert r.returncode == 0, r.stderr
    r = _lprof(tmp_path, "export", "m.lprof", "--format", "gecko", "-o", "m.json")
    assert r.returncode == 0, r.stderr
    doc = check_processed(json.loads((tmp_path / "m.json").read_text()))
    pids = {th["pid"] for th in doc["threads"]}
    other_pid = str(profile_file.load(str(tmp_path / "b.lprof"))["meta"]["pid"])
    assert len(pids) == 2 and other_pid in pids
    for th in doc["threads"]:
        names = {n for s in _stacks_of(th) for n in s}
        assert ("other" in names) == (th["pid"] == other_pid)


def _synthetic():
    frames = [["/app/s.py", "a", 1, 2], ["/app/s.py", "b", 5, 6], ["/app/s.py", "c", 8, 9],
              ["/usr/lib/libm.so.6", "cos", 0, 0], ["<lprof>", "[truncated]", 0, 0]]
    return {"format": "lprof", "version": 2,
            "meta": {"argv": ["s.py"], "started": 1000.0, "pid": 7, "duration_s": 0.2},
            "sampling": {"mode": "cpu", "rate_hz_effective": 250,
                         "threads": {"5": "MainThread"}},
            "stacks": {"frames": frames, "columns": [],
                       "stacks": [[[0, 1], 5, {"cpu_python_s": 0.012}],
                                  [[0, 2, 3], 5, {"cpu_native_s": 0.004}]]},
            "timeline": {"parts": [{
                "pid": 7, "start_s": 1000.0, "stride": 1, "threads": [[5, "MainThread"]],
                "nodes": {"parent": [-1, 0, 0, 2], "frame": [0, 1, 2, 3]},
                # b at 4, 8, 12 ms; c > cos at 16 ms; 100 ms without samples; b at 120 ms
                "t_us": [4000, 4000, 4000, 4000, 104000], "node": [1, 1, 1, 3, 1],
                "thread": [0] * 5, "weight_us": [4000] * 5}]}}


def test_synthetic_times_weights_categories_markers():
    doc = check_processed(gecko.profile_doc(_synthetic()))
    assert doc["meta"]["interval"] == 4.0 and doc["meta"]["startTime"] == 1_000_000.0
    (th,) = doc["threads"]
    sm = th["samples"]
    assert sm["time"] == [0.0, 4.0, 8.0, 12.0, 116.0]   # each at the start of what it covers
    assert sm["weight"] == [4.0] * 5
    assert _stacks_of(th) == [["a", "b"]] * 3 + [["a", "c", "cos (libm.so.6)"], ["a", "b"]]
    cats = [c["name"] for c in doc["meta"]["categories"]]
    ft = th["frameTable"]
    by_name = {th["stringArray"][th["funcTable"]["name"][ft["func"][i]]]: i
               for i in range(ft["length"])}
    assert cats[ft["category"][by_name["b"]]] == "Python"
    assert cats[ft["category"][by_name["cos (libm.so.6)"]]] == "Native"
    assert ft["line"][by_name["b"]] == 6 and ft["line"][by_name["cos (libm.so.6)"]] is None
    mk = th["markers"]
    got = [(th["stringArray"][mk["name"][i]], mk["startTime"][i], mk["endTime"][i],
            cats[mk["category"][i]]) for i in range(mk["length"])]
    assert got == [("On CPU", 0.0, 16.0, "Python"), ("Off CPU", 16.0, 116.0, "Idle/Wait"),
                   ("On CPU", 116.0, 120.0, "Python")]


def test_checker_catches_broken_documents():
    """The checker is not vacuous: each broken rule is caught."""
    def broken(change):
        doc = json.loads(json.dumps(gecko.profile_doc(_synthetic())))
        change(doc["threads"][0], doc)
        with pytest.raises((AssertionError, KeyError, IndexError)):
            check_processed(doc)
    broken(lambda th, d: th["stackTable"]["prefix"].__setitem__(0, 1))      # not a tree
    broken(lambda th, d: th["samples"]["time"].reverse())                   # out of order
    broken(lambda th, d: th["frameTable"]["func"].append(0))                # column length
    broken(lambda th, d: th["frameTable"]["category"].__setitem__(0, 99))   # no such category
    broken(lambda th, d: d["meta"]["categories"][0].__setitem__("color", "pink"))
    broken(lambda th, d: th["funcTable"]["name"].__setitem__(0, 10_000))    # no such string


def test_without_timeline_stacks_end_to_end():
    prof = _synthetic()
    del prof["timeline"]
    doc = check_processed(gecko.profile_doc(prof))
    (th,) = doc["threads"]
    assert th["samples"]["time"] == [0.0, 12.0] and th["samples"]["weight"] == [12.0, 4.0]
    assert "no sample timeline" in json.dumps(doc["meta"]["extra"])


def test_gpu_work_is_markers_per_stream():
    """lprof --gpu: each device stream is a thread of markers, one per record,
    at its device times, named by the work and tied to the launching line."""
    prof = _synthetic()
    prof["gpu_timeline"] = {"parts": [{
        "pid": 7, "start_s": 1000.0, "clock": {"cuda": "cuptiGetTimestamp"}, "capacity": 8,
        "dropped": 0, "names": ["gemm", "[memcpy HtoD]"], "stacks": [[0, 1]], "threads": [5],
        "start_ns": [5_000_000, 2_000_000, 9_000_000], "dur_ns": [1_500_000, 500_000, 250_000],
        "launch_ns": [4_900_000, 1_900_000, None], "device": [0, 0, 0], "stream": [7, 8, 7],
        "op": [0, 1, 0], "dir": [0, 1, 0], "bytes": [0, 4096, 0], "corr": [1, 2, 3],
        "name": [0, 1, 0], "stack": [0, 0, -1], "thread": [0, 0, -1]}]}
    doc = check_processed(gecko.profile_doc(prof))
    gpu = {th["name"]: th for th in doc["threads"] if th["name"].startswith("GPU")}
    assert set(gpu) == {"GPU 0 stream 7", "GPU 0 stream 8"}
    cats = [c["name"] for c in doc["meta"]["categories"]]
    th = gpu["GPU 0 stream 7"]
    mk = th["markers"]
    got = [(th["stringArray"][mk["name"][i]], mk["startTime"][i], mk["endTime"][i],
            cats[mk["category"][i]], mk["data"][i]["launched_from"]) for i in range(mk["length"])]
    assert got == [("gemm", 5.0, 6.5, "GPU", "/app/s.py:6"), ("gemm", 9.0, 9.25, "GPU", "")]
    assert gpu["GPU 0 stream 8"]["markers"]["data"][0]["bytes"] == 4096
    assert gpu["GPU 0 stream 8"]["samples"]["length"] == 0
