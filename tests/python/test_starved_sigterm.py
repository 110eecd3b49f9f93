"""SIGTERM's save does not wait for a GIL the program keeps from lprof.

lprof's watcher thread saves the profile on SIGTERM; it needs the GIL, and a
main thread that releases and retakes it thousands of times a second (a
stat every few thousand loops) kept it from the watcher for seconds: the
save took 4-7 s, enough for a supervisor's grace period to end in SIGKILL
and a lost profile. The watcher now also queues a pending call, which the
main thread runs at its next instruction: it sleeps a while, handing the
watcher the GIL for the save. From 3.12 any thread runs it, so a starving
thread other than the main one hands the GIL over too (6-13 s before on
3.12, with the main thread waiting in join)."""

import signal
import subprocess
import sys
import time

import pytest

from conftest import lprof_env
from starving import program

STARVING = program(60, 10000, ready=True)
STARVING_THREAD = program(60, 10000, on_thread=True, ready=True)


def _terminate(tmp_path, options, delay):
    """lprof (options) runs starving.py; SIGTERM `delay` s after it is
    ready: (exit status, seconds from the signal to the end, stderr)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "lprof", "-q", *options, "-o", "s.lprof", "starving.py"],
        cwd=tmp_path,
        env=lprof_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline() == "ready\n"
        time.sleep(delay)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        return p.returncode, time.monotonic() - t0, err
    finally:
        p.kill()


@pytest.mark.parametrize(
    "program",
    [
        STARVING,
        pytest.param(
            STARVING_THREAD,
            marks=pytest.mark.skipif(
                sys.version_info < (3, 12), reason="before 3.12 only the main thread runs pending calls"
            ),
            id="thread",
        ),
    ],
    ids=["main", "thread"],
)
def test_sigterm_saves_at_once_while_the_program_starves_lprof(tmp_path, load_profile, program):
    (tmp_path / "starving.py").write_text(program)
    # -i: the periodic file, not the watcher, keeps the checkpoints (the
    # test below has the watcher starved inside one)
    status, took, err = _terminate(tmp_path, ["-i", "60"], 0.5)
    assert status == -signal.SIGTERM, err
    # before: 4.3-26 s; now milliseconds (a busy machine: more)
    assert took < 2.5, took
    samp = load_profile(tmp_path / "s.lprof")["sampling"]
    assert samp["samples"] > 0


@pytest.mark.parametrize("mode", [[], ["-l"]], ids=["sampling", "lines"])
def test_sigterm_inside_a_starved_checkpoint_saves_at_once(tmp_path, load_profile, mode):
    """Without -i the watcher itself takes the in-memory checkpoints (the
    first at 0.5 s), and inside one it waits for the GIL the program keeps:
    a SIGTERM then waited for the checkpoint's end (0.8-4.3 s sampling,
    3.5-17 s with -l). A C thread of lprof's now relays it at once."""
    (tmp_path / "starving.py").write_text(STARVING)
    for delay in (0.6, 0.75, 0.9):
        status, took, err = _terminate(tmp_path, mode, delay)
        assert status == -signal.SIGTERM, err
        assert took < 2.5, (delay, took)
        assert load_profile(tmp_path / "s.lprof")
