"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): the fake driver keeps 4 submissions in flight,
and the program signals or resets its own events again while the work
that signalled them still runs, as a runtime recycling its events does:
a launch of 5 groups on event A, then a barrier signalling A; a launch of
7 groups on B, then a cooperative launch of 2 groups on B; a launch of 3
groups on C, then C reset on the device. Then 10 launches of 1 group
without events, and one host sync."""
import ctypes
import os

from ze_program import FOREVER, GroupCount, P, PoolDesc, check, kernel, open_device, ze

driver = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"])
driver.fake_ze_set_inflight(4)
check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
k = kernel(mod, b"inflight_xe")
pool = P(); check(ze.zeEventPoolCreate(ctx, ctypes.byref(PoolDesc(0x10, None, 1, 4)), 0, None, ctypes.byref(pool)))
a, b, c = P(), P(), P()
for ev in (a, b, c):
    check(ze.zeEventCreate(pool, ctypes.create_string_buffer(32), ctypes.byref(ev)))

check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(5, 1, 1)), a, 0, None))  # marker: before barrier
check(ze.zeCommandListAppendBarrier(lst, a, 0, None))
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(7, 1, 1)), b, 0, None))  # marker: before cooperative
check(ze.zeCommandListAppendLaunchCooperativeKernel(lst, k, ctypes.byref(GroupCount(2, 1, 1)), b, 0, None))  # marker: cooperative
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(3, 1, 1)), c, 0, None))  # marker: before reset
check(ze.zeCommandListAppendEventReset(lst, c))
running = driver.fake_ze_running()
for i in range(10):
    check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(1, 1, 1)), None, 0, None))  # marker: no event
check(ze.zeEventHostSynchronize(b, FOREVER))
print("ze inflight done", running)
