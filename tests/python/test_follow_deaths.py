"""A followed child that dies does not vanish (issue #34): one killed by a
fatal signal keeps what lprof's last in-memory checkpoint held (written by
the C handler, merged, marked with the signal) and the run says which child
died, how, and what was lost; one killed by SIGKILL is named with what was
lost. The program's own exit status is unchanged."""
import re
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork, signals")

PROGRAM = """
import os, signal, sys, time


def burn(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1  # burn
    return x


how = sys.argv[1]
pid = os.fork()
if pid == 0:
    if how == "segv":
        burn(1.0)
        os.kill(os.getpid(), signal.SIGSEGV)
    burn(30)
    os._exit(0)
print("child", pid, flush=True)
if how == "kill":
    time.sleep(0.8)
    os.kill(pid, signal.SIGKILL)
_, status = os.waitpid(pid, 0)
print("status", status, flush=True)
sys.exit(3)
"""


def _run(write_script, run_lprof, run_python, how):
    write_script("dies.py", PROGRAM)
    plain = run_python("dies.py", how, timeout=120)
    r = run_lprof("-o", "d.lprof", "dies.py", how, timeout=120)
    assert r.returncode == plain.returncode == 3, (r.returncode, plain.returncode, r.stderr)
    pid = int(re.search(r"^child (\d+)$", r.stdout, re.M).group(1))
    said = [line for line in r.stderr.splitlines() if line.startswith(f"lprof: child process {pid} ")]
    assert len(said) == 1, r.stderr
    return pid, said[0]


def test_a_child_killed_by_sigsegv_is_named_and_its_last_checkpoint_merged(
        write_script, run_lprof, run_python, load_profile, tmp_path):
    pid, said = _run(write_script, run_lprof, run_python, "segv")
    assert "was killed by SIGSEGV" in said, said
    # its first checkpoint comes 0.5 s into its run, and it burns 1 s of CPU first
    assert "is merged" in said and "after that is lost" in said, said
    prof = load_profile(str(tmp_path / "d.lprof"))
    members = {m["pid"]: m for m in prof["ranks"]["members"]}
    assert members[pid].get("exit_code") == -11, members
    child_cpu = prof["ranks"]["members"][list(members).index(pid)]["totals"]
    assert sum(v for k, v in child_cpu.items() if k.startswith("cpu_")) > 0.1, child_cpu


def test_a_child_killed_by_sigkill_is_named_with_what_was_lost(write_script, run_lprof, run_python):
    pid, said = _run(write_script, run_lprof, run_python, "kill")
    assert "SIGKILL" in said and "its profile is lost" in said, said


def test_quiet_says_nothing_of_a_dead_child(write_script, run_lprof):
    write_script("dies.py", PROGRAM)
    r = run_lprof("-q", "-o", "d.lprof", "dies.py", "kill", timeout=120)
    assert r.returncode == 3, r.stderr
    assert "lprof:" not in r.stderr, r.stderr
