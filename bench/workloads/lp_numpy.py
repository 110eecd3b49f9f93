"""Line profiler numpy case: a profiled function whose lines call numpy on
medium arrays (most time in native code, few line events)."""
import sys

import numpy as np

try:
    profile
except NameError:
    def profile(f):
        return f


@profile
def step(x, y, w):
    z = x * w + y
    z = np.sqrt(np.abs(z))
    z.sort()
    s = float(np.add.reduce(z))
    y = np.roll(y, 1)
    return s, y


def main(n, iters):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n)
    y = rng.standard_normal(n)
    w = rng.standard_normal(n)
    total = 0.0
    for _ in range(iters):
        s, y = step(x, y, w)
        total += s
    return total


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    print(main(n, iters))
