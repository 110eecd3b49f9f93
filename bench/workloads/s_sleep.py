"""Sampling accuracy in wall mode: a computing line and a sleeping line."""
import sys
import time

import _truth


def main(rounds, n, nap):
    for _ in range(rounds):
        c0, w0 = _truth.now()
        x = 0
        for i in range(n): x += i  # @line:A compute
        c1, w1 = _truth.now()
        time.sleep(nap)  # @line:B sleep
        c2, w2 = _truth.now()
        _truth.add("A", c1 - c0, w1 - w0)
        _truth.add("B", c2 - c1, w2 - w1)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400_000
    nap = float(sys.argv[3]) if len(sys.argv) > 3 else 0.075
    c, w = _truth.now()
    main(rounds, n, nap)
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w)
