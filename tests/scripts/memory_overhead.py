"""Overhead of memory profiling. Usage: python memory_overhead.py alloc|cpu [--profile]
Prints the workload's wall and CPU time in seconds. Run it plainly, and with
LD_PRELOAD=liblprof_shim.so and --profile, and compare (docs/design-memory.md)."""
import sys
import time


def alloc_heavy():
    import numpy as np
    total = 0
    for r in range(6):
        d = {}
        for i in range(150_000):
            d[i] = [str(i), (i, i + 1), {"k": i}]
        for i in range(0, 150_000, 3):
            del d[i]
        bufs = [bytearray(2048) for _ in range(50_000)]
        arrs = [np.empty(1000) for _ in range(20_000)]
        total += len(d) + len(bufs) + len(arrs)
    return total


def cpu_bound():
    s = 0
    for i in range(6_000_000):
        s += (i * i) % 7
    return s


def main():
    work = alloc_heavy if sys.argv[1] == "alloc" else cpu_bound
    c = None
    if "--profile" in sys.argv:
        from lprof.collect.memory import MemoryCollector
        c = MemoryCollector()
        c.start()
    t, cpu = time.perf_counter(), time.process_time()
    work()
    dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
    if c:
        c.stop()
        c.snapshot()
    print(f"{dt:.3f} {dcpu:.3f}")


if __name__ == "__main__":
    main()
