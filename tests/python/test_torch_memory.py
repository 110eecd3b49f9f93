"""Tensor memory per line (lprof.collect.torch_memory): the reader on snapshots the
tests build in torch's format (no torch needed), and end to end under
`lprof --gpu` with a stand-in torch package whose allocator history records
the program's Python stacks as torch's does."""
import pickle

import pytest

from conftest import line_of
from test_gpu import _cuda_env, _export, fake_cuda  # noqa: F401 (fake_cuda: a fixture, named as a parameter)

APP = "/work/app/train.py"
LIB = "/usr/lib/python3/site-packages/torch/nn/modules/linear.py"


def frames(*lines):
    """torch's frames, innermost first: a torch frame under the program's."""
    return [{"filename": LIB, "line": 125, "name": "forward"}] + [
        {"filename": APP, "line": ln, "name": fn} for ln, fn in lines]


def accept(filename):
    return filename == APP


def snapshot():
    """Line 10 allocates A (1000) and B (3000); line 20 allocates C (500)
    after A is freed: the peak (4000) holds A and B; C and B live at exit."""
    at10, at20 = frames((10, "step"), (30, "<module>")), frames((20, "loss"), (30, "<module>"))
    trace = [
        {"action": "segment_alloc", "addr": 0x1000, "size": 1 << 21, "frames": []},
        {"action": "alloc", "addr": 0xA, "size": 1000, "frames": at10},
        {"action": "alloc", "addr": 0xB, "size": 3000, "frames": at10},
        {"action": "free_requested", "addr": 0xA, "size": 1000, "frames": at10},
        {"action": "free_completed", "addr": 0xA, "size": 1000, "frames": at10},
        {"action": "alloc", "addr": 0xC, "size": 500, "frames": at20},
        {"action": "free_completed", "addr": 0xDEAD, "size": 64, "frames": []},  # alloc before the window
    ]
    blocks = [{"address": 0xB, "size": 3072, "requested_size": 3000, "state": "active_allocated", "frames": at10},
              {"address": 0xC, "size": 512, "requested_size": 500, "state": "active_allocated", "frames": at20},
              {"address": 0xD, "size": 4096, "state": "inactive", "frames": []}]
    return {"segments": [{"device": 0, "address": 0x1000, "total_size": 1 << 21, "blocks": blocks}],
            "device_traces": [trace]}


def test_reader_per_line_allocated_peak_and_live(tmp_path):
    from lprof.collect import torch_memory
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot()))
    for source in (snapshot(), str(path)):
        got = torch_memory.read_snapshot(source, accept=accept)
        lines = {(f, ln): (alloc, peak, live) for f, ln, _fn, alloc, peak, live in got["lines"]}
        # 0xDEAD (64 bytes, freed in the window, allocated before it with
        # no frames kept) was live from the window's start to its free: it
        # counts in the peak, on the marker of memory from before the history
        assert lines == {(APP, 10): (4000, 4000, 3000), (APP, 20): (500, 0, 500), ("<torch>", 0): (64, 64, 0)}
        assert got["stats"]["peak_bytes"] == 4064 and got["stats"]["live_bytes"] == 3500
        assert got["stats"]["unknown_frees"] == 1 and got["stats"]["baseline_bytes"] == 64
    names = {tuple(got["stacks"]["frames"][i][1] for i in ids): m for ids, _t, m in got["stacks"]["stacks"]}
    # root first, torch's own frames left out
    assert names[("<module>", "step")] == {"gpu_alloc_bytes": 4000, "gpu_peak_bytes": 4000, "gpu_live_bytes": 3000}


def test_reader_two_devices_and_frameless_allocations():
    from lprof.collect import torch_memory
    snap = snapshot()
    snap["device_traces"].append([{"action": "alloc", "addr": 0xE, "size": 7000, "frames": []}])
    got = torch_memory.read_snapshot(snap, accept=accept)
    lines = {(ln, fn): (alloc, peak) for _f, ln, fn, alloc, peak, _live in got["lines"]}
    assert lines[(0, "[tensor memory without a Python frame]")] == (7000, 7000)  # one marker line, not lost
    assert got["stats"]["peak_bytes"] == 4064 + 7000  # each device's own peak
    assert [d["device"] for d in got["stats"]["devices"]] == ["cuda:0", "cuda:1"]


def test_reader_takes_torch_2_0_blocks():
    from lprof.collect import torch_memory
    snap = {"segments": [{"blocks": [{"size": 1024, "state": "active_allocated",
                                      "history": [{"real_size": 1000, "frames": frames((10, "step"))}]}]}]}
    got = torch_memory.read_snapshot(snap, accept=accept)
    assert got["lines"] == [[APP, 10, "step", 0, 0, 1000]]


def test_reader_refuses_what_is_not_a_snapshot(tmp_path):
    from lprof.collect import torch_memory
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(ValueError, match="not a torch memory snapshot"):
        torch_memory.read_snapshot(str(bad))


MiB = 1 << 20


def wrapped_snapshot():
    """The history kept only its latest 5 entries (max_entries=5): the
    weights (1 GiB, line 5) and the optimizer's state (512 MiB, line 6) were
    allocated before them. In the window, activations (100 MiB, line 10)
    come and go, the old state is freed (its free entries carry the
    allocation's stack, as torch writes them with context="alloc") and new
    state (256 MiB, line 12) takes its address. The true peak is 1 GiB +
    512 MiB + 100 MiB, while the activations were alive."""
    weights, state, act, new = (frames((5, "setup")), frames((6, "setup")), frames((10, "step")),
                                frames((12, "step")))
    trace = [
        {"action": "alloc", "addr": 0x300, "size": 100 * MiB, "frames": act},
        {"action": "free_completed", "addr": 0x300, "size": 100 * MiB, "frames": act},
        {"action": "free_requested", "addr": 0x200, "size": 512 * MiB, "frames": state},
        {"action": "free_completed", "addr": 0x200, "size": 512 * MiB, "frames": state},
        {"action": "alloc", "addr": 0x200, "size": 256 * MiB, "frames": new},
    ]
    blocks = [{"address": 0x100, "size": 1 << 30, "requested_size": 1 << 30, "state": "active_allocated",
               "frames": weights},
              {"address": 0x200, "size": 256 * MiB, "requested_size": 256 * MiB, "state": "active_allocated",
               "frames": new},
              {"address": 0x300, "size": 100 * MiB, "state": "inactive", "frames": []}]
    return {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [trace]}


def test_wrapped_history_peak_counts_tensors_from_before_the_window():
    from lprof.collect import torch_memory
    from lprof.render.tensor_memory import summary
    peak = (1 << 30) + 512 * MiB + 100 * MiB
    got = torch_memory.read_snapshot(wrapped_snapshot(), accept=accept, max_entries=5,
                                     allocator_peaks={0: ("requested_bytes.all.peak", peak)})
    lines = {ln: (alloc, pk, live) for _f, ln, _fn, alloc, pk, live in got["lines"]}
    assert lines == {5: (1 << 30, 1 << 30, 1 << 30),   # the weights, allocated before the window
                     6: (512 * MiB, 512 * MiB, 0),      # the old state, freed in it
                     10: (100 * MiB, 100 * MiB, 0),
                     12: (256 * MiB, 0, 256 * MiB)}
    st = got["stats"]
    assert st["peak_bytes"] == peak and st["window_full"]
    assert st["baseline_bytes"] == st["baseline_attributed_bytes"] == (1 << 30) + 512 * MiB
    dev, = st["devices"]
    assert dev["device"] == "cuda:0" and dev["allocator_agrees"]
    text = "\n".join(summary(got))
    assert "the history wrapped (only its latest 5 entries are kept)" in text
    assert "1.6 GB was live before the history's first entry: 1.6 GB of it charged to the lines" in text
    assert "the allocator's own peak (requested_bytes.all.peak, 1.7 GB) agrees" in text


def test_allocator_peak_that_disagrees_is_said():
    """The allocator saw 2 GiB, earlier than the window: lprof says so
    instead of printing its window's peak as the run's."""
    from lprof.collect import torch_memory
    from lprof.render.tensor_memory import summary
    got = torch_memory.read_snapshot(wrapped_snapshot(), accept=accept, max_entries=5,
                                     allocator_peaks={0: ("requested_bytes.all.peak", 2 << 30)})
    assert not got["stats"]["devices"][0]["allocator_agrees"]
    text = "\n".join(summary(got))
    assert ("cuda:0: the allocator's own peak (requested_bytes.all.peak) is 2.1 GB, lprof's replay of the "
            "history gives 1.7 GB: they disagree: the peak came before the history's window") in text


def backward_frames(line):
    """What lprof's wrapper of torch.autograd.backward records: the calling
    thread's stack, innermost first (torch's Tensor.backward under the line)."""
    return [{"filename": "/usr/lib/python3/site-packages/torch/_tensor.py", "line": 625, "name": "backward"},
            {"filename": APP, "line": line, "name": "train"}, {"filename": APP, "line": 60, "name": "<module>"}]


def test_backward_allocations_go_to_the_line_that_called_backward():
    """Allocations on autograd's threads have no frames: each goes to the
    backward call whose time span holds its time_us; one outside any call
    stays on the frameless marker. A gradient live at exit (its block has
    no frames either) is live on the backward line."""
    from lprof.collect import torch_memory
    act = frames((40, "train"))
    trace = [
        {"action": "alloc", "addr": 0xA, "size": 4000, "frames": act, "time_us": 900},
        {"action": "alloc", "addr": 0xB, "size": 3000, "frames": [], "time_us": 1500},  # a gradient
        {"action": "alloc", "addr": 0xC, "size": 2000, "frames": [], "time_us": 1600},  # a temporary
        {"action": "free_completed", "addr": 0xC, "size": 2000, "frames": [], "time_us": 1700},
        {"action": "free_completed", "addr": 0xA, "size": 4000, "frames": act, "time_us": 1800},
        {"action": "alloc", "addr": 0xD, "size": 500, "frames": [], "time_us": 3000},  # no call then
        {"action": "free_completed", "addr": 0xD, "size": 500, "frames": [], "time_us": 3100},
        {"action": "alloc", "addr": 0xE, "size": 700, "frames": [], "time_us": 5500},  # in autograd.grad
    ]
    blocks = [{"address": 0xB, "size": 3072, "requested_size": 3000, "state": "active_allocated", "frames": []},
              {"address": 0xE, "size": 1024, "requested_size": 700, "state": "active_allocated", "frames": []}]
    snap = {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [trace]}
    calls = [(5000, 6000, backward_frames(44)), (1000, 2000, backward_frames(41))]
    got = torch_memory.read_snapshot(snap, accept=accept, backward=calls)
    lines = {(ln, fn): (alloc, pk, live) for _f, ln, fn, alloc, pk, live in got["lines"]}
    assert lines == {(40, "train"): (4000, 4000, 0),
                     (41, "train"): (5000, 5000, 3000),  # peak: the activation, the gradient, the temporary
                     (44, "train"): (700, 0, 700),
                     (0, "[tensor memory without a Python frame]"): (500, 0, 0)}
    assert got["stats"]["backward_bytes"] == 5700 and got["stats"]["frameless_bytes"] == 500
    names = {tuple(got["stacks"]["frames"][i][1] for i in ids) for ids, _t, _m in got["stacks"]["stacks"]}
    assert ("<module>", "train") in names  # the caller's stack, torch's frame left out


def test_nested_backward_calls_take_the_latest_started():
    """autograd.grad called from a hook inside backward: an allocation in
    the inner call's span is the inner call's, the rest the outer's."""
    from lprof.collect import torch_memory
    trace = [{"action": "alloc", "addr": a, "size": n, "frames": [], "time_us": t}
             for a, n, t in ((0x1, 100, 1100), (0x2, 200, 1600), (0x3, 400, 1900))]
    calls = [(1000, 2000, backward_frames(41)), (1500, 1700, backward_frames(42))]
    got = torch_memory.read_snapshot({"segments": [], "device_traces": [trace]}, accept=accept, backward=calls)
    assert {ln: alloc for _f, ln, _fn, alloc, _p, _l in got["lines"]} == {41: 500, 42: 200}


def test_blocks_without_addresses_leave_the_window_start_unknown():
    """torch 2.0's blocks have no address: the replay starts at zero and
    the listing says the memory from before the history is not counted."""
    from lprof.collect import torch_memory
    from lprof.render.tensor_memory import summary
    snap = {"segments": [{"blocks": [{"size": 1024, "state": "active_allocated",
                                      "history": [{"real_size": 1000, "frames": frames((10, "step"))}]}]}],
            "device_traces": [[{"action": "free_completed", "addr": 0x5, "size": 64, "frames": []}]]}
    got = torch_memory.read_snapshot(snap, accept=accept)
    assert got["stats"]["devices"][0]["window_start_known"] is False and got["stats"]["peak_bytes"] == 0
    assert "the blocks have no addresses (an old torch)" in "\n".join(summary(got))


FAKE_TORCH = '''\
"""A stand-in torch: CUDA build, an allocator history recording Python
stacks (innermost first, as torch's does) in a ring of max_entries, free
entries carrying the allocation's stack unless context is "all", times in
Unix microseconds, the allocator's peak counter, and an autograd whose
backward allocates on a thread of its own (no Python frames, as
autograd's device threads)."""
import sys, threading, time, traceback, types
version = types.SimpleNamespace(cuda="13.0")
_hist = {"on": False, "trace": [], "live": {}, "before_init": 0, "context": None, "max": 0}
_stats = {"now": 0, "peak": 0, "resets": 0}
_cuda = {"initialised": False, "queued": []}
def _lazy_init():  # torch.cuda._lazy_init: the driver first, then the queued calls
    if not _cuda["initialised"]:
        _cuda["initialised"] = True
        for call in _cuda["queued"]:
            call()
def _lazy_call(call):
    if _cuda["initialised"]:
        call()
    else:
        _cuda["queued"].append(call)
def _frames():
    return [{"filename": f.filename, "line": f.lineno, "name": f.name}
            for f in reversed(traceback.extract_stack()[:-2])]
def _trace(entry):
    entry["time_us"] = time.time_ns() // 1000
    _hist["trace"].append(entry)
    del _hist["trace"][:-_hist["max"]]  # the ring keeps the latest entries
class _Memory:
    @staticmethod
    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=0):
        _hist["on"] = enabled is not None
        _hist["context"], _hist["max"] = context, max_entries
        _hist["before_init"] += not _cuda["initialised"]
    @staticmethod
    def _snapshot():
        blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": f}
                  for a, (s, f) in _hist["live"].items()]
        return {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [list(_hist["trace"])]}
def _alloc(nbytes, addr, frames):
    _stats["now"] += nbytes
    _stats["peak"] = max(_stats["peak"], _stats["now"])
    if _hist["on"]:
        _trace({"action": "alloc", "addr": addr, "size": nbytes, "frames": frames})
        _hist["live"][addr] = (nbytes, frames)
def empty(nbytes, addr):
    _lazy_init()
    _alloc(nbytes, addr, _frames())
def free(addr):
    if _hist["on"] and addr in _hist["live"]:
        size, frames = _hist["live"].pop(addr)
        _stats["now"] -= size
        _trace({"action": "free_completed", "addr": addr, "size": size,
                "frames": _frames() if _hist["context"] == "all" else frames})
def _reset(device=None):
    _stats["peak"] = _stats["now"]
    _stats["resets"] += 1
cuda = types.SimpleNamespace(memory=_Memory, is_initialized=lambda: _cuda["initialised"],
                             _lazy_call=_lazy_call, device_count=lambda: 1, reset_peak_memory_stats=_reset,
                             memory_stats=lambda device=None: {"requested_bytes.all.peak": _stats["peak"]})
def _engine(step):  # autograd's device thread: a temporary, then a gradient kept
    _alloc(1 << 14, 0x7000 + step, [])
    free(0x7000 + step)
    _alloc(1 << 12, 0x8000 + step, [])
def _backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    t = threading.Thread(target=_engine, args=(tensors.step,))
    t.start()
    t.join()
autograd = types.SimpleNamespace(backward=_backward, grad=lambda *a, **k: None)
class Tensor:
    def __init__(self, step):
        self.step = step
    def backward(self):  # as torch's: torch.autograd.backward, looked up at the call
        sys.modules["torch"].autograd.backward(self)
'''


def test_tensor_memory_in_the_listing_json_and_stack_exports(run_lprof, tmp_path, fake_cuda, write_script):
    write_script("torch/__init__.py", FAKE_TORCH)
    script = write_script("train.py", """\
        import ctypes, os
        import torch
        lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
        def step(i):
            torch.empty(1 << 20, 0x1000 + 2 * i)  # marker: activations
            torch.empty(1 << 10, 0x1001 + 2 * i)  # marker: grads
            torch.free(0x1000 + 2 * i)
            lib.fake_cupti_launch_kernel(b"k", 1000)
        for i in range(3):
            step(i)
        print("trained; history turned on before CUDA's start:", torch._hist["before_init"])
        """)
    r = run_lprof("--gpu=cuda", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "mem.folded",
                  "--stacks-metric", "gpu-mem", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    # lprof waits for the program's first CUDA use: turning the history on
    # earlier could start the driver before the program forks
    assert r.stdout.startswith("trained; history turned on before CUDA's start: 0\n")
    assert "tensor memory (PyTorch's allocator history): peak" in r.stdout
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    rows = {row["line"]: row for row in doc["gpu"]["tensor_memory"]["lines"] if row["file"] == str(script)}
    act, grads = line_of(script, "marker: activations"), line_of(script, "marker: grads")
    assert rows[act]["alloc_bytes"] == 3 << 20 and rows[act]["live_bytes"] == 0
    assert rows[act]["peak_bytes"] == 1 << 20  # one activation at a time
    assert rows[grads]["alloc_bytes"] == 3 << 10 and rows[grads]["live_bytes"] == 3 << 10
    assert rows[grads]["peak_bytes"] == 3 << 10  # the peak is the last activation and all grads
    from lprof.model import profile_file
    from lprof.model.sections import gpu_line_columns
    cols = gpu_line_columns(profile_file.load(str(tmp_path / "p.lprof")))
    assert cols[(str(script), act)]["alloc_bytes"] == 3 << 20
    assert cols[(str(script), grads)]["live_bytes"] == 3 << 10
    folded = (tmp_path / "mem.folded").read_text().splitlines()
    assert any(l.startswith("<module> (") and ";step (" in l and l.endswith(f" {3 << 20}") for l in folded), folded
    assert any(l.endswith(f" {3 << 10}") for l in folded)
    r2 = run_lprof("export", tmp_path / "p.lprof", "--format", "folded", "--metric", "gpu-peak",
                   "-o", tmp_path / "peak.folded")
    assert r2.returncode == 0, r2.stderr
    assert sum(int(l.rsplit(" ", 1)[1]) for l in (tmp_path / "peak.folded").read_text().splitlines()) == (1 << 20) + (3 << 10)


def test_wrapped_history_and_backward_under_lprof(run_lprof, tmp_path, fake_cuda, write_script):
    """A history of 6 entries (LPROF_TORCH_MEMORY_ENTRIES) wraps over three
    steps: the weights and the previous step's activation were allocated
    before the window and count in the peak, which matches the allocator's
    own; backward's frameless allocations go to the backward() line."""
    write_script("torch/__init__.py", FAKE_TORCH)
    script = write_script("train.py", """\
        import ctypes, os
        import torch
        lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
        torch.empty(1 << 20, 0x9000)  # weights
        def step(i):
            torch.empty(1 << 16, 0x1000 + i)  # activations
            torch.Tensor(i).backward()  # backward
            torch.free(0x1000 + i)
            lib.fake_cupti_launch_kernel(b"k", 1000)
        for i in range(3):
            step(i)
        print("peak resets:", torch._stats["resets"], "backward restored:", torch.autograd.backward is torch._backward)
        """)
    r = run_lprof("--gpu=cuda", "-o", tmp_path / "p.lprof", script,
                  env=_cuda_env(fake_cuda, LPROF_TORCH_MEMORY_ENTRIES="6"))
    assert r.returncode == 0, r.stderr
    assert "peak resets: 1 backward restored: False" in r.stdout  # wrapped while profiling
    k = 1 << 10
    assert "the history wrapped (only its latest 6 entries are kept)" in r.stdout, r.stdout
    assert "the allocator's own peak (requested_bytes.all.peak, 1.1 MB) agrees" in r.stdout, r.stdout
    assert "20.5 KB allocated during backward (no Python frame) charged to the lines that called backward" in r.stdout
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    tm = doc["gpu"]["tensor_memory"]
    rows = {row["line"]: row for row in tm["lines"] if row["file"] == str(script)}
    weights, act, bwd = (line_of(script, m) for m in ("weights", "activations", "backward"))
    # the peak: weights, step 2's activation and temporary, the two earlier gradients
    assert tm["stats"]["peak_bytes"] == (1 << 20) + 64 * k + 16 * k + 8 * k
    assert (rows[weights]["alloc_bytes"], rows[weights]["peak_bytes"], rows[weights]["live_bytes"]) == (1 << 20,) * 3
    # step 1's activation was live at the window's start: charged by its free entry's (allocation) stack
    assert (rows[act]["alloc_bytes"], rows[act]["peak_bytes"], rows[act]["live_bytes"]) == (128 * k, 64 * k, 0)
    assert (rows[bwd]["alloc_bytes"], rows[bwd]["peak_bytes"], rows[bwd]["live_bytes"]) == (20 * k, 16 * k, 4 * k)
    # the gradients of steps 0 and 1 came before the window, from a thread with no frames
    before = [row for row in tm["lines"] if row["function"] == "[tensor memory allocated before the history began]"]
    assert [(row["alloc_bytes"], row["peak_bytes"], row["live_bytes"]) for row in before] == [(8 * k, 8 * k, 8 * k)]


def fake_xpu_torch(with_history=True):
    """A stand-in torch built for XPU (torch.version.xpu), not CUDA, whose
    torch.xpu.memory has the history API (or not)."""
    import types
    state = {"on": False, "trace": [], "live": {}, "queued": [], "init": False, "peak": 0, "now": 0}

    def record(enabled="all", context="all", stacks="all", max_entries=0):
        state["on"] = enabled is not None

    def snapshot():
        blocks = [{"address": a, "size": n, "requested_size": n, "state": "active_allocated", "frames": f}
                  for a, (n, f) in state["live"].items()]
        return {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [list(state["trace"])]}

    def alloc(n, addr, frames):
        state["now"] += n
        state["peak"] = max(state["peak"], state["now"])
        state["trace"].append({"action": "alloc", "addr": addr, "size": n, "frames": frames,
                               "time_us": __import__("time").time_ns() // 1000})
        state["live"][addr] = (n, frames)

    def lazy_call(call):
        state["queued"].append(call)

    memory = types.SimpleNamespace(_snapshot=snapshot)
    if with_history:
        memory._record_memory_history = record
    xpu = types.SimpleNamespace(memory=memory, is_initialized=lambda: state["init"], _lazy_call=lazy_call,
                                device_count=lambda: 1, reset_peak_memory_stats=lambda d=None: None,
                                memory_stats=lambda d=None: {"requested_bytes.all.peak": state["peak"]})

    def backward(*_a, **_k):  # autograd's thread: no frames
        import threading
        t = threading.Thread(target=alloc, args=(3000, 0xB, []))
        t.start()
        t.join()

    torch = types.SimpleNamespace(version=types.SimpleNamespace(cuda=None, xpu="20250201"), xpu=xpu,
                                  cuda=types.SimpleNamespace(), autograd=types.SimpleNamespace(backward=backward))
    return torch, state, alloc


def test_xpu_tensor_memory_through_torch_xpu(monkeypatch):
    import sys
    from lprof.collect import torch_memory
    from lprof.render.tensor_memory import summary
    torch, state, alloc = fake_xpu_torch()
    original = torch.autograd.backward
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert torch_memory.start_recording(["cuda", "xpu"]) == ["xpu"]  # a CUDA-less build: XPU only
    assert not state["on"]  # waits for the device's start
    state["init"] = True
    for call in state["queued"]:
        call()
    assert state["on"] and torch.autograd.backward is not original
    alloc(1000, 0xA, [{"filename": __file__, "line": 7, "name": "forward"}])
    here = sys._getframe().f_lineno + 1
    torch.autograd.backward()
    got = torch_memory.take_snapshot()
    assert torch.autograd.backward is original and not state["on"]
    st = got["stats"]
    assert [d["device"] for d in st["devices"]] == ["xpu:0"] and st["devices"][0]["allocator_agrees"]
    lines = {ln: (a, pk, live) for f, ln, _fn, a, pk, live in got["lines"] if f == __file__}
    assert lines == {7: (1000, 1000, 1000), here: (3000, 3000, 3000)}
    assert "peak 4.0 KB on xpu:0" in summary(got)[0]


def test_xpu_without_the_history_api_is_said(monkeypatch):
    import sys
    from lprof.collect import torch_memory
    torch, _state, _alloc = fake_xpu_torch(with_history=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert torch_memory.start_recording(["xpu"]) == []
    assert torch_memory.NOTES == ["no XPU tensor memory: this torch's torch.xpu lacks _record_memory_history"]


def test_lprof_torch_memory_0_leaves_the_history_off(run_lprof, tmp_path, fake_cuda, write_script):
    """LPROF_TORCH_MEMORY=0 (to measure the history's own cost on a GPU):
    no allocator history, said in the listing; the program runs the same."""
    write_script("torch/__init__.py", FAKE_TORCH)
    script = write_script("train.py", """\
        import ctypes, os
        import torch
        lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
        torch.empty(1 << 20, 0x1000)  # marker: activations
        lib.fake_cupti_launch_kernel(b"k", 1000)
        print("history on:", torch._hist["on"])
        """)
    env = dict(_cuda_env(fake_cuda), LPROF_TORCH_MEMORY="0")
    r = run_lprof("--gpu=cuda", "-o", tmp_path / "p.lprof", script, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("history on: False\n")
    assert "tensor memory (PyTorch's allocator history)" not in r.stdout
    assert "no CUDA tensor memory: LPROF_TORCH_MEMORY=0" in r.stdout + r.stderr
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    assert "tensor_memory" not in doc["gpu"]
