"""Line profiler worst case: a hot loop of many cheap lines."""
import sys
import time

try:
    profile
except NameError:
    def profile(f):
        return f


@profile
def cheap(n):
    a = 0
    b = 1
    c = 0
    for i in range(n):
        a += i
        b ^= a
        c = a & 255
        a = c + b
        b = b >> 1
        c += 1
    return a + b + c


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    t0 = time.perf_counter()
    result = cheap(n)
    # the loop's own time (bench: the plain run's, beside what profilers report)
    print(f"cheap: {time.perf_counter() - t0:.6f} s", file=sys.stderr)
    print(result)
