"""The one stack model: one resolver and one store for sampling and memory,
merge kinds from C, one attribution rule for the listing and the exports."""
import json
import json.encoder
import re

import pytest

from lprof import _lprof
from lprof.model import stacks as model
from lprof.model.frames import Frame, table as frame_table

DEEP_ALLOC = """
    import sys, time
    sys.setrecursionlimit(5000)

    def deep(n):
        if n == 0:
            # 0.3 s of CPU on a line that allocates too (a fixed count of
            # `t += i % 7` took 0.05 s on 3.14 and allocated nothing there:
            # the one row with CPU and bytes then hung on one sample)
            t = 0
            end = time.thread_time() + 0.3
            while time.thread_time() < end:
                for i in range(2_000):
                    t += len(bytearray(1_000))
            return [bytearray(50_000) for _ in range(200)]
        return deep(n - 1)

    def helper():
        import json
        return json.dumps(list(range(300_000)))

    keep = deep(400)
    s = helper()
"""


def test_merge_takes_the_max_of_a_peak_and_sums_the_rest():
    cols = [list(c) for c in model.columns()]
    kinds = {name: merge for name, _u, merge in cols}
    assert kinds["peak_bytes"] == "max" and kinds["alloc_bytes"] == "sum"
    frames = [["/p/a.py", "f", 1, 3]]
    a = {"frames": frames, "columns": cols,
         "stacks": [[[0], 1, {"peak_bytes": 100, "alloc_bytes": 10}]]}
    b = {"frames": [list(f) for f in frames], "columns": cols,
         "stacks": [[[0], 1, {"peak_bytes": 300, "alloc_bytes": 5}]]}
    merged = model.merge(a, b)
    assert merged["stacks"] == [[[0], 1, {"peak_bytes": 300, "alloc_bytes": 15}]]
    line = model.lines(merged)[("/p/a.py", 3, "f")]
    assert line["peak_bytes"] == 300 and line["alloc_bytes"] == 15


def test_merge_matches_frames_by_value():
    a = {"frames": [["/p/a.py", "f", 1, 3]], "columns": [], "stacks": [[[0], 1, {"samples": 1}]]}
    b = {"frames": [["/p/b.py", "g", 1, 9], ["/p/a.py", "f", 1, 3]], "columns": [],
         "stacks": [[[1], 1, {"samples": 2}], [[0], 1, {"samples": 4}]]}
    merged = model.merge(a, b)
    assert len(merged["frames"]) == 2
    got = {tuple(ids): m["samples"] for ids, _t, m in merged["stacks"]}
    assert got == {(0,): 3, (1,): 4}


def test_attribution_innermost_user_frame_else_innermost():
    stdlib_file = json.encoder.__file__
    frames = frame_table([["/home/me/app.py", "main", 1, 10], [stdlib_file, "enc", 1, 5],
                          ["/usr/lib/libc.so.6", "memcpy", 0, 0], ["<gpu>", "kernel", 0, 0]])
    assert model.charge(frames, [0, 1]) == frames[0]  # library leaf: charged to the caller
    assert model.charge(frames, [1]) == frames[1]     # no user frame: the innermost one
    assert model.charge(frames, [0, 2, 3]) == frames[0]  # native and GPU frames never charged
    assert model.charge(frames, [2, 3]) is None


def test_code_given_as_text_is_charged_only_without_a_program_file():
    """torch.compile on an H200: Triton's launcher is code a library exec'd
    ("<string>"); its kernels belong to the program's line, not to it."""
    site = "/venv/lib/python3.12/site-packages/torch/_inductor/runtime/static_triton_launcher.py"
    frames = frame_table([["/home/me/train.py", "fused_body", 46, 46], [site, "run", 280, 291],
                          ["<string>", "launcher", 1, 5], ["<gpu>", "triton_poi_fused_0", 0, 0],
                          ["<string>", "<module>", 0, 3]])
    assert model.charge(frames, [0, 1, 2, 3]) == frames[0]
    assert model.charge(frames, [4, 3]) == frames[4]  # python -c: the text is the program
    assert model.charge(frames, [1, 2, 3]) == frames[2]  # no program file: the text, as before


def test_frame_kinds_and_labels():
    kinds = {f.kind: f for f in frame_table([
        ["/home/me/app.py", "main", 1, 10], ["/usr/lib/libc.so.6", "memcpy", 0, 0],
        ["<gpu>", "sgemm", 0, 0], ["<lprof>", "[truncated]", 0, 0], ["<thread>", "worker", 0, 0]])}
    assert sorted(kinds) == ["gpu", "marker", "native", "python", "thread"]
    assert kinds["python"].label == "main (/home/me/app.py:10)" and kinds["python"].has_line
    assert kinds["native"].label == "memcpy (libc.so.6)" and kinds["native"].is_native
    assert kinds["gpu"].label == "sgemm" and not kinds["gpu"].has_line
    assert kinds["marker"].has_line and not kinds["marker"].is_native
    assert Frame.of(["<string>", "<module>", 0, 0]).kind == "python"  # code given as text


@pytest.mark.needs_shim  # lprof --memory preloads the shim, which cannot run under ASan
def test_sampling_and_memory_share_one_table_and_one_truncated_marker(run_lprof, write_script, tmp_path):
    write_script("deep.py", DEEP_ALLOC)
    r = run_lprof("-q", "--memory", "-o", "deep.lprof", "--stacks", "deep.folded", "deep.py")
    assert r.returncode == 0, r.stderr
    r = run_lprof("export", "deep.lprof", "--format", "json", "-o", "deep.json")
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "deep.json").read_text())
    frames = data["stacks"]["frames"]
    markers = [f for f in frames if f["function"] == "[truncated]"]
    assert len(markers) == 1, markers  # one spelling for both collectors
    # one row per stack holds both kinds of columns: the deep loop has CPU and bytes
    rows = data["stacks"]["stacks"]
    assert any(m.get("alloc_bytes") and (m.get("cpu_python_s") or m.get("cpu_native_s"))
               for m in (r["metrics"] for r in rows))
    # lprof's launcher frames were cut in C: no stack holds a frame of lprof's package
    lprof_dir = _lprof.__file__.rsplit("/", 1)[0] + "/"
    assert not [f for f in frames if f["file"].startswith(lprof_dir)]


def _listing_rows(text, path):
    """{line: seconds} from the sampled listing's rows of one file."""
    out, inside = {}, False
    for line in text.splitlines():
        if line.startswith("File: "):
            inside = line[6:].startswith(path)
            continue
        if "function summary:" in line:
            inside = False
        m = re.match(r"\s*(\d+)\s+.*?\s([0-9]+\.[0-9]{3})\s", line) if inside else None
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return out


def test_listing_and_json_agree_per_line(run_lprof, write_script, tmp_path):
    write_script("lib_heavy.py", """
        import json

        def work():
            data = list(range(200_000))
            for _ in range(8):
                s = json.dumps(data)          # time inside the library: charged here
            t = 0
            for i in range(1_500_000):
                t += i % 7
            return s, t

        work()
    """)
    r = run_lprof("-o", "lh.lprof", "lib_heavy.py")
    assert r.returncode == 0, r.stderr
    path = str(tmp_path / "lib_heavy.py")
    shown = _listing_rows(r.stdout, path)
    assert shown, r.stdout
    r = run_lprof("export", "lh.lprof", "--format", "json", "-o", "lh.json")
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "lh.json").read_text())
    exported = {}
    for row in data["sampling"]["lines"]:
        if row["file"] == path:
            exported[row["line"]] = exported.get(row["line"], 0) + (
                row["cpu_python_s"] + row["cpu_native_s"] + row["cpu_system_s"])
    for line, secs in shown.items():
        assert exported.get(line, 0) == pytest.approx(secs, abs=0.0006), (line, shown, exported)
    # the json.dumps line holds the library's time (the leaf-frame rule would give it none)
    assert exported.get(7, 0) > 0.01, exported


@pytest.mark.needs_shim
def test_export_from_the_stored_columns_matches_the_run(run_lprof, write_script, tmp_path):
    """lprof export folds the file's columnar section in C (fold_columns); the
    run's own --stacks folds rows (fold_rows): a one-thread profile gives the
    same lines both ways, for time and for bytes."""
    write_script("deep.py", DEEP_ALLOC)
    r = run_lprof("-q", "--memory", "-o", "d.lprof", "--stacks", "run.folded",
                  "--stacks-metric", "alloc", "deep.py")
    assert r.returncode == 0, r.stderr
    r = run_lprof("export", "d.lprof", "--format", "folded", "--metric", "alloc", "-o", "file.folded")
    assert r.returncode == 0, r.stderr
    run_lines = (tmp_path / "run.folded").read_text().splitlines()
    assert run_lines and run_lines == (tmp_path / "file.folded").read_text().splitlines()
    r = run_lprof("export", "d.lprof", "--format", "svg", "--metric", "cpu", "-o", "f.svg")
    assert r.returncode == 0, r.stderr
    assert "deep (" in (tmp_path / "f.svg").read_text()


def test_thread_zero_is_named_no_python_thread_in_pictures():
    """Thread 0 is no thread (model/frames.py): a picture of several threads
    names its root so, and names a real thread by its name and id."""
    from lprof.model.frames import thread_name
    section = {"frames": [["a.py", "f", 1, 2]], "columns": [["cpu_python_s", "s", "sum"]],
               "stacks": [[[0], 123, {"cpu_python_s": 1.0}], [[0], 0, {"cpu_python_s": 0.5}]]}
    out = model.row_form(model.thread_roots(section, {"123": "MainThread"}))
    roots = sorted(out["frames"][ids[0]][1] for ids, _t, _m in out["stacks"])
    assert roots == ["no Python thread", "thread MainThread (123)"], roots
    assert thread_name({}, 0) == "no Python thread" and thread_name({}, 7, "thread 7") == "thread 7"
    assert thread_name({"0": "kept"}, "0") == "kept"
