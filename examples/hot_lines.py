"""Example for whole-program sampling: lprof examples/hot_lines.py

Look at: `python_heavy` (CPU in Python), `native_heavy` (CPU in native code:
sorting inside C), and the flamegraph from --flamegraph out.svg."""
import random


def python_heavy(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def native_heavy(n):
    data = [random.random() for _ in range(n)]
    for _ in range(20):
        sorted(data)
    return len(data)


def main():
    python_heavy(3_000_000)
    native_heavy(300_000)


if __name__ == "__main__":
    main()
