"""Sampling accuracy: a hot line inside a generator (resumed at every item)
and one in its consumer (25/75 cost split)."""
import sys

import _truth


def produce(rounds, n):
    for _ in range(rounds):
        c0, w0 = _truth.now()
        x = 0
        for i in range(n): x += i  # @line:A  (in the generator, n iterations)
        c1, w1 = _truth.now()
        _truth.add("A", c1 - c0, w1 - w0)
        yield x


def consume(rounds, n):
    total = 0
    for x in produce(rounds, n):
        c0, w0 = _truth.now()
        for i in range(3 * n): x += i  # @line:B  (the consumer, 3n iterations)
        c1, w1 = _truth.now()
        _truth.add("B", c1 - c0, w1 - w0)
        total += x
    return total


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40_000
    c, w = _truth.now()
    consume(rounds, n)
    c2, w2 = _truth.now()
    _truth.thread_done("main", c2 - c)
    _truth.write(w2 - w)
