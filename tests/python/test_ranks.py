"""Ranks: launcher environments, rank file names, `lprof merge` (metrics by
their declared merge kind, the imbalance view), and real launchers: Open
MPI's mpirun with mpi4py, torchrun with gloo."""
import os
import shutil
import subprocess
import sys

import pytest

from lprof.common import procinfo
from lprof.common.errors import ProfileFileError
from lprof.model import profile_file
from lprof.model.merge import Merger, MergeError

APP = "/srv/app/train.py"  # a user file (not the standard library): stacks are charged to it


@pytest.mark.parametrize("env, want", [
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"},
     {"rank": 1, "world_size": 2, "local_rank": 1, "launcher": "torchrun"}),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
      "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
     {"rank": 3, "world_size": 4, "local_rank": 0, "launcher": "openmpi"}),
    ({"PMI_RANK": "2", "PMI_SIZE": "8"}, {"rank": 2, "world_size": 8, "launcher": "pmi"}),
    ({"PMIX_RANK": "5"}, {"rank": 5, "launcher": "pmix"}),
    ({"SLURM_PROCID": "7", "SLURM_NTASKS": "16", "SLURM_LOCALID": "3"},
     {"rank": 7, "world_size": 16, "local_rank": 3, "launcher": "slurm"}),
    # torchrun inside a Slurm step: the worker's rank, not the step's
    ({"SLURM_PROCID": "0", "RANK": "6"}, {"rank": 6, "launcher": "torchrun"}),
    ({"RANK": "x", "PMI_RANK": "1"}, {"rank": 1, "launcher": "pmi"}),
    ({}, {}),
])
def test_rank_from_launcher_environment(env, want):
    assert procinfo.rank_info(env) == want


def test_rank_file_names():
    info = {"pid": 42, "hostname": "node7.cluster.example", "rank": 3}
    assert procinfo.rank_file_name("train.py.sample", info) == "train.py.sample.node7.3.lprof"
    assert procinfo.rank_file_name("x", {"pid": 42, "hostname": "a/b"}) == "x.a_b.pid42.lprof"


def _profile(rank, values, frames=None, columns=None, functions=()):
    """A small profile: one stack per (frame ids, thread) in values."""
    columns = columns or [["cpu_python_s", "ns", "sum"], ["gpu_s", "ns", "sum"],
                          ["gpu_peak_bytes", "bytes", "max"]]
    frames = frames or [[APP, "<module>", 1, 10], [APP, "step", 3, 5], [APP, "step", 3, 6]]
    return {"format": "lprof", "version": 2,
            "meta": {"pid": 100 + rank, "hostname": "h", "rank": rank, "world_size": 3,
                     "modes": ["cpu"], "duration_s": 1.0 + rank, "argv": [APP]},
            "functions": list(functions),
            "sampling": {"mode": "cpu", "samples": 10, "signals": 10, "cpu_total_s": 1.0,
                         "duration_s": 1.0 + rank, "threads": {"1": "MainThread"}, "lines": []},
            "stacks": {"frames": frames, "columns": columns,
                       "stacks": [[list(ids), th, dict(m)] for (ids, th), m in values.items()]}}


def test_merge_by_declared_kind_and_imbalance(tmp_path):
    # gpu_s and gpu_peak_bytes are not lprof's columns: their kinds come from the files
    profiles = [
        _profile(0, {((0, 1), 1): {"cpu_python_s": 1.0, "gpu_s": 0.5, "gpu_peak_bytes": 100}}),
        _profile(1, {((0, 1), 1): {"cpu_python_s": 4.0, "gpu_s": 0.5, "gpu_peak_bytes": 700},
                     ((0, 2), 1): {"cpu_python_s": 2.0}}),
        # the same frames in another order: matched by value, not by id
        _profile(2, {((1, 0), 9): {"cpu_python_s": 1.0, "gpu_peak_bytes": 300}},
                 frames=[[APP, "step", 3, 5], [APP, "<module>", 1, 10]]),
    ]
    paths = []
    for i, prof in enumerate(profiles):
        path = tmp_path / f"r{i}.lprof"
        profile_file.save(prof, path)
        paths.append(path)
    m = Merger()
    for p in paths:
        m.add(profile_file.load(p), str(p))
    merged = m.result()
    profile_file.save(merged, tmp_path / "all.lprof")
    merged = profile_file.load(tmp_path / "all.lprof")  # what a reader sees, validated
    st = merged["stacks"]
    by_stack = {}
    for ids, _th, vals in st["stacks"]:
        key = tuple(tuple(st["frames"][i][1:]) for i in ids)
        row = by_stack.setdefault(key, {})
        for k, v in vals.items():
            row[k] = max(row.get(k, v), v) if k == "gpu_peak_bytes" else row.get(k, 0) + v
    step5 = (("<module>", 1, 10), ("step", 3, 5))
    assert by_stack[step5] == {"cpu_python_s": 6.0, "gpu_s": 1.0, "gpu_peak_bytes": 700}
    assert merged["meta"]["processes"] == 3
    assert [mm["rank"] for mm in merged["ranks"]["members"]] == [0, 1, 2]
    lines = {(r[0], r[1]): r[3] for r in merged["ranks"]["lines"]}
    assert lines[(APP, 5)]["cpu_s"] == [6.0, 4.0, 1]           # sum, max, slowest member
    assert lines[(APP, 5)]["gpu_peak_bytes"][1:] == [700, 1]
    assert lines[(APP, 6)]["cpu_python_s"] == [2.0, 2.0, 1]
    (stack,) = [s for s in merged["ranks"]["stacks"]
                if [tuple(st["frames"][i][1:]) for i in s[0]] == list(step5)]
    assert stack[1]["cpu_python_s"] == [6.0, 4.0, 1]
    assert merged["sampling"]["samples"] == 30 and merged["sampling"]["duration_s"] == 3.0
    (row,) = [r for r in merged["sampling"]["lines"] if r[1] == 5]
    assert row[3] == 6.0


def test_followed_children_get_per_line_imbalance_only():
    """A parent and its followed children (no launcher, no rank) merge with
    per-line imbalance and no per-stack one: that tripled the stacks at a
    run's end (a test suite with one 0.1 s child: 13 of its 17 MB of JSON,
    ~100 MB of memory while merging), for a view only ranks use."""
    profiles = [_profile(0, {((0, 1), 1): {"cpu_python_s": 1.0}}),
                _profile(1, {((0, 1), 1): {"cpu_python_s": 3.0}})]
    for prof in profiles:
        for key in ("rank", "world_size"):
            del prof["meta"][key]
    m = Merger()
    for prof in profiles:
        m.add(prof)
    merged = m.result()
    assert "stacks" not in merged["ranks"]
    lines = {(r[0], r[1]): r[3] for r in merged["ranks"]["lines"]}
    assert lines[(APP, 5)]["cpu_s"] == [4.0, 3.0, 1]
    assert len(merged["ranks"]["members"]) == 2


def test_merge_exact_line_timing():
    def fn(hits, t):
        return {"file": APP, "name": "step", "first_line": 3, "total_s": t,
                "lines": [[5, hits, t]]}
    a, b = _profile(0, {}), _profile(1, {})
    a["functions"], b["functions"] = [fn(10, 1.0)], [fn(30, 3.0)]
    m = Merger()
    m.add(a)
    m.add(b)
    out = m.result()
    assert out["functions"][0]["lines"] == [[5, 40, 4.0]] and out["functions"][0]["total_s"] == 4.0
    (row,) = [r for r in out["ranks"]["lines"] if r[1] == 5]
    assert row[3]["line_time_s"] == [4.0, 3.0, 1] and row[3]["line_hits"] == [40, 30, 1]


def test_cpu_and_wall_profiles_do_not_merge():
    wall = _profile(1, {})
    wall["sampling"]["mode"] = "wall"
    m = Merger()
    m.add(_profile(0, {}))
    with pytest.raises(MergeError):
        m.add(wall, "wall.lprof")


def test_malformed_ranks_section_is_refused(tmp_path):
    m = Merger()
    m.add(_profile(0, {((0, 1), 1): {"cpu_python_s": 1.0}}))
    prof = m.result()
    prof["ranks"]["lines"][0][3]["cpu_s"][2] = 5  # a member that does not exist
    profile_file.save(prof, tmp_path / "bad.lprof")
    with pytest.raises(ProfileFileError, match="ranks line values member"):
        profile_file.load(tmp_path / "bad.lprof")


IMBALANCED = """
import os

def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("RANK") or 0)
work(1500000 * (1 + 3 * rank))
"""


def test_outdir_names_files_by_host_and_rank(run_lprof, write_script, load_profile, tmp_path):
    script = write_script("imb.py", IMBALANCED)
    for rank in (0, 1):
        r = run_lprof("-q", "--outdir", "prof", script,
                      env={"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": "2"})
        assert r.returncode == 0, r.stderr
    host = procinfo.short_host(os.uname().nodename)
    names = sorted(os.listdir(tmp_path / "prof"))
    assert names == [f"imb.py.sample.{host}.0.lprof", f"imb.py.sample.{host}.1.lprof"]
    prof = load_profile(str(tmp_path / "prof" / names[1]))
    assert (prof["meta"]["rank"], prof["meta"]["world_size"], prof["meta"]["launcher"]) == \
        (1, 2, "openmpi")
    # without --outdir, ranks of one launch still get a file each, in the current folder
    r = run_lprof("-q", "-o", "mine.lprof", script,
                  env={"SLURM_PROCID": "4", "SLURM_NTASKS": "8"})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"mine.{host}.4.lprof").is_file() and not (tmp_path / "mine.lprof").exists()
    r = run_lprof("merge", "prof/*.lprof", "-o", "all.lprof")
    assert r.returncode == 0, r.stderr
    r = run_lprof("view", "all.lprof", "--ranks")
    assert r.returncode == 0, r.stderr
    _check_straggler(r.stdout, "imb.py:7")
    r = run_lprof("export", "all.lprof", "--format", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    import json
    ranks = json.loads(r.stdout)["ranks"]
    (row,) = [x for x in ranks["lines"] if x["line"] == 7]
    assert ranks["members"][row["values"]["cpu_s"]["member"]]["rank"] == 1


def _check_straggler(text, where):
    """The line's row: rank 1 holds the max, max/mean near 2 * 4 / (1 + 4) = 1.6.
    With the ranks and ASan oversubscribing 2 cores, CPU timer ticks land on
    each rank only now and then and carry their time to the line running then,
    so one line's split is noisy (1.30 seen in a fresh-clone ASan run, where
    rank 1's loop header took a third of its loop's time): above 1.2 still
    says rank 1 is the straggler by a clear margin (max/min above 1.5)."""
    (row,) = [ln for ln in text.splitlines() if where in ln]
    cells = row.split()
    assert cells[3:5] == ["rank", "1"], text
    assert 1.2 < float(cells[2]) <= 2.0, text


def test_merge_and_view_errors(run_lprof, write_script, tmp_path):
    (tmp_path / "afile").write_text("")
    write_script("x.py", "pass\n")
    r = run_lprof("--outdir", "afile/sub", "x.py")
    assert r.returncode == 2 and r.stderr.startswith("lprof: --outdir afile/sub: cannot create it")
    r = run_lprof("merge", "nothing-*.lprof")
    assert r.returncode == 2 and r.stderr.strip() == "lprof: nothing-*.lprof: no file matches"
    (tmp_path / "junk.lprof").write_bytes(b"not a profile")
    r = run_lprof("merge", "junk.lprof", "-o", "m.lprof")
    assert r.returncode == 2 and r.stderr.startswith("lprof: junk.lprof:")
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.lprof").exists()
    script = write_script("one.py", "x = sum(range(10))\n")
    assert run_lprof("-q", "--no-follow", "-o", "one.lprof", script).returncode == 0
    r = run_lprof("view", "one.lprof", "--ranks")
    assert r.returncode == 0 and "no per-rank data" in r.stdout
    assert run_lprof("merge", "one.lprof", "-o", "m.lprof").returncode == 0
    r = run_lprof("view", "m.lprof", "--ranks", "--ranks-metric", "nope")
    assert r.returncode == 2 and r.stderr.startswith("lprof: --ranks-metric nope:")


def _run_group(cmd, cwd, env, timeout):
    """Runs a launcher in its own process group, all of it killed on a timeout
    (a hung rank must not outlive the test)."""
    import signal
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{cmd[0]} timed out after {timeout} s: {err[-2000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mpi_ready():
    if not shutil.which("mpirun"):
        return "mpirun not installed (openmpi-bin)"
    try:
        import mpi4py  # noqa: F401 (only whether it imports)
    except ImportError:
        return "mpi4py not installed"
    return None


@pytest.mark.skipif(_mpi_ready() is not None, reason=str(_mpi_ready()))
def test_mpirun_ranks_merged_with_imbalance(write_script, tmp_path):
    from conftest import lprof_env
    script = write_script("mpi_imb.py", """
        from mpi4py import MPI

        def work(n):
            s = 0
            for i in range(n):
                s += i * i
            return s

        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        total = comm.allreduce(work(1500000 * (1 + 3 * rank)))
        if rank == 0:
            print("total", total)
    """)
    env = lprof_env({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                     "OMPI_MCA_rmaps_base_oversubscribe": "1"})
    r = _run_group(["mpirun", "-n", "2", "--oversubscribe", sys.executable, "-m", "lprof",
                    "-q", "--outdir", "prof", str(script)], tmp_path, env, 120)
    assert r.returncode == 0, r.stderr
    want = sum(i * i for i in range(1500000)) + sum(i * i for i in range(6000000))
    assert r.stdout.strip() == f"total {want}"  # the program's own output, once
    files = sorted(os.listdir(tmp_path / "prof"))
    assert [f.rsplit(".", 2)[1] for f in files] == ["0", "1"]
    merge = subprocess.run([sys.executable, "-m", "lprof", "merge", *[f"prof/{f}" for f in files],
                            "-o", "all.lprof"], cwd=tmp_path, env=lprof_env(),
                           capture_output=True, text=True, timeout=60)
    assert merge.returncode == 0, merge.stderr
    view = subprocess.run([sys.executable, "-m", "lprof", "view", "all.lprof", "--ranks"],
                          cwd=tmp_path, env=lprof_env(), capture_output=True, text=True,
                          timeout=60)
    assert view.returncode == 0, view.stderr
    _check_straggler(view.stdout, "mpi_imb.py:7")
    prof = profile_file.load(tmp_path / "all.lprof")
    assert {(m["rank"], m["world_size"], m["launcher"]) for m in prof["ranks"]["members"]} == \
        {(0, 2, "openmpi"), (1, 2, "openmpi")}


def _torch_ready():
    try:
        import torch.distributed  # noqa: F401 (only whether it imports)
    except ImportError:
        return "torch not installed (a CPU wheel for Python 3.11 only: make deps)"
    return None


@pytest.mark.skipif(_torch_ready() is not None, reason=str(_torch_ready()))
def test_torchrun_two_ranks(write_script, tmp_path):
    from conftest import lprof_env
    script = write_script("ddp.py", """
        import os
        import torch
        import torch.distributed as dist

        def work(n):
            s = 0
            for i in range(n):
                s += i * i
            return s

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        t = torch.tensor([float(work(1500000 * (1 + 3 * rank)))])
        dist.all_reduce(t)
        if rank == 0:
            print("world", dist.get_world_size())
        dist.destroy_process_group()
    """)
    r = _run_group([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                    "--master-port", str(_free_port()), "-m", "lprof", "-q", "--outdir", "prof",
                    str(script)], tmp_path, lprof_env(), 240)
    assert r.returncode == 0, r.stderr
    assert "world 2" in r.stdout
    files = sorted(os.listdir(tmp_path / "prof"))
    assert [f.rsplit(".", 2)[1] for f in files] == ["0", "1"]
    merge = subprocess.run([sys.executable, "-m", "lprof", "merge", "prof/*.lprof", "-o",
                            "all.lprof"], cwd=tmp_path, env=lprof_env(), capture_output=True,
                           text=True, timeout=60)
    assert merge.returncode == 0, merge.stderr
    prof = profile_file.load(tmp_path / "all.lprof")
    assert {(m["rank"], m["launcher"]) for m in prof["ranks"]["members"]} == \
        {(0, "torchrun"), (1, "torchrun")}
    (row,) = [r for r in prof["ranks"]["lines"] if r[0] == str(script) and r[1] == 9]
    assert prof["ranks"]["members"][row[3]["cpu_s"][2]]["rank"] == 1  # the straggler
