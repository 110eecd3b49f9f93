"""lprof --gpu against a libcupti that delivers as CUDA 13 does
(tests/gpu/fake_cupti.c): one activity buffer per thread, handed back only
when full or by cuptiActivityFlushAll(0) once complete, forced flushes that
return running work as incomplete records, correlation ids taken by every
API call, nvcc 13's __cudaLaunchKernel, batch copies and the virtual memory
API. Assertions are on counts and attribution, never on how long anything
took (the test machine may be loaded)."""
import json
import os
import sys
import textwrap

import pytest

from conftest import line_of
from test_gpu import _cuda_env, _export, fake_cuda  # noqa: F401 (fake_cuda: a fixture, named as a parameter)

US = 1e-6

PRELUDE = """\
import ctypes, os, sys, threading, time
lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
for f in ("launch_kernel", "launch_kernel13", "launch_kernel_async"):
    getattr(lib, "fake_cupti_" + f).argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_launch_many.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
lib.fake_cupti_memcpy_batch.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
for f in ("mem_map", "mem_unmap", "pool_alloc", "malloc"):
    getattr(lib, "fake_cupti_" + f).argtypes = [ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_flushes.restype = ctypes.c_ulonglong
"""


def _prog(write_script, name, body):
    return write_script(name, PRELUDE + textwrap.dedent(body))


def _lines(doc, script):
    return {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == str(script)}


@pytest.mark.parametrize("record_id", ["runtime", "driver"])
def test_a_thread_that_launches_rarely_keeps_its_launches(run_lprof, tmp_path, fake_cuda, write_script, record_id):
    """Three busy threads launch enough to reuse every slot of the 2^18
    correlation ring (ids advance on every API call) while a fourth launched
    five kernels at the start and then waits: its per-thread buffer never
    fills, so its records come back late. None may end up unattributed, and
    no launch may age out, whichever of a runtime launch's two ids (its own,
    its nested driver call's) the records carry: on an H200 (CUDA 13,
    PyTorch cu130) they carried the driver call's, and 236,006 launches that
    had their records aged out before the two ids were paired."""
    script = _prog(write_script, "rare.py", """\
        done = threading.Event()
        def rare():
            for _ in range(5):
                lib.fake_cupti_launch_kernel(b"rare_kernel", 3000)  # marker: rare
            done.wait()
        def busy():
            lib.fake_cupti_launch_many(b"busy_kernel", 40000, 1, 100)  # marker: busy
        r = threading.Thread(target=rare)
        r.start()
        workers = [threading.Thread(target=busy) for _ in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        done.set()
        r.join()
        print("done")
        """)
    env = dict(_cuda_env(fake_cuda), FAKE_CUPTI_RECORD_DRIVER_ID="1" if record_id == "driver" else "0")
    r = run_lprof("--gpu", "-q", "-o", tmp_path / "p.lprof", script, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "waited longer than lprof keeps them" not in r.stderr
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = _lines(doc, script)
    join = doc["gpu"]["stats"]["join"]
    assert join["unattributed"] == 0, join
    assert lines[line_of(script, "marker: rare")]["kernels"] == 5
    assert lines[line_of(script, "marker: busy")]["kernels"] == 3 * 40000
    assert join["records"] == 5 + 3 * 40000 and join["aged_out"] == 0


def test_lprof_flushes_complete_buffers_on_its_own_timer(run_lprof, tmp_path, fake_cuda, write_script):
    """CUPTI's own periodic flush returns only full buffers: lprof calls
    cuptiActivityFlushAll(0) itself, so a buffer with one record comes back
    while the program runs."""
    script = _prog(write_script, "timer.py", """\
        lib.fake_cupti_launch_kernel(b"one", 1000)  # marker: one
        deadline = time.time() + 60
        while lib.fake_cupti_flushes(0) == 0 and time.time() < deadline:
            time.sleep(0.05)
        print("flushed" if lib.fake_cupti_flushes(0) else "never flushed", lib.fake_cupti_flushes(1))
        """)
    r = run_lprof("--gpu", "-q", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "flushed 0\n"  # flag 0 while the program runs; no forced flush before the end
    lines = _lines(_export(run_lprof, tmp_path, tmp_path / "p.lprof"), script)
    assert lines[line_of(script, "marker: one")]["kernels"] == 1


def test_checkpoints_keep_kernels_in_flight(run_lprof, tmp_path, fake_cuda, write_script):
    """A -i checkpoint while a kernel runs: a forced flush would return it
    as an incomplete record, never delivered again; lprof's flag-0 flush
    leaves it until it finished."""
    out = tmp_path / "p.lprof"
    script = _prog(write_script, "ck.py", """\
        lib.fake_cupti_launch_kernel_async(b"inflight", 40000)  # marker: inflight
        deadline = time.time() + 60
        while not os.path.exists(sys.argv[1]) and time.time() < deadline:
            time.sleep(0.05)
        print("checkpointed" if os.path.exists(sys.argv[1]) else "no checkpoint", lib.fake_cupti_flushes(1))
        lib.fake_cupti_synchronize()
        """)
    r = run_lprof("--gpu", "-q", "-i", "0.2", "-o", out, script, str(out), env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "checkpointed 0\n"
    doc = _export(run_lprof, tmp_path, out)
    assert doc["gpu"]["stats"]["join"]["incomplete"] == 0
    row = _lines(doc, script)[line_of(script, "marker: inflight")]
    assert row["kernels"] == 1 and row["kernel_s"] == pytest.approx(40 * US)


def test_cuda13_launch_path_batch_copies_and_virtual_memory(run_lprof, tmp_path, fake_cuda, write_script):
    """nvcc 13's <<<>>> goes through __cudaLaunchKernel (with cuLaunchKernel
    nested; the record carries the runtime call's id); cudaMemcpyBatchAsync
    makes one record per copy; cuMemMap (expandable segments) and
    cuMemAllocFromPoolAsync allocate device memory; a failed launch is not
    awaited."""
    script = _prog(write_script, "cu13.py", """\
        for i in range(4):
            lib.fake_cupti_launch_kernel13(b"triple_chevron", 2000)  # marker: chevron
        lib.fake_cupti_memcpy_batch(1, 3, 1024, 500)  # marker: batch
        lib.fake_cupti_mem_map(0x7f0000000000, 1 << 21)  # marker: map
        lib.fake_cupti_pool_alloc(0x7e0000000000, 4096)  # marker: pool
        lib.fake_cupti_mem_unmap(0x7f0000000000, 1 << 21)
        lib.fake_cupti_failed_launch()
        print([lib.fake_cupti_enabled(d, c) for d, c in ((2, 505), (2, 506), (2, 509), (2, 512), (1, 776),
                                                         (1, 797), (1, 611), (1, 551), (1, 552))])
        """)
    r = run_lprof("--gpu", "-q", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = _lines(doc, script)
    at = lambda m: lines[line_of(script, "marker: " + m)]
    assert at("chevron")["kernels"] == 4 and at("chevron")["launches"] == 4
    assert at("chevron")["kernel_s"] == pytest.approx(4 * 2 * US)
    assert at("batch")["h2d_bytes"] == 3 * 1024 and at("batch")["launches"] == 1
    assert at("map")["alloc_bytes"] == 1 << 21 and at("map")["peak_bytes"] == 1 << 21
    assert at("pool")["alloc_bytes"] == 4096
    join = doc["gpu"]["stats"]["join"]
    assert join["unattributed"] == 0 and join["kept"] == 0


@pytest.mark.parametrize("version,why", [(18, "older than CUDA 12.0"), (140000, "newer than the record layouts")])
def test_a_cupti_whose_records_lprof_does_not_know_is_refused(run_lprof, tmp_path, fake_cuda, write_script,
                                                               version, why):
    script = write_script("s.py", "x = sum(range(3000000))\nprint('ok')\n")
    r = run_lprof("--gpu=cuda", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "s.folded", script,
                  env=_cuda_env(fake_cuda, FAKE_CUPTI_VERSION=str(version)))
    assert r.returncode == 0 and r.stdout.startswith("ok\n")
    msgs = [l for l in r.stderr.splitlines() if "--gpu" in l]
    assert len(msgs) == 1 and why in msgs[0], r.stderr
    assert "s.py:1)" in (tmp_path / "s.folded").read_text()  # the CPU profile as usual


def test_a_flush_that_times_out_still_hands_cupti_over(run_lprof, tmp_path, fake_cuda, write_script):
    """CUPTI's flush hangs when the program starts torch.profiler: lprof
    gives up on it after its time-out and still unsubscribes, so the
    profiler can take CUPTI."""
    write_script("torch/__init__.py", "")
    write_script("torch/autograd/__init__.py", "")
    write_script("torch/autograd/profiler.py", """\
        class profile:
            def __init__(self, use_device=None):
                self.use_device = use_device
            def _prepare_trace(self):
                pass
            def __enter__(self):
                self._prepare_trace()
                return self
            def __exit__(self, *exc):
                return False
        """)
    script = _prog(write_script, "prog.py", """\
        lib.fake_cupti_launch_kernel(b"before", 5000)
        lib.fake_cupti_hang_flushes(1)
        import torch.autograd.profiler as tap
        with tap.profile(use_device="cuda"):
            print("subscribed", lib.fake_cupti_subscribed())
        """)
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", script,
                  env=_cuda_env(fake_cuda, LPROF_GPU_FLUSH_TIMEOUT_MS="300"), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("subscribed 0\n")
    assert "final flush did not return" in r.stderr
    assert (tmp_path / "p.lprof").exists()


def test_injection_path_none_means_no_injection_tool(run_lprof, tmp_path, fake_cuda, write_script):
    script = _prog(write_script, "s.py", "lib.fake_cupti_launch_kernel(b'k', 1000)  # marker: k\n")
    r = run_lprof("--gpu=cuda", "-q", "-o", tmp_path / "p.lprof", script,
                  env=_cuda_env(fake_cuda, CUDA_INJECTION64_PATH="none"))
    assert r.returncode == 0 and "injection" not in r.stderr, r.stderr
    lines = _lines(_export(run_lprof, tmp_path, tmp_path / "p.lprof"), script)
    assert lines[line_of(script, "marker: k")]["kernels"] == 1


def test_starting_lprof_leaves_the_driver_uninitialised(run_lprof, tmp_path, fake_cuda, write_script):
    """A program that forks before its first CUDA call needs a driver that
    nobody initialised: lprof's start and its flush thread must not call
    cuInit (the fake driver answers cuDeviceGetCount with 3, NOT_INITIALIZED,
    until then)."""
    script = write_script("fork.py", """\
        import ctypes, time
        cuda = ctypes.CDLL("libcuda.so.1")
        time.sleep(1.2)  # two periods of lprof's flush thread
        n = ctypes.c_int()
        print(cuda.cuDeviceGetCount(ctypes.byref(n)), cuda.fake_cuda_init_calls())
        """)
    r = run_lprof("--gpu=cuda", "-q", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "3 0\n"


def _fake_site(tmp_path, cuda):
    """A site-packages folder with a torch package (version.py only, and an
    __init__ that must not run) and both CUDA majors' CUPTI wheels."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('torch was imported')\n")
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.9.0'\n"
        + (f"cuda: Optional[str] = '{cuda}'\n" if cuda else "cuda: Optional[str] = None\n"))
    for sub, name in (("cu13", "libcupti.so.13"), ("cuda_cupti", "libcupti.so.12")):
        (site / "nvidia" / sub / "lib").mkdir(parents=True)
        (site / "nvidia" / sub / "lib" / name).write_text("")
    return site


@pytest.mark.parametrize("cuda,want", [("12.8", [".so.12"]), ("13.0", [".so.13"]), (None, [".so.13", ".so.12"])])
def test_libcupti_of_the_installed_torchs_cuda_major(tmp_path, cuda, want):
    import subprocess
    site = _fake_site(tmp_path, cuda)
    conda = tmp_path / "conda"
    (conda / "lib").mkdir(parents=True)
    (conda / "lib" / "libcupti.so.12").write_text("")
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from lprof.collect import gpu; "
            "print(json.dumps([gpu.torch_cuda_major(), gpu.cupti_candidates(), gpu.cupti_sonames(), "
            "'torch' in sys.modules]))")
    env = dict(os.environ, CONDA_PREFIX=str(conda), CUDA_HOME=str(tmp_path / "none"),
               PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    env.pop("LPROF_CUPTI_PATH", None)
    r = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    major, cands, sonames, imported = json.loads(r.stdout)
    assert not imported
    assert major == (int(cuda.split(".")[0]) if cuda else None)
    local = [c for c in cands if c.startswith(str(tmp_path))]
    assert [c[c.rindex(".so"):] for c in local if "nvidia" in c] == want
    assert all(c.endswith(tuple(want)) for c in local)
    if cuda and cuda.startswith("12"):
        assert str(conda / "lib" / "libcupti.so.12") in cands
    assert sonames == ([f"libcupti.so.{major}"] if major else ["libcupti.so.13", "libcupti.so.12", "libcupti.so"])
