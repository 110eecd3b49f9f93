"""lprof -l end to end: exact hit counts, time shares, listing, view, export."""
import json
import re
import subprocess
import sys

import pytest

from conftest import function_lines, line_of, without_kernprof_lines

KNOWN_COUNTS = """
    @profile
    def branches(n):
        total = 0                     # L_total
        for i in range(n):            # L_for
            if i % 3 == 0:            # L_if
                total += 1            # L_true
            else:
                total -= 1            # L_false
        return total                  # L_ret

    @profile
    def fact(n):
        if n <= 1:                    # L_base_if
            return 1                  # L_base
        return n * fact(n - 1)        # L_rec

    @profile
    def comp(n):
        return [i * 2 for i in range(n)]   # L_comp

    branches(30)
    fact(6)
    comp(5)
"""


def test_exact_hit_counts(run_lprof, write_script, load_profile, tmp_path):
    path = write_script("counts.py", KNOWN_COUNTS)
    result = run_lprof("-l", "counts.py")
    assert result.returncode == 0, result.stderr
    prof = load_profile(str(tmp_path / "counts.py.lprof"))
    b = function_lines(prof, "branches")
    L = lambda m: line_of(path, m)
    assert b[L("L_total")][0] == 1
    assert b[L("L_for")][0] == 31          # 30 iterations + the exhausted check
    assert b[L("L_if")][0] == 30
    assert b[L("L_true")][0] == 10
    assert b[L("L_false")][0] == 20
    assert b[L("L_ret")][0] == 1
    f = function_lines(prof, "fact")
    assert f[L("L_base_if")][0] == 6
    assert f[L("L_base")][0] == 1
    assert f[L("L_rec")][0] == 5
    c = function_lines(prof, "comp")
    assert c[L("L_comp")][0] >= 1


def test_time_shares(run_lprof, write_script, load_profile, tmp_path):
    """Each line's time is the wall time it took, as the program measures it
    itself (sleeps overrun on a busy machine: fixed shares failed there)."""
    path = write_script("shares.py", """
        import json, time
        took = {"short": 0.0, "long": 0.0}
        @profile
        def work():
            for _ in range(4):
                t = time.perf_counter(); time.sleep(0.02); took["short"] += time.perf_counter() - t  # SHORT
                t = time.perf_counter(); time.sleep(0.06); took["long"] += time.perf_counter() - t  # LONG
        work()
        print(json.dumps(took))
    """)
    r = run_lprof("-l", "shares.py")
    assert r.returncode == 0, r.stderr
    took = json.loads(r.stdout.splitlines()[0])
    assert took["short"] >= 0.08 and took["long"] >= 0.24, took  # sleeps never end early
    lines = function_lines(load_profile(str(tmp_path / "shares.py.lprof")), "work")
    short, long_ = lines[line_of(path, "SHORT")][1], lines[line_of(path, "LONG")][1]
    # a line's time holds its measured part, plus the line's start up to the
    # first clock read (a preemption there counts for lprof only)
    for name, timed in (("short", short), ("long", long_)):
        assert took[name] * 0.98 <= timed <= took[name] * 1.1 + 0.01, (name, timed, took)


def test_listing_shape_and_view(run_lprof, write_script, tmp_path):
    write_script("lst.py", """
        @profile
        def f():
            x = 1
            return x
        f()
    """)
    result = run_lprof("-l", "-v", "lst.py")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Timer unit: 1e-06 s" in out
    assert "Line #      Hits         Time  Per Hit   % Time  Line Contents" in out
    assert "Function: f at line 2" in out
    assert re.search(r"^\s+4\s+1\s+[\d.e+-]+\s+[\d.e+-]+\s+[\d.]+      x = 1$", out, re.M), out
    assert re.search(r"^\s+2\s+@profile$", out, re.M), out
    again = run_lprof("view", "lst.py.lprof")
    assert again.returncode == 0
    assert again.stdout.split("Total time")[1] == out.split("Total time")[1]


def test_export_json_schema(run_lprof, write_script, tmp_path):
    write_script("ej.py", "@profile\ndef f(n):\n    return n * 2\nf(1); f(2); f(3)\n")
    assert run_lprof("-l", "ej.py").returncode == 0
    result = run_lprof("export", "ej.py.lprof", "--format", "json", "-o", "out.json")
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["schema"] == "lprof.export" and data["schema_version"] == 2
    (fn,) = [f for f in data["functions"] if f["name"] == "f"]
    assert fn["first_line"] == 1 and fn["file"].endswith("ej.py")
    (row,) = [r for r in fn["lines"] if r["line"] == 3]
    assert row["hits"] == 3 and row["time_s"] >= 0


def test_prof_mod_without_decorators(run_lprof, write_script, load_profile, tmp_path):
    write_script("nodeco.py", """
        def helper(n):
            return sum(range(n))
        def main():
            return [helper(i) for i in range(4)]
        main()
    """)
    result = run_lprof("-l", "-p", "nodeco.py", "nodeco.py")
    assert result.returncode == 0, result.stderr
    prof = load_profile(str(tmp_path / "nodeco.py.lprof"))
    assert function_lines(prof, "helper")[3][0] == 4


def test_prof_mod_module_function(run_lprof, write_script, load_profile, tmp_path):
    write_script("mylib.py", "def twice(x):\n    return 2 * x\n")
    write_script("use.py", "import mylib\nprint(mylib.twice(2) + mylib.twice(3))\n")
    result = run_lprof("-l", "-p", "mylib.twice", "use.py")
    assert result.returncode == 0, result.stderr
    assert without_kernprof_lines(result.stdout).strip() == "10"
    assert function_lines(load_profile(str(tmp_path / "use.py.lprof")), "twice")[2][0] == 2


def test_skip_zero(run_lprof, write_script):
    write_script("z.py", "@profile\ndef never():\n    pass\n@profile\ndef once():\n    pass\nonce()\n")
    shown = run_lprof("-l", "-v", "z.py").stdout
    hidden = run_lprof("-l", "-v", "-z", "z.py").stdout
    assert "Function: never" in shown and "Function: never" not in hidden
    assert "Function: once" in hidden


def test_source_missing_still_prints(run_lprof, write_script, tmp_path):
    write_script("gone.py", "@profile\ndef f():\n    return 1\nf()\n")
    assert run_lprof("-l", "gone.py").returncode == 0
    (tmp_path / "gone.py").unlink()
    result = run_lprof("view", "gone.py.lprof")
    assert result.returncode == 0
    assert "source not found" in result.stdout


def test_encoding_cookie_source(run_lprof, tmp_path):
    src = ("# -*- coding: latin-1 -*-\n@profile\ndef f():\n    return 'caf\xe9'\nprint(len(f()))\n")
    (tmp_path / "enc.py").write_bytes(src.encode("latin-1"))
    r = run_lprof("-l", "-v", "enc.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("4\n")
    assert "return 'caf\xe9'" in r.stdout


def test_stack_export_of_line_only_profile_is_a_clear_error(run_lprof, write_script):
    write_script("lo.py", "@profile\ndef f():\n    return 1\nf()\n")
    assert run_lprof("-l", "lo.py").returncode == 0
    for fmt in ("folded", "svg", "speedscope"):
        r = run_lprof("export", "lo.py.lprof", "--format", fmt, "-o", "out." + fmt)
        assert r.returncode == 2 and "no stacks" in r.stderr and "Traceback" not in r.stderr


def test_prof_mod_does_not_import_before_the_program(run_lprof, write_script, load_profile,
                                                     tmp_path):
    """-p pkg.mod imported the module before the script ran: a module that
    reads, at import, state the script sets first saw the default. Now it is
    registered when the program imports it; --preimports (kernprof's default)
    asks for the early import."""
    write_script("settings.py", "VALUE = 'default'\n")
    write_script("mod.py", "import settings\nSEEN = settings.VALUE\n\ndef work():\n"
                           "    return SEEN\n")
    write_script("main.py", "import settings\nsettings.VALUE = 'from script'\nimport mod\n"
                            "print(mod.work())\nprint(mod.work())\n")
    write_script("unused.py", "def f():\n    pass\n")
    r = run_lprof("-l", "-p", "mod.work,unused", "main.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["from script", "from script"]
    assert function_lines(load_profile(str(tmp_path / "main.py.lprof")), "work")[5][0] == 2
    assert "-p unused: the program never imported it" in r.stderr
    r = run_lprof("-l", "--preimports", "-p", "mod.work", "main.py")
    assert r.stdout.splitlines()[:1] == ["default"]  # what kernprof does by default


def test_prof_mod_module_that_imports_first(run_lprof, write_script, load_profile, tmp_path):
    """-p MODULE where the module's first line imports a module not yet
    loaded: the import hook saw the half-built module in sys.modules,
    registered nothing and dropped the target (`-p email.utils` timed
    nothing, no word). Registered once the module has run."""
    write_script("late_defs.py", "import fractions\n\ndef half(x):\n"
                                 "    return fractions.Fraction(x, 2)\n")
    write_script("main.py", "import late_defs\nprint(late_defs.half(3), late_defs.half(5))\n")
    r = run_lprof("-l", "-p", "late_defs", "main.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("3/2 5/2")
    assert function_lines(load_profile(str(tmp_path / "main.py.lprof")), "half")[4][0] == 2
    assert "never imported" not in r.stderr


def test_prof_mod_package_covers_its_submodules(run_lprof, write_script, load_profile,
                                                tmp_path):
    """-p PACKAGE times the functions of its submodules, as kernprof's does:
    those imported before the package's registration and after it."""
    write_script("pkg/__init__.py", "from . import early\n")
    write_script("pkg/early.py", "def one():\n    return 1\n")
    write_script("pkg/sub/__init__.py", "")
    write_script("pkg/sub/late.py", "def two():\n    return 2\n")
    write_script("main.py", "import pkg\nimport pkg.sub.late\n"
                            "print(pkg.early.one() + pkg.sub.late.two())\n")
    for extra in ([], ["--preimports"]):
        r = run_lprof("-l", *extra, "-p", "pkg", "main.py")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("3")
        prof = load_profile(str(tmp_path / "main.py.lprof"))
        assert function_lines(prof, "one")[2][0] == 1, extra
        assert function_lines(prof, "two")[2][0] == 1, extra
    # pkg.__init__ names the package's own module, not its submodules (kernprof's rule)
    write_script("pkg/__init__.py", "from . import early\n\ndef own():\n    return 0\n")
    write_script("main.py", "import pkg\nimport pkg.sub.late\n"
                            "print(pkg.own() + pkg.early.one() + pkg.sub.late.two())\n")
    r = run_lprof("-l", "-p", "pkg.__init__", "main.py")
    assert r.returncode == 0, r.stderr
    names = {f["name"] for f in load_profile(str(tmp_path / "main.py.lprof"))["functions"]}
    assert names == {"own"}, names


def test_prof_mod_module_takes_its_packages_imports(run_lprof, write_script, load_profile,
                                                    tmp_path):
    """-p pkg.mod times, as kernprof does, the functions pkg.mod imports from
    its own package (`from pkg.util import helper`), not those from outside
    it; an explicit --no-preimports narrows it to what pkg.mod defines, as
    kernprof's does."""
    write_script("pkg/__init__.py", "")
    write_script("pkg/util.py", "def helper(x):\n    return x + 1\n")
    write_script("pkg/mod.py", "from pkg.util import helper\nfrom outside import far\n\n"
                               "def work(x):\n    return helper(x) + far(x)\n")
    write_script("outside.py", "def far(x):\n    return -x\n")
    write_script("main.py", "import pkg.mod\nprint(pkg.mod.work(1))\n")
    for extra, helper_timed in (([], True), (["--preimports"], True),
                                (["--no-preimports"], False)):
        r = run_lprof("-l", *extra, "-p", "pkg.mod", "main.py")
        assert r.returncode == 0, r.stderr
        prof = load_profile(str(tmp_path / "main.py.lprof"))
        names = {f["name"] for f in prof["functions"]}
        assert "work" in names and "far" not in names, (extra, names)
        assert ("helper" in names) == helper_timed, (extra, names)


def test_prof_mod_names_the_module_run_with_m(run_lprof, write_script, load_profile, tmp_path):
    """-p M with -m M times the module being run as __main__."""
    write_script("runme.py", "def work(n):\n    return n * 2\n\n"
                             "if __name__ == '__main__':\n    print(work(21))\n")
    r = run_lprof("-l", "-p", "runme", "-m", "runme")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("42")
    assert function_lines(load_profile(str(tmp_path / "runme.lprof")), "work")[2][0] == 1


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the settrace event source (3.10, 3.11)")
def test_no_tracer_before_the_first_profiled_function(run_lprof, write_script, load_profile,
                                                      tmp_path):
    """On 3.10/3.11 a thread with a trace function runs every instruction on
    the slow path: the program's imports before its first @profile (numpy's,
    torch's) ran traced for nothing. The tracer goes in at the first
    registration, on every thread, a thread started before it included."""
    write_script("late.py", """
        import sys, threading
        print("before", threading.gettrace() is None, sys.gettrace() is None)
        ready, go, done = threading.Event(), threading.Event(), []

        def early_thread():
            ready.set()
            go.wait()
            done.append(work(5))

        t = threading.Thread(target=early_thread)
        t.start()
        ready.wait()

        @profile
        def work(n):
            s = 0
            for i in range(n):
                s += i                # L_body
            return s

        print("after", threading.gettrace() is not None)
        go.set()
        t.join()
        print(work(3), done)
    """)
    r = run_lprof("-l", "late.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["before True True", "after True", "3 [10]"]
    lines = function_lines(load_profile(str(tmp_path / "late.py.lprof")), "work")
    assert lines[line_of(tmp_path / "late.py", "L_body")][0] == 5 + 3


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the settrace event source (3.10, 3.11)")
def test_tracer_refused_at_first_profile_leaves_the_program_alone(run_lprof, write_script):
    """The tracer goes in at the first @profile, inside the program: an audit
    hook that refuses sys.settrace by then gets one line from lprof, and the
    program runs on with its decorated function."""
    write_script("audited.py", """
        import sys

        def no_tracing(event, args):
            if event == "sys.settrace":
                raise RuntimeError("tracing is not allowed here")

        sys.addaudithook(no_tracing)

        @profile
        def work(n):
            return n * 2

        print(work(21))
    """)
    r = run_lprof("-l", "audited.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "42"
    assert "lprof: line tracing could not start: tracing is not allowed here" in r.stderr
    assert "Traceback" not in r.stderr


def test_line_profilers_own_profile_is_traced(run_lprof, write_script, load_profile, tmp_path):
    """`from line_profiler import profile` (line_profiler 4.1+'s advice) and
    `@line_profiler.profile` are traced under lprof -l, as under kernprof -l.
    A stand-in package laid out as line_profiler 5.1's is (its __init__
    copies `profile` from explicit_profiler), whose own profile does nothing."""
    write_script("line_profiler/explicit_profiler.py",
                 "class GlobalProfiler:\n    def __call__(self, func):\n        return func\n"
                 "profile = GlobalProfiler()\n")
    write_script("line_profiler/__init__.py", "from .explicit_profiler import profile\n")
    write_script("uses_lp.py", """
        from line_profiler import profile
        import line_profiler

        @profile
        def f(n):
            return sum(range(n))

        @line_profiler.profile
        def g():
            return 2

        print(f(10), g())
        """)
    r = run_lprof("-l", "uses_lp.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("45 2")
    prof = load_profile(str(tmp_path / "uses_lp.py.lprof"))
    assert function_lines(prof, "f")[7][0] == 1
    assert function_lines(prof, "g")[11][0] == 1
    # without lprof the program's own line_profiler is untouched
    r = subprocess.run([sys.executable, "uses_lp.py"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.stdout.startswith("45 2"), r.stderr


RECURSIVE = """
    @profile
    def fib(n):
        if n < 2:
            return n
        return fib(n - 1) + fib(n - 2)  # rec

    fib(18)
"""


def test_recursive_total_is_the_sum_of_its_lines(run_lprof, write_script, load_profile, tmp_path):
    """Issue #34: fib(20)'s `Total time: 0.0055531 s` sat above a line of
    72644.2 us. Total time is the sum of the lines (kernprof's rule), the
    lines count nested calls at every level alike, and the outermost calls'
    own time is said beside it; the HTML report's total is the same."""
    write_script("fib.py", RECURSIVE)
    r = run_lprof("-l", "-v", "fib.py")
    assert r.returncode == 0, r.stderr
    out = without_kernprof_lines(r.stdout)
    total = float(re.search(r"Total time: ([\d.e-]+) s", out).group(1))
    times = [float(ln.split()[2]) for ln in out.splitlines()
             if re.match(r"\s+\d+\s+\d+\s+[\d.e+-]+\s+", ln)]
    assert times and abs(total - sum(times) * 1e-6) <= 1e-6 * len(times) + 1e-4 * total, (total, times, out)
    assert max(times) * 1e-6 <= total * 1.0001, out  # no line above the total
    prof = load_profile(str(tmp_path / "fib.py.lprof"))
    outer = prof["functions"][0]["total_s"]
    assert outer < total  # the tracer's outermost call: nested time not counted again
    m = re.search(r"Outermost calls: ([\d.e-]+) s \(recursive", out)
    assert m and abs(float(m.group(1)) - outer) <= 1e-5 * outer, out  # %g: 6 digits
    from lprof.render import report_data
    fn = report_data.build(prof)["functions"][0]
    assert abs(fn["total_s"] - sum(t for _l, _h, t in prof["functions"][0]["lines"])) < 1e-12
    assert fn["outermost_s"] == outer
