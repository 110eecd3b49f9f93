"""Known-allocation workloads for the memory tests.

Usage: python memory_workloads.py CASE OUT.json [EXT_DIR]
Starts lprof.collect.memory.MemoryCollector, runs CASE, stops, writes the snapshot
plus {"marks": {marker: line}} as JSON. Lines are found by their `# MARK`
comments so the tests never hard-code line numbers."""
import json
import os
import sys
import threading
import time

from lprof.collect.memory import MemoryCollector

MB = 1 << 20


def case_keep():
    import numpy as np
    keep = bytearray(200 * MB)  # KEEP_BYTES
    arr = np.ones(25 * MB // 8 * 8)  # KEEP_NUMPY
    return keep, arr


def case_loop():
    for _ in range(10):
        tmp = bytearray(50 * MB)  # LOOP
        del tmp


def case_leak():
    hold = bytearray(20 * MB)  # ONCE
    leaked = []
    for _ in range(60):
        leaked.append(bytearray(100_000))  # LEAK
        junk = bytearray(200_000)  # CHURN
        del junk
        time.sleep(0.01)
    return hold, leaked


def case_phase_leak():
    # a leak confined to a short first phase of a longer run, a burst of
    # objects kept to the end, then a long phase that only computes
    leaked = []
    for _ in range(60):
        leaked.append(bytearray(100_000))  # PHASE_LEAK
        time.sleep(0.002)
    burst = [float(i) for i in range(200_000)]  # BURST
    deadline = time.perf_counter() + 1.0
    n = 0
    while time.perf_counter() < deadline:
        n += 1
    return leaked, burst, n


def case_objects():
    objs = [str(i) * 4 for i in range(300_000)]  # OBJECTS
    return objs, sum(sys.getsizeof(o) for o in objs) + sys.getsizeof(objs)


BARRIER = threading.Barrier(4)


def worker():
    import numpy as np
    BARRIER.wait()  # all alive at once: distinct thread ids
    for _ in range(20):
        a = np.zeros(5 * MB // 8)  # THREAD
        a[::512] = 1
        del a


def case_threads():
    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def case_realloc():
    import ctypes
    libc = ctypes.CDLL(None)
    libc.realloc.restype = ctypes.c_void_p
    libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    p = None
    for i in range(1, 65):
        p = libc.realloc(p, i * MB)  # NATIVE_REALLOC
    buf = bytearray()
    for _ in range(64):
        buf += b"x" * MB  # PY_REALLOC
    return p, buf


PRE = []


def before_start_prepare():
    PRE.extend(bytearray(1 * MB) for _ in range(100))


def case_prefree():
    del PRE[:]  # PREFREE
    return bytearray(10 * MB)  # AFTER


def case_fork():
    import numpy as np
    a = np.ones(10 * MB // 8)  # PARENT
    pid = os.fork()
    if pid == 0:
        b = [np.ones(MB // 8) for _ in range(20)]
        os._exit(0 if len(b) == 20 else 3)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit("fork child failed: %r" % status)
    return a


def case_cxx():
    sys.path.insert(0, sys.argv[3])
    import lprof_cxx_alloc
    lprof_cxx_alloc.alloc(200, 100_000)  # CXX
    lprof_cxx_alloc.free_all()


def marks():
    out = {}
    for i, text in enumerate(open(__file__).read().splitlines(), 1):
        if "  # " in text and text.split("  # ")[-1].isupper():
            out[text.split("  # ")[-1].strip()] = i
    return out


def main():
    case, out = sys.argv[1], sys.argv[2]
    if case == "prefree":
        before_start_prepare()
    c = MemoryCollector(sample_bytes=int(os.environ.get("SAMPLE_BYTES", "16384")))
    c.start()
    extra = globals()["case_" + case]()
    c.stop()
    snap = c.snapshot()
    snap["marks"] = marks()
    snap["file"] = os.path.abspath(__file__)
    if case == "objects":
        snap["expected_objects"] = extra[1]
    with open(out, "w") as f:
        json.dump(snap, f)


if __name__ == "__main__":
    main()
