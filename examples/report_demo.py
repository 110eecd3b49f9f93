"""Example for the HTML report: lprof --memory --html report.html examples/report_demo.py

A small numpy program with a worker thread: Python loops, native matrix
work, allocations that are kept and ones that are freed. In the report, look
at the CPU split per line, the flame graph (numpy's import is one frame), the
thread filter and the memory timeline."""
import threading

import numpy as np


def python_loop(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def matrix_work(size, rounds):
    kept = []
    for _ in range(rounds):
        a = np.random.rand(size, size)
        kept.append(a @ a.T)
    return kept


def text_rows(n):
    return [f"row {i}: {i * 3.5:.2f}" for i in range(n)]


def main():
    worker = threading.Thread(target=python_loop, args=(2_000_000,), name="worker")
    worker.start()
    results = matrix_work(400, 12)
    rows = text_rows(300_000)
    python_loop(1_000_000)
    worker.join()
    return len(results), len(rows)


if __name__ == "__main__":
    main()
