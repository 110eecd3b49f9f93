"""Sampling accuracy: two threads running different lines (1:3 work)."""
import sys
import threading

import _truth


def worker(label, n, rounds):
    t0 = _truth.now()[0]
    for _ in range(rounds):
        c0, w0 = _truth.now()
        x = 0
        if label == "A":
            for i in range(n): x += i  # @line:A thread 1
        else:
            for i in range(n): x += i  # @line:B thread 2
        c1, w1 = _truth.now()
        _truth.add(label, c1 - c0, w1 - w0)
    _truth.thread_done(label, _truth.now()[0] - t0)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400_000
    c, w = _truth.now()
    ts = [threading.Thread(target=worker, args=("A", n, rounds)),
          threading.Thread(target=worker, args=("B", 3 * n, rounds))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w)
