"""Workloads with known costs for tests/python/test_sampling.py.

Usage: python sampling_workloads.py NAME MODE OUT.json
Runs workload NAME under lprof's sampler (MODE cpu|wall) and writes the
snapshot as JSON. Line numbers below are looked up by marker comments."""
import importlib
import json
import os
import random
import sys
import threading
import time

sampling = importlib.import_module("lprof.collect.sampling")


def spin(seconds):
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass


def unit(n):
    s = 0
    for i in range(n):
        s += i
    return s


def two_lines(n):
    unit(n)  # MARK:cheap
    unit(3 * n)  # MARK:dear


def w_ratio():
    t0 = time.process_time()
    rnd = random.Random(1)
    while time.process_time() - t0 < 1.2:
        two_lines(rnd.randrange(5000, 40000))  # random sizes: no aliasing with the timer tick


def w_native():
    t0 = time.process_time()
    while time.process_time() - t0 < 0.8:
        sum(range(2_000_000))  # MARK:native


def w_pyloop():
    # big ints: every addition allocates (3.13+ reads its thread state through
    # the dynamic linker there, where libpython is a shared library)
    t0 = time.process_time()
    x = 1 << 40
    while time.process_time() - t0 < 1.0:
        for i in range(20000):  # MARK:pyloop_for
            x += i  # MARK:pyloop_add


def w_sleep():
    time.sleep(0.4)  # MARK:sleep
    spin(0.3)  # MARK:spin


def worker_a():
    spin(0.5)  # MARK:thread_a


def worker_b():
    spin(0.5)  # MARK:thread_b


def w_threads():
    ta = threading.Thread(target=worker_a, name="worker-a")
    ta.start()
    tb = threading.Thread(target=worker_b, name="worker-b")
    tb.start()
    ta.join()
    tb.join()


def recurse(n):
    if n == 0:
        spin(0.5)  # MARK:deep_leaf
        return 0
    return recurse(n - 1) + 1


def w_deep():
    sys.setrecursionlimit(20000)
    recurse(5000)


def gen():
    while True:
        s = 0
        for i in range(20000):
            s += i  # MARK:gen_work
        yield s


def w_generators():
    t0 = time.process_time()
    g = gen()
    while time.process_time() - t0 < 0.6:
        next(g)  # MARK:gen_next


def w_sigalrm():
    import signal
    hits = []
    signal.signal(signal.SIGALRM, lambda *a: hits.append(1))
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
    spin(0.6)
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    assert len(hits) >= 20, hits
    print("ALARMS", len(hits))


def w_fork():
    spin(0.3)  # MARK:before_fork
    pid = os.fork()
    if pid == 0:
        try:
            spin(0.3)
            col = sampling.SamplingCollector()
            col.stop()
            os._exit(0)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    print("CHILD", status)
    spin(0.3)  # MARK:after_fork


def w_dyncode():
    # code objects created and destroyed while sampled (registry / destroy hook)
    t0 = time.process_time()
    k = 0
    while time.process_time() - t0 < 0.6:
        ns = {}
        exec(compile("def f():\n    s = 0\n    for i in range(20000):\n        s += i\n    return s\n",
                     "<dyn%d>" % k, "exec"), ns)
        ns["f"]()
        k += 1


def main():
    name, mode, out = sys.argv[1:4]
    col = sampling.SamplingCollector(mode=mode, rate_hz=float(os.environ.get("RATE", 100)))
    col.start()
    try:
        globals()["w_" + name]()
    finally:
        col.stop()
    snap = col.snapshot()
    with open(out, "w") as fh:
        json.dump(snap, fh)


if __name__ == "__main__":
    main()
