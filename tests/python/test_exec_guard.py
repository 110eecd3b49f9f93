"""A program that execs under sampling: the new program must not die of
lprof's sampling signal (exec resets the handler; the signal's default
action ends the process). Found by `make reliability`: CPython's
test_subprocess under `lprof --wall` lost a child started with a preexec_fn
(killed by SIGRTMIN+4) about one run in three. A high rate makes the race
show on nearly every run before the fix."""
import pytest

RATE = ["--rate", "5000"]

EXEC_MAIN = """
import os, time
end = time.perf_counter() + 0.03
while time.perf_counter() < end:
    pass
os.execv("/bin/sh", ["sh", "-c", "echo exec ok; exit 7"])
"""

FORK_EXEC = """
import os
bad = []
for i in range(60):
    pid = os.fork()
    if pid == 0:
        if i % 2:
            os.execv("/bin/true", ["true"])
        os.execvp("true", ["true"])  # through os._execvpe
    _, status = os.waitpid(pid, 0)
    if status:
        bad.append(status)
print("bad", bad)
"""

PREEXEC = """
import subprocess
bad = []
for i in range(60):
    r = subprocess.run(["/bin/echo", "ok"], stdout=subprocess.PIPE, preexec_fn=lambda: None)
    if r.returncode or r.stdout != b"ok\\n":
        bad.append(r.returncode)
print("bad", bad)
"""


@pytest.mark.parametrize("mode", [["--wall"], ["--cpu"]])
def test_exec_of_the_program_itself_survives(run_lprof, write_script, mode):
    """os.execv in the profiled process: the new program runs and keeps its
    exit status (4 runs; before the fix most --wall runs lost one)."""
    write_script("ex.py", EXEC_MAIN)
    for _ in range(4):
        r = run_lprof(*mode, *RATE, "-q", "ex.py")
        assert (r.returncode, r.stdout) == (7, "exec ok\n"), (r.returncode, r.stderr[-500:])


@pytest.mark.parametrize("mode", [["--wall"], ["--cpu"]])
def test_forked_children_that_exec_survive(run_lprof, write_script, mode):
    """fork then os.execv / os.execvp in the child (a followed child that
    samples): every exec'd child exits 0."""
    write_script("fe.py", FORK_EXEC)
    r = run_lprof(*mode, *RATE, "-q", "fe.py")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "bad []"


@pytest.mark.parametrize("mode", [["--wall"], ["--cpu"], ["-l"]])
def test_subprocess_with_preexec_fn_survives(run_lprof, write_script, mode):
    """subprocess forks (not vfork) for a preexec_fn and runs the fork hooks
    in the child: lprof starts nothing there, since the child only execs."""
    write_script("pre.py", PREEXEC)
    extra = RATE if mode != ["-l"] else []
    r = run_lprof(*mode, *extra, "-q", "pre.py")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "bad []"


FAILED_EXEC = """
import os, sys, time

# each loop lasts as long on the clock the mode samples: wall time for
# --wall (on a busy machine a CPU-bounded loop takes longer in wall time)
clock = time.monotonic if sys.argv[1:] == ["wall"] else time.process_time

def before():
    end = clock() + 0.4
    while clock() < end:
        pass

def after():
    end = clock() + 0.4
    while clock() < end:
        pass

before()
try:
    os.execv("/nonexistent/program", ["program"])
except OSError as e:
    print(type(e).__name__, e.errno)
after()
"""


@pytest.mark.parametrize("mode", [["--wall"], ["--cpu"]])
def test_failed_exec_keeps_sampling(run_lprof, write_script, load_profile, tmp_path, mode):
    """An exec that fails raises as before, and sampling goes on after it."""
    write_script("fx.py", FAILED_EXEC)
    r = run_lprof(*mode, "-q", "-o", "fx.lprof", "fx.py", mode[0].strip("-"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "FileNotFoundError 2\n"
    prof = load_profile(str(tmp_path / "fx.lprof"))
    per_func = {}
    for f, ln, func, py, nat, sys_, wall, n in prof["sampling"]["lines"]:
        if f.endswith("fx.py"):
            per_func[func] = per_func.get(func, 0) + n
    assert per_func.get("before", 0) > 20, per_func
    assert per_func.get("after", 0) > 0.5 * per_func["before"], per_func


OS_EXIT_HOOKS = r"""
import os, sys
from lprof.collect import exec_guard
real = os._exit
seen = []
remove_a = exec_guard.before_os_exit(lambda status: seen.append(("a", status)))
def raising(status):
    raise RuntimeError("a hook that fails")
remove_b = exec_guard.before_os_exit(raising)
remove_c = exec_guard.before_os_exit(lambda status: print("hooks ran", seen + [("c", status)], flush=True))
wrapped = os._exit is not real
remove_a(); remove_b(); remove_c()
print("wrapped while registered", wrapped, "given back", os._exit is real, flush=True)
exec_guard.before_os_exit(lambda status: seen.append(("a", status)))
exec_guard.before_os_exit(raising)
exec_guard.before_os_exit(lambda status: print("hooks ran", seen + [("c", status)], flush=True))
if os.fork() == 0:
    os._exit(5)  # the child inherits the hooks
_, st = os.wait()
print("child status", os.waitstatus_to_exitcode(st), flush=True)
seen.clear()
os._exit(3)
"""


def test_before_os_exit_runs_every_hook_in_order_and_gives_os_exit_back(tmp_path):
    """collect/exec_guard.before_os_exit, the one wrapper of os._exit (the
    run's save, a followed child's and an attached process's register
    there): hooks run in order with the status, one that raises stops
    neither the others nor the exit, os._exit is the original again once
    none is registered, and a forked child inherits them."""
    import os
    import subprocess
    import sys
    if not hasattr(os, "waitstatus_to_exitcode"):
        pytest.skip("os.waitstatus_to_exitcode is 3.9+")
    script = tmp_path / "hooks.py"
    script.write_text(OS_EXIT_HOOKS)
    from conftest import lprof_env
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=lprof_env(), timeout=60)
    assert r.returncode == 3, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "wrapped while registered True given back True", r.stdout
    assert "hooks ran [('a', 5), ('c', 5)]" in lines[1:3], r.stdout  # the child
    assert "child status 5" in lines[1:3], r.stdout
    assert lines[3:] == ["hooks ran [('a', 3), ('c', 3)]"], r.stdout


WRAPPED_BY_THE_PROGRAM = r"""
import os
from lprof.collect import exec_guard
remove = exec_guard.before_os_exit(lambda status: None)
lprofs = os._exit
def programs_exit(status):  # the program wraps lprof's wrapper
    print("program's wrapper", status, flush=True)
    lprofs(status)
os._exit = programs_exit
remove()  # os._exit stays the program's: lprof's is inside it
exec_guard.before_os_exit(lambda status: print("hook", status, flush=True))
os._exit(4)  # lprof's new wrapper, the program's, lprof's old one
"""


def test_before_os_exit_hooks_run_once_through_nested_wrappers(tmp_path):
    """lprof's wrapper can end up inside the program's and another of
    lprof's outside it (lprof registered again after the program wrapped
    os._exit): the hooks run once, not once per wrapper of lprof's."""
    import subprocess
    import sys
    from conftest import lprof_env
    script = tmp_path / "nested.py"
    script.write_text(WRAPPED_BY_THE_PROGRAM)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=lprof_env(), timeout=60)
    assert r.returncode == 4, r.stderr
    assert r.stdout.splitlines() == ["hook 4", "program's wrapper 4"], r.stdout
