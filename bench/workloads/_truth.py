"""Ground truth recorded by the workloads themselves (not profiler output).

Each hot line is bracketed by clock reads on the lines around it, so the
clock calls cost almost nothing next to the line. Results go to the JSON file
named by BENCH_TRUTH (if set), read back by bench/run.py.
"""
import json
import os
import threading
import time

_lock = threading.Lock()
_acc = {}          # label -> {"cpu": s, "wall": s}
_threads_cpu = {}  # thread name -> thread CPU seconds of the whole thread


def add(label, cpu, wall):
    with _lock:
        d = _acc.setdefault(label, {"cpu": 0.0, "wall": 0.0})
        d["cpu"] += cpu
        d["wall"] += wall


def thread_done(name, cpu):
    with _lock:
        _threads_cpu[name] = _threads_cpu.get(name, 0.0) + cpu


def now():
    return time.thread_time(), time.perf_counter()


def write(work_wall, extra=None):
    path = os.environ.get("BENCH_TRUTH")
    if not path:
        return
    out = {"work_wall_s": work_wall, "labels": _acc,
           "threads_cpu_s": _threads_cpu, "extra": extra or {}}
    with open(path, "w") as f:
        json.dump(out, f)
