"""Example for the exact line profiler: lprof -l -v examples/primes.py 2000

Look at: the inner `while` loop dominates `is_prime`; `primes_below` spends
nearly all its time on the line that calls `is_prime`."""
import sys


@profile  # noqa: F821  (put into builtins by lprof -l, like kernprof)
def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


@profile  # noqa: F821
def primes_below(limit):
    found = []
    for n in range(limit):
        if is_prime(n):
            found.append(n)
    return found


if __name__ == "__main__":
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"{len(primes_below(limit))} primes below {limit}")
