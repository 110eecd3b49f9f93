"""Overhead: a CPU-bound, function-heavy simulation with few allocations
(particles on a grid, small dicts and tuples, no numpy)."""
import math
import sys

import _truth


def step(ps, grid, dt):
    for p in ps:
        x, y, vx, vy = p
        vx += -0.1 * x * dt
        vy += -0.1 * y * dt - 0.01
        x += vx * dt
        y += vy * dt
        if y < -10.0:
            y = -10.0
            vy = -vy * 0.9
        p[0], p[1], p[2], p[3] = x, y, vx, vy
        cell = (int(x) & 15, int(y) & 15)
        grid[cell] = grid.get(cell, 0) + 1


def energy(ps):
    return sum(0.5 * (vx * vx + vy * vy) + 0.05 * (x * x + y * y)
               for x, y, vx, vy in ps)


def main(steps, n):
    ps = [[math.sin(i), math.cos(i), 0.0, 0.0] for i in range(n)]
    grid = {}
    e = 0.0
    for s in range(steps):
        step(ps, grid, 0.01)
        if s % 10 == 0:
            e = energy(ps)
    return e, len(grid)


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    c, w = _truth.now()
    print(main(steps, n))
    c2, w2 = _truth.now()
    _truth.write(w2 - w)
