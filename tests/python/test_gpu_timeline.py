"""The GPU timeline (lprof --gpu) without a GPU: device work kept with its
device times on the CPU timeline's clock, exported to the Chrome trace as
device/stream tracks with flows from the launching line, and the -l
listing's GPU idle column; on the stand-ins of test_gpu.py (the fake
libcupti and the fake Level Zero driver through Debian's loader), in their
real-time modes, whose device clocks are CLOCK_MONOTONIC plus a skew that
only cuptiGetTimestamp / zeDeviceGetGlobalTimestamps reveal. Durations come
from the fakes, so they are exact; where a start depends on when the host
launched (an in-order queue), the check allows for a late launch."""
import json
import os

import pytest

from conftest import ROOT, line_of
from test_gpu import _cuda_env, fake_cuda, fake_ze  # noqa: F401 (fixtures, named as parameters)

CUDA = os.path.join(ROOT, "tests", "scripts", "gpu_timeline_cuda.py")
ZE = os.path.join(ROOT, "tests", "scripts", "gpu_timeline_levelzero.py")
GPU_PID_BASE = (1 << 22) + (1 << 20)


def _trace(run_lprof, tmp_path, prof):
    r = run_lprof("export", prof, "--format", "chrome", "-o", tmp_path / "trace.json")
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "trace.json").read_text())


def _tracks(doc):
    """({pid: process name}, {(pid, tid): thread name})"""
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
               if e["ph"] == "M" and e["name"] == "thread_name"}
    return procs, threads


def _gpu_work(doc):
    return {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"].startswith("gpu,")}


def _check_flows(doc, script, work):
    """Every GPU event has exactly one flow, from an instant on the launching
    thread's track at the launch call (naming the launching line) to the
    event's start on its own track."""
    ev = doc["traceEvents"]
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(ends) == len(work)
    launches = {(e["pid"], e["tid"], e["ts"]): e for e in ev if e["ph"] == "i" and e["cat"] == "gpu,launch"}
    procs, threads = _tracks(doc)
    sites = {}
    for fid, f in ends.items():
        x = [w for w in work.values() if (w["pid"], w["tid"], w["ts"]) == (f["pid"], f["tid"], f["ts"])]
        assert len(x) == 1, f
        s = starts[fid]
        assert s["bp"] == f["bp"] == "e"
        assert s["pid"] < GPU_PID_BASE and (s["pid"], s["tid"]) in threads
        assert s["ts"] <= x[0]["ts"] + 1000  # work starts after its launch (1 ms for the clock pair's error)
        inst = launches[(s["pid"], s["tid"], s["ts"])]
        assert inst["name"] == "launch: " + x[0]["name"]
        assert inst["args"]["file"] == script and inst["args"]["correlation"] == x[0]["args"]["correlation"]
        assert x[0]["args"]["launched_from"] == f"{script}:{inst['args']['line']}"
        sites[x[0]["name"]] = inst["args"]["line"]
    return sites


def _idle(prof, script):
    fn = [f for f in prof["functions"] if f["name"].endswith("main") and f["file"] == script][0]
    times = {ln: t for ln, _h, t in fn["lines"]}
    return times, dict((ln, s) for ln, s in fn.get("gpu_idle", []))


def test_cuda_device_tracks_flows_and_idle(run_lprof, tmp_path, fake_cuda, load_profile):
    r = run_lprof("-l", "-v", "--gpu=cuda", "-o", tmp_path / "p.lprof", CUDA,
                  env=_cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
    assert r.returncode == 0, r.stderr
    doc = _trace(run_lprof, tmp_path, tmp_path / "p.lprof")
    procs, threads = _tracks(doc)
    gpu_pids = sorted(p for p in procs if p >= GPU_PID_BASE)
    assert [procs[p].split(" (")[0] for p in gpu_pids] == ["GPU 0", "GPU 1"]
    work = _gpu_work(doc)
    assert set(work) == {"short_kernel", "long_kernel", "[memcpy HtoD]", "other_device_kernel"}
    # durations as the fake gave them, in us
    assert work["short_kernel"]["dur"] == 2000.0 and work["long_kernel"]["dur"] == 1e9
    assert work["[memcpy HtoD]"]["dur"] == 3.0 and work["other_device_kernel"]["dur"] == 5.0
    assert work["[memcpy HtoD]"]["args"]["bytes"] == 4096
    assert work["[memcpy HtoD]"]["args"]["direction"] == "HtoD"
    # one in-order queue: the long kernel starts when the short one ends, or,
    # where the host launched it later than that (a busy machine: 3.4 ms
    # between the two lines under two CPU hogs), when it was launched
    gap = work["long_kernel"]["ts"] - work["short_kernel"]["ts"]
    assert gap >= 2000.0 - 0.01
    if gap > 2000.0 + 0.01:
        launch = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["name"] == "launch: long_kernel"]
        assert len(launch) == 1
        assert abs(work["long_kernel"]["ts"] - launch[0]["ts"]) <= 1000  # the clock pair's error
    # tracks: device and stream
    track = lambda n: (procs[work[n]["pid"]].split(" (")[0], threads[(work[n]["pid"], work[n]["tid"])])
    assert track("short_kernel") == track("long_kernel") == ("GPU 0", "stream 7")
    assert track("[memcpy HtoD]") == ("GPU 0", "stream 9")
    assert track("other_device_kernel") == ("GPU 1", "stream 3")
    sites = _check_flows(doc, CUDA, work)
    assert sites == {"short_kernel": line_of(CUDA, "marker: short"), "long_kernel": line_of(CUDA, "marker: long"),
                     "[memcpy HtoD]": line_of(CUDA, "marker: copy"),
                     "other_device_kernel": line_of(CUDA, "marker: device 1")}
    assert doc["otherData"]["gpu_clock"] == {"cuda": "cuptiGetTimestamp"}
    assert doc["otherData"]["gpu_dropped"] == 0
    # GPU idle: all of the line before any GPU work, none while the long kernel runs
    prof = load_profile(str(tmp_path / "p.lprof"))
    times, idle = _idle(prof, CUDA)
    before, during = line_of(CUDA, "marker: cpu before"), line_of(CUDA, "marker: cpu during")
    assert idle[before] == pytest.approx(times[before], rel=1e-6, abs=1e-8) and idle[before] > 0
    assert idle[during] == 0 and times[during] > 0
    assert all(0 <= idle[ln] <= times[ln] + 1e-8 for ln in idle)
    assert "GPU idle" in r.stdout and "no kernel, copy or memset ran" in r.stdout


def test_cuda_sampled_run_flows_and_idle(run_lprof, tmp_path, fake_cuda, load_profile):
    r = run_lprof("--wall", "--gpu=cuda", "-o", tmp_path / "p.lprof", CUDA,
                  env=_cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
    assert r.returncode == 0, r.stderr
    doc = _trace(run_lprof, tmp_path, tmp_path / "p.lprof")
    assert doc["otherData"]["layout"].startswith("timeline")
    _procs, threads = _tracks(doc)
    work = _gpu_work(doc)
    _check_flows(doc, CUDA, work)
    flow_tracks = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "s"}
    # launched from the main thread: the flows leave its sample track
    assert [threads[t].split(" (")[0] for t in flow_tracks] == ["MainThread"]
    samples = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "stack"]
    assert any((e["pid"], e["tid"]) in flow_tracks for e in samples)
    # sampled GPU idle: a sample whose wall interval no GPU work overlaps is idle
    prof = load_profile(str(tmp_path / "p.lprof"))
    idle = {line: (i, t) for path, line, _f, i, t in prof["gpu"]["idle_lines"] if path == CUDA}
    wall = {line: w for path, line, _f, _c, _n, _s, w, _k in prof["sampling"]["lines"] if path == CUDA}
    before, during = line_of(CUDA, "marker: cpu before"), line_of(CUDA, "marker: cpu during")
    if before in idle:  # all of the line's samples: no GPU work had started
        assert idle[before][0] == pytest.approx(idle[before][1]) == pytest.approx(wall[before])
    if during in idle:  # the long kernel runs through all of them
        assert idle[during][0] == 0 and idle[during][1] == pytest.approx(wall[during])
    assert before in idle or during in idle
    assert "GPU idle" in r.stdout


def test_gpu_timeline_cap_reports_drops(run_lprof, tmp_path, fake_cuda, load_profile):
    r = run_lprof("-l", "-v", "--gpu=cuda", "-o", tmp_path / "p.lprof", CUDA,
                  env=_cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1", LPROF_GPU_TRACE_MAX="2",
                                LPROF_GPU_SPANS_MAX="3"))
    assert r.returncode == 0, r.stderr
    assert "kept 2 kernels/copies and dropped 2" in r.stderr
    assert "line intervals past the 3 kept" in r.stderr
    assert "GPU timeline: 2 kernels/copies past its 2" in r.stdout
    prof = load_profile(str(tmp_path / "p.lprof"))
    tl = prof["gpu"]["stats"]["timeline"]
    assert (tl["records"], tl["capacity"], tl["dropped"]) == (2, 2, 2)
    assert tl["line_spans"] == 3 and tl["line_spans_dropped"] > 0
    part = prof["gpu_timeline"]["parts"][0]
    assert part["dropped"] == 2 and len(part["start_ns"]) == 2
    # the per-line columns still count every record
    assert prof["gpu"]["stats"]["join"]["records"] == 4
    doc = _trace(run_lprof, tmp_path, tmp_path / "p.lprof")
    assert len(_gpu_work(doc)) == 2 and doc["otherData"]["gpu_dropped"] == 2


def test_level_zero_device_tracks_flows_and_idle(run_lprof, tmp_path, fake_ze, load_profile):
    r = run_lprof("-l", "-v", "--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE,
                  env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze), "FAKE_ZE_REALTIME": "1"})
    assert r.returncode == 0, r.stderr
    doc = _trace(run_lprof, tmp_path, tmp_path / "p.lprof")
    procs, threads = _tracks(doc)
    work = _gpu_work(doc)
    assert set(work) == {"gemm_xe", "axpy_xe", "[memcpy HtoD]"}
    # 10 ns ticks: 200 and 2,000,000 groups of 1000 ticks, 6400 bytes / 64 ticks
    assert work["gemm_xe"]["dur"] == 2000.0 and work["axpy_xe"]["dur"] == 2e7
    assert work["[memcpy HtoD]"]["dur"] == 1.0 and work["[memcpy HtoD]"]["args"]["bytes"] == 6400
    # the fake's one engine: axpy 7 ticks after gemm ends, the copy 7 after axpy
    assert work["axpy_xe"]["ts"] - work["gemm_xe"]["ts"] == pytest.approx(2000.07, abs=0.01)
    assert work["[memcpy HtoD]"]["ts"] - work["axpy_xe"]["ts"] == pytest.approx(2e7 + 0.07, abs=0.01)
    track = lambda n: (procs[work[n]["pid"]].split(" (")[0], threads[(work[n]["pid"], work[n]["tid"])])
    assert track("gemm_xe") == track("axpy_xe") and track("gemm_xe")[0] == "GPU 0"
    assert track("[memcpy HtoD]")[0] == "GPU 0" and track("[memcpy HtoD]") != track("gemm_xe")
    assert track("gemm_xe")[1].startswith("command list ")
    sites = _check_flows(doc, ZE, work)
    assert sites == {"gemm_xe": line_of(ZE, "marker: short"), "axpy_xe": line_of(ZE, "marker: long"),
                     "[memcpy HtoD]": line_of(ZE, "marker: copy")}
    assert doc["otherData"]["gpu_clock"] == {"levelzero": "zeDeviceGetGlobalTimestamps"}
    prof = load_profile(str(tmp_path / "p.lprof"))
    times, idle = _idle(prof, ZE)
    before, during = line_of(ZE, "marker: cpu before"), line_of(ZE, "marker: cpu during")
    assert idle[before] == pytest.approx(times[before], rel=1e-6, abs=1e-8) and idle[before] > 0
    # busy but for (part of) the engine's 7-tick (70 ns) gap between gemm and axpy, if it falls there
    assert 0 <= idle[during] <= 72e-9 and times[during] > 0
    assert "GPU idle" in r.stdout


def test_level_zero_without_global_timestamps_anchors_at_the_first_append(run_lprof, tmp_path, fake_ze,
                                                                          load_profile):
    # the fake's default mode: no zeDeviceGetGlobalTimestamps, a device clock only work advances
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE, env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "p.lprof"))
    part = prof["gpu_timeline"]["parts"][0]
    assert part["clock"] == {"levelzero": "first append"}
    assert part["start_ns"][0] == part["launch_ns"][0]  # the anchor: first work starts at its append
    # later work keeps the device's own spacing from there
    assert part["start_ns"][1] - part["start_ns"][0] == 2000 * 1000 + 70
    assert part["dur_ns"] == [2_000_000, 20_000_000_000, 1000]


def test_merged_profiles_keep_each_process_gpu_timeline(run_lprof, tmp_path, fake_cuda, load_profile):
    for name in ("a", "b"):
        r = run_lprof("-l", "--gpu=cuda", "-o", tmp_path / f"{name}.lprof", CUDA,
                      env=_cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
        assert r.returncode == 0, r.stderr
    r = run_lprof("merge", tmp_path / "a.lprof", tmp_path / "b.lprof", "-o", tmp_path / "m.lprof")
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "m.lprof"))  # the loader validates the section
    assert len(prof["gpu_timeline"]["parts"]) == 2
    times, idle = _idle(prof, CUDA)
    before = line_of(CUDA, "marker: cpu before")
    assert idle[before] == pytest.approx(times[before], rel=1e-6, abs=1e-8)  # both runs' idle add up
    doc = _trace(run_lprof, tmp_path, tmp_path / "m.lprof")
    procs, _threads = _tracks(doc)
    assert sorted(n.split(" (")[0] for p, n in procs.items() if p >= GPU_PID_BASE) == ["GPU 0", "GPU 0", "GPU 1", "GPU 1"]
    work = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"].startswith("gpu,")]
    assert sorted(e["name"] for e in work).count("long_kernel") == 2 and len(work) == 8
    flows = [e for e in doc["traceEvents"] if e["ph"] == "f"]
    assert len(flows) == 8 and len({e["id"] for e in flows}) == 8


def test_malformed_gpu_timeline_is_refused(run_lprof, tmp_path, fake_cuda, load_profile):
    import copy

    from lprof.common.errors import ProfileFileError
    from lprof.model import validate
    r = run_lprof("-l", "--gpu=cuda", "-o", tmp_path / "p.lprof", CUDA, env=_cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
    assert r.returncode == 0, r.stderr
    good = load_profile(str(tmp_path / "p.lprof"))
    validate.check(good, "p")
    for key, bad in (("name", [9, 0, 0, 0]), ("stack", [7, 0, 0, 0]), ("dur_ns", [-1, 0, 0, 0]),
                     ("launch_ns", ["x", 0, 0, 0]), ("op", [9, 0, 0, 0]), ("device", [0])):
        prof = copy.deepcopy(good)
        prof["gpu_timeline"]["parts"][0][key] = bad
        with pytest.raises(ProfileFileError):
            validate.check(prof, "p")
    prof = copy.deepcopy(good)
    prof["gpu"]["idle_lines"] = [["f.py", 3, "f", 0.5]]  # a number short
    with pytest.raises(ProfileFileError):
        validate.check(prof, "p")
    prof = copy.deepcopy(good)
    prof["gpu_timeline"]["parts"][0]["stacks"][0] = [10 ** 6]  # no such frame
    with pytest.raises(ProfileFileError):
        validate.check(prof, "p")
