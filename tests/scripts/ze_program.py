"""What the Level Zero test programs share: the loader through ctypes, the
few structs they pass, and one device's context, immediate command list and
module on tests/gpu/fake_ze_driver.c. Launches stay in each program, on the
lines its tests look for."""
import ctypes

ze = ctypes.CDLL("libze_loader.so.1")
P = ctypes.c_void_p
u32 = ctypes.c_uint32
FOREVER = ctypes.c_uint64(2**64 - 1)


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("pKernelName", ctypes.c_char_p)]


class GroupCount(ctypes.Structure):
    _fields_ = [("x", u32), ("y", u32), ("z", u32)]


class PoolDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("count", u32)]


def check(r):
    assert r == 0, hex(r)


def open_device():
    """(context, device, immediate command list, module) of the first
    device; zeInit must have run."""
    n = u32(1)
    drv = P()
    check(ze.zeDriverGet(ctypes.byref(n), ctypes.byref(drv)))
    dev = P()
    check(ze.zeDeviceGet(drv, ctypes.byref(n), ctypes.byref(dev)))
    ctx = P()
    check(ze.zeContextCreate(drv, ctypes.create_string_buffer(64), ctypes.byref(ctx)))
    lst = P()
    check(ze.zeCommandListCreateImmediate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(lst)))
    mod = P()
    check(ze.zeModuleCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(mod), None))
    return ctx, dev, lst, mod


def kernel(mod, name):
    k = P()
    check(ze.zeKernelCreate(mod, ctypes.byref(KernelDesc(0x1d, None, 0, name)), ctypes.byref(k)))
    return k
