"""The task view of --wall's stacks for asyncio programs (3.12+): folded
stacks and flame graphs rooted at the task's name, the event loop's
scaffolding cut, the awaiting task's chain above an awaited task
(python/lprof/model/task_stacks.py, python/lprof/collect/task_names.py)."""
import sys

import pytest

from lprof.model import task_stacks

needs_312 = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="the task view needs sys.monitoring's await hooks (3.12+)"
)

PROGRAM = """\
    import asyncio, time

    def spin(s):
        t = time.perf_counter() + s
        while time.perf_counter() < t:
            pass

    async def fetch():
        for _ in range(4):
            spin(0.01)
            await asyncio.sleep(0.02)  # fetch sleep

    async def part():
        for _ in range(3):
            spin(0.01)
            await asyncio.sleep(0.02)  # part sleep

    async def grouped():
        spin(0.01)
        await asyncio.sleep(0.03)  # grouped sleep

    async def child():
        spin(0.02)
        await asyncio.sleep(0.03)  # child sleep

    async def parent():
        c = asyncio.create_task(child(), name="child")
        await c  # await child

    async def main():
        t = asyncio.create_task(fetch(), name="fetcher")
        await asyncio.gather(asyncio.create_task(part(), name="left"), asyncio.create_task(part(), name="right"))  # gather
        async with asyncio.TaskGroup() as tg:  # taskgroup
            tg.create_task(grouped(), name="grouped")
        await asyncio.create_task(parent(), name="parent")  # await parent
        await t
        print("done")

    asyncio.run(main())
    """

SCAFFOLDING = ("BaseEventLoop.run_forever", "BaseEventLoop._run_once", "Handle._run")


def line_of(path, marker):
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(marker)


def folded(path):
    """[(frames, value)] of a folded file."""
    out = []
    for text in path.read_text().splitlines():
        stack, _, value = text.rpartition(" ")
        out.append((stack.split(";"), int(value)))
    return out


def total_under(rows, prefix):
    return sum(v for frames, v in rows if frames[: len(prefix)] == prefix)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The program run once under --wall: (tmp dir, script, run result)."""
    import subprocess
    import textwrap

    from conftest import lprof_env

    tmp = tmp_path_factory.mktemp("tasks")
    script = tmp / "tasks_prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    r = subprocess.run(
        [sys.executable, "-m", "lprof", "--wall", "-o", "p.lprof", "--stacks", "wall.folded", script],
        cwd=tmp, env=lprof_env(None), capture_output=True, text=True, timeout=120,
    )
    return tmp, script, r


def export(tmp, *args):
    import subprocess

    from conftest import lprof_env

    r = subprocess.run([sys.executable, "-m", "lprof", "export", *args, "p.lprof"], cwd=tmp,
                       env=lprof_env(None), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


@needs_312
def test_the_program_runs_as_without_lprof_and_records_its_tasks(recorded, load_profile):
    tmp, _script, r = recorded
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "done"
    prof = load_profile(str(tmp / "p.lprof"))
    names = {n for t in prof["sampling"]["tasks"] for n in t["names"]}
    assert {"fetcher", "left", "right", "grouped", "parent", "child"} <= names
    assert task_stacks.applies(prof)
    # the listing says its pictures are per task, and whether each task is apart
    said = " ".join(r.stdout.split())
    assert "per asyncio task" in said
    own = [t for t in prof["sampling"]["tasks"] if "id" in t]
    if sys.version_info >= (3, 14):
        assert len(own) >= 7 and f"{len(own)} task(s) each apart" in said, said
    else:
        assert not own and "tasks of one coroutine function together" in said, said


@needs_312
def test_samples_are_rooted_at_their_task_without_the_loop(recorded):
    tmp, script, _r = recorded
    rows = folded(tmp / "wall.folded")
    in_tasks = [(f, v) for f, v in rows if f[0].startswith("task ")]
    assert in_tasks
    for frames, _v in in_tasks:
        assert not any(fr.split(" (")[0] in SCAFFOLDING for fr in frames), frames
    # every sample of a task's own code is under that task's name
    for frames, _v in rows:
        names = [fr.split(" (")[0] for fr in frames]
        if "fetch" in names:
            assert frames[0] == "task fetcher", frames
    # fetch spun 4 x 10 ms: samples of it under its task (none can go elsewhere)
    assert total_under(rows, ["task fetcher"]) > 0
    # an awaited task's samples are under its awaiting task's chain, whatever their number
    main = f"main ({script}:{{}})"
    under = {
        "part": ["task Task-1", main.format(line_of(script, "gather"))],
        "grouped": ["task Task-1", main.format(line_of(script, "taskgroup"))],
        "child": ["task Task-1", main.format(line_of(script, "await parent")), "task parent"],
    }
    for frames, _v in rows:
        names = [fr.split(" (")[0] for fr in frames]
        for function, prefix in under.items():
            if function in names:
                assert frames[: len(prefix)] == prefix, frames


@needs_312
def test_waits_are_on_the_task_rooted_chain(recorded):
    tmp, script, _r = recorded
    r = export(tmp, "-f", "folded", "--metric", "wait", "-o", "-")
    rows = [(t.rpartition(" ")[0].split(";"), int(t.rpartition(" ")[2])) for t in r.stdout.splitlines()]
    fetch = f"fetch ({script}:{line_of(script, 'fetch sleep')})"
    # four sleeps of 20 ms: a busy machine only makes them longer (µs)
    assert total_under(rows, ["task fetcher", fetch]) >= 4 * 20_000 * 0.9
    for frames, _v in rows:
        assert not any(fr.split(" (")[0] in SCAFFOLDING for fr in frames), frames


@needs_312
def test_the_awaiting_tasks_chain_is_above_the_awaited_task(recorded):
    tmp, script, _r = recorded
    r = export(tmp, "-f", "folded", "--metric", "wait", "-o", "-")
    rows = [(t.rpartition(" ")[0].split(";"), int(t.rpartition(" ")[2])) for t in r.stdout.splitlines()]
    main = f"main ({script}:{{}})"
    # await task: main awaits parent, which awaits child
    chain = [
        "task Task-1",
        main.format(line_of(script, "await parent")),
        "task parent",
        f"parent ({script}:{line_of(script, 'await child')})",
        "task child",
        f"child ({script}:{line_of(script, 'child sleep')})",
    ]
    assert total_under(rows, chain) >= 30_000 * 0.9
    # gather: both tasks of part() under main's gather line; on 3.14+ each
    # task apart (the samples say which ran), before one root named after both
    gather = ["task Task-1", main.format(line_of(script, "gather"))]
    labels = {f[2] for f, _v in rows if f[:2] == gather and len(f) > 2 and f[2].startswith("task ")}
    if sys.version_info >= (3, 14):
        assert labels == {"task left", "task right"}, rows
        for name in ("left", "right"):  # three sleeps of 20 ms each
            assert total_under(rows, gather + [f"task {name}"]) >= 3 * 20_000 * 0.9
    else:
        assert len(labels) == 1 and "left" in labels.pop(), rows
    assert total_under(rows, gather) >= 2 * 3 * 20_000 * 0.9
    # TaskGroup: the child under main's async with and TaskGroup.__aexit__
    tg = ["task Task-1", main.format(line_of(script, "taskgroup"))]
    under = [f for f, _v in rows if f[:2] == tg and "task grouped" in f]
    assert under and all(f[2].startswith("TaskGroup.__aexit__") for f in under), rows


@needs_312
def test_the_thread_view_is_still_there(recorded, load_profile):
    tmp, _script, _r = recorded
    task = export(tmp, "-f", "folded", "--metric", "wall", "-o", "-").stdout.splitlines()
    thread = export(tmp, "-f", "folded", "--metric", "wall", "--thread-stacks", "-o", "-").stdout.splitlines()
    # the same samples, drawn from the event loop down
    assert sum(int(t.rpartition(" ")[2]) for t in task) == sum(int(t.rpartition(" ")[2]) for t in thread)
    assert not any(t.startswith("task ") or ";task " in t for t in thread)
    assert any("Handle._run" in t and "fetch (" in t for t in thread)
    # and exactly what a profile without the task table draws
    from lprof.export import folded as folded_export

    prof = load_profile(str(tmp / "p.lprof"), rows=False)
    folded_export.write(task_stacks.thread_view(prof), str(tmp / "plain.folded"), metric="wall")
    assert (tmp / "plain.folded").read_text().splitlines() == thread
    html = export(tmp, "-f", "html", "--thread-stacks", "-o", "t.html")
    assert html.returncode == 0 and "task fetcher" not in (tmp / "t.html").read_text()
    export(tmp, "-f", "html", "-o", "k.html")
    assert "task fetcher" in (tmp / "k.html").read_text()


def test_a_program_without_asyncio_draws_as_before(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("plain.py", """\
        import time
        t = time.perf_counter() + 0.05
        while time.perf_counter() < t:
            pass
        print("ok")
        """)
    r = run_lprof("--wall", "-o", "p.lprof", "--stacks", "a.folded", script)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
    assert not task_stacks.applies(load_profile(str(tmp_path / "p.lprof")))
    assert "per asyncio task" not in r.stdout
    r2 = run_lprof("export", "-f", "folded", "--metric", "wall", "--thread-stacks", "-o", "b.folded", "p.lprof")
    assert r2.returncode == 0, r2.stderr
    assert (tmp_path / "a.folded").read_text() == (tmp_path / "b.folded").read_text()
    assert "task " not in (tmp_path / "a.folded").read_text()


def test_the_view_cuts_the_loop_and_stops_at_a_cycle_of_awaiting_tasks():
    """The model alone, on a hand-made profile (every Python version)."""
    loop = [
        ["/x/asyncio/base_events.py", "BaseEventLoop.run_forever", 1, 2],
        ["/x/asyncio/events.py", "Handle._run", 3, 4],
        ["/p/a.py", "a", 10, 11],
        ["/p/a.py", "b", 20, 21],
        ["/x/selectors.py", "select", 5, 6],
    ]
    prof = {
        "stacks": {"frames": loop, "columns": [], "stacks": [[[0, 1, 2], 7, {"wall_s": 1.0}],
                                                             [[0, 1, 3], 7, {"wall_s": 2.0}],
                                                             [[0, 4], 7, {"wall_s": 3.0}]]},
        "sampling": {"tasks": [
            {"root": ["/p/a.py", "a", 10], "names": ["A"],
             "parent": {"name": "B", "root": ["/p/a.py", "b", 20], "chain": [["/p/a.py", "b", 20, 22]]}},
            {"root": ["/p/a.py", "b", 20], "names": ["B"],
             "parent": {"name": "A", "root": ["/p/a.py", "a", 10], "chain": [["/p/a.py", "a", 10, 12]]}},
        ]},
    }
    view = task_stacks.view(prof)
    frames = view["frames"]
    rows = [([frames[i][1] for i in ids], th, m) for ids, th, m in view["stacks"]]
    # same rows, threads and values, in order
    assert [(th, m) for _f, th, m in rows] == [(7, {"wall_s": 1.0}), (7, {"wall_s": 2.0}), (7, {"wall_s": 3.0})]
    first = rows[0][0]
    assert first[-2:] == ["task A", "a"] and "Handle._run" not in first
    assert len(first) <= 3 * (task_stacks._MAX_DEPTH + 2)  # the cycle stopped
    # outside any task (the loop idle): the frames as stored
    assert rows[2][0] == ["BaseEventLoop.run_forever", "select"]
    # the thread view drops the table only
    assert not task_stacks.applies(task_stacks.thread_view(prof))
    assert task_stacks.thread_view(prof)["stacks"] is prof["stacks"]


def _split_profile():
    """Two tasks of one coroutine function (ids 1 and 2) awaited by a third
    (id 3), the samples of each told apart, and a part no task took."""
    frames = [
        ["/x/asyncio/base_events.py", "BaseEventLoop.run_forever", 1, 2],
        ["/x/asyncio/events.py", "Handle._run", 3, 4],
        ["/p/a.py", "work", 10, 11],
        ["/p/a.py", "main", 20, 21],
    ]
    root = ["/p/a.py", "work", 10]
    parent = {"name": "M", "root": ["/p/a.py", "main", 20], "chain": [["/p/a.py", "main", 20, 22]], "id": 3}
    return {
        "stacks": {"frames": frames, "columns": [],
                   "stacks": [[[0, 1, 2], 7, {"wall_s": 1.0, "wait_s": 0.5, "alloc_bytes": 64}],
                              [[0, 1, 3], 7, {"wall_s": 0.25}]]},
        "sampling": {
            "tasks": [
                {"root": root, "names": ["light", "heavy"], "parent": None},
                {"root": ["/p/a.py", "main", 20], "names": ["M"], "parent": None},
                {"id": 1, "root": root, "names": ["light"], "parent": parent},
                {"id": 2, "root": root, "names": ["heavy"], "parent": parent},
                {"id": 3, "root": ["/p/a.py", "main", 20], "names": ["M"], "parent": None},
            ],
            "task_rows": [[[0, 1, 2], 7, 1, {"wall_s": 0.2, "wait_s": 0.5}],
                          [[0, 1, 2], 7, 2, {"wall_s": 0.7}],
                          [[0, 1, 3], 7, 3, {"wall_s": 0.25}]],
        },
    }


def _drawn(view):
    frames = view["frames"]
    return [([frames[i][1] for i in ids], th, m) for ids, th, m in view["stacks"]]


def test_each_task_told_apart_is_drawn_under_its_own_name_and_parent():
    """The model alone (every Python version): the rows split by the
    samples' tasks, the rest under the coroutine's shared record."""
    rows = _drawn(task_stacks.view(_split_profile()))
    by_path = {}
    for path, th, m in rows:
        assert th == 7
        for k, v in m.items():
            by_path.setdefault(tuple(path), {}).setdefault(k, 0)
            by_path[tuple(path)][k] += v
    main = ("task M", "main")
    assert by_path[main + ("task light", "work")] == {"wall_s": 0.2, "wait_s": 0.5}
    assert by_path[main + ("task heavy", "work")] == {"wall_s": 0.7}
    # no task took 0.1 s of wall time nor the bytes: the shared record's
    rest = by_path[("task light | heavy", "work")]
    assert rest["alloc_bytes"] == 64 and abs(rest["wall_s"] - 0.1) < 1e-12 and "wait_s" not in rest
    assert by_path[("task M", "main")] == {"wall_s": 0.25}
    total = sum(m.get("wall_s", 0) for _p, _t, m in rows)
    assert abs(total - 1.25) < 1e-12  # nothing lost or counted twice
    # without the split the same rows draw as before: one root for both tasks
    plain = _split_profile()
    del plain["sampling"]["task_rows"]
    assert {tuple(p) for p, _t, _m in _drawn(task_stacks.view(plain))} == {
        ("task light | heavy", "work"), ("task M", "main")}


def test_a_merge_keeps_each_process_tasks_apart():
    from lprof.model import merge, profile_file

    profiles = []
    for pid in (101, 102):
        prof = _split_profile()
        prof.update({"format": "lprof", "version": 2, "meta": {"pid": pid, "modes": ["wall"]}})
        prof["sampling"].update({"mode": "wall", "threads": {"7": "MainThread"}})
        profile_file.validate(prof, "<test>")
        profiles.append(prof)
    merged = merge.merge_profiles((p, f"pid {p['meta']['pid']}") for p in profiles)
    profile_file.validate(merged, "<merged>")
    ids = sorted(t["id"] for t in merged["sampling"]["tasks"] if "id" in t)
    assert ids == [1, 2, 3, 4, 5, 6]
    assert sorted(t["parent"]["id"] for t in merged["sampling"]["tasks"] if t.get("parent")) == [3, 3, 6, 6]
    assert sorted(r[2] for r in merged["sampling"]["task_rows"]) == [1, 2, 3, 4, 5, 6]
    rows = _drawn(task_stacks.view(merged))
    heavy = sum(m.get("wall_s", 0) for p, _t, m in rows if "task heavy" in p)
    assert abs(heavy - 1.4) < 1e-9  # each process's heavy task, both drawn
    # the JSON export names the rows' fields, frames indexing its stacks' frames
    from lprof.export import json_doc

    doc = json_doc.export_dict(merged)
    names = [f["function"] for f in doc["stacks"]["frames"]]
    row = doc["sampling"]["task_rows"][0]
    assert set(row) == {"frames", "thread", "task", "metrics"}
    assert [names[i] for i in row["frames"]][-1] in ("work", "main")


@pytest.mark.parametrize("bad", [
    "tasks",
    [{"root": ["a.py", "f"], "names": ["t"]}],
    [{"root": ["a.py", "f", 1], "names": [3]}],
    [{"root": ["a.py", "f", 1], "names": [], "parent": {"name": "p", "root": ["a.py", "g", 2],
                                                       "chain": [["a.py", "g", 2]]}}],
    [{"id": 0, "root": ["a.py", "f", 1], "names": ["t"], "parent": None}],
    [{"id": True, "root": ["a.py", "f", 1], "names": ["t"], "parent": None}],
])
def test_a_malformed_task_table_is_one_line_error(tmp_path, run_lprof, write_script, load_profile, bad):
    from lprof.model import profile_file

    script = write_script("plain.py", "import time\ntime.sleep(0.02)\n")
    assert run_lprof("--wall", "-o", "p.lprof", script).returncode == 0
    prof = load_profile(str(tmp_path / "p.lprof"))
    good = [{"root": ["a.py", "f", 1], "names": ["t"], "parent": None},
            {"id": 1, "root": ["a.py", "f", 1], "names": ["t"], "parent": None}]
    for tasks, ok in ((good, True), (bad, False)):
        prof["sampling"]["tasks"] = tasks
        profile_file.save(prof, str(tmp_path / "t.lprof"))
        r = run_lprof("export", "-f", "folded", "--metric", "wall", "-o", "t.folded", "t.lprof")
        if ok:
            assert r.returncode == 0, r.stderr
        else:
            assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.10 and 3.11 only: no sys.monitoring there")
def test_before_312_an_asyncio_program_draws_per_thread(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("old.py", """\
        import asyncio

        async def work():
            await asyncio.sleep(0.02)

        async def main():
            await asyncio.create_task(work(), name="worker")
            print("done")

        asyncio.run(main())
        """)
    r = run_lprof("--wall", "-o", "p.lprof", "--stacks", "a.folded", script)
    assert r.returncode == 0 and r.stdout.startswith("done"), r.stderr
    prof = load_profile(str(tmp_path / "p.lprof"))
    assert "tasks" not in prof["sampling"] and not task_stacks.applies(prof)
    text = (tmp_path / "a.folded").read_text()
    assert text and "task worker" not in text


@pytest.mark.skipif(sys.version_info < (3, 14), reason="samples say which task ran from 3.14 (asyncio_running_task)")
def test_tasks_of_one_coroutine_get_each_their_own_time(tmp_path, run_lprof, write_script, load_profile):
    script = write_script("same.py", """\
        import asyncio, time

        def spin(s):
            t = time.perf_counter() + s
            while time.perf_counter() < t:
                pass

        async def work(steps):
            for _ in range(steps):
                spin(0.004)  # spin
                await asyncio.sleep(0.002)  # nap

        async def main():
            await asyncio.gather(asyncio.create_task(work(20), name="light"),
                                 asyncio.create_task(work(60), name="heavy"))
            print("done")

        asyncio.run(main())
        """)
    r = run_lprof("--wall", "-o", "p.lprof", "--stacks", "wall.folded", script)
    assert r.returncode == 0 and r.stdout.startswith("done"), r.stderr
    rows = folded(tmp_path / "wall.folded")
    spin = f"work ({script}:{line_of(script, '# spin')})"

    def spun(name):
        return sum(v for f, v in rows if f"task {name}" in f and spin in f)

    # 80 ms and 240 ms of spinning (longer under load, both alike): wall
    # time by the clock, so the ratio holds on a busy machine too
    light, heavy = spun("light"), spun("heavy")
    assert light >= 0.8 * 80_000 and heavy >= 0.8 * 240_000, (light, heavy)
    assert 2.0 <= heavy / light <= 4.5, (light, heavy)
    assert not any("light | heavy" in f or "heavy | light" in f for frames, _v in rows for f in frames)
    prof = load_profile(str(tmp_path / "p.lprof"))
    own = {t["names"][0]: t for t in prof["sampling"]["tasks"] if "id" in t}
    # every task got a serial and a record: main's, the workers, asyncio.run's own at its end
    waits = prof["sampling"]["waits"]
    told = [t for t in prof["sampling"]["tasks"] if "id" in t]
    assert waits["task_serials"] == len(told) >= 3 and waits["task_serials_refused"] == 0, waits
    assert own["light"]["parent"]["id"] == own["heavy"]["parent"]["id"] == own["Task-1"]["id"]
    # the split never exceeds its row (the waits: 20 and 60 naps of 2 ms)
    waits = export(tmp_path, "-f", "folded", "--metric", "wait", "-o", "-").stdout.splitlines()
    nap = {n: sum(int(t.rpartition(" ")[2]) for t in waits if f"task {n};" in t) for n in ("light", "heavy")}
    assert nap["light"] >= 20 * 2_000 * 0.9 and nap["heavy"] >= 60 * 2_000 * 0.9, nap
    assert nap["heavy"] > nap["light"], nap


@needs_312
def test_the_report_draws_the_tasks_in_chromium(recorded):
    from headless_browser import Browser, find_chromium

    if not find_chromium():
        pytest.skip("no Chromium to open the report in")
    tmp, _script, _r = recorded
    export(tmp, "-f", "html", "-o", "b.html")
    with Browser(1400, 900) as b:
        b.load((tmp / "b.html").as_uri())
        assert b.errors() == []
        labels = b.eval("[...document.querySelectorAll('#flame g.fr')].map(g => g.textContent)")
        assert any(t.startswith("task Task-1") for t in labels), labels[:20]
        assert not any(t.startswith("Handle._run") for t in labels)
        assert b.errors() == []
