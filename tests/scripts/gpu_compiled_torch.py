"""torch.compile for lprof --gpu tests without a GPU: a CPU build of PyTorch
compiles a three-line function with Inductor (C++ kernels), then "GPU work"
named as Inductor named the generated kernels goes through
tests/gpu/fake_cupti.c (ctypes), launched from the line right after the
compiled call (the stand-in for that call: on a GPU, the kernels are
launched from inside it). Each fused kernel runs 30 us a step; a kernel
Inductor did not make (plain_kernel, 5 us) is launched from its own line.
The names come from the generated modules under TORCHINDUCTOR_CACHE_DIR,
not from lprof. Environment: STEPS (3), TORCHINDUCTOR_CACHE_DIR,
KEY_WITHOUT_TRACKING_LEVEL=1 (Inductor's cache key as before torch 2.13)."""
import ctypes
import glob
import os
import re
import sys

import torch

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_launch_kernel.restype = None


def fused(x, y):
    a = torch.sin(x)  # marker: op sin
    b = a * y  # marker: op mul
    return b + x  # marker: op add


def generated_kernel_names():
    """The kernels Inductor defined in its generated modules (one graph here)."""
    names = set()
    for path in glob.glob(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            names.update(re.findall(r"^(cpp_fused_\w+) = async_compile", fh.read(), re.MULTILINE))
    return sorted(names)


if os.environ.get("KEY_WITHOUT_TRACKING_LEVEL") == "1":
    # torch before 2.13: the tracking level is not in Inductor's cache key
    from torch._inductor import codecache

    details_init = codecache.FxGraphHashDetails.__init__

    def init_as_before_2_13(self, *args, **kwargs):
        details_init(self, *args, **kwargs)
        self.__dict__.pop("provenance_tracking_level", None)

    codecache.FxGraphHashDetails.__init__ = init_as_before_2_13

compiled = torch.compile(fused)
torch.manual_seed(0)
x, y = torch.randn(64), torch.randn(64)
expected = x.sin() * y + x
out = compiled(x, y)  # marker: first call
# Inductor's vectorised sin may differ from eager's by a few float32 ulps: on
# random inputs the default atol (1e-8) failed 5 runs in 300 without lprof
# (worst 4.8e-7, where the result is near 0)
assert torch.allclose(out, expected, atol=1e-6), "the compiled function computed something else"
names = generated_kernel_names()
if not names:
    sys.exit("no cpp_fused_ kernel in the generated modules")
print("kernels:", " ".join(names))
for step in range(int(os.environ.get("STEPS", "3"))):
    out = compiled(x, y)  # marker: compiled call
    for name in names:
        lib.fake_cupti_launch_kernel(name.encode(), 30000)  # marker: kernel launch
    lib.fake_cupti_launch_kernel(b"plain_kernel", 5000)  # marker: plain launch
