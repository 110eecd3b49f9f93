"""Level Zero initialised before lprof's collector starts: this process's
first zeInit runs without ZE_ENABLE_TRACING_LAYER, so the loader leaves its
tracing layer off (lprof sets the variable too late). Run with plain python
on tests/gpu/fake_ze_driver.c (ZE_ENABLE_ALT_DRIVERS); prints the
collector's status, and where it is active, the Level Zero counters after
3 launches and whether the layer is still on after stop."""
import ctypes
import json
import os

ze = ctypes.CDLL("libze_loader.so.1")
P = ctypes.c_void_p
u32 = ctypes.c_uint32


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", P), ("flags", u32), ("pKernelName", ctypes.c_char_p)]


class GroupCount(ctypes.Structure):
    _fields_ = [("x", u32), ("y", u32), ("z", u32)]


def check(r):
    assert r == 0, hex(r)


def layer_state():
    """zelGetTracingLayerState (loader 1.26.2+), else None."""
    if not hasattr(ze, "zelGetTracingLayerState"):
        return None
    on = ctypes.c_bool(False)
    check(ze.zelGetTracingLayerState(ctypes.byref(on)))
    return on.value


assert "ZE_ENABLE_TRACING_LAYER" not in os.environ
check(ze.zeInit(0))
out = {"runtime_switch": hasattr(ze, "zelEnableTracingLayer"), "layer_before": layer_state()}

from lprof import _lprof  # noqa: E402
from lprof.collect.gpu import GPUCollector  # noqa: E402

collector = GPUCollector(backends=("levelzero",), quiet=True)
collector.start()
out["status"] = collector.status["levelzero"]
if out["status"] == "active":
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
    k = P()
    check(ze.zeKernelCreate(mod, ctypes.byref(KernelDesc(0x1d, None, 0, b"gemm_xe")), ctypes.byref(k)))
    for i in range(3):
        check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(4, 1, 1)), None, 0, None))
    collector.stop()
    lz = _lprof.gpu_stats()["levelzero"]
    out.update({key: lz[key] for key in ("appends", "records", "lost", "layer_turned_on")})
    out["layer_after"] = layer_state()
print(json.dumps(out))
