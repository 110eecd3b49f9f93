"""lprof run as kernprof (commands/kernprof_mode.py): under kernprof's name
lprof keeps kernprof's defaults (cProfile without -l, eager -p imports, a
`--` after the script dropped, -c code's functions left out of the file,
LINE_PROFILER_DEBUG); under its own name none of them applies."""
import marshal
import os
import pstats
import re
import stat
import subprocess
import sys

import pytest

from conftest import PKGDIR, lprof_env

PROGRAM = """\
import sys

def helper(n):
    return sum(range(n))

@profile
def decorated(n):
    return helper(n) + 1

def plain(n):
    return helper(n) * 2

print(decorated(1000), plain(1000), sys.argv[1:])
"""


@pytest.fixture
def kernprof(tmp_path):
    """A `kernprof` command that is lprof's console script under that name,
    as a user's link or copy of it is."""
    path = tmp_path / "bin" / "kernprof"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\nimport sys\nfrom lprof.cli import entry\n"
                    "sys.exit(entry())\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def run(*args, env=None, input=None):
        return subprocess.run([str(path), *map(str, args)], cwd=tmp_path, env=lprof_env(env),
                              capture_output=True, text=True, timeout=120, input=input)
    return run


def _stats(path):
    """{function name: call count} from a cProfile file."""
    stats = pstats.Stats(str(path)).stats
    return {func[2]: value[1] for func, value in stats.items()}


def test_without_l_kernprof_runs_cprofile_and_writes_prof(kernprof, write_script, tmp_path):
    write_script("prog.py", PROGRAM.replace("@profile\n", ""))
    r = kernprof("prog.py", "a", "b")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "499501 999000 ['a', 'b']"
    assert "Wrote profile results to 'prog.py.prof'" in r.stdout
    assert "-m pstats prog.py.prof" in r.stdout
    calls = _stats(tmp_path / "prog.py.prof")  # cProfile's own format: pstats reads it
    assert calls["helper"] == 2 and calls["decorated"] == 1 and calls["plain"] == 1
    assert not (tmp_path / "prog.py.sample.lprof").exists()


def test_lprof_under_its_own_name_still_samples(run_lprof, write_script, tmp_path):
    write_script("prog.py", PROGRAM.replace("@profile\n", ""))
    r = run_lprof("prog.py")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "prog.py.sample.lprof").exists()
    assert not (tmp_path / "prog.py.prof").exists()


def test_builtin_times_only_what_profile_decorates(kernprof, write_script, tmp_path):
    write_script("prog.py", PROGRAM)
    r = kernprof("-b", "-v", "prog.py")
    assert r.returncode == 0, r.stderr
    calls = _stats(tmp_path / "prog.py.prof")
    assert calls.get("decorated") == 1 and calls.get("helper") == 1, calls
    assert "plain" not in calls, calls
    assert re.search(r"prog\.py:\d+\(decorated\)", r.stdout)  # -v: cProfile's own listing


def test_line_profilers_profile_is_the_cprofile_run_profiler(kernprof, write_script, tmp_path):
    """`from line_profiler import profile` under -b is the run's profiler, as
    kernprof installs it (a stand-in line_profiler: its profile does nothing)."""
    write_script("line_profiler/__init__.py", "from .explicit_profiler import profile\n")
    write_script("line_profiler/explicit_profiler.py", "def profile(func):\n    return func\n")
    write_script("prog.py", "from line_profiler import profile\n"
                 + PROGRAM.replace("@profile\n", "@profile\n", 1))
    r = kernprof("-b", "prog.py")
    assert r.returncode == 0, r.stderr
    calls = _stats(tmp_path / "prog.py.prof")
    assert calls.get("decorated") == 1 and "plain" not in calls, calls


def test_program_failure_keeps_status_traceback_and_stats(kernprof, write_script, tmp_path):
    write_script("boom.py", "def f():\n    raise ValueError('no')\n\nf()\n")
    r = kernprof("boom.py")
    assert r.returncode == 1
    assert r.stderr.startswith("Traceback (most recent call last):\n  File ")
    assert "cProfile.py" not in r.stderr and "lprof" not in r.stderr, r.stderr
    assert r.stderr.rstrip().endswith("ValueError: no")
    assert _stats(tmp_path / "boom.py.prof")["f"] == 1
    write_script("leave.py", "import sys\nsys.exit(3)\n")
    r = kernprof("leave.py")
    assert r.returncode == 3 and (tmp_path / "leave.py.prof").exists()


def test_module_and_code_runs(kernprof, write_script, tmp_path):
    write_script("mymod.py", "import sys\n\ndef go():\n    return 7\n\n"
                             "if __name__ == '__main__':\n    print(go(), sys.argv[1:])\n")
    r = kernprof("-m", "mymod", "-x")
    assert r.returncode == 0 and r.stdout.startswith("7 ['-x']"), r
    assert _stats(tmp_path / "mymod.prof")["go"] == 1
    r = kernprof("-c", "def f():\n    return 5\nprint(f())")
    assert r.returncode == 0 and r.stdout.startswith("5\n"), r
    (written,) = [p for p in os.listdir(tmp_path) if p.startswith("kernprof-command-")]
    assert written.endswith(".prof") and _stats(tmp_path / written)["f"] == 1
    r = kernprof("-", input="raise KeyError('k')\n")
    assert r.returncode == 1 and "raise KeyError('k')" in r.stderr, r.stderr  # its line shows


def test_a_dash_dash_after_the_script_is_dropped_as_kernprof_drops_it(kernprof, run_lprof,
                                                                       write_script):
    write_script("argv.py", "import sys\nprint(sys.argv[1:])\n")
    r = kernprof("argv.py", "--", "-m", "x")
    assert r.stdout.startswith("['-m', 'x']"), r
    r = run_lprof("-l", "argv.py", "--", "-m", "x")  # lprof's own: as python passes it
    assert r.stdout.startswith("['--', '-m', 'x']"), r


def test_prof_mod_is_imported_first_as_kernprof_does(kernprof, run_lprof, write_script):
    """kernprof's default --preimports: a -p module that raises at import
    stops the run, its traceback showing the import; lprof's own default
    imports it when the program does (never, here)."""
    write_script("bad_module.py", "raise Exception('Boo')\n")
    r = kernprof("-l", "-pbad_module", "-c", "print(1)", env={"PYTHONPATH": os.pathsep.join((".", PKGDIR))})
    assert r.returncode == 1 and "1\n" not in r.stdout, r
    assert "import bad_module" in r.stderr and "raise Exception('Boo')" in r.stderr, r.stderr
    r = run_lprof("-l", "-pbad_module", "-c", "print(1)",
                  env={"PYTHONPATH": os.pathsep.join((".", PKGDIR))})
    assert r.returncode == 0 and r.stdout.startswith("1\n"), r


def test_code_functions_leave_the_file_as_with_kernprof(kernprof, run_lprof, load_profile,
                                                        tmp_path):
    code = "@profile\ndef f():\n    return 1\nf()\n"
    r = kernprof("-l", "-v", "-o", "k.lprof", "-c", code)
    assert r.returncode == 0, r.stderr
    assert "Function: f" in r.stdout  # the listing of the run shows them
    assert load_profile(str(tmp_path / "k.lprof"))["functions"] == []
    r = run_lprof("-l", "-o", "l.lprof", "-c", code)
    assert [f["name"] for f in load_profile(str(tmp_path / "l.lprof"))["functions"]] == ["f"]


@pytest.mark.needs_shim  # --memory preloads the allocator shim, which cannot run under ASan
def test_memory_re_exec_stays_kernprof(run_python, load_profile, tmp_path):
    """--memory re-executes lprof with the allocator shim; from kernprof.main()
    called with its own words that is `python -m lprof ...`: still kernprof
    after it (here: the -c code's functions left out of the file)."""
    code = "@profile\ndef f():\n    return bytearray(1 << 20)\nf()\n"
    r = run_python("-c", "import lprof.kernprof as k; "
                         f"k.main(['-l', '--memory', '-o', 'm.lprof', '-c', {code!r}])")
    assert r.returncode == 0, r.stderr
    assert load_profile(str(tmp_path / "m.lprof"))["functions"] == []


def test_line_profiler_debug_logs_the_calls_made(kernprof, write_script):
    write_script("prog.py", "print('ran')\n")
    r = kernprof("prog.py", env={"LINE_PROFILER_DEBUG": "1"})
    assert r.returncode == 0, r.stderr
    assert "DEBUG] Calling: " in r.stdout and ".runctx(" in r.stdout
    assert "execfile(target, namespace)" in r.stdout
    r = kernprof("prog.py")
    assert "DEBUG]" not in r.stdout


def test_no_preimports_times_what_the_run_module_imports_by_name(run_lprof, write_script,
                                                                 load_profile, tmp_path):
    """kernprof's explicit --no-preimports (lprof's too): a -p name is timed
    where the program's own code imports it, and only there; a target the
    package imports on the side (its __init__) is not."""
    write_script("pkg/__init__.py", "")
    write_script("pkg/sub/__init__.py", "from .three import add_three\n")
    write_script("pkg/two.py", "def add_two(x):\n    return x + 2\n")
    write_script("pkg/sub/three.py", "def add_three(x):\n    return x + 3\n")
    write_script("pkg/sub/four.py", "from ..two import add_two\n\n"
                                    "if __name__ == '__main__':\n    print(add_two(1))\n")
    targets = "pkg.two,pkg.sub.three.add_three"
    r = run_lprof("-l", "-p", targets, "--no-preimports", "-m", "pkg.sub.four")
    assert r.returncode == 0 and r.stdout.startswith("3\n"), r
    names = {f["name"] for f in load_profile(str(tmp_path / "pkg.sub.four.lprof"))["functions"]}
    assert names == {"add_two"}, names
    assert "pkg.sub.three.add_three" in r.stderr and "--no-preimports" in r.stderr
    r = run_lprof("-l", "-p", targets, "-m", "pkg.sub.four")  # lprof's default: on import
    names = {f["name"] for f in load_profile(str(tmp_path / "pkg.sub.four.lprof"))["functions"]}
    assert names == {"add_two", "add_three"}, names


def test_kernprof_module_main_is_kernprof(run_python, write_script, tmp_path):
    """`python -m lprof.kernprof` is kernprof: cProfile without -l."""
    write_script("prog.py", "def f():\n    return 2\nprint(f())\n")
    r = run_python("-m", "lprof.kernprof", "prog.py")
    assert r.returncode == 0 and r.stdout.startswith("2\n"), r
    with open(tmp_path / "prog.py.prof", "rb") as fh:
        assert any(key[2] == "f" for key in marshal.load(fh))
