"""The lprof command: the program behaves exactly as without lprof, bad input
gets a one-line error, and the profile is saved on every exit path."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import function_lines, lprof_env, without_kernprof_lines

PRINT_CONTEXT = """
    import os, sys
    print(repr(sys.argv))
    print(__name__)
    print(sys.path[0])
    print(os.path.basename(__file__))
"""


def test_context_matches_plain_python(run_lprof, run_python, write_script, tmp_path):
    script = write_script("ctx.py", PRINT_CONTEXT)
    plain = run_python("ctx.py", "a", "--b", "-c")
    for flags in (["-l"], []):
        prof = run_lprof(*flags, "-q", "ctx.py", "a", "--b", "-c")
        assert prof.returncode == 0, prof.stderr
        assert prof.stdout == plain.stdout
    assert (tmp_path / "ctx.py.lprof").exists()
    assert script.exists()


@pytest.mark.parametrize("body, status", [
    ("import sys\nsys.exit(3)\n", 3),
    ("import sys\nsys.exit(0)\n", 0),
    ("import sys\nsys.exit()\n", 0),
    ("import sys\nsys.exit('bye now')\n", 1),
    ("raise ValueError('boom')\n", 1),
])
def test_exit_status_and_profile_saved(run_lprof, run_python, write_script, load_profile,
                                       tmp_path, body, status):
    write_script("ex.py", "@profile\ndef f(n):\n    return n + 1\nf(1)\nf(2)\n" + body)
    plain = run_python("-c", "import builtins; builtins.profile = lambda f: f; "
                       "exec(open('ex.py').read())")
    result = run_lprof("-l", "ex.py")
    assert result.returncode == status == plain.returncode
    assert "lprof/" not in result.stderr.replace("lprof/ex", "")  # no frames of lprof's own
    prof = load_profile(str(tmp_path / "ex.py.lprof"))
    assert function_lines(prof, "f")[3][0] == 2
    assert prof["meta"]["exit_code"] == status
    if "bye now" in body:
        assert "bye now" in result.stderr
    if "ValueError" in body:
        assert "ValueError: boom" in result.stderr
        assert 'File "' in result.stderr and "ex.py" in result.stderr
        assert "runner.py" not in result.stderr


def test_keyboard_interrupt_raised_by_script(run_lprof, run_python, write_script, load_profile,
                                            tmp_path):
    write_script("kb.py", "@profile\ndef f():\n    raise KeyboardInterrupt\nf()\n")
    plain = run_python("-c", "import builtins; builtins.profile = lambda f: f; "
                       "exec(compile(open('kb.py').read(), 'kb.py', 'exec'))")
    result = run_lprof("-l", "kb.py")
    assert plain.returncode == -signal.SIGINT
    assert result.returncode == plain.returncode
    assert "KeyboardInterrupt" in result.stderr
    assert function_lines(load_profile(str(tmp_path / "kb.py.lprof")), "f")[3][0] == 1


def test_ctrl_c_while_running(write_script, tmp_path, load_profile):
    write_script("loop.py", """
        import sys, time
        @profile
        def spin():
            print("ready", flush=True)
            while True:
                time.sleep(0.01)
        spin()
    """)
    proc = subprocess.Popen([sys.executable, "-m", "lprof", "-l", "-v", "loop.py"], cwd=tmp_path,
                            env=lprof_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in err
    assert "Line #" in out  # the listing was printed
    hits = function_lines(load_profile(str(tmp_path / "loop.py.lprof")), "spin")
    assert hits[7][0] >= 5  # time.sleep line ran many times


def test_os_exit_keeps_status(run_lprof, write_script):
    write_script("ox.py", "import os\nos._exit(5)\n")
    assert run_lprof("-l", "ox.py").returncode == 5


@pytest.mark.parametrize("args, message, status", [
    (["-l", "missing.py"], "can't open file 'missing.py'", 2),
    (["-l", "."], "can't find '__main__' module", 1),  # a folder: as python says
    ([], "no script to profile", 2),
    (["view", "missing.lprof"], "cannot read", 2),
    (["view", "garbage.lprof"], "not an lprof profile", 2),
    (["export", "garbage.lprof", "--format", "json"], "not an lprof profile", 2),
    (["--rate", "0", "ok.py"], "--rate 0: must be between", 2),
    (["--memory-sample-bytes", "0", "ok.py"], "must be at least 1", 2),
    (["-l", "-i", "-1", "ok.py"], "must not be negative", 2),
    (["--signal", "99999", "ok.py"], "does not exist", 2),
])
def test_bad_input_one_line_error(run_lprof, tmp_path, args, message, status):
    (tmp_path / "garbage.lprof").write_text("this is not a profile\n" * 20)
    (tmp_path / "ok.py").write_text("print('ran')\n")
    result = run_lprof(*args)
    assert result.returncode == status
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_p_naming_nothing_warns_and_runs(run_lprof, write_script):
    """A -p naming no module or file is warned about in one line and the
    program runs, as with kernprof (it used to stop lprof with exit 2)."""
    write_script("ok.py", "print('ran')\n")
    r = run_lprof("-l", "-p", "no_such_module_xyz,./nope.py", "ok.py")
    assert r.returncode == 0 and without_kernprof_lines(r.stdout) == "ran\n", r
    warning = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert warning == ["lprof: warning: 2 -p targets name no file or module: "
                       "['./nope.py', 'no_such_module_xyz']"], r.stderr


def test_p_says_why_nothing_was_traced(run_lprof, write_script):
    """-p diagnostics say what is true: a C module has no Python code (it was
    silent), a name the imported module lacks is named as such (it said the
    program never imported it), a submodule never imported is that."""
    write_script("it.py", "import itertools, json\n"
                          "print(list(itertools.islice(itertools.count(), 3)), json.dumps(1))\n")
    r = run_lprof("-l", "-p", "itertools", "-p", "json.nosuch", "-p", "json.tool", "it.py")
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("lprof: -p")]
    assert sorted(said) == sorted([
        "lprof: -p itertools: a compiled module: it has no Python code to trace; "
        "nothing of it was traced",
        "lprof: -p json.nosuch: json has no 'nosuch'; nothing of it was traced",
        "lprof: -p json.tool: the program never imported it; nothing of it was traced"]), said


def test_preimport_of_a_module_that_raises(run_lprof, write_script):
    """--preimports of a -p module whose code raises: its traceback as Python
    prints it, one line of lprof's, exit 1, the program not run."""
    write_script("boom.py", "raise RuntimeError('boom at import')\n")
    write_script("ok.py", "print('ran')\n")
    r = run_lprof("-l", "--preimports", "-p", "boom", "ok.py")
    assert r.returncode == 1 and "ran" not in r.stdout
    assert "RuntimeError: boom at import" in r.stderr and 'boom.py", line 1' in r.stderr
    assert "lprof: -p boom: importing it failed" in r.stderr
    assert "lprof/" not in r.stderr.replace("lprof: -p", "")  # no frame of lprof's


def test_syntax_error_reported_like_python(run_lprof, run_python, write_script):
    write_script("bad.py", "x = (\nprint('never')\n")
    plain = run_python("bad.py")
    result = run_lprof("-l", "bad.py")
    assert result.returncode == plain.returncode == 1
    assert "SyntaxError" in result.stderr
    assert "lprof" not in result.stderr.replace("bad.py", "")


def test_script_classes_pickle_as_main(run_lprof, write_script):
    write_script("pk.py", """
        import pickle
        class Point:
            def __init__(self, x): self.x = x
        data = pickle.dumps(Point(3))
        assert b"__main__" in data, data
        print(pickle.loads(data).x)
    """)
    result = run_lprof("-l", "pk.py")
    result.stdout = without_kernprof_lines(result.stdout)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_multiprocessing_spawn_with_bare_profile(run_lprof, write_script):
    write_script("mp.py", """
        import multiprocessing as mp

        @profile
        def square(x):
            return x * x

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(2) as pool:
                print(sum(pool.map(square, range(10))))
    """)
    result = run_lprof("-l", "mp.py", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "285"


def test_program_signal_handlers_work(run_lprof, write_script):
    write_script("sig.py", """
        import os, signal
        got = []
        signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
        os.kill(os.getpid(), signal.SIGUSR1)
        print(got == [signal.SIGUSR1])
    """)
    for flags in (["-l"], []):
        result = run_lprof(*flags, "-q", "sig.py")
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "True"


def test_module_mode(run_lprof, run_python, write_script, tmp_path):
    write_script("pkg/__init__.py", "")
    write_script("pkg/tool.py", PRINT_CONTEXT)
    plain = run_python("-m", "pkg.tool", "x")
    result = run_lprof("-l", "-m", "pkg.tool", "x")
    result.stdout = without_kernprof_lines(result.stdout)
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    assert (tmp_path / "pkg.tool.lprof").exists()


def test_setup_code_runs_first(run_lprof, write_script):
    write_script("st.py", "print(SETUP_VALUE)\n")
    result = run_lprof("-l", "-s", "SETUP_VALUE = 41 + 1", "st.py")
    result.stdout = without_kernprof_lines(result.stdout)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"


def test_output_interval_writes_while_running(write_script, tmp_path):
    write_script("slow.py", """
        import time
        @profile
        def work():
            for _ in range(30):
                time.sleep(0.05)
        work()
    """)
    proc = subprocess.Popen([sys.executable, "-m", "lprof", "-l", "-i", "0.2", "slow.py"],
                            cwd=tmp_path, env=lprof_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out = tmp_path / "slow.py.lprof"
    deadline = time.time() + 20
    seen_while_running = False
    while proc.poll() is None and time.time() < deadline:
        if out.exists():
            seen_while_running = True
            break
        time.sleep(0.05)
    proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert seen_while_running


def test_version_and_help(run_lprof):
    v = run_lprof("--version")
    assert v.returncode == 0 and v.stdout.startswith("lprof ")
    h = run_lprof("--help")
    assert h.returncode == 0 and "--line-by-line" in h.stdout


def test_output_dir_missing(run_lprof, write_script):
    write_script("ok.py", "pass\n")
    result = run_lprof("-l", "-o", "nodir/out.lprof", "ok.py")
    assert result.returncode == 2
    assert "does not exist" in result.stderr


def test_json_export_to_a_device_writes_through_it(run_lprof, write_script, tmp_path):
    """`-o /dev/stdout` (or a FIFO): the JSON goes to it; the temporary file +
    rename used for regular files would have replaced the device node."""
    write_script("d.py", "@profile\ndef f():\n    return 1\nf()\n")
    assert run_lprof("-l", "d.py").returncode == 0
    r = run_lprof("export", "d.py.lprof", "--format", "json", "-o", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert '"schema": "lprof.export"' in r.stdout
    import stat  # the node itself is still a link or device, never a regular file
    assert not stat.S_ISREG(os.lstat("/dev/stdout").st_mode)


def test_lprof_threads_never_take_process_signals(run_lprof, write_script):
    """A signal sent to the process is taken by a program thread: lprof's own
    threads (the drain thread here) block them all, the program's keep theirs."""
    write_script("mask.py", """
        import signal
        print(signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    """)
    r = run_lprof("-q", "-i", "1", "mask.py")
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr
    code = ("import time, lprof.collect.sampling as s; c = s.SamplingCollector(); c.start(); "
            "time.sleep(0.2); tid = c._drainer.native_id; "
            "line = [ln for ln in open(f'/proc/self/task/{tid}/status') if ln.startswith('SigBlk')]; "
            "print(int(line[0].split()[1], 16)); c.stop()")
    import subprocess
    import signal
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=lprof_env())
    mask = int(p.stdout.strip())
    for sig in (signal.SIGUSR1, signal.SIGINT, signal.SIGTERM, signal.SIGPROF):
        assert mask & (1 << (sig - 1)), (sig, hex(mask))


def test_free_threaded_interpreter_is_refused_in_one_line(monkeypatch, capsys):
    # no free-threaded CPython can be installed here: the check reads the
    # build's ABI flags, so pretend this build is one
    from lprof import cli
    monkeypatch.setattr(sys, "abiflags", getattr(sys, "abiflags", "") + "t", raising=False)
    assert cli.main(["-l", "whatever.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "free-threaded CPython" in err and "not supported yet" in err


def test_abi_flag_and_build_config_agree_on_free_threading():
    # the start-up check reads sys.abiflags; setup.py reads the build's config
    import sysconfig
    assert ("t" in sys.abiflags) == bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def test_setup_py_refuses_a_free_threaded_build(tmp_path):
    # setup.py must stop before compiling anything, with the same one line
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import sys, sysconfig, runpy\n"
            "real = sysconfig.get_config_var\n"
            "sysconfig.get_config_var = lambda n: 1 if n == 'Py_GIL_DISABLED' else real(n)\n"
            "sys.argv = ['setup.py', 'build_ext', '--build-temp', sys.argv[1]]\n"
            "runpy.run_path('setup.py', run_name='__main__')\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "tmp")], cwd=root,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "lprof: free-threaded CPython (%d.%dt) is not supported yet: build lprof with the "
        "default (GIL) interpreter" % sys.version_info[:2]]
    assert not (tmp_path / "tmp").exists()
