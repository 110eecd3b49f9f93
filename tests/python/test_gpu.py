"""lprof --gpu without a GPU: the real CUPTI collector against a test double
of libcupti (tests/gpu/fake_cupti.c, built here against the real CUPTI
headers), the real Level Zero collector through Debian's real loader and its
tracing layer with a test driver (tests/gpu/fake_ze_driver.c); the absence
paths; option checks. The join itself has C tests (tests/c/test_gpu_join.c)."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, line_of

CUDA_WORKLOAD = os.path.join(ROOT, "tests", "scripts", "gpu_cuda_workload.py")
ZE_WORKLOAD = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_workload.py")
US = 1e-6


def _cupti_include():
    roots = [os.environ.get("CUDA_HOME")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    for r in filter(None, roots):
        if os.path.exists(os.path.join(r, "include", "cupti.h")):
            return os.path.join(r, "include")
    return None


def _cc(out, src, *flags):
    subprocess.run(["cc", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                    os.path.join(ROOT, "tests", "gpu", src), *flags], check=True)


@pytest.fixture(scope="session")
def fake_cuda(tmp_path_factory):
    """A folder with a fake libcuda.so.1 and a fake libcupti.so.13."""
    inc = _cupti_include()
    if inc is None:
        pytest.skip("CUPTI headers not found (no CUDA toolkit): the fake libcupti cannot be built")
    d = tmp_path_factory.mktemp("fake_cuda")
    _cc(d / "libcuda.so.1", "fake_cuda.c", "-Wl,-soname,libcuda.so.1")
    _cc(d / "libcupti.so.13", "fake_cupti.c", "-I" + inc, "-lpthread")
    return d


@pytest.fixture(scope="session")
def fake_ze(tmp_path_factory):
    if not os.path.exists("/usr/include/level_zero/ze_ddi.h"):
        pytest.skip("Level Zero headers not found (Debian: libze-dev)")
    d = tmp_path_factory.mktemp("fake_ze")
    with open("/usr/include/level_zero/ze_ddi.h") as fh:  # spec 1.14+ (loader 1.25 and newer)
        new = "pfnAppendLaunchKernelWithArguments" in fh.read()
    # the driver fills the entries newer than its headers by their place in
    # the loader's table; where the headers declare them, it checks the places
    _cc(d / "libfake_ze.so", "fake_ze_driver.c", "-fvisibility=hidden", *(["-DFAKE_ZE_NEW_HEADERS"] if new else []))
    return d / "libfake_ze.so"


def _cuda_env(fake, **extra):
    env = {"LD_LIBRARY_PATH": str(fake), "LPROF_CUPTI_PATH": str(fake / "libcupti.so.13")}
    env.update(extra)
    return env


def _export(run_lprof, tmp_path, prof):
    r = run_lprof("export", prof, "--format", "json", "-o", tmp_path / "out.json")
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "out.json").read_text())


def _gpu_lines(doc):
    return {row["line"]: row for row in doc["gpu"]["lines"]
            if row["file"].endswith(os.path.basename(CUDA_WORKLOAD))
            or row["file"].endswith(os.path.basename(ZE_WORKLOAD))}


def test_cuda_work_is_charged_to_the_launching_lines(run_lprof, run_python, tmp_path, fake_cuda):
    plain = run_python(CUDA_WORKLOAD, env=_cuda_env(fake_cuda))
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "gpu.folded",
                  "--flamegraph", tmp_path / "gpu.svg", CUDA_WORKLOAD, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    # the workload prints whether a CUPTI client enabled the runtime and driver launch callbacks
    assert plain.stdout == "enabled 0 0\n" and r.stdout.startswith("enabled 1 1\n")
    lines = _gpu_lines(_export(run_lprof, tmp_path, tmp_path / "p.lprof"))
    at = lambda m: lines[line_of(CUDA_WORKLOAD, "marker: " + m)]
    assert at("gemm")["kernel_s"] == pytest.approx(10 * 30 * US)
    assert at("gemm")["kernels"] == 10
    assert at("gemm")["launches"] == 10  # the nested driver call is the same launch
    assert at("add")["kernel_s"] == pytest.approx(10 * 1 * US)
    assert at("copy")["h2d_bytes"] == 10 * 4096 and at("copy")["copy_s"] == pytest.approx(10 * 0.5 * US)
    assert at("copy")["kernel_s"] == 0
    assert at("alloc")["alloc_bytes"] == 10 << 20
    assert at("alloc")["peak_bytes"] == 1 << 20  # freed each step: 1 MiB live at the peak
    other = at("other thread")
    assert other["kernel_s"] == pytest.approx(7 * US) and other["other_thread_s"] == pytest.approx(7 * US)
    folded = (tmp_path / "gpu.folded").read_text().splitlines()
    gemm = [l for l in folded if l.endswith(" 300")]
    assert gemm and gemm[0].rsplit(" ", 1)[0].endswith(";gemm(float*, float*, int)"), folded
    assert any(";step (" in l and ";matmul (" in l for l in gemm)
    assert any("[GPU work from a thread without Python]" in l and l.endswith("backward_kernel 7")
               for l in folded)
    assert "GPU s" in r.stdout and "GPU (CUDA)" in r.stdout
    assert "gemm(float*, float*, int)" in (tmp_path / "gpu.svg").read_text()


def test_cuda_columns_in_the_line_profiler_listing(run_lprof, tmp_path, fake_cuda, load_profile):
    r = run_lprof("-l", "-v", "--gpu=cuda", "-o", tmp_path / "p.lprof", CUDA_WORKLOAD,
                  env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    from lprof.model.sections import gpu_line_columns
    prof = load_profile(str(tmp_path / "p.lprof"))
    cols = gpu_line_columns(prof, functions=prof["functions"])
    call = cols[(CUDA_WORKLOAD, line_of(CUDA_WORKLOAD, "marker: matmul call"))]
    # matmul() is not profiled: its kernels belong to the profiled line that called it
    assert call["kernel_s"] == pytest.approx(10 * 30 * US) and call["kernels"] == 10
    assert cols[(CUDA_WORKLOAD, line_of(CUDA_WORKLOAD, "marker: alloc"))]["alloc_bytes"] == 10 << 20
    listing = r.stdout
    row = [l for l in listing.splitlines() if l.lstrip().startswith(str(line_of(CUDA_WORKLOAD, "marker: matmul call")) + " ")]
    assert row and "0.000300" in row[0], listing


def test_cupti_held_by_another_tool(run_lprof, run_python, tmp_path, fake_cuda):
    env = _cuda_env(fake_cuda, FAKE_CUPTI_BUSY="Nsight Systems", WORKLOAD_EXIT="3")
    plain = run_python(CUDA_WORKLOAD, env=env)
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", CUDA_WORKLOAD, env=env)
    assert r.returncode == plain.returncode == 3
    assert "CUPTI is already in use by Nsight Systems" in r.stderr
    assert r.stdout.startswith(plain.stdout) and plain.stdout == "enabled 0 0\n"
    assert (tmp_path / "p.lprof").exists()


def test_no_driver_one_line_and_the_profile_as_usual(run_lprof, tmp_path, write_script):
    script = write_script("s.py", "import sys\nprint('hi')\nx = sum(range(8000000))\nsys.exit(3)\n")
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "s.folded", script,
                  env={"LD_LIBRARY_PATH": "", "ZE_ENABLE_ALT_DRIVERS": ""})
    assert r.returncode == 3 and r.stdout.startswith("hi\n")
    assert "s.py:3)" in (tmp_path / "s.folded").read_text()  # CPU stacks, as without --gpu
    msgs = [l for l in r.stderr.splitlines() if "--gpu" in l]
    assert len(msgs) == 1 and "no NVIDIA driver" in msgs[0] and "Level Zero" in msgs[0], r.stderr
    assert (tmp_path / "p.lprof").exists()


def test_level_zero_end_to_end_through_the_loaders_tracing_layer(run_lprof, tmp_path, fake_ze):
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "gpu.folded",
                  "--stacks-metric", "gpu", ZE_WORKLOAD, env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ze done\n")
    lines = _gpu_lines(_export(run_lprof, tmp_path, tmp_path / "p.lprof"))
    at = lambda m: lines[line_of(ZE_WORKLOAD, "marker: " + m)]
    # 10 ns per tick: gemm 4 x 50 x 1000 ticks, axpy 4 x 2 x 1000, copies 4 x 1000
    assert at("launch")["kernel_s"] == pytest.approx((4 * 50 + 4 * 2) * 1000 * 10e-9)
    assert at("launch")["kernels"] == 8
    assert at("copy")["h2d_bytes"] == 4 * 64000 and at("copy")["copy_s"] == pytest.approx(4 * 1000 * 10e-9)
    # the program's own event: lprof asked its pool for timestamps
    assert at("own event")["kernel_s"] == pytest.approx(3 * 1000 * 10e-9)
    assert at("alloc")["alloc_bytes"] == 64000 and at("alloc")["peak_bytes"] == 64000
    folded = (tmp_path / "gpu.folded").read_text()
    assert ";launch (" in folded and "gemm_xe 2000" in folded and "axpy_xe 80" in folded


def test_level_zero_tracing_layer_turned_off_is_said(run_lprof, tmp_path, fake_ze):
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE_WORKLOAD,
                  env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze), "ZE_ENABLE_TRACING_LAYER": "0"})
    assert r.returncode == 0 and r.stdout.startswith("ze done\n")
    # the user's setting is kept, with any loader (from 1.16 on the loader
    # could turn the layer on at run time, and lprof would then make a
    # tracer whose callbacks never come unless it looked)
    assert "tracing layer is off (ZE_ENABLE_TRACING_LAYER=0 in the environment" in r.stderr


ZE_LATE = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_late_start.py")


def test_level_zero_initialised_before_lprof_started(run_python, fake_ze, monkeypatch):
    """The process's first zeInit ran without ZE_ENABLE_TRACING_LAYER, so the
    loader's tracing layer is off when the collector starts: a loader with
    the run-time switch (1.16+) gets it turned on, every launch is timed,
    and it is off again after stop; an older loader has no switch: said."""
    monkeypatch.delenv("ZE_ENABLE_TRACING_LAYER", raising=False)
    r = run_python(ZE_LATE, env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    if not out["runtime_switch"]:  # Debian 12's loader 1.8
        assert "tracing layer is off" in out["status"], out
        return
    assert out["status"] == "active", out
    assert (out["appends"], out["records"], out["lost"], out["layer_turned_on"]) == (3, 3, 0, 1), out
    if out["layer_before"] is not None:  # loader 1.26.2+ can say
        assert out["layer_before"] is False and out["layer_after"] is False, out


def test_gpu_options_are_checked_before_the_run(run_lprof, write_script):
    script = write_script("s.py", "open('ran', 'w').close()\n")
    r = run_lprof("--stacks", "x.folded", "--stacks-metric", "gpu", script)
    assert r.returncode == 2 and "needs --gpu" in r.stderr
    assert not os.path.exists(os.path.join(os.path.dirname(script), "ran"))


def test_graph_launch_and_torch_profiler_handover(run_lprof, run_python, tmp_path, fake_cuda,
                                                  write_script):
    """A CUDA graph's kernels go to the line that launched the graph; when
    the program starts a device profiler (a stand-in of torch's, with the
    method every torch profiler prepares its trace through), lprof flushes,
    leaves CUPTI to it and says so: work launched after that is not charged,
    work before it is, and the program runs as without lprof."""
    write_script("torch/__init__.py", "")
    write_script("torch/autograd/__init__.py", "")
    write_script("torch/autograd/profiler.py", """\
        class profile:
            def __init__(self, use_device=None):
                self.use_device = use_device
            def _prepare_trace(self):
                print("prepared", self.use_device)
            def __enter__(self):
                self._prepare_trace()
                return self
            def __exit__(self, *exc):
                return False
        """)
    script = write_script("prog.py", """\
        import ctypes, os
        lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
        lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
        lib.fake_cupti_graph_launch(3, 2000)  # marker: graph
        import torch.autograd.profiler as tap
        with tap.profile():  # a CPU-only profile: CUPTI stays lprof's
            lib.fake_cupti_launch_kernel(b"cpu_profiled", 5000)  # marker: kept
        with tap.profile(use_device="cuda"):
            lib.fake_cupti_launch_kernel(b"after_handover", 9000)  # marker: handed over
        print("end")
        """)
    plain = run_python(script, env=_cuda_env(fake_cuda))
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(plain.stdout) and plain.stdout == "prepared None\nprepared cuda\nend\n"
    assert "torch.profiler started" in r.stderr
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = {row["line"]: row for row in doc["gpu"]["lines"]}
    graph = lines[line_of(script, "marker: graph")]
    assert graph["kernels"] == 3 and graph["kernel_s"] == pytest.approx(3 * 2 * US)
    assert graph["launches"] == 1
    assert lines[line_of(script, "marker: kept")]["kernel_s"] == pytest.approx(5 * US)
    assert line_of(script, "marker: handed over") not in lines
    assert any("handed CUPTI" in n for n in doc["gpu"]["notes"])


def test_gpu_work_of_followed_children_is_merged(run_lprof, tmp_path, fake_cuda, write_script):
    """Spawned pool workers start their own CUPTI session (one per process)
    and the parent's merged profile charges their kernels to their line."""
    script = write_script("pool.py", """\
        import ctypes, os, multiprocessing as mp
        def work(i):
            lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
            lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
            lib.fake_cupti_launch_kernel(b"child_kernel", 4000)  # marker: child
            return i
        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(2) as pool:
                print(sum(pool.map(work, range(4))))
        """)
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("6\n")
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = {row["line"]: row for row in doc["gpu"]["lines"]}
    child = lines[line_of(script, "marker: child")]
    assert child["kernels"] == 4 and child["kernel_s"] == pytest.approx(4 * 4 * US)
    assert doc["gpu"]["backends"]["cuda"] == "active"


ZE_EVENTS = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_events.py")


def test_level_zero_pool_exhaustion_and_reused_events(run_lprof, tmp_path, fake_ze):
    """More un-synced launches than lprof's 1024 events per context: lprof
    reads the finished ones and retries instead of losing launches. The
    program's event signalled again (or reset on the device) before a host
    sync: the first launch is read before the event is reused (on a real
    device, a launch still running then is counted as lost, never given the
    later launch's time)."""
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE_EVENTS,
                  env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ze events done\n")
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == ZE_EVENTS}
    at = lambda m: lines[line_of(ZE_EVENTS, "marker: " + m)]
    lz = doc["gpu"]["stats"]["levelzero"]
    assert lz["lost"] == 0 and lz["retried"] > 0, lz
    assert at("many")["kernels"] == 1500 and at("many")["kernel_s"] == pytest.approx(1500 * 1000 * 10e-9)
    # 10 ns per tick, 1000 ticks per group
    assert at("first use")["kernel_s"] == pytest.approx(5 * 1000 * 10e-9)
    assert at("reused")["kernel_s"] == pytest.approx(7 * 1000 * 10e-9)
    assert at("after reset")["kernel_s"] == pytest.approx(2 * 1000 * 10e-9)


ZE_LIST_SYNC = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_list_sync.py")


def test_level_zero_command_list_sync_reads_finished_work(run_lprof, tmp_path, fake_ze):
    """3 x 600 launches, each batch followed by zeCommandListHostSynchronize:
    where the loader traces it (1.10+), lprof reads the finished launches
    there, so its 1024 events per context never run out (nothing retried).
    Debian 12's loader 1.8 has neither the call nor its tracing."""
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE_LIST_SYNC,
                  env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lz = doc["gpu"]["stats"]["levelzero"]
    if r.stdout.startswith("no zeCommandListHostSynchronize\n"):
        assert lz["list_sync_hooked"] == 0, lz
        return
    assert r.stdout.startswith("ze list sync done\n")
    assert lz["list_sync_hooked"] == 1 and lz["retried"] == 0 and lz["lost"] == 0, lz
    lines = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == ZE_LIST_SYNC}
    assert lines[line_of(ZE_LIST_SYNC, "marker: batch")]["kernels"] == 1800


ZE_V2 = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_v2.py")
ZE_INFLIGHT = os.path.join(ROOT, "tests", "scripts", "gpu_levelzero_inflight.py")
TICK = 10e-9  # the fake driver's timer: 100 MHz


def _ze_lines(doc, script):
    rows = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == script}
    return lambda m: rows.get(line_of(script, "marker: " + m), {"kernels": 0, "kernel_s": 0, "copy_s": 0,
                                                                 "d2h_bytes": 0, "launches": 0})


def test_level_zero_v2_adapter_step_is_attributed(run_lprof, tmp_path, fake_ze):
    """The calls of Intel's Unified Runtime v2 adapter for a PyTorch XPU
    step (fill, launch with arguments, cooperative and indirect launches,
    region copy, a regular list appended to the immediate one, barriers,
    host-reset events), with work still running after each append: every
    kernel, fill and copy is charged to its line, counts exact, nothing
    lost. The regular list's work is timed at its first execution (on its
    recording line) and its later executions are counted and said."""
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "gpu.folded",
                  "--stacks-metric", "gpu", ZE_V2, env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    done = r.stdout.splitlines()[0].split()
    assert done[:3] == ["ze", "v2", "done"], r.stdout
    have_args, have_immediate, have_list_sync = (int(x) for x in done[3:])
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    at = _ze_lines(doc, ZE_V2)
    lz = doc["gpu"]["stats"]["levelzero"]
    assert lz["lost"] == 0 and lz["no_event"] == 0 and lz["untimed_calls"] == 0, lz
    assert at("launch")["kernels"] == 3 and at("launch")["kernel_s"] == pytest.approx(3 * 20 * 1000 * TICK)
    assert at("cooperative")["kernels"] == 3 and at("cooperative")["kernel_s"] == pytest.approx(3 * 4 * 1000 * TICK)
    assert at("indirect")["kernels"] == 3 and at("indirect")["kernel_s"] == pytest.approx(3 * 6 * 1000 * TICK)
    assert at("fill")["copy_s"] == pytest.approx(3 * 65536 // 64 * TICK) and at("fill")["launches"] == 3
    assert at("region")["d2h_bytes"] == 3 * 25600 and at("region")["copy_s"] == pytest.approx(3 * 400 * TICK)
    assert at("copy")["d2h_bytes"] == 3 * 64000 and at("copy")["copy_s"] == pytest.approx(3 * 1000 * TICK)
    # the regular list: recorded once (2 launches), executed 3 times
    assert at("recorded")["kernels"] == 2 and at("recorded")["kernel_s"] == pytest.approx(2 * 3 * 1000 * TICK)
    assert lz["reexecuted"] == 4, lz
    assert "4 kernels/copies of regular command lists executed again" in r.stdout, r.stdout
    assert lz["appends"] == 3 * 6 + 2 and lz["records"] == 3 * 6 + 2, lz
    folded = (tmp_path / "gpu.folded").read_text()
    assert "[memset]" in folded and "coop_v2" in folded and "indirect_v2" in folded
    hooked = lz["hooked"].split(",")
    # each newer call the program used is hooked where the loader has it
    assert bool(have_args) == ("CommandListAppendLaunchKernelWithArguments" in hooked), lz
    assert bool(have_immediate) == ("CommandListImmediateAppendCommandListsExp" in hooked), lz
    assert bool(have_list_sync) == ("CommandListHostSynchronize" in hooked), lz


def test_level_zero_event_reused_while_work_runs(run_lprof, tmp_path, fake_ze):
    """Work still in flight (the fake driver finishes it 4 submissions
    later) when the program signals its event again by a barrier or a
    cooperative launch, or resets it on the device: that work is counted
    as reused and said in the listing, never given the later work's time;
    the later work and work without events are timed exactly."""
    r = run_lprof("--gpu=levelzero", "-o", tmp_path / "p.lprof", ZE_INFLIGHT,
                  env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0].split()
    assert first[:3] == ["ze", "inflight", "done"] and int(first[3]) >= 3, r.stdout  # work was in flight
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    at = _ze_lines(doc, ZE_INFLIGHT)
    lz = doc["gpu"]["stats"]["levelzero"]
    assert (lz["reused"], lz["lost"], lz["unfinished"], lz["no_event"]) == (3, 3, 0, 0), lz
    for m in ("before barrier", "before cooperative", "before reset"):
        assert at(m)["kernels"] == 0 and at(m)["launches"] == 1, (m, at(m))
    assert at("cooperative")["kernels"] == 1 and at("cooperative")["kernel_s"] == pytest.approx(2 * 1000 * TICK)
    assert at("no event")["kernels"] == 10 and at("no event")["kernel_s"] == pytest.approx(10 * 1000 * TICK)
    assert ("Level Zero: 3 of 14 kernels/copies not timed: 3 had their event signalled or reset again "
            "while they ran") in r.stdout, r.stdout
