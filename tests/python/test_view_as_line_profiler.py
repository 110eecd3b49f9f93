"""`lprof view` in `python -m line_profiler`'s place: several files added up,
line_profiler's flags (-m, -t, -z, -u, -r, -V), its config ([tool.line_profiler.cli]
defaults, [tool.line_profiler.show.column_widths]), as kernprof users call it."""
from conftest import function_lines

SCRIPT = "@profile\ndef f(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"


def _two_profiles(run_lprof, write_script, tmp_path):
    write_script("a.py", SCRIPT + "f(10)\n")
    write_script("b.py", SCRIPT + "f(30)\n")
    for name in ("a.py", "b.py"):
        assert run_lprof("-l", "-q", name).returncode == 0
    return str(tmp_path / "a.py.lprof"), str(tmp_path / "b.py.lprof")


def test_several_files_are_added_up(run_lprof, write_script, tmp_path):
    a, b = _two_profiles(run_lprof, write_script, tmp_path)
    # the same function from two files (a.py's and b.py's f are different files)
    r = run_lprof("view", "-m", "-t", "-r", a, b)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("Function: f at line 1") == 2
    assert "seconds - a.py:1 - f" in r.stdout and "seconds - b.py:1 - f" in r.stdout  # -m
    r = run_lprof("view", a, a)  # one function twice: its hits add
    hits = [ln.split()[1] for ln in r.stdout.splitlines() if ln.strip().startswith("5 ")]
    assert hits == ["20"], r.stdout
    assert run_lprof("view", "-V").stdout.startswith("lprof ")


def test_config_tables_of_line_profiler(run_lprof, write_script, tmp_path, load_profile):
    a, _b = _two_profiles(run_lprof, write_script, tmp_path)
    (tmp_path / "line_profiler.toml").write_text(
        "[tool.line_profiler.cli]\nsummarize = true\nunit = 1e-3\n"
        "[tool.line_profiler.show.column_widths]\nline = 8\nhits = 12\n")
    r = run_lprof("view", a)
    assert r.returncode == 0, r.stderr
    assert "Timer unit: 0.001 s" in r.stdout and "seconds - a.py:1 - f" in r.stdout
    header = next(ln for ln in r.stdout.splitlines() if "Line #" in ln)
    assert header.startswith("  Line #         Hits "), header  # 8 and 12 wide
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["5"])
    assert row.index("5") + 1 == 8, row
    r = run_lprof("view", "--no-config", a)
    assert "Timer unit: 1e-06 s" in r.stdout and "seconds -" not in r.stdout
    assert next(ln for ln in r.stdout.splitlines() if "Line #" in ln).startswith("Line # ")
    other = tmp_path / "other.toml"
    other.write_text("[tool.line_profiler.cli]\nskip-zero = 3\n")
    r = run_lprof("view", "--config", str(other), a)
    assert r.returncode == 2 and "skip-zero: must be true or false" in r.stderr
    assert "Traceback" not in r.stderr
    # the run's own -v listing takes the widths too
    (tmp_path / "line_profiler.toml").write_text(
        "[tool.line_profiler.show.column_widths]\nline = 9\n")
    r = run_lprof("-l", "-v", "a.py")
    assert next(ln for ln in r.stdout.splitlines() if "Line #" in ln).startswith("   Line #")
    assert function_lines(load_profile(a), "f")[5][0] == 10
