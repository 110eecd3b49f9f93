"""Sampling accuracy: a pure-Python line and a native (numpy) line.

The numpy line calls only C methods (no numpy Python wrappers), so the
innermost Python frame while it runs is this line."""
import os
import sys

import _truth

# The truth's total starts before numpy's import: a profiler charges that
# import to this file's line, so leaving it out of the total made every
# tool's shares look low by the import's share (about 2-4 % here).
START = _truth.now()

import numpy as np  # noqa: E402 (after START: the total includes the import)


def main(rounds, n, size):
    a = np.random.default_rng(1).standard_normal(size)
    c = np.empty_like(a)
    for _ in range(rounds):
        c0, w0 = _truth.now()
        x = 0
        for i in range(n): x += i  # @line:A python
        c1, w1 = _truth.now()
        c[:] = a; c.sort()  # @line:B native
        c2, w2 = _truth.now()
        _truth.add("A", c1 - c0, w1 - w0)
        _truth.add("B", c2 - c1, w2 - w1)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 600_000
    c, w = START
    main(rounds, n, size)
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w, {"pid": os.getpid()})
