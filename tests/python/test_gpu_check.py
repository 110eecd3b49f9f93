"""tools/gpu_check.py (make gpu-check) without a GPU: its workload and
torch.profiler snippet are valid Python, and the parsing and comparison it
reports with are right on synthetic numbers."""
import os
import py_compile
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check


def test_workload_and_snippets_compile(tmp_path):
    py_compile.compile(gpu_check.WORKLOAD, cfile=str(tmp_path / "w.pyc"), doraise=True)
    compile(gpu_check.TORCH_PROFILE, "torch_profile", "exec")
    compile(gpu_check.UNINITIALISED, "uninitialised", "exec")
    compile(gpu_check.UNINITIALISED_TORCH, "uninitialised_torch", "exec")


def test_every_compared_part_has_a_marker():
    markers = gpu_check.marker_lines(open(gpu_check.WORKLOAD).read())
    for name in gpu_check.COMPARED + ("cpu",) + tuple(gpu_check.COPIES) + tuple(gpu_check.TENSORS) \
            + tuple(gpu_check.LIVE_AT_EXIT) + tuple("call " + n for n in gpu_check.LINE_MODE):
        assert name in markers, name
    assert len(set(markers.values())) == len(markers)  # one line each


def test_device_time_is_charged_by_the_annotation_open_at_its_launch():
    markers = {"matmul": 40, "h2d": 42}
    main, autograd = 7, 8

    def ann(name, ts, dur, tid=main):
        return {"ph": "X", "cat": "user_annotation", "name": "gpu-check: " + name, "tid": tid, "ts": ts, "dur": dur}

    def call(cat, corr, ts, tid=main):
        return {"ph": "X", "cat": cat, "name": "cudaLaunchKernel", "tid": tid, "ts": ts, "dur": 1,
                "args": {"correlation": corr}}

    def work(cat, corr, dur):
        return {"ph": "X", "cat": cat, "name": "k", "tid": "stream 7", "ts": 10_000, "dur": dur,
                "args": {"correlation": corr}}
    events = [ann("matmul", 100, 50), ann("h2d", 200, 50), ann("matmul", 300, 50),
              {"ph": "X", "cat": "gpu_user_annotation", "name": "gpu-check: matmul", "tid": "stream 7", "ts": 1,
               "dur": 5000, "args": {}},  # the annotation's GPU-side span: no work
              call("cuda_runtime", 1, 110), work("kernel", 1, 1500.0),
              call("cuda_driver", 2, 320), work("kernel", 2, 500.0),  # a Triton kernel: a driver launch
              call("cuda_runtime", 3, 210), work("gpu_memcpy", 3, 100.0),
              call("cuda_runtime", 4, 220, tid=autograd), work("kernel", 4, 250.0),  # backward's thread
              call("cuda_runtime", 5, 20), work("gpu_memset", 5, 3.0),  # set-up before the parts
              work("kernel", 6, 1.0)]  # no launch call recorded
    per, how = gpu_check.torch_per_line(events, markers)
    assert per == {"40": pytest.approx(2e-3), "42": pytest.approx(1e-4), "other thread": pytest.approx(2.5e-4),
                   "None": pytest.approx(3e-6), "no launch": pytest.approx(1e-6), "kernels:40": 2,
                   "kernels:other thread": 1, "kernels:no launch": 1}
    assert how == {"annotated": 3, "backward": 0, "backward unmapped": 0, "unannotated": 2, "no launch": 1}
    assert gpu_check.mark_of(["aten::add", "gpu-check: graph replay"]) == "graph replay"
    assert gpu_check.mark_of(["aten::add"]) is None


def test_the_workload_annotates_every_compared_part():
    source = open(gpu_check.WORKLOAD).read()
    for name in gpu_check.COMPARED:
        assert f'mark("{gpu_check.MARK}{name}")' in source, name


def test_compare_within_and_outside_the_tolerance():
    markers = {"a": 10, "b": 20, "train": 30}
    lprof = {10: {"kernel_s": 1.04, "kernels": 5, "launches": 5}, 20: {"kernel_s": 0.5, "copy_s": 0.6},
             30: {"kernel_s": 3.0, "backward_s": 1.9, "other_thread_s": 0.1, "kernels": 7}}
    torch = {"10": 1.0, "kernels:10": 5, "20": 1.0, "30": 3.03, "backward:30": 2.02, "kernels:30": 8,
             "None": 0.5}
    rows, checks = gpu_check.compare(lprof, torch, markers, names=("a", "b", "train"))
    # a: time, kernels; b: time (1.1 vs 1.0), kernels (0 = 0); train: backward, time, kernels (7 vs 8)
    assert [ok for _t, ok in checks] == [True, True, False, True, True, True, False]
    assert rows[0][:5] == (10, "a", 1.04, 1.0, pytest.approx(1.04)) and rows[0][5:] == (5, 5)
    assert rows[2][2] == pytest.approx(3.0)  # the whole line: forward and backward
    # nothing from torch.profiler for a line is a failure, not a division by zero
    _rows, checks = gpu_check.compare({10: {"kernel_s": 1.0}}, {}, {"a": 10}, names=("a",))
    assert checks[0][1] is False


def test_copies_must_be_exact_and_nothing_unattributed():
    markers = {"h2d": 5, "loader": 6}
    per = gpu_check.COPIES
    lines = {5: {"h2d_bytes": (10 + gpu_check.WARMUP) * per["h2d"]},
             6: {"h2d_bytes": (10 + gpu_check.WARMUP) * per["loader"] - 4}}
    assert [ok for _t, ok in gpu_check.copy_checks(lines, markers, 10)] == [True, False]
    good = {"join": {"records": 10, "unattributed": 0, "aged_out": 0, "incomplete": 0}}
    assert all(ok for _t, ok in gpu_check.join_checks(good))
    bad = {"join": {"records": 10, "unattributed": 1, "aged_out": 0, "incomplete": 0}}
    assert [ok for _t, ok in gpu_check.join_checks(bad)] == [False, True, True]


def test_leaves_inner_profiler_and_report():
    folded = "w.py:1 (<module>);step (w.py:9);matmul (w.py:4);ampere_sgemm_128x64_nn 900\n"
    assert gpu_check.leaf_check(folded)[1]
    assert not gpu_check.leaf_check("w.py:1 (<module>);matmul (w.py:4);[memcpy HtoD] 9\n")[1]
    checks = gpu_check.inner_profiler_checks("inner profiler kernels 1200\nok\n",
                                             "lprof: --gpu: torch.profiler started after 3.1 s: lprof handed CUPTI to it")
    assert all(ok for _t, ok in checks)
    assert not any(ok for _t, ok in gpu_check.inner_profiler_checks("ok\n", ""))
    meta = {"date": "2026-11-25", "device": "NVIDIA H100", "driver": "580.1 (CUDA 13.0)", "torch": "2.9.0+cu130",
            "cuda": "13.0", "git": "abc", "steps": 10, "cupti": 130001, "library": "/x/libcupti.so.13"}
    text = gpu_check.report(meta, [(4, "matmul", 1.0, 1.0, 1.0, 5, 5)], [("c", True), ("d", False)],
                            {"plain": [2.0, 1.5, 2.5], "lprof --gpu": [2.2, 2.3, 1.9],
                             "torch.profiler": [3.0, 3.1, 2.9]}, "listing")
    assert "NVIDIA H100" in text and "580.1" in text and "2.9.0+cu130" in text
    assert "| c | pass |" in text and "| d | FAIL |" in text and "| lprof --gpu | 2.20 | 1.100 |" in text
    assert "median of 3 alternating rounds" in text
    assert "plain 2.0, 1.5, 2.5; lprof --gpu 2.2, 2.3, 1.9; torch.profiler 3.0, 3.1, 2.9." in text
    assert "not measured" in gpu_check.report(meta, [], [], {}, "")
    measured, rows = gpu_check.read_overhead(text)
    assert measured.startswith("Measured by tools/gpu_check.py on 2026-11-25: NVIDIA H100")
    assert rows == [("plain", "2.00", "1.000"), ("lprof --gpu", "2.20", "1.100"), ("torch.profiler", "3.00", "1.500")]
    assert gpu_check.read_overhead(gpu_check.report(meta, [], [], {}, ""))[1] == []
    assert gpu_check.read_overhead("no report") == (None, [])


def test_tensor_memory_and_generated_code_checks():
    markers = {"matmul": 4, "compiled": 5, "tensor a": 2}
    steps = 10
    n = steps + gpu_check.WARMUP
    good = {4: {"alloc_bytes": n * gpu_check.TENSORS["matmul"] + (32 << 20)},
            5: {"alloc_bytes": n * gpu_check.TENSORS["compiled"]},
            2: {"live_bytes": gpu_check.LIVE_AT_EXIT["tensor a"]}}
    assert all(ok for _t, ok in gpu_check.tensor_checks(good, markers, steps))
    short = {**good, 5: {"alloc_bytes": (n - 1) * gpu_check.TENSORS["compiled"]}, 2: {"live_bytes": 0}}
    assert [ok for _t, ok in gpu_check.tensor_checks(short, markers, steps)] == [True, False, False]
    too_much = {**good, 4: {"alloc_bytes": n * gpu_check.TENSORS["matmul"] + gpu_check.TENSOR_SLACK + 1}}
    assert [ok for _t, ok in gpu_check.tensor_checks(too_much, markers, steps)] == [False, True, True]
    doc = {"gpu": {"lines": [{"file": "/w/gpu_torch_workload.py"}],
                   "tensor_memory": {"lines": [{"file": "/w/gpu_torch_workload.py"}]}}}
    assert gpu_check.generated_code_check(doc)[1]
    doc["gpu"]["tensor_memory"]["lines"].append({"file": "/tmp/torchinductor_root/ab/cab.py"})
    assert not gpu_check.generated_code_check(doc)[1]
    doc["gpu"]["tensor_memory"]["lines"].pop()
    doc["gpu"]["lines"].append({"file": "<string>"})  # Triton's launcher
    assert not gpu_check.generated_code_check(doc)[1]


def test_a_run_past_its_limit_is_logged_not_raised(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_check, "RUN_TIMEOUT", 0.5)
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setattr(gpu_check, "LOG", [])
    r, secs = gpu_check.run([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(30)"])
    assert r.returncode == 124 and "started" in r.stdout and secs < 10
    assert "exit 124" in (tmp_path / "gpu-check.log").read_text()


def test_line_mode_checks():
    markers = {"matmul": 4, "call matmul": 20, "h2d": 5, "call h2d": 21}
    sampled = {4: {"kernel_s": 0.5, "kernels": 205, "launches": 205}, 5: {"copy_s": 0.06, "h2d_bytes": 100, "launches": 205}}
    good = {20: {"gpu_s": 0.51, "kernels": 205, "launches": 205}, 21: {"gpu_s": 0.06, "h2d_bytes": 100, "launches": 205}}
    names = ("matmul", "h2d")
    assert all(ok for _t, ok in gpu_check.line_mode_checks(good, sampled, markers, names))
    off = {20: {"gpu_s": 0.51, "kernels": 204, "launches": 205}, 21: {"gpu_s": 0.08, "h2d_bytes": 100, "launches": 205}}
    assert [ok for _t, ok in gpu_check.line_mode_checks(off, sampled, markers, names)] == [False, False]
    assert not any(ok for _t, ok in gpu_check.line_mode_checks({}, sampled, markers, names))
    # a copy's time may differ more between two runs than a kernel's (as
    # measured on an H100: 32.26 vs 34.63 ms); bytes must still be exact
    slower = {20: {"gpu_s": 0.52, "kernels": 205, "launches": 205}, 21: {"gpu_s": 0.056, "h2d_bytes": 100, "launches": 205}}
    assert [ok for _t, ok in gpu_check.line_mode_checks(slower, sampled, markers, names)] == [True, True]
    slower[20]["gpu_s"] = 0.54  # a kernel line 8% off
    slower[21]["h2d_bytes"] = 99
    assert [ok for _t, ok in gpu_check.line_mode_checks(slower, sampled, markers, names)] == [False, False]


def test_backward_work_goes_to_the_line_of_the_forward_op_that_made_its_node():
    markers = {"fc1": 11, "loss": 12, "batch": 10}
    main, autograd = 1, 2

    def op(name, ts, dur, seq=None, fwd=0, tid=main, cat="cpu_op"):
        args = {} if seq is None else {"Sequence number": seq, "Fwd thread id": fwd}
        return {"ph": "X", "cat": cat, "name": name, "tid": tid, "ts": ts, "dur": dur, "args": args}

    def launched(corr, ts, tid, dur):
        return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": tid, "ts": ts, "dur": 1,
                 "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": "k", "tid": "stream 7", "ts": 5000 + corr, "dur": dur,
                 "args": {"correlation": corr}}]
    events = [op("gpu-check: batch", 0, 10, cat="user_annotation"),
              op("aten::to", 1, 5, seq=4),  # takes the next number, makes no node
              op("gpu-check: fc1", 20, 10, cat="user_annotation"),
              op("aten::linear", 21, 8, seq=4), op("aten::addmm", 22, 6, seq=4),  # made node 4
              op("gpu-check: loss", 40, 10, cat="user_annotation"),
              op("aten::mean", 41, 5, seq=5),
              op(gpu_check.BACKWARD_OP + "MeanBackward0", 100, 10, seq=5, fwd=1, tid=autograd),
              op(gpu_check.BACKWARD_OP + "AddmmBackward0", 120, 10, seq=4, fwd=1, tid=autograd),
              op(gpu_check.BACKWARD_OP + "torch::autograd::AccumulateGrad", 140, 5, tid=autograd)]
    events += launched(1, 23, main, 3.0) + launched(2, 101, autograd, 2.0) + launched(3, 121, autograd, 4.0)
    events += launched(4, 125, autograd, 1.0) + launched(5, 141, autograd, 0.5)
    per, how = gpu_check.torch_per_line(events, markers)
    assert per["11"] == pytest.approx(8e-6) and per["backward:11"] == pytest.approx(5e-6)
    assert per["kernels:11"] == 3 and "10" not in per  # not the batch op that took number 4 first
    assert per["12"] == per["backward:12"] == pytest.approx(2e-6)
    assert per["backward unmapped"] == pytest.approx(5e-7)
    assert how == {"annotated": 1, "backward": 3, "backward unmapped": 1, "unannotated": 0, "no launch": 0}
    assert gpu_check.covering([(0, 10, "a"), (2, 4, "b")], 5) == (0, 10, "a")
    assert gpu_check.covering([(0, 10, "a"), (2, 4, "b")], 3) == (2, 4, "b")
    assert gpu_check.covering([], 3) is None


def test_a_replay_is_compared_with_its_captured_lines():
    markers = {"graph replay": 57, "captured": 107, "call graph replay": 89}
    lprof = {57: {"kernel_s": 0.0, "kernels": 0, "launches": 105},
             107: {"kernel_s": 0.59, "kernels": 210, "launches": 2}}  # launched twice at capture
    torch = {"57": 0.6, "kernels:57": 210}
    rows, checks = gpu_check.compare(lprof, torch, markers, names=("graph replay",))
    assert [ok for _t, ok in checks] == [True, True] and rows[0][5:] == (210, 107)
    line = {89: {"gpu_s": 0.59, "kernels": 210, "launches": 105}}
    assert gpu_check.line_mode_checks(line, lprof, markers, names=("graph replay",))[0][1]
