"""Tensor memory per line (lprof.collect.torch_memory): the reader on snapshots the
tests build in torch's format (no torch needed), and end to end under
`lprof --gpu` with a stand-in torch package whose allocator history records
the program's Python stacks as torch's does."""
import pickle

import pytest

from conftest import line_of
from test_gpu import _cuda_env, _export, fake_cuda  # noqa: F401  (the fixture)

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


FAKE_TORCH = '''\
"""A stand-in torch: CUDA build, an allocator history recording Python
stacks (innermost first, as torch's does)."""
import sys, traceback, types
version = types.SimpleNamespace(cuda="13.0")
_hist = {"on": False, "trace": [], "live": {}, "before_init": 0}
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
class _Memory:
    @staticmethod
    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=0):
        _hist["on"] = enabled is not None
        _hist["before_init"] += not _cuda["initialised"]
    @staticmethod
    def _snapshot():
        blocks = [{"size": s, "requested_size": s, "state": "active_allocated", "frames": f}
                  for s, f in _hist["live"].values()]
        return {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [_hist["trace"]]}
def empty(nbytes, addr):
    _lazy_init()
    if _hist["on"]:
        f = _frames()
        _hist["trace"].append({"action": "alloc", "addr": addr, "size": nbytes, "frames": f})
        _hist["live"][addr] = (nbytes, f)
def free(addr):
    if _hist["on"] and addr in _hist["live"]:
        _hist["trace"].append({"action": "free_completed", "addr": addr, "size": _hist["live"].pop(addr)[0],
                               "frames": _frames()})
cuda = types.SimpleNamespace(memory=_Memory, is_initialized=lambda: _cuda["initialised"],
                             _lazy_call=_lazy_call)
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
    from lprof.collect import gpu
    from lprof.model import profile_file
    cols = gpu.line_columns(profile_file.load(str(tmp_path / "p.lprof")))
    assert cols[(str(script), act)]["alloc_bytes"] == 3 << 20
    assert cols[(str(script), grads)]["live_bytes"] == 3 << 10
    folded = (tmp_path / "mem.folded").read_text().splitlines()
    assert any(l.startswith("<module> (") and ";step (" in l and l.endswith(f" {3 << 20}") for l in folded), folded
    assert any(l.endswith(f" {3 << 10}") for l in folded)
    r2 = run_lprof("export", tmp_path / "p.lprof", "--format", "folded", "--metric", "gpu-peak",
                   "-o", tmp_path / "peak.folded")
    assert r2.returncode == 0, r2.stderr
    assert sum(int(l.rsplit(" ", 1)[1]) for l in (tmp_path / "peak.folded").read_text().splitlines()) == (1 << 20) + (3 << 10)
