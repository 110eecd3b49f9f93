"""tools/gpu_check_train.py (make gpu-check's training view) without a GPU:
its workload runs on the CPU, its torch.profiler snippet runs it, and the
checks it reports with pass and fail where they should on synthetic data."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check
import gpu_check_train as train

MARKERS = gpu_check.marker_lines(open(train.WORKLOAD).read())
SMALL = ["--steps", "2", "--warmup", "1", "--tiny", "50", "--hold-mib", "1", "--device", "cpu", "--no-compile"]


def test_every_checked_part_has_a_marker_and_an_annotation():
    source = open(train.WORKLOAD).read()
    for name in train.COMPARED + ("hold", "tiny", "forward call", "sleep", "item"):
        assert name in MARKERS, name
    for name in train.COMPARED:
        assert f'mark("{gpu_check.MARK}{name}")' in source, name
    assert len(set(MARKERS.values())) == len(MARKERS)


def test_the_workload_and_the_reference_snippet_run_on_the_cpu(tmp_path):
    pytest.importorskip("torch")  # the matrix's venvs have none
    out = tmp_path / "t.json"
    r = subprocess.run([sys.executable, "-c", gpu_check.TORCH_PROFILE, train.WORKLOAD, str(out),
                        os.path.join(ROOT, "tools")] + SMALL, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    info = train.program_info(r.stdout)
    assert info["tiny_kernels"] == 150 and info["batch_bytes"] == 3 * 2048 * 2048 * 4
    assert info["train_step_s"] > 0 and info["replay_kernels"] == 0
    assert json.loads(out.read_text())["how"]["no launch"] == 0


def _lines(**by_name):
    return {MARKERS[n]: cols for n, cols in by_name.items()}


def test_backward_must_leave_the_backward_line_for_the_forward_lines():
    fwd = {n: {"backward_s": 0.01} for n in train.FORWARD}
    good = _lines(**fwd, backward={"backward_s": 0.0})
    assert all(ok for _t, ok in train.forward_checks(good, {}, MARKERS))
    kept = _lines(**fwd, backward={"other_thread_s": 0.01})
    assert [ok for _t, ok in train.forward_checks(kept, {}, MARKERS)][-1] is False
    missing = _lines(**{**fwd, "fwd gelu": {}})
    assert [ok for _t, ok in train.forward_checks(missing, {}, MARKERS)].count(False) == 1


def test_counts_the_program_knows_must_be_exact():
    info = {"tiny_kernels": 299000, "replay_kernels": 46000, "batch_bytes": 96 << 20}
    lines = _lines(tiny={"kernels": 299000}, captured={"kernels": 46000}, batch={"h2d_bytes": 96 << 20})
    assert all(ok for _t, ok in train.count_checks(lines, MARKERS, info))
    on_replay = _lines(tiny={"kernels": 299000}, **{"graph replay": {"kernels": 46000}},
                       batch={"h2d_bytes": 96 << 20})  # the old charging: all on the replay line
    assert [ok for _t, ok in train.count_checks(on_replay, MARKERS, info)] == [True, False, True]
    lines[MARKERS["tiny"]] = {"kernels": 298999}
    assert [ok for _t, ok in train.count_checks(lines, MARKERS, info)] == [False, True, True]
    assert not any(ok for _t, ok in train.count_checks(lines, MARKERS, {}))
    first = _lines(**{n: {"kernels": 3} for n in train.SAME_COUNTS})
    assert train.same_counts(first, dict(first), MARKERS, "again")[1]
    other = {**first, MARKERS["optimizer"]: {"kernels": 2}}
    text, ok = train.same_counts(first, other, MARKERS, "again")
    assert not ok and "optimizer 3/2" in text


def test_tensor_memory_after_a_wrapped_history():
    path = "/w/gpu_train_workload.py"
    info = {"hold_bytes": 1 << 30, "requested_peak": 1_500_000_000}
    dev = {"window_full": True, "trace_entries": 200000, "peak_bytes": 1_500_000_000, "backward_bytes": 5,
           "frameless_bytes": 0}
    doc = {"gpu": {"tensor_memory": {"stats": {"devices": [dev]}, "lines": [
        {"file": path, "line": MARKERS["hold"], "live_bytes": 1 << 30}]}}}
    assert all(ok for _t, ok in train.tensor_wrap_checks(doc, MARKERS, info, path))
    dev.update(peak_bytes=100 << 20, frameless_bytes=7)  # the peak of the window alone
    assert [ok for _t, ok in train.tensor_wrap_checks(doc, MARKERS, info, path)] == [True, True, False, False]
    assert not any(ok for _t, ok in train.tensor_wrap_checks({}, MARKERS, {}, path))
    mem = {"gpu": {"stats": {"memory": {"allocs": 3, "peak_bytes": 2 << 30}}}}
    assert train.devmem_check(mem, info, "x")[1]
    assert not train.devmem_check({"gpu": {"stats": {"memory": {"allocs": 0}}}}, info, "x")[1]


def test_chrome_trace_flows_must_not_start_after_their_work():
    events = [{"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "GPU 0 (pid 5)"}}]
    for i in range(4):
        events += [{"ph": "X", "cat": "gpu,kernel" if i else "gpu,memcpy", "pid": 9, "ts": 100.0 * i + 10, "dur": 5},
                   {"ph": "s", "id": i, "ts": 100.0 * i}, {"ph": "f", "id": i, "ts": 100.0 * i + 10}]
    assert all(ok for _t, ok in train.chrome_checks(events, 4))
    assert not train.chrome_checks(events, 5)[1][1]  # a kernel missing from the trace
    events.append({"ph": "s", "id": 9, "ts": 500.0})
    events.append({"ph": "f", "id": 9, "ts": 498.0})  # work 2 us before its launch
    assert not train.chrome_checks(events, 4)[2][1]
    assert not train.chrome_checks([], 0)[0][1]


def test_idle_on_the_sleep_line_not_on_the_item_line():
    sleep, item = MARKERS["sleep"], MARKERS["item"]
    good = {"time": {sleep: 0.2, item: 0.01}, "idle": {sleep: 0.199, item: 0.001}}
    assert all(ok for _t, ok in train.idle_checks(good, MARKERS))
    busy = {"time": {sleep: 0.2, item: 0.01}, "idle": {sleep: 0.1, item: 0.009}}
    assert not any(ok for _t, ok in train.idle_checks(busy, MARKERS))
    assert not any(ok for _t, ok in train.idle_checks({}, MARKERS))


def test_overhead_is_a_share_of_torch_profilers():
    times = {"plain": {"train_step_s": 0.010, "tiny_launch_s": 6e-6},
             "lprof --gpu": {"train_step_s": 0.011, "tiny_launch_s": 8e-6},
             "torch.profiler": {"train_step_s": 0.016, "tiny_launch_s": 12e-6}}
    rows, checks = train.overhead_rows(times)
    assert [ok for _t, ok in checks] == [True, True]
    assert rows[0][4] == pytest.approx(1 / 6) and rows[1][4] == pytest.approx(1 / 3)
    times["lprof --gpu"]["tiny_launch_s"] = 9e-6
    assert [ok for _t, ok in train.overhead_rows(times)[1]] == [True, False]
    assert [ok for _t, ok in train.overhead_rows({})[1]] == [False, False]
    rows, checks = gpu_check.steps_overhead("gpu-check-steps 1.0\n", "gpu-check-steps 1.1\n",
                                            "ok\ngpu-check-steps 1.9\n")
    assert checks[0][1] and rows[0][4] == pytest.approx(1 / 9)
    assert not gpu_check.steps_overhead("", "", "")[1][0][1]


def test_a_compiled_kernel_split_over_its_lines():
    call = MARKERS["compiled call"]
    third = {"kernel_s": 0.001, "kernels": 23 / 3}
    lines = _lines(**{n: dict(third) for n in train.COMPILED})
    theirs = {str(call): 0.00302, f"kernels:{call}": 23}
    assert all(ok for _t, ok in train.compiled_checks(lines, theirs, MARKERS))
    kept = {**lines, call: {"kernel_s": 0.003}}  # the calling line kept it: the old charging
    assert [ok for _t, ok in train.compiled_checks(kept, theirs, MARKERS)] == [True, True, True, False]
    uneven = {**lines, MARKERS["compiled a"]: {"kernel_s": 0.002, "kernels": 23 / 3}}
    assert [ok for _t, ok in train.compiled_checks(uneven, theirs, MARKERS)][2] is False
    assert not any(ok for _t, ok in train.compiled_checks({}, {}, MARKERS))


def test_the_overhead_table_says_what_each_part_adds():
    times = {"plain": {"train_step_s": 0.005, "tiny_launch_s": 12e-6},
             "lprof --gpu": {"train_step_s": 0.0056, "tiny_launch_s": 24e-6},
             "lprof --gpu, no allocator history": {"train_step_s": 0.0052, "tiny_launch_s": 15e-6}}
    rows = dict((r[0], r[1:]) for r in train.overhead_table(times))
    assert rows["lprof --gpu"] == ("5.600 (+0.600)", "24.00 (+12.00)")
    assert rows["lprof --gpu, no allocator history"] == ("5.200 (+0.200)", "15.00 (+3.00)")
    assert rows["torch.profiler"] == ("n/a", "n/a")
    assert all(tuple(r) == ("n/a", "n/a") for _n, *r in train.overhead_table({}))
