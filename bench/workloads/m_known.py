"""Memory accuracy: lines with known allocations.

K keeps a 200 MB numpy array (freed at the end), O keeps 1.25 M float
objects (30 MB + a 10 MB list; freed at the end), L leaks 100 x 256 KiB
slowly (never freed), C allocates and frees 50 MB twenty times (last, so the
process peak is K + O + L + one C array). Only C-level allocators run on
these lines (no numpy Python wrappers), so the innermost Python frame is
the line itself."""
import array
import os
import sys
import time

import numpy as np

import _truth

try:
    profile          # memory_profiler injects it; the others need no decorator
except NameError:
    def profile(f):
        return f

MB = 1_000_000
LEAK = []


@profile
def keep_array():
    a = np.empty(200 * MB // 8); a.fill(1.0)  # @line:K keep 200 MB
    return a


@profile
def keep_objects(n):
    src = array.array("d", bytes(8 * n))
    objs = src.tolist()  # @line:O 1.25 M floats + list
    return objs


@profile
def leak_slowly(times, size):
    for i in range(times):
        LEAK.append(bytes(size))  # @line:L slow leak
        time.sleep(0.002)


@profile
def churn(times, nbytes):
    for i in range(times):
        t = np.empty(nbytes // 8); t.fill(2.0)  # @line:C alloc/free 50 MB
        del t


def main():
    k = keep_array()
    o = keep_objects(1_250_000)
    leak_slowly(100, 256 * 1024)
    churn(20, 50 * MB)
    del k, o


if __name__ == "__main__":
    c, w = _truth.now()
    main()
    c2, w2 = _truth.now()
    _truth.write(w2 - w, {"pid": os.getpid()})
    sys.exit(0)
