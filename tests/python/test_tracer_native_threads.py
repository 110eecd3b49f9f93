"""The line tracer with native threads: threads that a C library starts and
that enter Python through PyGILState_Ensure (here: ctypes callbacks run by
pthread_create), without threading's start hook.

Each case runs in its own process, so that a crash is a failed test rather
than a lost test run."""
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pthreads via ctypes")

NATIVE_THREADS = """
import ctypes

libc = ctypes.CDLL(None)
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
pthread_t = ctypes.c_ulong
libc.pthread_create.argtypes = [ctypes.POINTER(pthread_t), ctypes.c_void_p, CALLBACK,
                                ctypes.c_void_p]
libc.pthread_join.argtypes = [pthread_t, ctypes.c_void_p]


def run_native_threads(callback, n):
    '''Starts n native threads running callback (a CALLBACK), joins them.'''
    threads = [pthread_t() for _ in range(n)]
    for t in threads:
        assert libc.pthread_create(ctypes.byref(t), None, callback, None) == 0
    for t in threads:
        libc.pthread_join(t, None)
"""


@pytest.fixture
def run_script(write_script, run_python):
    """Runs NATIVE_THREADS followed by body in a new process."""
    def run(body):
        write_script("native_threads.py", NATIVE_THREADS + textwrap.dedent(body))
        return run_python("native_threads.py")
    return run


def test_enable_while_native_threads_enter_python(run_script):
    # CPython 3.11 links a new thread state into the interpreter's list
    # before initialising it; enable walked that list without the runtime's
    # lock and crashed in _PyEval_SetTrace within a second (every run).
    r = run_script("""
        import threading, time
        from lprof import LineProfiler

        @CALLBACK
        def enter_python(arg):
            return None

        stop = []
        started = [0]

        def spawner():
            while not stop:
                run_native_threads(enter_python, 8)
                started[0] += 8

        lp = LineProfiler()

        @lp
        def f(x):
            return x + 1

        t = threading.Thread(target=spawner)
        t.start()
        calls, end = 0, time.monotonic() + 2.0
        while time.monotonic() < end or started[0] < 64:
            f(1)  # each call switches tracing on, then off
            calls += 1
        stop.append(True)
        t.join()
        print("native threads", started[0], "calls", calls)
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "native threads" in r.stdout


def test_native_thread_calls_of_profiled_function_counted(run_script):
    # main() is traced when its native workers call work(): before, those
    # threads had no trace function (enable had run already) and work()
    # showed no line at all; kernprof counts them.
    r = run_script("""
        from lprof import LineProfiler

        lp = LineProfiler()

        @lp
        def work(n):
            total = 0
            for i in range(n):
                total += i
            return total

        @CALLBACK
        def worker(arg):
            work(100)
            return None

        @lp
        def main():
            run_native_threads(worker, 4)

        main()
        for (_file, first, name), lines in lp.get_stats().timings.items():
            if name == "work":
                print(sorted((ln - first, hits) for ln, hits, _t in lines))
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[(2, 4), (3, 404), (4, 400), (5, 4)]", r.stdout


def test_sweep_gives_native_threads_the_tracer(run_script):
    # Native threads that entered Python after tracing began, calling a
    # registered function directly (no LineProfiler wrapper to join them):
    # on 3.10/3.11 no hook ran for them and their calls were lost; the sweep
    # finds them. 3.12+ traces every thread (the sweep finds nothing to do).
    r = run_script("""
        import sys, threading
        from lprof import _lprof

        def work(n):
            total = 0
            for i in range(n):
                total += i
            return total

        started, go = [], threading.Event()

        @CALLBACK
        def worker(arg):
            started.append(1)
            go.wait()  # in Python, untraced, until the sweep below
            for _ in range(100):
                work(3)
            return None

        _lprof.tracer_add_code(work.__code__)
        _lprof.tracer_enable()
        spawner = threading.Thread(target=run_native_threads, args=(worker, 4))
        spawner.start()
        while len(started) < 4:
            threading.Event().wait(0.001)
        try:
            print("swept", _lprof.tracer_sweep_threads(), _lprof.tracer_sweep_threads())
        finally:
            go.set()  # the workers end whatever happened
        spawner.join()
        _lprof.tracer_disable()
        for code, _total, lines in _lprof.tracer_stats():
            if code is work.__code__:
                print(sorted((ln - code.co_firstlineno, hits) for ln, hits, _t in lines))
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    swept, body = r.stdout.strip().splitlines()
    # the native threads only (the spawner was started by threading: traced)
    assert swept == ("swept 4 0" if sys.version_info < (3, 12) else "swept 0 0")
    assert body == "[(1, 400), (2, 1600), (3, 1200), (4, 400)]", body


def test_lprof_l_traces_native_threads_calling_profile_directly(write_script, run_lprof,
                                                               load_profile, tmp_path):
    # `lprof -l` and a global @profile: the function is not wrapped, so only
    # the run's sweeper can give a native thread the tracer on 3.10/3.11
    write_script("native_threads.py", NATIVE_THREADS + textwrap.dedent("""
        import time

        @profile
        def work(n):
            return sum(range(n))

        calls = []

        @CALLBACK
        def worker(arg):
            end = time.monotonic() + 1.0
            n = 0
            while time.monotonic() < end:
                work(10)
                n += 1
                time.sleep(0.0005)
            calls.append(n)
            return None

        run_native_threads(worker, 2)
        print("calls", sum(calls))
    """))
    r = run_lprof("-l", "-o", "out.lprof", "native_threads.py")
    assert r.returncode == 0, r.stderr[-2000:]
    calls = int(r.stdout.split("calls ")[1].split()[0])
    prof = load_profile(str(tmp_path / "out.lprof"))
    (work,) = [f for f in prof["functions"] if f["name"] == "work"]
    hits = {line: h for line, h, _t in work["lines"]}
    body = work["first_line"] + 2
    # calls after the first sweep (within ~50 ms of the thread's start) are all
    # counted; before, none were on 3.10/3.11
    assert 0 < hits.get(body, 0) <= calls, (hits, calls)


def test_forked_child_sweeps_its_own_native_threads(write_script, run_lprof, load_profile,
                                                    tmp_path):
    # the parent's sweeper thread is not in a forked child: the child starts
    # its own, or its native threads' calls would be lost on 3.10/3.11
    write_script("native_threads.py", NATIVE_THREADS + textwrap.dedent("""
        import os, time

        @profile
        def work(n):
            return sum(range(n))

        @CALLBACK
        def worker(arg):
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                work(10)
                time.sleep(0.0005)
            return None

        pid = os.fork()
        if pid == 0:
            run_native_threads(worker, 1)
            os._exit(0)
        os.waitpid(pid, 0)
    """))
    r = run_lprof("-l", "-o", "out.lprof", "native_threads.py")
    assert r.returncode == 0, r.stderr[-2000:]
    prof = load_profile(str(tmp_path / "out.lprof"))
    (work,) = [f for f in prof["functions"] if f["name"] == "work"]
    hits = {line: h for line, h, _t in work["lines"]}
    assert hits.get(work["first_line"] + 2, 0) > 0, (hits, r.stderr[-2000:])


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="no sweeper: 3.12+ traces every thread")
def test_sweeper_stop_does_not_wait_out_its_period(run_script):
    # the end of a run must not wait out the sweeper's period: it did, and
    # every lprof -l on 3.10/3.11 ended up to one period (50 ms) later. Here
    # a 9-second period: stop must wake the sweeper, not sleep it out.
    r = run_script("""
        import time
        from lprof import _lprof

        def work():
            return 1

        _lprof.tracer_add_code(work.__code__)
        _lprof.tracer_enable()
        _lprof.tracer_sweeper_start(9.0)
        time.sleep(0.2)  # the sweeper is in its 9-second wait
        t0 = time.monotonic()
        _lprof.tracer_sweeper_stop()
        print("stopped after %.3f s" % (time.monotonic() - t0))
        _lprof.tracer_sweeper_stop()  # a no-op
        _lprof.tracer_disable()
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    took = float(r.stdout.split("stopped after ")[1].split()[0])
    assert took < 6.0, r.stdout


def test_sweeper_traces_threads_that_enter_python_later(run_script):
    # the C sweeper alone (no run around it): a native thread that enters
    # Python after it started is found and traced (before: never, on 3.10/3.11)
    r = run_script("""
        import time
        from lprof import _lprof

        def work(n):
            return n + 1

        def hits():
            return sum(h for code, _t, lines in _lprof.tracer_stats() if code is work.__code__
                       for _ln, h, _tk in lines)

        waited = []

        @CALLBACK
        def worker(arg):
            end = time.monotonic() + 20
            while not hits() and time.monotonic() < end:  # until the sweeper finds it
                work(0)
                time.sleep(0.001)
            waited.append(round(20 - (end - time.monotonic()), 2))
            for _ in range(50):
                work(3)
            return None

        _lprof.tracer_add_code(work.__code__)
        _lprof.tracer_enable()
        _lprof.tracer_sweeper_start(0.01)
        run_native_threads(worker, 1)
        _lprof.tracer_sweeper_stop()
        _lprof.tracer_disable()
        print("traced after", waited[0], "s; hits", hits())
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    # the first counted call ends the wait, then 50 more
    assert r.stdout.strip().endswith("hits 51"), r.stdout


def test_lprof_l_traces_threads_of_thread_start_new_thread(write_script, run_lprof,
                                                           load_profile, tmp_path):
    # _thread.start_new_thread runs no threading.settrace hook: on 3.10/3.11
    # such a thread is found by the run's sweeper, as a native thread is
    write_script("raw_thread.py", """
        import _thread, time

        @profile
        def work(n):
            return sum(range(n))

        done = _thread.allocate_lock()
        done.acquire()
        calls = [0]

        def body():
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                work(10)
                calls[0] += 1
                time.sleep(0.0005)
            done.release()

        _thread.start_new_thread(body, ())
        done.acquire()
        print("calls", calls[0])
    """)
    r = run_lprof("-l", "-o", "out.lprof", "raw_thread.py")
    assert r.returncode == 0, r.stderr[-2000:]
    calls = int(r.stdout.split("calls ")[1].split()[0])
    prof = load_profile(str(tmp_path / "out.lprof"))
    (work,) = [f for f in prof["functions"] if f["name"] == "work"]
    hits = {line: h for line, h, _t in work["lines"]}
    assert 0 < hits.get(work["first_line"] + 2, 0) <= calls, (hits, calls)
