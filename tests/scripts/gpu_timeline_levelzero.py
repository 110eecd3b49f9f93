"""A Level Zero program for the GPU timeline tests (lprof --gpu, no GPU): on
tests/gpu/fake_ze_driver.c in its real-time mode (FAKE_ZE_REALTIME=1: device
ticks of 10 ns from CLOCK_MONOTONIC, zeDeviceGetGlobalTimestamps answers, one
in-order engine), from known lines: CPU work before any GPU work, gemm_xe of
200 groups (2 ms), axpy_xe of 2,000,000 groups (20 s, longer than the
program), CPU work while it runs, then a 6400-byte copy (1 us) on a second
immediate command list, queued behind it."""
import builtins
import ctypes
import time

from ze_program import check, kernel, open_device, GroupCount, P, ze

profile = getattr(builtins, "profile", lambda f: f)  # lprof -l injects it

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
lst2 = P()
check(ze.zeCommandListCreateImmediate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(lst2)))
gemm, axpy = kernel(mod, b"gemm_xe"), kernel(mod, b"axpy_xe")
host = ctypes.create_string_buffer(6400)
buf = P()
check(ze.zeMemAllocDevice(ctx, ctypes.create_string_buffer(64), 6400, 64, dev, ctypes.byref(buf)))


@profile
def main():
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:  # marker: cpu before
        pass
    check(ze.zeCommandListAppendLaunchKernel(lst, gemm, ctypes.byref(GroupCount(200, 1, 1)), None, 0, None))  # marker: short
    check(ze.zeCommandListAppendLaunchKernel(lst, axpy, ctypes.byref(GroupCount(2000000, 1, 1)), None, 0, None))  # marker: long
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:  # marker: cpu during
        pass
    check(ze.zeCommandListAppendMemoryCopy(lst2, buf, host, 6400, None, 0, None))  # marker: copy


main()
check(ze.zeMemFree(ctx, buf))
print("ze done")
