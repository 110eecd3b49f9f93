"""Sampling accuracy: the hot lines at the bottom of a 500-deep recursion
(25/75 cost split), where a sampler must walk the whole stack each time."""
import sys

import _truth

sys.setrecursionlimit(5000)


def down(depth, n):
    if depth:
        return down(depth - 1, n)
    c0, w0 = _truth.now()
    x = 0
    for i in range(n): x += i  # @line:A  (n iterations, 500 frames down)
    c1, w1 = _truth.now()
    for i in range(3 * n): x += i  # @line:B  (3n iterations)
    c2, w2 = _truth.now()
    _truth.add("A", c1 - c0, w1 - w0)
    _truth.add("B", c2 - c1, w2 - w1)
    return x


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400_000
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    c, w = _truth.now()
    for _ in range(rounds):
        down(depth, n)
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w)
