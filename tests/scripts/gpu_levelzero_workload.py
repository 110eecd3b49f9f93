"""A Level Zero program for lprof --gpu tests without a GPU: it runs on
tests/gpu/fake_ze_driver.c through Debian's real loader (ZE_ENABLE_ALT_DRIVERS)
and launches from known lines: 4 x (a 64000-byte host-to-device copy, gemm_xe
of 50 groups, axpy_xe of 2 groups) with no signal event, then axpy_xe of 3
groups signalling the program's own event (its pool asked for no
timestamps), and a 64000-byte device allocation."""
import ctypes

from ze_program import FOREVER, GroupCount, P, PoolDesc, check, kernel, open_device, ze

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
gemm, axpy = kernel(mod, b"gemm_xe"), kernel(mod, b"axpy_xe")
host = ctypes.create_string_buffer(64000)
buf = P(); check(ze.zeMemAllocDevice(ctx, ctypes.create_string_buffer(64), 64000, 64, dev, ctypes.byref(buf)))  # marker: alloc

def launch(k, groups):
    check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(groups, 1, 1)), None, 0, None))  # marker: launch

for i in range(4):
    check(ze.zeCommandListAppendMemoryCopy(lst, buf, host, 64000, None, 0, None))  # marker: copy
    launch(gemm, 50)
    launch(axpy, 2)

pool = P(); check(ze.zeEventPoolCreate(ctx, ctypes.byref(PoolDesc(0x10, None, 1, 4)), 0, None, ctypes.byref(pool)))
ev = P(); check(ze.zeEventCreate(pool, ctypes.create_string_buffer(32), ctypes.byref(ev)))
check(ze.zeCommandListAppendLaunchKernel(lst, axpy, ctypes.byref(GroupCount(3, 1, 1)), ev, 0, None))  # marker: own event
check(ze.zeEventHostSynchronize(ev, FOREVER))
check(ze.zeMemFree(ctx, buf))
print("ze done")
