"""Sampling accuracy: pure Python, two hot lines with a 25/75 cost split."""
import sys

import _truth


def main(rounds, n):
    for _ in range(rounds):
        c0, w0 = _truth.now()
        x = 0
        for i in range(n): x += i  # @line:A  (n iterations)
        c1, w1 = _truth.now()
        for i in range(3 * n): x += i  # @line:B  (3n iterations)
        c2, w2 = _truth.now()
        _truth.add("A", c1 - c0, w1 - w0)
        _truth.add("B", c2 - c1, w2 - w1)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    c, w = _truth.now()
    main(rounds, int(sys.argv[2]) if len(sys.argv) > 2 else 400_000)
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w)
