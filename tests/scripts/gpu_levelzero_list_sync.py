"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): 3 batches of 600 launches without a signal
event, each followed by zeCommandListHostSynchronize (Level Zero 1.6; a
loader without it: says so and stops)."""
import ctypes
import sys

ze = ctypes.CDLL("libze_loader.so.1")
P = ctypes.c_void_p
u32 = ctypes.c_uint32
if not hasattr(ze, "zeCommandListHostSynchronize"):
    print("no zeCommandListHostSynchronize")
    sys.exit(0)


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("pKernelName", ctypes.c_char_p)]


class GroupCount(ctypes.Structure):
    _fields_ = [("x", u32), ("y", u32), ("z", u32)]


def check(r):
    assert r == 0, hex(r)


check(ze.zeInit(0))
n = u32(1); drv = P(); check(ze.zeDriverGet(ctypes.byref(n), ctypes.byref(drv)))
dev = P(); check(ze.zeDeviceGet(drv, ctypes.byref(n), ctypes.byref(dev)))
ctx = P(); check(ze.zeContextCreate(drv, ctypes.create_string_buffer(64), ctypes.byref(ctx)))
lst = P(); check(ze.zeCommandListCreateImmediate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(lst)))
mod = P(); check(ze.zeModuleCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(mod), None))
k = P(); check(ze.zeKernelCreate(mod, ctypes.byref(KernelDesc(0x1d, None, 0, b"batch_xe")), ctypes.byref(k)))
for batch in range(3):
    for i in range(600):
        check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(1, 1, 1)), None, 0, None))  # marker: batch
    check(ze.zeCommandListHostSynchronize(lst, ctypes.c_uint64(2**64 - 1)))
print("ze list sync done")
