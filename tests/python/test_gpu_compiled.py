"""torch.compile's kernels on the source lines they fuse (issue #36 item 3),
without a GPU: CPU Inductor compiles a three-line function
(tests/scripts/gpu_compiled_torch.py) under lprof --gpu with the fake
libcupti (tests/gpu/fake_cupti.c), and "GPU kernels" named as Inductor named
its generated kernels are launched from the line after the compiled call.
lprof must charge each fused kernel to the lines of the ops it fused, split
evenly, under a "[compiled: fused over N lines]" stack frame, leave the
launching line none of it, and leave a kernel Inductor did not make, or a
run with LPROF_GPU_COMPILED=0, as before. Durations are the fakes', exact.
One cold compile (about 15 s) per session: the runs share Inductor's cache,
so the later ones load the compiled graph from it (with its map)."""
import json
import os
import shutil

import pytest

from conftest import ROOT, line_of
from test_gpu import _cuda_env, fake_cuda  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")
if not shutil.which("g++"):
    pytest.skip("no g++: CPU Inductor cannot build its C++ kernels", allow_module_level=True)
if not hasattr(torch, "compile"):
    pytest.skip("this torch has no torch.compile", allow_module_level=True)

SCRIPT = os.path.join(ROOT, "tests", "scripts", "gpu_compiled_torch.py")
US = 1e-6
STEPS = 3
KERNEL_US = 30


def _at(marker):
    return line_of(SCRIPT, "marker: " + marker)


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("inductor-cache")


def _run(run_lprof, tmp_path, fake, cache, name="p", **env):
    prof = tmp_path / f"{name}.lprof"
    r = run_lprof("--gpu=cuda", "-o", prof, SCRIPT, timeout=600,
                  env=_cuda_env(fake, STEPS=str(STEPS), TORCHINDUCTOR_CACHE_DIR=str(cache), **env))
    if r.returncode != 0 and "torch._dynamo" in r.stderr and "not supported" in r.stderr:
        pytest.skip("torch.compile is not supported on this Python")
    assert r.returncode == 0, r.stderr
    kernels = next(l for l in r.stdout.splitlines() if l.startswith("kernels:")).split()[1:]
    return prof, kernels


def _export(run_lprof, tmp_path, prof, fmt, *extra):
    out = tmp_path / f"{prof.stem}.{fmt}"
    r = run_lprof("export", prof, "--format", fmt, *extra, "-o", out)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def _lines(doc):
    return {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == SCRIPT}


def test_fused_kernel_goes_to_the_lines_it_fuses(run_lprof, tmp_path, fake_cuda, inductor_cache):
    prof, kernels = _run(run_lprof, tmp_path, fake_cuda, inductor_cache)
    assert kernels and all(k.startswith("cpp_fused_") for k in kernels), kernels
    doc = json.loads(_export(run_lprof, tmp_path, prof, "json"))
    lines = _lines(doc)
    # all kernels of the one graph fuse the three ops (sin, mul, add): a
    # third of each launch on each op's line
    each = STEPS * KERNEL_US * len(kernels) / 3
    for op in ("op sin", "op mul", "op add"):
        assert lines[_at(op)]["kernel_s"] == pytest.approx(each * US), (op, lines)
        assert lines[_at(op)]["kernels"] == pytest.approx(STEPS * len(kernels) / 3)
        assert lines[_at(op)]["function"] == "fused"
    # the launching line (the compiled call's stand-in) keeps none of the
    # device time, only its launches (the calls it made)
    launching = lines[_at("kernel launch")]
    assert launching["kernel_s"] == 0 and launching["kernels"] == 0, launching
    assert launching["launches"] == STEPS * len(kernels)
    assert _at("compiled call") not in lines
    # a kernel Inductor did not make keeps its launching line
    assert lines[_at("plain launch")]["kernel_s"] == pytest.approx(STEPS * 5 * US)
    # nothing lost: the lines sum to the device time
    assert sum(r["kernel_s"] for r in lines.values()) == pytest.approx(STEPS * (KERNEL_US * len(kernels) + 5) * US)
    compiled = doc["gpu"]["stats"]["compiled"]
    assert compiled["kernels"] == len(kernels) and compiled["graphs"] >= 1, compiled
    # the stacks: launch stack, the marker, the op's line, the kernel
    folded = _export(run_lprof, tmp_path, prof, "folded", "--metric", "gpu").splitlines()
    for op in ("op sin", "op mul", "op add"):
        branch = [l for l in folded
                  if f"<module> ({SCRIPT}:{_at('kernel launch')});[compiled: fused over 3 lines] (<lprof>:0);"
                     f"fused ({SCRIPT}:{_at(op)});{kernels[0]} " in l]
        assert [l.rsplit(" ", 1)[1] for l in branch] == [str(STEPS * KERNEL_US // 3)], folded
    assert not any("gpu_backward.py" in l for l in folded), "lprof's own frames in an op's trace"
    # the listing's summary says so
    r = run_lprof("view", prof)
    assert r.returncode == 0, r.stderr
    assert "torch.compile kernel" in r.stdout and "[compiled: ...]" in r.stdout, r.stdout


def test_a_graph_loaded_from_inductors_cache_brings_its_map(run_lprof, tmp_path, fake_cuda, inductor_cache):
    """The first test compiled into the shared cache: this run loads the graph."""
    prof, kernels = _run(run_lprof, tmp_path, fake_cuda, inductor_cache, name="warm")
    lines = _lines(json.loads(_export(run_lprof, tmp_path, prof, "json")))
    assert lines[_at("op mul")]["kernel_s"] == pytest.approx(STEPS * KERNEL_US * len(kernels) / 3 * US)
    assert lines[_at("kernel launch")]["kernel_s"] == 0


def test_without_the_map_the_launching_line_keeps_the_kernels(run_lprof, tmp_path, fake_cuda, inductor_cache):
    # the program's own tracking level (the cache key has it: the graph
    # compiled above is loaded) does not turn lprof's split on
    prof, kernels = _run(run_lprof, tmp_path, fake_cuda, inductor_cache, name="off", LPROF_GPU_COMPILED="0",
                         INDUCTOR_PROVENANCE="2")
    lines = _lines(json.loads(_export(run_lprof, tmp_path, prof, "json")))
    assert lines[_at("kernel launch")]["kernel_s"] == pytest.approx(STEPS * KERNEL_US * len(kernels) * US)
    assert _at("op sin") not in lines
    folded = _export(run_lprof, tmp_path, prof, "folded", "--metric", "gpu")
    assert "[compiled" not in folded


def test_a_graph_cached_by_a_run_without_lprof_is_compiled_anew_with_its_map(
        run_lprof, run_python, tmp_path, fake_cuda):
    """Torch before 2.13 (2.11 on an H200) leaves the tracking level out of
    Inductor's cache key: the program's own run caches the graph without a
    map, and lprof's run loaded it so, its kernels left on the launching line.
    lprof keys the level itself; emulated here on this torch."""
    cache = tmp_path / "shared-cache"
    plain = run_python(SCRIPT, timeout=600, env=_cuda_env(
        fake_cuda, STEPS="1", TORCHINDUCTOR_CACHE_DIR=str(cache), KEY_WITHOUT_TRACKING_LEVEL="1"))
    if plain.returncode != 0 and "torch._dynamo" in plain.stderr and "not supported" in plain.stderr:
        pytest.skip("torch.compile is not supported on this Python")
    assert plain.returncode == 0, plain.stderr
    prof, kernels = _run(run_lprof, tmp_path, fake_cuda, cache, name="after-plain",
                         KEY_WITHOUT_TRACKING_LEVEL="1")
    lines = _lines(json.loads(_export(run_lprof, tmp_path, prof, "json")))
    on_mul = lines.get(_at("op mul"), {}).get("kernel_s")
    assert on_mul == pytest.approx(STEPS * KERNEL_US * len(kernels) / 3 * US), lines
    assert lines[_at("kernel launch")]["kernel_s"] == 0, lines
