"""lprof as a drop-in for kernprof / line_profiler, and running what Python
runs: everything after the target goes to the program, options are checked
before the program starts, line_profiler's files and API work."""
import json
import os
import pickle
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, function_lines, lprof_env

FIXTURES = os.path.join(ROOT, "tests", "fixtures")

ARGV_SCRIPT = """
import sys
print("argv", sys.argv)
print("name", __name__)
"""


# -- everything after the target belongs to the program ---------------------

def test_words_after_module_go_to_the_module(run_lprof, write_script):
    write_script("showargs.py", ARGV_SCRIPT)
    r = run_lprof("-m", "showargs", "-q", "-l", "--rate", "5")
    assert r.returncode == 0, r.stderr
    assert "argv ['" in r.stdout and "'-q', '-l', '--rate', '5']" in r.stdout
    assert "lprof sampled CPU time" in r.stdout  # lprof was not made quiet, nor -l
    r = run_lprof("-mshowargs", "x")
    assert "'x']" in r.stdout, r.stderr


def test_words_after_script_go_to_the_script(run_lprof, write_script, tmp_path):
    write_script("s.py", ARGV_SCRIPT)
    r = run_lprof("-q", "s.py", "-l", "-o", "x", "--", "-v")
    assert r.returncode == 0, r.stderr
    assert "argv ['s.py', '-l', '-o', 'x', '--', '-v']" in r.stdout
    assert (tmp_path / "s.py.sample.lprof").exists() and not (tmp_path / "x").exists()


def test_dash_c_and_stdin_run_as_python_does(run_lprof, run_python):
    code = "import sys; print(sys.argv, __name__, repr(sys.path[0]))"
    r = run_lprof("-q", "-c", code, "a", "-q")
    p = run_python("-c", code, "a", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout == p.stdout
    r = run_lprof("-q", "-", "b", input=code)
    p = subprocess.run([sys.executable, "-", "b"], input=code, capture_output=True, text=True)
    assert r.stdout == p.stdout, r.stderr


def test_dash_c_with_line_profiler(run_lprof, load_profile, tmp_path):
    code = ("@profile\ndef f():\n    t = 0\n    for i in range(50):\n        t += i\n"
            "    return t\nprint(f())\n")
    r = run_lprof("-l", "-v", "-c", code)
    assert r.returncode == 0, r.stderr
    assert "1225" in r.stdout and "t += i" in r.stdout  # the listing shows the code's lines
    (written,) = tmp_path.glob("kernprof-command-*.lprof")  # kernprof's name
    assert re.fullmatch(r"kernprof-command-[0-9a-f]{8}\.lprof", written.name)
    assert f"Wrote profile results to '{written.name}'" in r.stdout
    lines = function_lines(load_profile(str(written)), "f")
    assert lines[5][0] == 50


def test_dash_c_and_stdin_code_functions_are_timed(run_lprof, load_profile, tmp_path):
    """-l -c / -l -: the code's own functions are timed without @profile, as
    kernprof times them; the part of the file line_profiler reads leaves
    them out (no file it could show their lines from), lprof's part keeps
    them."""
    from lprof.model import kernprof_file, profile_file
    code = "def f(n):\n    return n + 1\n\nprint(f(1), f(2))\n"
    for how in (["-c", code], ["-"]):
        r = run_lprof("-l", "-q", "-o", "code.lprof", *how, input=code if how == ["-"] else None)
        assert r.returncode == 0 and r.stdout.startswith("2 3"), r
        assert function_lines(load_profile(str(tmp_path / "code.lprof")), "f")[2][0] == 2
        data = (tmp_path / "code.lprof").read_bytes()
        end = kernprof_file.pickle_end(data)
        assert end and data[end:].startswith(profile_file.MAGIC)
        assert b"<string>" not in data[:end] and b"<stdin>" not in data[:end]


def test_code_tracebacks_show_the_failing_line(run_lprof):
    """-c and - tracebacks show the code's line (from linecache, where lprof
    put the code), as kernprof's, which runs the code from a file."""
    r = run_lprof("-l", "-c", "x = 1\n1 / 0\n")
    assert r.returncode == 1
    assert 'File "<string>", line 2, in <module>' in r.stderr and "1 / 0" in r.stderr, r.stderr
    assert r.stderr.rstrip().endswith("ZeroDivisionError: division by zero")
    r = run_lprof("-l", "-", input="print('before')\n1 / 0\n")
    assert r.returncode == 1 and r.stdout.startswith("before")
    assert 'File "<stdin>", line 2, in <module>' in r.stderr and "1 / 0" in r.stderr, r.stderr


def test_folder_and_zipapp_run_through_main(run_lprof, run_python, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(ARGV_SCRIPT)
    with zipfile.ZipFile(tmp_path / "app.pyz", "w") as z:
        z.writestr("__main__.py", ARGV_SCRIPT)
    for target in ("app", "app.pyz"):
        r = run_lprof("-q", target, "z")
        p = run_python(target, "z")
        assert r.returncode == 0, r.stderr
        assert r.stdout == p.stdout and "name __main__" in r.stdout
    (tmp_path / "empty").mkdir()
    r = run_lprof("-q", "empty")
    p = run_python("empty")
    assert (r.returncode, r.stderr) == (p.returncode, p.stderr)
    assert not (tmp_path / "empty.sample.lprof").exists()


def test_missing_module_says_what_python_says_and_writes_nothing(run_lprof, run_python, tmp_path):
    r = run_lprof("-m", "no_such_module_here")
    p = run_python("-m", "no_such_module_here")
    assert (r.returncode, r.stderr) == (p.returncode, p.stderr)
    assert not list(tmp_path.glob("*.lprof"))


def test_non_utf8_source_error_is_pythons(run_lprof, run_python, tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# comment\nx = '\xe9'\nprint(x)\n")
    r = run_lprof("latin.py")
    p = run_python("latin.py")
    assert r.returncode == p.returncode == 1
    assert r.stderr == p.stderr


# -- options checked before the program runs ----------------------------------

MARKER_SCRIPT = """
open("ran.txt", "w").write("yes")
"""


@pytest.mark.parametrize("opts, says", [
    (["--stacks-metric", "alloc"], "needs --memory"),
    (["--stacks-metric", "wall"], "needs --wall"),
    (["--stacks-metric", "wait"], "needs --wall"),
    (["--wall", "--no-waits", "--stacks-metric", "wait"], "not --no-waits"),
    (["--no-waits"], "goes with --wall"),
    (["-l", "--stacks", "x.folded"], "records no stacks"),
    (["-l", "--wall"], "sampling mode"),
    (["-o", "m.py"], "program's own source"),
    (["-o", "."], "is a directory"),
    (["-o", "nowhere/p.lprof"], "does not exist"),
    (["-o", "/proc/lprof-test.lprof"], "cannot write"),
    (["--flamegraph", "/proc/x.svg"], "cannot write"),
    (["-o", "same", "--stacks", "same"], "also given to"),
    (["--rate", "20000"], "between 1 and 10000"),
])
def test_bad_options_refused_before_the_run(run_lprof, write_script, tmp_path, opts, says):
    script = write_script("m.py", MARKER_SCRIPT)
    before = script.read_text()
    r = run_lprof(*opts, "m.py")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "ran.txt").exists()  # the program never started
    assert script.read_text() == before


def test_profile_lost_after_the_run_is_an_error(run_lprof, write_script, tmp_path):
    """The program removes the output folder: the profile cannot be written.
    lprof says so in one line and exits 2 where the program succeeded; the
    program's own failure status wins."""
    (tmp_path / "out").mkdir()
    write_script("rm.py", "import shutil, sys\nshutil.rmtree('out')\n"
                          "sys.exit(int(sys.argv[1]))\n")
    r = run_lprof("-q", "-o", "out/p.lprof", "rm.py", "0")
    assert r.returncode == 2
    assert "could not write out/p.lprof" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "out").mkdir()
    r = run_lprof("-q", "-o", "out/p.lprof", "rm.py", "3")
    assert r.returncode == 3


def test_rate_help_states_the_real_maximum(run_lprof):
    out = run_lprof("--help").stdout
    assert "1 to 10000" in " ".join(out.split())


# -- file names and line_profiler's files --------------------------------------

def test_modes_keep_distinct_default_files(run_lprof, write_script, tmp_path, load_profile):
    write_script("both.py", "@profile\ndef f():\n    return sum(range(100))\nf()\n")
    assert run_lprof("-l", "both.py").returncode == 0
    write_script("both.py", "def f():\n    return sum(range(100))\nf()\n")
    assert run_lprof("-q", "both.py").returncode == 0
    lines_prof = load_profile(str(tmp_path / "both.py.lprof"))
    sampled = load_profile(str(tmp_path / "both.py.sample.lprof"))
    assert lines_prof["meta"]["modes"] == ["lines"] and "sampling" in sampled


def test_view_and_export_read_kernprof_files(run_lprof):
    """tests/fixtures/kernprof_5_1.lprof was written by kernprof -l of
    line_profiler 5.1.0 (profiling kp_demo.py); its numbers are known."""
    r = run_lprof("view", "kernprof_5_1.lprof", cwd=FIXTURES)
    assert r.returncode == 0, r.stderr
    rows = {int(ln.split()[0]): ln.split() for ln in r.stdout.splitlines()
            if ln.strip()[:1].isdigit() and len(ln.split()) > 4}
    assert rows[4][1:3] == ["20001", "1473.5"] and rows[5][1:3] == ["20000", "1987.8"]
    assert "total += i * i" in r.stdout  # the source read next to the file
    out = run_lprof("export", os.path.join(FIXTURES, "kernprof_5_1.lprof"), "--format", "json",
                    "-o", "-")
    doc = json.loads(out.stdout)
    (fn,) = doc["functions"]
    assert fn["name"] == "work"
    assert [(r["line"], r["hits"]) for r in fn["lines"]] == [(3, 1), (4, 20001), (5, 20000),
                                                              (6, 1)]
    assert abs(fn["lines"][1]["time_s"] - 1473.531e-6) < 1e-9  # 1473531 units of 1 ns


@pytest.mark.parametrize("payload", [
    pickle.dumps({"timings": {}, "unit": 1e-6}),          # a pickle, not LineStats
    pickle.dumps(os.getcwd) ,                              # names a function: refused
    b"\x80\x04\x95garbage",
])
def test_foreign_pickles_refused_in_one_line(run_lprof, tmp_path, payload):
    (tmp_path / "x.lprof").write_bytes(payload)
    r = run_lprof("view", "x.lprof")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "not an lprof or line_profiler profile file" in r.stderr


# -- kernprof's flags ----------------------------------------------------------

KP_SCRIPT = """
@profile
def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

print(work(300))
"""


def test_kernprof_switches_and_counts(run_lprof, write_script, tmp_path):
    write_script("kp.py", KP_SCRIPT)
    r = run_lprof("--line-by-line=yes", "--builtin", "on", "--verbose", "-r",
                  "--prof-imports", "--no-preimports", "kp.py")
    assert r.returncode == 0, r.stderr
    assert "Line #" in r.stdout and "t += i" in r.stdout
    r = run_lprof("-l", "-q", "kp.py")
    assert r.returncode == 0 and r.stdout == "44850\n" and r.stderr == ""
    # kernprof's counted quiet: -qq silences the program's stdout, -qqq its stderr too
    write_script("kp_err.py", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    r = run_lprof("-l", "-q", "-q", "kp_err.py")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "err\n", r
    r = run_lprof("-l", "-qqq", "kp_err.py")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r
    r = run_lprof("-l", "-qq", "-v", "kp_err.py")  # -1: only lprof's own lines go
    assert r.stdout == "out\n" and r.stderr == "err\n", r
    r = run_lprof("-lv", "--skip-zero=no", "--summarize=1", "kp.py")
    assert r.returncode == 0 and "Line #" in r.stdout, r.stderr
    r = run_lprof("--line-by-line=perhaps", "kp.py")
    assert r.returncode == 2 and "perhaps" in r.stderr
    assert run_lprof("-V").stdout.startswith("lprof ")


def test_bare_output_interval_means_every_second(run_lprof, write_script, tmp_path, load_profile):
    write_script("slow.py", KP_SCRIPT + "import time\ntime.sleep(1.6)\n")
    r = run_lprof("-l", "-i", "slow.py")
    assert r.returncode == 0, r.stderr
    assert load_profile(str(tmp_path / "slow.py.lprof"))["meta"]["modes"] == ["lines"]
    r = run_lprof("-l", "-i", "2", "-q", "slow.py")
    assert r.returncode == 0, r.stderr


def test_line_profiler_config_lookup(run_lprof, write_script, tmp_path, load_profile):
    """As kernprof finds its config: $LINE_PROFILER_RC names the file (when
    no --config does); a folder's line_profiler.toml comes before its
    pyproject.toml; the command line's first -p replaces the file's
    prof-mod list (`-p ''` clears it); its preimports and prof-imports keys
    count."""
    write_script("lib.py", "def helper():\n    return 1\n")
    write_script("app.py", "import lib\n\ndef main():\n    return lib.helper()\n\nmain()\n")
    (tmp_path / "pyproject.toml").write_text("[tool.line_profiler.kernprof]\nunit = 1e-3\n")
    (tmp_path / "line_profiler.toml").write_text(
        "[tool.line_profiler.kernprof]\nline-by-line = true\nprof-mod = ['app.py']\n"
        "prof-imports = true\n")
    r = run_lprof("app.py")  # line_profiler.toml, not pyproject.toml
    assert r.returncode == 0, r.stderr
    names = {f["name"] for f in load_profile(str(tmp_path / "app.py.lprof"))["functions"]}
    assert names == {"main", "helper"}, names  # app.py's functions and, by prof-imports, lib's
    r = run_lprof("-p", "lib", "app.py")  # replaces the file's list
    names = {f["name"] for f in load_profile(str(tmp_path / "app.py.lprof"))["functions"]}
    assert names == {"helper"}, names
    r = run_lprof("-p", "", "app.py")  # clears it
    assert load_profile(str(tmp_path / "app.py.lprof"))["functions"] == []
    rc = tmp_path / "elsewhere.toml"
    rc.write_text("[tool.line_profiler.kernprof]\nline-by-line = true\nunit = 1e-9\nverbose = 1\n")
    r = run_lprof("app.py", env={"LINE_PROFILER_RC": str(rc)})
    assert r.returncode == 0 and "Timer unit: 1e-09 s" in r.stdout, r


def test_prof_imports_times_what_the_script_imports(run_lprof, write_script, tmp_path,
                                                    load_profile):
    """--prof-imports with the script as a -p target: what it imports is
    timed too (a module's functions, a name from a module), as kernprof."""
    write_script("lib.py", "def helper():\n    return 1\n\ndef unused():\n    return 2\n")
    write_script("other.py", "def picked():\n    return 3\n\ndef left():\n    return 4\n")
    write_script("app.py", "import lib\nfrom other import picked\n\n"
                           "def main():\n    return lib.helper() + picked()\n\nprint(main())\n")
    r = run_lprof("-l", "-p", "app.py", "--prof-imports", "app.py")
    assert r.returncode == 0, r.stderr
    prof = load_profile(str(tmp_path / "app.py.lprof"))
    hit = {f["name"] for f in prof["functions"] if any(h for _l, h, _t in f["lines"])}
    listed = {f["name"] for f in prof["functions"]}
    assert hit == {"main", "helper", "picked"}, hit
    assert "unused" in listed and "left" not in listed, listed  # lib whole, other's one name
    r = run_lprof("-l", "-p", "app.py", "app.py")
    listed = {f["name"] for f in load_profile(str(tmp_path / "app.py.lprof"))["functions"]}
    assert listed == {"main"}, listed


def test_pyproject_tables(run_lprof, write_script, tmp_path):
    write_script("kp.py", KP_SCRIPT)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.line_profiler.kernprof]\nunit = 1e-3\nline-by-line = true\nverbose = 1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    r = run_lprof("../kp.py", cwd=sub)  # found from a subfolder too
    assert r.returncode == 0, r.stderr
    assert "Timer unit: 0.001 s" in r.stdout
    r = run_lprof("--no-config", "-q", "-b", "kp.py")
    assert "Timer unit" not in r.stdout and (tmp_path / "kp.py.sample.lprof").exists()
    r = run_lprof("-u", "1e-9", "kp.py")  # the command line wins
    assert "Timer unit: 1e-09 s" in r.stdout
    (tmp_path / "pyproject.toml").write_text("[tool.lprof]\nunit = 1e-3\nline-by-line = true\n"
                                             "verbose = 1\n[tool.line_profiler.kernprof]\n"
                                             "unit = 1e-6\n")
    assert "Timer unit: 0.001 s" in run_lprof("kp.py").stdout  # [tool.lprof] wins
    other = tmp_path / "other.toml"
    other.write_text("[tool.lprof]\nrate = 7\nquiet = 1\n")
    r = run_lprof("--config", str(other), "--no-line-by-line", "-b", "kp.py")
    assert r.returncode == 0, r.stderr
    from lprof.model import profile_file
    assert profile_file.load(str(tmp_path / "kp.py.sample.lprof"))["sampling"][
        "rate_hz_requested"] == 7
    (tmp_path / "pyproject.toml").write_text("[tool.lprof]\nno-such-option = 1\n")
    r = run_lprof("kp.py")
    assert r.returncode == 2 and "unknown option 'no-such-option'" in r.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.lprof]\nrate = 'fast'\n")
    r = run_lprof("kp.py")
    assert r.returncode == 2 and "rate" in r.stderr and "Traceback" not in r.stderr



def test_config_parsed_only_where_it_can_hold_options(tmp_path):
    """The TOML parser is loaded only for a file that can hold lprof's or
    line_profiler's tables (its import costs every start): a file that only
    names lprof in a comment or a value is skipped; every TOML spelling of
    the tables is still read."""
    from lprof.commands import config

    skipped = ['# lprof profiles this\n[project]\nname = "lprof"\n[project.scripts]\nlprof = "x"\n',
               "[tool.ruff]\nline-length = 110  # as lprof's\n"]
    for i, text in enumerate(skipped):
        path = tmp_path / f"skip{i}.toml"
        path.write_text(text)
        assert not config._MAY_HOLD_OPTIONS.search(path.read_bytes()), text
        assert config.read(str(path), False) == ({}, None)
    if config._toml_loader() is None:
        pytest.skip("no TOML parser here (3.10 without tomli)")
    held = ["[tool.lprof]\nrate = 7\n", "[ tool . \"lprof\" ]\nrate = 7\n",
            "[tool]\nlprof = { rate = 7 }\n", "tool.lprof.rate = 7\n",
            "tool = { lprof = { rate = 7 } }\n", "[tool.'lprof']\nrate = 7\n"]
    for i, text in enumerate(held):
        path = tmp_path / f"held{i}.toml"
        path.write_text(text)
        tables, warning = config.read(str(path), False)
        assert warning is None and tables["lprof"] == {"rate": 7}, text
    path = tmp_path / "kp.toml"
    path.write_text("[tool.line_profiler.kernprof]\nunit = 1e-3\n")
    assert config.read(str(path), False)[0]["kernprof"] == {"unit": 1e-3}


# -- line_profiler's LineProfiler API --------------------------------------------

API_SCRIPT = """
import json, sys
from lprof import LineProfiler, profile

def f(n):
    t = 0
    for i in range(n):
        t += i
    return t

def g(n):
    return [i for i in range(n)]

out = {}
lp = LineProfiler(f)
assert lp.runcall(f, 10) == 45
lp.runctx("f(5)", globals(), {})
wrapped = LineProfiler()
h = wrapped(g)
h(3)
other = LineProfiler()
other.add_function(g)
with other:
    g(4)
stats = lp.get_stats()
out["lp"] = {k[2]: [list(r[:2]) for r in v] for k, v in stats.timings.items()}
out["unit_ok"] = 0 < stats.unit < 1e-5
out["wrapped"] = {k[2]: [list(r[:2]) for r in v] for k, v in wrapped.get_stats().timings.items()}
out["other"] = sorted(k[2] for k in other.get_stats().timings)
lp.run("f(2)")
out["after_run"] = {k[2]: [list(r[:2]) for r in v] for k, v in lp.get_stats().timings.items()}
import io
buf = io.StringIO()
lp.print_stats(stream=buf)
out["printed"] = "for i in range(n):" in buf.getvalue() and "return [i" not in buf.getvalue()
print(json.dumps(out))
"""


def test_lineprofiler_api(run_python, write_script):
    write_script("api.py", API_SCRIPT)
    r = run_python("api.py")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # f ran twice (n=10, n=5): the loop line 11 + 6 times, the body 15 times
    assert out["lp"] == {"f": [[6, 2], [7, 17], [8, 15], [9, 2]]}
    assert out["unit_ok"]
    assert list(out["wrapped"]) == ["g"] and out["wrapped"]["g"][0][1] >= 1
    assert out["other"] == ["g"]  # never f: instances do not share functions
    assert out["after_run"]["f"][1] == [7, 20]
    assert out["printed"]


def test_line_profile_env(run_python, write_script, tmp_path):
    write_script("env.py", "from lprof import profile\n\n@profile\ndef f():\n    t = 0\n"
                           "    for i in range(40):\n        t += i\n    return t\n\nprint(f())\n")
    r = run_python("env.py", env={"LINE_PROFILE": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("780\n") and "Line #" in r.stdout
    from lprof.model import profile_file
    prof = profile_file.load(str(tmp_path / "profile_output.lprof"))
    assert function_lines(prof, "f")[7][0] == 40
    assert (tmp_path / "profile_output.txt").read_text().count("t += i") == 1
    os.unlink(tmp_path / "profile_output.lprof")
    r = run_python("env.py")  # without LINE_PROFILE: nothing at all
    assert r.stdout == "780\n" and not (tmp_path / "profile_output.lprof").exists()


# -- reading the listing ------------------------------------------------------------

def test_listing_legend_and_wall_column_only_in_wall_mode(run_lprof, write_script):
    write_script("b.py", "t = 0\nfor i in range(400000):\n    t += i\n")
    cpu = run_lprof("b.py").stdout
    wall = run_lprof("--wall", "b.py").stdout
    assert "Columns: CPU% py" in cpu and "wall%" not in cpu
    assert "wall%" in wall and "wall% = share of wall time summed over threads" in " ".join(wall.split())


def test_view_help_describes_every_option(run_lprof):
    out = run_lprof("view", "--help").stdout
    opts = [ln for ln in out.splitlines() if ln.strip().startswith("-")
            and not ln.strip().startswith("-h")]
    assert len(opts) >= 8
    for ln in opts:  # each option has words after its name (on this or the next line)
        i = out.splitlines().index(ln)
        nxt = out.splitlines()[i + 1] if i + 1 < len(out.splitlines()) else ""
        assert len(ln.split()) > 2 or (nxt.startswith(" " * 10) and nxt.strip()), ln


def test_start_line_on_a_terminal_only(write_script, tmp_path):
    import pty
    write_script("t.py", "print('hi')\n")
    for opts, expect in (([], True), (["-q"], False)):
        master, slave = pty.openpty()
        try:
            p = subprocess.run([sys.executable, "-m", "lprof", *opts, "t.py"], cwd=tmp_path,
                               env=lprof_env(), stdout=subprocess.PIPE, stderr=slave,
                               timeout=60)
            os.close(slave)
            seen = b""
            try:
                while True:
                    chunk = os.read(master, 4096)
                    if not chunk:
                        break
                    seen += chunk
            except OSError:
                pass
        finally:
            os.close(master)
        assert p.returncode == 0
        assert (b"Ctrl-C" in seen) == expect, seen
    r = subprocess.run([sys.executable, "-m", "lprof", "t.py"], cwd=tmp_path, env=lprof_env(),
                       capture_output=True, text=True, timeout=60)
    assert "Ctrl-C" not in r.stderr  # not into a pipe


# -- comprehensions count in their enclosing function ---------------------------

COMP_SCRIPT = """
@profile
def f(data):
    squares = [x * x for x in data]  # MARK:list
    total = sum(x for x in data)  # MARK:gen
    uniq = {x % 7 for x in data}  # MARK:set
    return len(squares) + total + len(uniq)


def unrelated():
    pass


for _ in range(3):
    f(range(1000))
"""


def test_comprehensions_count_in_the_enclosing_line(run_lprof, write_script, tmp_path,
                                                    load_profile):
    """One hit per evaluation of the line on every version (3.11 traced the
    comprehension as a function of its own; generator expressions counted a
    hit per item on 3.11 and one on 3.12+), and no listing of its own."""
    from conftest import line_of
    path = write_script("comp.py", COMP_SCRIPT)
    r = run_lprof("-l", "-v", "comp.py")
    assert r.returncode == 0, r.stderr
    assert "<listcomp>" not in r.stdout and "<genexpr>" not in r.stdout
    assert "def unrelated" not in r.stdout
    prof = load_profile(str(tmp_path / "comp.py.lprof"))
    assert [fn["name"] for fn in prof["functions"]] == ["f"]
    lines = function_lines(prof, "f")
    for mark in ("list", "gen", "set"):
        hits, secs = lines[line_of(path, "MARK:" + mark)]
        assert hits == 3 and secs > 0, (mark, hits)


# -- kernprof's module: main(args) inside the caller's process ---------------

IN_PROCESS = r"""
import sys
from lprof.kernprof import main

path, argv, main_module = list(sys.path), list(sys.argv), sys.modules["__main__"]
for round_ in range(2):  # a second call in the same process works
    main(["-l", "-q", "-o", f"out{round_}.lprof", "pooled.py"])
    assert sys.path == path and sys.argv == argv, (sys.path, sys.argv)
    assert sys.modules["__main__"] is main_module
try:
    main(["-l", "-q", "-o", "raised.lprof", "raises.py"])
except ValueError as exc:
    print("caller got", repr(exc))
assert sys.path == path
print("done")
"""


def test_kernprof_main_in_process(write_script, tmp_path, load_profile):
    """kernprof.main(args), as line_profiler's tests and users' scripts call
    it: the caller's sys.path, sys.argv and __main__ come back, the
    program's exception reaches the caller (after the profile is saved),
    and a second call works (threading's shutdown, which ends
    concurrent.futures for good, is not run inside the caller's process)."""
    write_script("pooled.py", """
        import sys
        from concurrent.futures import ThreadPoolExecutor
        sys.path.append("/added/by/the/program")

        @profile
        def square(x):
            return x * x

        with ThreadPoolExecutor(2) as pool:
            print(sum(pool.map(square, range(10))))
        """)
    write_script("raises.py", "@profile\ndef f():\n    raise ValueError('from the program')\nf()\n")
    write_script("caller.py", IN_PROCESS)
    r = subprocess.run([sys.executable, "caller.py"], cwd=tmp_path, env=lprof_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["285", "285", "caller got ValueError('from the program')",
                                     "done"], r.stdout
    assert "Traceback" not in r.stderr
    for name in ("out0.lprof", "out1.lprof"):
        assert function_lines(load_profile(str(tmp_path / name)), "square")[8][0] == 10
    assert function_lines(load_profile(str(tmp_path / "raised.lprof")), "f")[3][0] == 1
