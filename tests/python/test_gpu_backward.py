"""Backward GPU time on the forward lines (issue #36 item 1), without a GPU:
a CPU build of PyTorch runs a training step whose "GPU work" goes through
the fake libcupti (tests/gpu/fake_cupti.c): two custom autograd Functions,
each applied on its own line of the model, launch a kernel in forward and
another (and a copy) in backward (tests/scripts/gpu_backward_torch.py).
lprof must charge each backward kernel and copy to the forward line whose
op it differentiates, under a "[backward]" stack branch and in the line's
gpu_backward_s / bwd s column, and leave a run without backward as it was.
Durations are the fakes', exact."""
import json
import os

import pytest

from conftest import ROOT, line_of
from test_gpu import _cuda_env, fake_cuda, fake_ze  # noqa: F401 (fixtures)

torch = pytest.importorskip("torch")

SCRIPT = os.path.join(ROOT, "tests", "scripts", "gpu_backward_torch.py")
US = 1e-6
STEPS = 3


def _at(marker):
    return line_of(SCRIPT, "marker: " + marker)


def _run(run_lprof, tmp_path, fake, name="p", **env):
    prof = tmp_path / f"{name}.lprof"
    # a SIGSEGV here once in CI (not seen in ~30 reruns of that test, ~230
    # of this file's): if it comes back, faulthandler's dump of every
    # thread's Python stack says where (lprof's fatal-signal handler passes
    # the signal on to it)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    r = run_lprof("--gpu=cuda", "-o", prof, SCRIPT, env=_cuda_env(fake, STEPS=str(STEPS), **env))
    assert r.returncode == 0, r.stderr
    return r, prof


def _doc(run_lprof, tmp_path, prof):
    out = tmp_path / (prof.stem + ".json")
    r = run_lprof("export", prof, "--format", "json", "-o", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def _lines(doc):
    return {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == SCRIPT}


def _folded(run_lprof, tmp_path, prof, metric):
    out = tmp_path / f"{prof.stem}.{metric}.folded"
    r = run_lprof("export", prof, "--format", "folded", "--metric", metric, "-o", out)
    assert r.returncode == 0, r.stderr
    return out.read_text().splitlines()


def _backward_line_of_gemm():
    """The line in FakeGemm.backward that launches its kernel."""
    for i, text in enumerate(open(SCRIPT).read().splitlines(), 1):
        if 'b"bwd_"' in text:
            return i
    raise AssertionError("no backward launch in the script")


def test_backward_kernels_and_copies_go_to_their_forward_lines(run_lprof, tmp_path, fake_cuda):
    r, prof = _run(run_lprof, tmp_path, fake_cuda)
    lines = _lines(_doc(run_lprof, tmp_path, prof))
    one, two, scale = lines[_at("layer one")], lines[_at("layer two")], lines[_at("scale")]
    # layer one: its backward kernel (20 us a step), all of it backward
    assert one["kernel_s"] == pytest.approx(STEPS * 20 * US) and one["kernels"] == STEPS
    assert one["backward_s"] == pytest.approx(STEPS * 20 * US)
    # layer two: 40 us kernel and a 5 us device-to-host copy a step
    assert two["kernel_s"] == pytest.approx(STEPS * 40 * US)
    assert two["copy_s"] == pytest.approx(STEPS * 5 * US) and two["d2h_bytes"] == STEPS * 4096
    assert two["backward_s"] == pytest.approx(STEPS * 45 * US)
    # the leaf's gradient accumulation runs right after the op that used it:
    # the multiply's C++ node (hooked through the mode, not Function.apply)
    # sets the origin its AccumulateGrad keeps
    assert scale["backward_s"] == pytest.approx(STEPS * 3 * US)
    # not on the backward() line, nor on the line inside FakeGemm.backward that launched them
    assert _at("backward call") not in lines
    assert _backward_line_of_gemm() not in lines
    # forward kernels stay where they were launched, with no backward part
    fwd = [row for row in lines.values() if row["function"] == "FakeGemm.forward"]
    assert len(fwd) == 1 and fwd[0]["kernel_s"] == pytest.approx(STEPS * 2 * 10 * US)
    assert fwd[0]["backward_s"] == 0
    # work after backward() is its own line's
    step = lines[_at("step")]
    assert step["kernel_s"] == pytest.approx(STEPS * 1 * US) and step["backward_s"] == 0
    # the stack branch: the forward line's stack, "[backward]", the kernel
    folded = _folded(run_lprof, tmp_path, prof, "gpu")
    branch = lambda marker, leaf: [l for l in folded if f"Model.forward ({SCRIPT}:{_at(marker)});[backward]"
                                   in l and l.split(";")[-1].startswith(leaf + " ")]
    assert [l.rsplit(" ", 1)[1] for l in branch("layer one", "bwd_one")] == ["60"], folded
    assert [l.rsplit(" ", 1)[1] for l in branch("layer two", "bwd_two")] == ["120"], folded
    assert [l.rsplit(" ", 1)[1] for l in branch("layer two", "[memcpy DtoH]")] == ["15"], folded
    assert [l.rsplit(" ", 1)[1] for l in branch("scale", "accum_scale")] == ["9"], folded
    # every backward stack hangs under the forward call line
    assert all(f"<module> ({SCRIPT}:{_at('forward call')})" in l for l in folded if "[backward]" in l)
    only = _folded(run_lprof, tmp_path, prof, "gpu-backward")
    assert only and all("[backward]" in l for l in only), only
    assert sum(int(l.rsplit(" ", 1)[1]) for l in only) == STEPS * (20 + 45 + 3)
    # the listing's column and summary
    r = run_lprof("view", prof, "--all")
    assert r.returncode == 0, r.stderr
    out = r.stdout.split(f"File: {SCRIPT}", 1)[1].split("\n\n", 1)[0].splitlines()
    rows = {int(l.split()[0]): l for l in out if l.split() and l.split()[0].isdigit()}
    assert "bwd s" in out[1] and "0.000135" in rows[_at("layer two")], r.stdout
    assert "run by backward for ops of forward lines" in r.stdout


def test_line_profiler_listing_charges_backward_to_the_profiled_forward_lines(run_lprof, tmp_path, fake_cuda,
                                                                           load_profile):
    """lprof -l: Model.forward is the profiled function; its lines get their
    ops' backward kernels (GPU work is charged to the innermost profiled line)."""
    prof = tmp_path / "l.lprof"
    r = run_lprof("-l", "-v", "--gpu=cuda", "-o", prof, SCRIPT, env=_cuda_env(fake_cuda, STEPS=str(STEPS)))
    assert r.returncode == 0, r.stderr
    from lprof.model.sections import gpu_line_columns
    p = load_profile(str(prof))
    cols = gpu_line_columns(p, functions=p["functions"])
    two = cols[(SCRIPT, _at("layer two"))]
    assert two["backward_s"] == pytest.approx(STEPS * 45 * US)
    # the forward kernel launched inside FakeGemm.forward (not profiled) is the calling line's
    assert two["kernel_s"] == pytest.approx(STEPS * (40 + 10) * US)
    assert cols[(SCRIPT, _at("layer one"))]["backward_s"] == pytest.approx(STEPS * 20 * US)
    row = [l for l in r.stdout.splitlines() if l.split()[:1] == [str(_at("layer two"))]]
    assert row and "0.000135" in row[0] and "bwd s" in r.stdout, r.stdout


def test_backward_stats_count_the_hooked_nodes(run_lprof, tmp_path, fake_cuda):
    _r, prof = _run(run_lprof, tmp_path, fake_cuda)
    stats = _doc(run_lprof, tmp_path, prof)["gpu"]["stats"]["backward"]
    # per step: two FakeGemm nodes and the scale multiply (sum's node too)
    assert stats["ops"] >= 3 * STEPS and stats["runs"] >= 3 * STEPS and stats["failed"] == 0, stats


def test_backward_on_another_thread_still_goes_to_the_forward_lines(run_lprof, tmp_path, fake_cuda):
    _r, prof = _run(run_lprof, tmp_path, fake_cuda, BACKWARD_THREAD="1")
    lines = _lines(_doc(run_lprof, tmp_path, prof))
    assert lines[_at("layer one")]["backward_s"] == pytest.approx(STEPS * 20 * US)
    assert lines[_at("layer two")]["backward_s"] == pytest.approx(STEPS * 45 * US)


def test_a_run_without_backward_is_unchanged(run_lprof, tmp_path, fake_cuda):
    _r, on = _run(run_lprof, tmp_path, fake_cuda, "on", NO_BACKWARD="1")
    _r, off = _run(run_lprof, tmp_path, fake_cuda, "off", NO_BACKWARD="1", LPROF_GPU_BACKWARD="0")
    a, b = _lines(_doc(run_lprof, tmp_path, on)), _lines(_doc(run_lprof, tmp_path, off))
    assert a == b and a and all(row["backward_s"] == 0 for row in a.values())
    # the hooks leave no frame of their own on the forward's stacks
    fa, fb = _folded(run_lprof, tmp_path, on, "gpu"), _folded(run_lprof, tmp_path, off, "gpu")
    assert sorted(fa) == sorted(fb) and not any("[backward]" in l or "lprof" in l for l in fa), fa


def test_no_grad_forward_hooks_nothing(run_lprof, tmp_path, fake_cuda):
    _r, prof = _run(run_lprof, tmp_path, fake_cuda, NO_GRAD="1")
    doc = _doc(run_lprof, tmp_path, prof)
    assert doc["gpu"]["stats"]["backward"]["nodes"] == 0
    assert all(row["backward_s"] == 0 for row in _lines(doc).values())


def test_turned_off_backward_stays_where_it_was_launched(run_lprof, tmp_path, fake_cuda):
    """LPROF_GPU_BACKWARD=0: lprof's behaviour before item 1 (CPU autograd
    runs backward on the calling thread: the kernels go to the line in
    FakeGemm.backward that launched them)."""
    _r, prof = _run(run_lprof, tmp_path, fake_cuda, LPROF_GPU_BACKWARD="0")
    lines = _lines(_doc(run_lprof, tmp_path, prof))
    inside = lines[_backward_line_of_gemm()]
    assert inside["kernel_s"] == pytest.approx(STEPS * 60 * US) and inside["backward_s"] == 0
    assert _at("layer one") not in lines


def test_tensor_memory_backward_wrapper_leaves_the_backward_line_on_the_stack(run_lprof, tmp_path, fake_cuda):
    """torch_memory wraps torch.autograd.backward (on a CUDA build of torch):
    its wrapper must not cut the stacks of what runs during backward at an
    lprof frame (the backward() line lost its work: from threads without
    Python, and here the kernels a Python backward launches itself)."""
    _r, prof = _run(run_lprof, tmp_path, fake_cuda, TORCH_MEMORY_WRAP="1", LPROF_GPU_BACKWARD="0")
    folded = [l for l in _folded(run_lprof, tmp_path, prof, "gpu") if ";bwd_" in l]
    assert folded and all(l.startswith(f"<module> ({SCRIPT}:{_at('backward call')});") for l in folded), folded
    _r, prof = _run(run_lprof, tmp_path, fake_cuda, "both", TORCH_MEMORY_WRAP="1")
    lines = _lines(_doc(run_lprof, tmp_path, prof))
    assert lines[_at("layer two")]["backward_s"] == pytest.approx(STEPS * 45 * US)


ORIGIN_SCRIPT = """
import threading
import torch
from lprof import _lprof
from lprof.collect import gpu_backward
assert gpu_backward.install(torch) is None
seen = []

class Probe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        seen.append(_lprof.gpu_backward_origin())
        return g

x = torch.randn(4, requires_grad=True)
Probe.apply(x).sum().backward()
after = _lprof.gpu_backward_origin()
# the engine called directly (not through torch.autograd.backward) leaves the
# origin set; a reset makes it stale
loss = Probe.apply(torch.randn(4, requires_grad=True)).sum()
torch.autograd.graph._engine_run_backward((loss,), (torch.ones(()),), False, False, (), allow_unreachable=True,
                                          accumulate_grad=True)
left = _lprof.gpu_backward_origin() is not None
_lprof.gpu_reset()
stale = _lprof.gpu_backward_origin()
gpu_backward.uninstall()
with torch.no_grad():
    y = x * 2
print(isinstance(seen[0], int), after, left, stale,
      torch._C._len_torch_function_stack(), torch.autograd.Function.apply.__func__.__module__)
"""


def test_origin_is_set_while_a_node_runs_and_restored_after(run_python, write_script):
    """In process: the pre-hook sets the thread's origin before the node's
    backward; backward() restores the caller's (none) after the pass;
    a backward the wrappers did not see leaves it, until gpu_reset makes it
    stale; uninstall() pops the mode and gives Function.apply back."""
    r = run_python(write_script("origin.py", ORIGIN_SCRIPT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "None", "True", "None", "0", "torch.autograd.function"], r.stdout


def test_level_zero_backward_goes_to_the_forward_line(run_lprof, tmp_path, fake_ze):
    """The same path through Level Zero (the fake driver, Debian's loader and
    its tracing layer): the backward kernel goes to the forward line."""
    script = os.path.join(ROOT, "tests", "scripts", "gpu_backward_levelzero.py")
    prof = tmp_path / "ze.lprof"
    r = run_lprof("--gpu=levelzero", "-o", prof, script, env={"ZE_ENABLE_ALT_DRIVERS": str(fake_ze)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ze done\n")
    doc = _doc(run_lprof, tmp_path, prof)
    lines = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == script}
    layer = lines[line_of(script, "marker: xe layer")]
    assert layer["backward_s"] == pytest.approx(2 * 4 * 10 * US) and layer["kernels"] == 2
    assert line_of(script, "marker: xe backward") not in lines
    folded = _folded(run_lprof, tmp_path, prof, "gpu")
    assert any(f"model ({script}:{line_of(script, 'marker: xe layer')});[backward]" in l
               and l.endswith("axpy_xe 80") for l in folded), folded


HALF_WAY_SCRIPT = """
import functools
import torch
from lprof.collect import gpu_backward
apply, backward = torch.autograd.Function.__dict__["apply"], torch.autograd.backward
wraps = functools.wraps
def broken(*args, **kwargs):
    raise RuntimeError("broken")
functools.wraps = broken  # fails after Function.apply was replaced
why = gpu_backward.install(torch)
functools.wraps = wraps
print("RuntimeError: broken" in why, torch.autograd.Function.__dict__["apply"] is apply,
      torch.autograd.backward is backward, torch._C._len_torch_function_stack(), len(gpu_backward._STATE))
"""


def test_a_failure_half_way_through_install_is_undone(run_python, write_script):
    r = run_python(write_script("half.py", HALF_WAY_SCRIPT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "0", "0"], r.stdout


def test_older_gpu_rows_read_without_the_backward_column():
    from lprof.model.sections import GPU_ROW_COLUMNS, gpu_line_columns
    assert GPU_ROW_COLUMNS[-3:] == ("other_thread_s", "gpu_comm_s", "gpu_backward_s")
    row = ["f.py", 3, "f", 1.0, 0.5, 2, 2, 0, 0, 0, 0, 0, 0.0, 0.25]  # with comm_s, no backward_s
    cols = gpu_line_columns({"gpu": {"lines": [row]}})
    assert cols[("f.py", 3)]["backward_s"] == 0 and cols[("f.py", 3)]["comm_s"] == 0.25
