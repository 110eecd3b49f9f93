"""--wall's wait(s) column: the time coroutines wait at an await, charged to
the await chain (python/lprof/collect/awaits.py, src/collect/cpython/awaits.c;
Python 3.12+, where sys.monitoring exists)."""
import sys
from pathlib import Path

import pytest

from lprof.model import stacks as stacks_model

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="await waits need sys.monitoring (3.12+)")


def waits_by_line(profile, path):
    """{line: seconds} of wait_s charged to lines of path (the listing's rule)."""
    out = {}
    per_line = stacks_model.lines(profile["stacks"], names=("wait_s",))
    for (f, ln, _func), row in per_line.items():
        if f == str(path) and row.get("wait_s"):
            out[ln] = out.get(ln, 0.0) + row["wait_s"]
    return out


def profile_of(run_lprof, load_profile, tmp_path, script, *flags):
    r = run_lprof("--wall", "-o", "p.lprof", *flags, script)
    assert r.returncode == 0, r.stderr
    return r, load_profile(str(tmp_path / "p.lprof"))


def test_each_await_gets_the_time_its_coroutines_waited(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("aw.py", """\
        import asyncio

        async def fetch(i):
            await asyncio.sleep(0.2)  # fetch wait
            return i

        async def crunch():
            s = 0
            for i in range(200000):  # crunch
                s += i * i
            return s

        async def main():
            r = await asyncio.gather(*(fetch(i) for i in range(5)))  # gather
            await crunch()  # call crunch
            await asyncio.sleep(0.1)  # main wait
            print("done", sum(r))

        asyncio.run(main())  # run
        """)
    r, prof = profile_of(run_lprof, load_profile, tmp_path, script)
    assert "done 10" in r.stdout
    waits = waits_by_line(prof, script)
    # five coroutines wait 0.2 s each at the same await: 1 s of waiting (a
    # loaded machine can only make a sleep longer)
    assert 0.95 <= waits.get(line_of(script, "fetch wait"), 0) <= 2.5
    assert 0.19 <= waits.get(line_of(script, "gather"), 0) <= 1.0
    assert 0.095 <= waits.get(line_of(script, "main wait"), 0) <= 1.0
    # the loop that ran without yielding and the line that runs the loop wait nothing
    for marker in ("crunch", "call crunch", "run"):
        assert line_of(script, marker) not in waits, marker
    samp = prof["sampling"]
    # one suspension per wait, however deep its await chain (fetch -> sleep):
    # 5 fetches, the gather, the last sleep
    assert samp["waits"]["suspensions"] == samp["waits"]["resumes"] == 7, samp["waits"]
    assert samp["waits"]["evicted"] == 0
    assert samp["wait_total_s"] == pytest.approx(sum(waits.values()), rel=1e-6)
    # the listing: a wait(s) column, the fetch line with its second
    head = next(line for line in r.stdout.splitlines() if line.lstrip().startswith("Line"))
    assert "wait(s)" in head
    row = next(line for line in r.stdout.splitlines() if line.rstrip().endswith("# fetch wait"))
    assert f"{waits[line_of(script, 'fetch wait')]:.3f}" in row


def test_generators_and_async_generator_values_are_not_waits(tmp_path, run_lprof, write_script, load_profile):
    """A generator's consumer, not the generator, is busy while it is
    suspended; an async generator handing a value to its consumer is not
    waiting either. The consumer's own await is."""
    script = write_script("gen.py", """\
        import asyncio, time

        def numbers():
            yield 1  # gen yield
            yield 2

        async def agen():
            for i in range(3):
                yield i  # agen yield

        async def main():
            g = numbers()
            next(g)
            time.sleep(0.15)  # busy while the generator is suspended
            next(g)
            async for _ in agen():
                await asyncio.sleep(0.05)  # consumer wait

        asyncio.run(main())
        """)
    _r, prof = profile_of(run_lprof, load_profile, tmp_path, script)
    waits = waits_by_line(prof, script)
    assert line_of(script, "gen yield") not in waits
    assert line_of(script, "agen yield") not in waits
    assert 0.14 <= waits.get(line_of(script, "consumer wait"), 0) <= 1.0


def test_a_cancelled_task_waited_until_it_was_cancelled(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("cancel.py", """\
        import asyncio

        async def forever():
            await asyncio.Event().wait()  # never set

        async def main():
            t = asyncio.create_task(forever())
            await asyncio.sleep(0.2)
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                print("cancelled")

        asyncio.run(main())
        """)
    r, prof = profile_of(run_lprof, load_profile, tmp_path, script)
    assert "cancelled" in r.stdout
    waited = waits_by_line(prof, script).get(line_of(script, "never set"), 0)
    assert 0.19 <= waited <= 1.5
    assert prof["sampling"]["waits"]["suspensions"] == prof["sampling"]["waits"]["resumes"]


def test_twenty_thousand_waiting_at_once_are_all_kept(tmp_path, run_lprof, write_script, load_profile):
    """More coroutines suspended at once than the table starts with (16,384):
    it grows, and no wait is lost."""
    script = write_script("many.py", """\
        import asyncio

        async def one():
            await asyncio.sleep(0.3)  # many wait

        async def main():
            await asyncio.gather(*(one() for _ in range(20000)))

        asyncio.run(main())
        """)
    _r, prof = profile_of(run_lprof, load_profile, tmp_path, script)
    w = prof["sampling"]["waits"]
    assert w["evicted"] == 0 and w["suspensions"] == w["resumes"] == 20001, w
    # each waited its 0.3 s, less the microseconds between the timer's start
    # and the suspension
    assert waits_by_line(prof, script).get(line_of(script, "many wait"), 0) >= 20000 * 0.29


def test_profiles_merge_their_waits_and_bad_counts_are_refused(tmp_path, run_lprof, write_script, load_profile):
    from lprof.model import profile_file
    from lprof.model.profile_file import ProfileFileError
    script = write_script("two.py", """\
        import asyncio
        asyncio.run(asyncio.sleep(0.1))  # sleep
        """)
    for name in ("a", "b"):
        assert run_lprof("--wall", "-q", "-o", f"{name}.lprof", script).returncode == 0
    r = run_lprof("merge", "a.lprof", "b.lprof", "-o", "m.lprof")
    assert r.returncode == 0, r.stderr
    a, b, m = (load_profile(str(tmp_path / f"{n}.lprof")) for n in "abm")
    for key in ("suspensions", "resumes"):
        assert m["sampling"]["waits"][key] == a["sampling"]["waits"][key] + b["sampling"]["waits"][key]
    assert m["sampling"]["wait_total_s"] == pytest.approx(a["sampling"]["wait_total_s"] + b["sampling"]["wait_total_s"])
    line = line_of(script, "sleep")
    assert waits_by_line(m, script)[line] == pytest.approx(waits_by_line(a, script)[line] + waits_by_line(b, script)[line])
    a["sampling"]["waits"]["suspensions"] = "many"
    profile_file.save(a, tmp_path / "bad.lprof")
    with pytest.raises(ProfileFileError):
        profile_file.load(tmp_path / "bad.lprof")


def test_the_example(tmp_path, run_lprof, load_profile):
    """examples/async_waits.py (examples/README.md): the "network" line waited
    the fetches' latencies, 10 of 0.10-0.28 s and 5 of 0.1 s (2.4 s)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "async_waits.py"
    r = run_lprof("--wall", "-o", "p.lprof", example)
    assert r.returncode == 0 and "15 pages" in r.stdout, r.stderr
    waits = waits_by_line(load_profile(str(tmp_path / "p.lprof")), example)
    assert 2.35 <= waits.get(line_of(example, 'the "network"'), 0) <= 6.0, waits
    assert "wait(s)" in r.stdout


def test_no_waits_and_cpu_mode_have_no_column(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("aw.py", """\
        import asyncio
        asyncio.run(asyncio.sleep(0.1))
        """)
    for flags in (("--no-waits",), ("--cpu",)):
        r = run_lprof(*(["--wall"] if flags == ("--no-waits",) else []), *flags, "-o", "p.lprof", script)
        assert r.returncode == 0, r.stderr
        prof = load_profile(str(tmp_path / "p.lprof"))
        assert "waits" not in prof["sampling"] and not waits_by_line(prof, script)
        assert "wait(s)" not in r.stdout


def test_the_callbacks_go_with_the_run_and_leave_other_tools_alone(tmp_path, run_lprof, write_script):
    """A tool id of its own, given back at the end; a program that uses
    sys.monitoring itself keeps its tool and events."""
    script = write_script("mon.py", """\
        import asyncio, sys
        mon = sys.monitoring
        seen = []
        mon.use_tool_id(mon.COVERAGE_ID, "mine")
        mon.register_callback(mon.COVERAGE_ID, mon.events.PY_START, lambda code, off: seen.append(code.co_name))
        mon.set_events(mon.COVERAGE_ID, mon.events.PY_START)

        async def job():
            await asyncio.sleep(0.01)

        asyncio.run(job())
        mon.set_events(mon.COVERAGE_ID, 0)
        print("job" in seen, [mon.get_tool(i) for i in range(6)])
        """)
    r = run_lprof("--wall", "-o", "p.lprof", script)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("True") and "'mine'" in first and "'lprof-await'" in first
    import lprof.collect.awaits as awaits
    from lprof import _lprof
    assert awaits.start() is None
    try:
        assert sys.monitoring.get_tool(awaits._tool) == "lprof-await"
    finally:
        awaits.stop()
        _lprof.await_reset()
    assert all(sys.monitoring.get_tool(i) != "lprof-await" for i in range(6))


def line_of(path, marker):
    for i, text in enumerate(open(path).read().splitlines(), 1):
        if text.rstrip().endswith("# " + marker):
            return i
    raise AssertionError(f"marker {marker} not in {path}")
