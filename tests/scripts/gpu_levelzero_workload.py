"""A Level Zero program for lprof --gpu tests without a GPU: it runs on
tests/gpu/fake_ze_driver.c through Debian's real loader (ZE_ENABLE_ALT_DRIVERS)
and launches from known lines: 4 x (a 64000-byte host-to-device copy, gemm_xe
of 50 groups, axpy_xe of 2 groups) with no signal event, then axpy_xe of 3
groups signalling the program's own event (its pool asked for no
timestamps), and a 64000-byte device allocation."""
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
ctx = P(); desc = ctypes.create_string_buffer(64)
check(ze.zeContextCreate(drv, desc, ctypes.byref(ctx)))
lst = P(); check(ze.zeCommandListCreateImmediate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(lst)))
mod = P(); check(ze.zeModuleCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(mod), None))

def kernel(name):
    k = P(); d = KernelDesc(0x1d, None, 0, name)
    check(ze.zeKernelCreate(mod, ctypes.byref(d), ctypes.byref(k)))
    return k

gemm, axpy = kernel(b"gemm_xe"), kernel(b"axpy_xe")
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
check(ze.zeEventHostSynchronize(ev, ctypes.c_uint64(2**64 - 1)))
check(ze.zeMemFree(ctx, buf))
print("ze done")
