"""lprof --gpu and CUDA graph replays, against the fake libcupti
(tests/gpu/fake_cupti.c): a replay's kernels go to the lines captured into
the graph, below a "[graph replay]" marker under the replay line; a graph
whose capture lprof never saw stays on the replay line, counted. Both node
ids a record may carry (the executable graph's clone, the captured node)
are covered. Counts and exact fake device times only, no wall clock."""
import os

import pytest

from conftest import ROOT, line_of
from test_gpu import _cuda_env, _export, fake_cuda  # noqa: F401 (fake_cuda: a fixture, named as a parameter)

SCRIPT = os.path.join(ROOT, "tests", "scripts", "gpu_graph_replay.py")
REPLAYS = 5
US = 1e-6


@pytest.mark.parametrize("ids", ["clone", "original"])
def test_replayed_kernels_go_to_the_captured_lines(run_lprof, tmp_path, fake_cuda, ids):
    r = run_lprof("--gpu", "-o", tmp_path / "p.lprof", "--stacks", tmp_path / "gpu.folded", SCRIPT,
                  env=_cuda_env(fake_cuda, GRAPH_NODE_IDS=ids))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("done\n")
    doc = _export(run_lprof, tmp_path, tmp_path / "p.lprof")
    lines = {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == SCRIPT}
    at = lambda m: lines.get(line_of(SCRIPT, "marker: " + m), {})
    gemm, relu, replay = at("captured gemm"), at("captured relu"), at("replay")
    assert gemm["kernels"] == REPLAYS and gemm["kernel_s"] == pytest.approx(REPLAYS * 30 * US)
    assert relu["kernels"] == REPLAYS and relu["kernel_s"] == pytest.approx(REPLAYS * 2 * US)
    assert gemm["launches"] == 1  # the capture's launch call; it ran nothing itself
    assert replay.get("kernels", 0) == 0 and replay.get("kernel_s", 0) == 0
    assert replay["launches"] == REPLAYS
    # a node added by hand: the adding line
    added = at("added node")
    assert added["kernels"] == 2 and added["kernel_s"] == pytest.approx(2 * 3 * US)
    assert at("replay built").get("kernels", 0) == 0
    # a capture lprof did not see: on the replay line, as before
    assert at("replay unseen")["kernels"] == 1 and at("replay unseen")["kernel_s"] == pytest.approx(4 * US)
    assert at("unseen capture").get("kernels", 0) == 0
    assert at("plain")["kernels"] == 1
    join = doc["gpu"]["stats"]["join"]
    assert join["graph_joined"] == 2 * REPLAYS + 2 and join["graph_missed"] == 1
    assert "1 kernels/copies of CUDA graph replays had no captured line" in r.stdout
    assert join["unattributed"] == 0
    folded = (tmp_path / "gpu.folded").read_text().splitlines()
    graph = [l for l in folded if l.endswith(f";gemm_kernel {REPLAYS * 30}")]
    assert len(graph) == 1, folded
    stack = graph[0].rsplit(" ", 1)[0].split(";")
    # the replay line, the marker, then the captured stack below the frames
    # both share (the program's entry): <module> at the capture call
    frame = lambda func, m: f"{func} ({SCRIPT}:{line_of(SCRIPT, m)})"
    at_replay = stack.index(frame("<module>", "marker: replay"))
    assert stack[at_replay + 1:] == ["[graph replay] (<lprof>:0)", frame("<module>", "marker: capture forward"),
                                     frame("capture", "marker: capture body"), frame("forward", "marker: captured gemm"),
                                     "gemm_kernel"]
    unseen = [l for l in folded if l.endswith(";unseen_kernel 4")]
    assert unseen and "[graph replay]" not in unseen[0]
