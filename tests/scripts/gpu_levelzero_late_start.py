"""Level Zero initialised before lprof's collector starts: this process's
first zeInit runs without ZE_ENABLE_TRACING_LAYER, so the loader leaves its
tracing layer off (lprof sets the variable too late). Run with plain python
on tests/gpu/fake_ze_driver.c (ZE_ENABLE_ALT_DRIVERS); prints the
collector's status, and where it is active, the Level Zero counters after
3 launches and whether the layer is still on after stop."""
import ctypes
import json
import os

from ze_program import GroupCount, check, kernel, open_device, ze


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

from lprof import _lprof  # noqa: E402 (after zeInit: the late start under test)
from lprof.collect.gpu import GPUCollector  # noqa: E402 (after zeInit, as above)

collector = GPUCollector(backends=("levelzero",), quiet=True)
collector.start()
out["status"] = collector.status["levelzero"]
if out["status"] == "active":
    ctx, dev, lst, mod = open_device()
    k = kernel(mod, b"gemm_xe")
    for i in range(3):
        check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(4, 1, 1)), None, 0, None))
    collector.stop()
    lz = _lprof.gpu_stats()["levelzero"]
    out.update({key: lz[key] for key in ("appends", "records", "lost", "layer_turned_on")})
    out["layer_after"] = layer_state()
print(json.dumps(out))
