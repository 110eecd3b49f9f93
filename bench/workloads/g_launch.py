"""N kernel launches through the test libcupti (tests/gpu/fake_cupti.c) from
one Python line; prints the seconds the launch loop took. Without lprof no
CUPTI client is subscribed and a launch is only the ctypes call; under
lprof --gpu each launch runs lprof's CUPTI callbacks (a runtime call with a
driver call nested in it: four callbacks, one stack capture)."""
import ctypes
import os
import sys
import time

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
launch = lib.fake_cupti_launch_kernel
launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64]


def run(n):
    for _ in range(n):
        launch(b"k", 1000)  # @line:launch


n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
t0 = time.perf_counter()
run(n)
print(f"{time.perf_counter() - t0:.6f}")
