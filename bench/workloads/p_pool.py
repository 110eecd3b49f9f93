"""Following children: a process pool (concurrent.futures, 2 workers) does
the CPU work; the parent only hands out tasks and sums the results."""
import sys
from concurrent.futures import ProcessPoolExecutor


def task(n):
    x = 0
    for i in range(n): x += i  # @line:W  (the workers' loop)
    return x


if __name__ == "__main__":
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    with ProcessPoolExecutor(2) as pool:
        print(sum(pool.map(task, [n] * tasks)))
