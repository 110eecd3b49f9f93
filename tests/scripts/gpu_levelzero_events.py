"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): 1500 launches without a signal event and with
no sync lprof sees (more than lprof's pool of 1024 events per context),
then the program's own event signalled twice without a host sync between
(a runtime reusing its events), then reset on the device and signalled
again, then one host sync."""
import ctypes
ze = ctypes.CDLL("libze_loader.so.1")
P = ctypes.c_void_p
u32 = ctypes.c_uint32


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("pKernelName", ctypes.c_char_p)]


class GroupCount(ctypes.Structure):
    _fields_ = [("x", u32), ("y", u32), ("z", u32)]


class PoolDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("count", u32)]


def check(r):
    assert r == 0, hex(r)


check(ze.zeInit(0))
n = u32(1); drv = P(); check(ze.zeDriverGet(ctypes.byref(n), ctypes.byref(drv)))
dev = P(); check(ze.zeDeviceGet(drv, ctypes.byref(n), ctypes.byref(dev)))
ctx = P(); check(ze.zeContextCreate(drv, ctypes.create_string_buffer(64), ctypes.byref(ctx)))
lst = P(); check(ze.zeCommandListCreateImmediate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(lst)))
mod = P(); check(ze.zeModuleCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(mod), None))


def kernel(name):
    k = P(); d = KernelDesc(0x1d, None, 0, name)
    check(ze.zeKernelCreate(mod, ctypes.byref(d), ctypes.byref(k)))
    return k


k = kernel(b"many_xe")
for i in range(1500):
    check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(1, 1, 1)), None, 0, None))  # marker: many

pool = P(); check(ze.zeEventPoolCreate(ctx, ctypes.byref(PoolDesc(0x10, None, 1, 4)), 0, None, ctypes.byref(pool)))
ev = P(); check(ze.zeEventCreate(pool, ctypes.create_string_buffer(32), ctypes.byref(ev)))
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(5, 1, 1)), ev, 0, None))  # marker: first use
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(7, 1, 1)), ev, 0, None))  # marker: reused
check(ze.zeCommandListAppendEventReset(lst, ev))
check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(2, 1, 1)), ev, 0, None))  # marker: after reset
check(ze.zeEventHostSynchronize(ev, ctypes.c_uint64(2**64 - 1)))
print("ze events done")
