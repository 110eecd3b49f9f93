"""GPU collectives per line (issue #36 item 4, issue #37's oneCCL item):
NCCL and oneCCL kernels are communication, apart from compute, per line
(gpu_comm_s: listing, JSON, folded stacks), and `lprof merge` / `lprof view
--ranks` split each rank's collective time into the wait for its peers and
the transfer. Without a GPU: two ranks (two processes with RANK and
WORLD_SIZE, as torchrun starts them) on the fake libcupti and the fake
Level Zero driver in their real-time modes, whose collectives start at
known CLOCK_MONOTONIC times (fake_cupti_launch_kernel_at,
fake_ze_start_next_at): rank 1 arrives LATE ns after rank 0 and both end
together, so rank 0 waits LATE per collective and each transfers for the
rest. Durations are the fakes', exact; the wait crosses the two processes'
clock alignments (a CUPTI timestamp / Level Zero global timestamp pair each,
read within a microsecond), hence the 1 us tolerance on it."""
import json
import os
import time

import pytest

from conftest import ROOT, line_of
from test_gpu import _cuda_env, fake_cuda, fake_ze  # noqa: F401 (fixtures, named as parameters)

CUDA = os.path.join(ROOT, "tests", "scripts", "gpu_collectives_cuda.py")
ZE = os.path.join(ROOT, "tests", "scripts", "gpu_collectives_levelzero.py")
LATE = 120_000  # ns rank 1 starts each all-reduce after rank 0
US = 1e-6
ALIGN = 1e-6  # the two processes' clock pairs' error (s)


def _t0():
    """A CLOCK_MONOTONIC time 10 s ahead, on the fake Level Zero's 10 ns
    ticks: the collectives' device times (ahead, so that Level Zero's
    unwrapping of 32-bit timestamps never meets a start long past)."""
    return (time.monotonic_ns() + 10 * 10**9) // 10 * 10


def _ranks(run_lprof, tmp_path, script, backend, env):
    t0 = str(_t0())
    files = []
    for rank in (0, 1):
        r = run_lprof(f"--gpu={backend}", "-o", tmp_path / f"r{rank}.lprof", script,
                      env=dict(env, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                               COLL_T0_NS=t0, COLL_LATE_NS=str(LATE)))
        assert r.returncode == 0, r.stderr
        out = [p for p in os.listdir(tmp_path) if p.startswith(f"r{rank}.") and p.endswith(".lprof")]
        assert len(out) == 1, out
        files.append(tmp_path / out[0])
    return files


def _merge(run_lprof, tmp_path, files):
    r = run_lprof("merge", *files, "-o", tmp_path / "m.lprof")
    assert r.returncode == 0, r.stderr
    return tmp_path / "m.lprof"


def _export(run_lprof, tmp_path, prof, name="out.json"):
    r = run_lprof("export", prof, "--format", "json", "-o", tmp_path / name)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / name).read_text())


def _collectives(doc, script):
    """{(line, rank): cell} of the export's ranks.collectives."""
    coll = doc["ranks"]["collectives"]
    members = doc["ranks"]["members"]
    return coll, {(row["line"], members[c["member"]]["rank"]): c
                  for row in coll["lines"] if row["file"] == script for c in row["ranks"]}


def _gpu_lines(doc, script):
    return {row["line"]: row for row in doc["gpu"]["lines"] if row["file"] == script}


def test_collective_kernel_names_are_communication():
    from lprof import _lprof
    comm = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
            "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)",
            "void ncclKernel_AllReduce_RING_LL_Sum_float<int>(ncclDevComm*)",
            "_ZN4nccl13ncclDevFunc_AllReduceEv", "ncclDevFunc_SendRecv",
            "allreduce_execution_float32_sum", "reduce_scatter_execution_bfloat16_max",
            "allgatherv_execution_int8", "alltoallv_execution_float32", "bcast_execution_int32"]
    compute = ["gemm_kernel", "_Z4gemmPfS_", "void at::native::vectorized_elementwise_kernel<4>(int)",
               "my_ncclDevKernel_AllReduce", "_Z3ncc", "_Z99ncclDevKernel", "allreduce_naive",
               "[memcpy HtoD]", ""]
    assert [n for n in comm if not _lprof.gpu_is_comm(n)] == []
    assert [n for n in compute if _lprof.gpu_is_comm(n)] == []
    assert "gpu_comm_s" in _lprof.metric_groups()["gpu"]


def test_cuda_ranks_comm_per_line_wait_and_transfer(run_lprof, tmp_path, fake_cuda):
    files = _ranks(run_lprof, tmp_path, CUDA, "cuda", _cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
    compute, allreduce, gather = (line_of(CUDA, "marker: " + m) for m in ("compute", "allreduce", "allgather"))
    # each rank's own profile: comm apart from compute on each line
    for rank, f in enumerate(files):
        lines = _gpu_lines(_export(run_lprof, tmp_path, f, f"r{rank}.json"), CUDA)
        assert lines[compute]["kernel_s"] == pytest.approx(40 * US) and lines[compute]["comm_s"] == 0
        ar = 3 * (300_000 - (LATE if rank else 0)) * 1e-9
        assert lines[allreduce]["kernel_s"] == pytest.approx(ar)
        assert lines[allreduce]["comm_s"] == pytest.approx(ar)
        assert lines[gather]["comm_s"] == pytest.approx(50 * US)
    r = run_lprof("view", files[0], "--all")
    assert r.returncode == 0, r.stderr
    assert "comm s" in r.stdout and "0.000900" in r.stdout
    assert "0.000950 s of it in collectives" in r.stdout  # 900 + 50 us, the gemm's 40 not
    # the folded GPU stacks of communication alone
    r = run_lprof("export", files[0], "--format", "folded", "--metric", "gpu-comm", "-o", tmp_path / "c.folded")
    assert r.returncode == 0, r.stderr
    folded = dict(l.rsplit(" ", 1) for l in (tmp_path / "c.folded").read_text().splitlines())
    assert sorted(int(v) for v in folded.values()) == [50, 900]
    assert all("ncclDevKernel_" in k and "gemm" not in k for k in folded)

    merged = _merge(run_lprof, tmp_path, files)
    doc = _export(run_lprof, tmp_path, merged)
    coll, cells = _collectives(doc, CUDA)
    assert coll["comparable"] and coll["matched"] == 4 and coll["unmatched"] == 0
    assert coll["inconsistent"] == 0
    assert (compute, 0) not in cells and (compute, 1) not in cells
    r0, r1 = cells[(allreduce, 0)], cells[(allreduce, 1)]
    assert r0["count"] == r1["count"] == 3
    assert r0["comm_s"] == pytest.approx(900 * US) and r1["comm_s"] == pytest.approx(3 * 180 * US)
    assert r0["wait_s"] == pytest.approx(3 * LATE * 1e-9, abs=3 * ALIGN)  # rank 0 waited for rank 1
    assert r1["wait_s"] == 0  # the last to arrive waits for nobody
    assert r1["transfer_s"] == pytest.approx(3 * 180 * US)  # its whole kernel
    assert r0["transfer_s"] == pytest.approx(3 * 180 * US, abs=3 * ALIGN)
    for rank in (0, 1):
        g = cells[(gather, rank)]
        assert g["wait_s"] == pytest.approx(0, abs=ALIGN) and g["transfer_s"] == pytest.approx(50 * US, abs=ALIGN)
    # per line comm merged, and the ranks view
    assert _gpu_lines(doc, CUDA)[allreduce]["comm_s"] == pytest.approx(900 * US + 540 * US)
    r = run_lprof("view", merged, "--ranks")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "GPU collectives per launching line and rank" in text and "wait(s)" in text
    section = text.split("transfer(s)", 1)[1].splitlines()
    rows = {(w[1], w[2]): w for w in (l.split() for l in section) if len(w) >= 6 and w[0] == "rank"}
    # rank, comm(s), wait(s), transfer(s), count: rank 0 waited 3 x 120 us
    w0, w1 = rows[("0", "0.000900")], rows[("1", "0.000540")]
    assert float(w0[3]) == pytest.approx(360 * US, abs=3 * ALIGN) and w0[5] == "3"
    assert float(w0[4]) == pytest.approx(540 * US, abs=3 * ALIGN)
    assert w1[3:6] == ["0.000000", "0.000540", "3"]
    # a merged file merged again is one member holding both processes: each
    # process is still matched as a rank of its own, the member's cells summed
    r = run_lprof("merge", merged, "-o", tmp_path / "again.lprof")
    assert r.returncode == 0, r.stderr
    coll, cells = _collectives(_export(run_lprof, tmp_path, tmp_path / "again.lprof", "again.json"), CUDA)
    assert coll["matched"] == 4 and coll["unmatched"] == 0 and coll["inconsistent"] == 0
    both = next(c for (ln, _r), c in cells.items() if ln == allreduce)
    assert both["count"] == 6 and both["comm_s"] == pytest.approx(1440 * US)
    assert both["wait_s"] == pytest.approx(3 * LATE * 1e-9, abs=3 * ALIGN)


def test_level_zero_ranks_oneccl_wait_and_transfer(run_lprof, tmp_path, fake_ze):
    files = _ranks(run_lprof, tmp_path, ZE, "levelzero",
                   {"ZE_ENABLE_ALT_DRIVERS": str(fake_ze), "FAKE_ZE_REALTIME": "1"})
    compute, allreduce = line_of(ZE, "marker: compute"), line_of(ZE, "marker: allreduce")
    for rank, f in enumerate(files):
        lines = _gpu_lines(_export(run_lprof, tmp_path, f, f"r{rank}.json"), ZE)
        assert lines[compute]["kernel_s"] == pytest.approx(400 * US) and lines[compute]["comm_s"] == 0
        ar = 3 * (300_000 - (LATE if rank else 0)) * 1e-9
        assert lines[allreduce]["kernel_s"] == pytest.approx(ar) and lines[allreduce]["comm_s"] == pytest.approx(ar)
    doc = _export(run_lprof, tmp_path, _merge(run_lprof, tmp_path, files))
    coll, cells = _collectives(doc, ZE)
    assert coll["comparable"] and coll["matched"] == 3 and coll["unmatched"] == 0
    r0, r1 = cells[(allreduce, 0)], cells[(allreduce, 1)]
    assert r0["wait_s"] == pytest.approx(3 * LATE * 1e-9, abs=3 * ALIGN)
    assert r1["wait_s"] == 0 and r1["transfer_s"] == pytest.approx(3 * 180 * US)
    assert r0["transfer_s"] == pytest.approx(3 * 180 * US, abs=3 * ALIGN)
    assert (compute, 0) not in cells


def test_ranks_on_two_hosts_get_no_wait(run_lprof, tmp_path, fake_cuda, load_profile):
    """Device times of two hosts are on two clocks: no wait is computed, and
    the view says why; comm per line and rank stays."""
    from lprof.model import profile_file
    files = _ranks(run_lprof, tmp_path, CUDA, "cuda", _cuda_env(fake_cuda, FAKE_CUPTI_REALTIME="1"))
    prof = load_profile(files[1])
    prof["meta"]["hostname"] = "other-node"
    profile_file.save(prof, files[1])
    merged = _merge(run_lprof, tmp_path, files)
    coll, cells = _collectives(_export(run_lprof, tmp_path, merged), CUDA)
    assert not coll["comparable"] and "2 hosts" in coll["why"] and coll["matched"] == 0
    allreduce = line_of(CUDA, "marker: allreduce")
    assert cells[(allreduce, 0)]["comm_s"] == pytest.approx(900 * US)
    assert all(c["wait_s"] is None and c["transfer_s"] is None for c in cells.values())
    r = run_lprof("view", merged, "--ranks")
    assert r.returncode == 0, r.stderr
    assert "2 hosts" in r.stdout and "not computed" in r.stdout and "0.000360" not in r.stdout
