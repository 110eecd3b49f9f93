"""A CUDA program for the GPU timeline tests (lprof --gpu, no GPU): it runs on
tests/gpu/fake_cupti.c in its real-time mode (FAKE_CUPTI_REALTIME=1: device clock = CLOCK_MONOTONIC
plus a skew that cuptiGetTimestamp shows, one in-order queue), from known
lines: CPU work before any GPU work, a 2 ms kernel on device 0 stream 7, a
kernel that runs for 1000 s (longer than the program), CPU work while it
runs, a 3 us copy of 4096 bytes on stream 9 and a 5 us kernel on device 1
stream 3 (both queued behind the long kernel)."""
import builtins
import ctypes
import os
import time

profile = getattr(builtins, "profile", lambda f: f)  # lprof -l injects it

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_memcpy.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_set_stream.argtypes = [ctypes.c_uint32, ctypes.c_uint32]


@profile
def main():
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:  # marker: cpu before
        pass
    lib.fake_cupti_set_stream(0, 7)
    lib.fake_cupti_launch_kernel(b"short_kernel", 2_000_000)  # marker: short
    lib.fake_cupti_launch_kernel(b"long_kernel", 1000 * 10**9)  # marker: long
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:  # marker: cpu during
        pass
    lib.fake_cupti_set_stream(0, 9)
    lib.fake_cupti_memcpy(1, 4096, 3000)  # marker: copy
    lib.fake_cupti_set_stream(1, 3)
    lib.fake_cupti_launch_kernel(b"other_device_kernel", 5000)  # marker: device 1


main()
