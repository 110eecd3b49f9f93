"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): 1500 launches without a signal event and with
no sync lprof sees (more than lprof's pool of 1024 events per context),
then the program's own event signalled twice without a host sync between
(a runtime reusing its events), then reset on the device and signalled
again, then one host sync."""
import ctypes

from ze_program import FOREVER, GroupCount, P, PoolDesc, check, kernel, open_device, ze

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
k = kernel(mod, b"many_xe")
for i in range(1500):
    check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(1, 1, 1)), None, 0, None))  # marker: many

pool = P(); check(ze.zeEventPoolCreate(ctx, ctypes.byref(PoolDesc(0x10, None, 1, 4)), 0, None, ctypes.byref(pool)))
ev = P(); check(ze.zeEventCreate(pool, ctypes.create_string_buffer(32), ctypes.byref(ev)))
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(5, 1, 1)), ev, 0, None))  # marker: first use
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(7, 1, 1)), ev, 0, None))  # marker: reused
check(ze.zeCommandListAppendEventReset(lst, ev))
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(2, 1, 1)), ev, 0, None))  # marker: after reset
check(ze.zeEventHostSynchronize(ev, FOREVER))
print("ze events done")
