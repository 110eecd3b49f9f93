"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): 3 batches of 600 launches without a signal
event, each followed by zeCommandListHostSynchronize (Level Zero 1.6; a
loader without it: says so and stops)."""
import ctypes
import sys

from ze_program import FOREVER, GroupCount, check, kernel, open_device, ze

if not hasattr(ze, "zeCommandListHostSynchronize"):
    print("no zeCommandListHostSynchronize")
    sys.exit(0)

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
k = kernel(mod, b"batch_xe")
for batch in range(3):
    for i in range(600):
        check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(1, 1, 1)), None, 0, None))  # marker: batch
    check(ze.zeCommandListHostSynchronize(lst, FOREVER))
print("ze list sync done")
