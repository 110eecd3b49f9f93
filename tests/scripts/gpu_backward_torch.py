"""A PyTorch training step for lprof --gpu tests without a GPU: CPU tensors,
with "GPU work" launched through tests/gpu/fake_cupti.c (ctypes, the library
lprof's CUPTI collector loaded) by two custom autograd Functions, each
applied on its own line of the model: each one's forward launches a kernel
(fwd_<name>, 10 us) and its backward another (bwd_<name>: one 20 us, two
40 us, and two also a 4 KiB device-to-host copy of 5 us). The leaf `scale`
gets a kernel after its gradient is accumulated (accum_scale, 3 us).
After backward(), one more kernel from its own line (step_kernel, 1 us).
Environment: STEPS (3), NO_BACKWARD=1 (forward only), NO_GRAD=1 (forward
under torch.no_grad), BACKWARD_THREAD=1 (backward() on another thread),
TORCH_MEMORY_WRAP=1 (lprof's tensor-memory wrappers of torch.autograd.backward
and grad, as a CUDA build of torch gets them under --gpu)."""
import builtins
import ctypes
import os
import threading

import torch

if os.environ.get("TORCH_MEMORY_WRAP") == "1":
    from lprof.collect import torch_memory
    torch_memory._install_backward_hooks(torch)

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_memcpy.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_launch_kernel.restype = lib.fake_cupti_memcpy.restype = None  # hooks must return None
BACKWARD_NS = {b"one": 20000, b"two": 40000}
profile = getattr(builtins, "profile", lambda f: f)  # lprof -l injects it


class FakeGemm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, name):
        ctx.name = name
        lib.fake_cupti_launch_kernel(b"fwd_" + name, 10000)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        lib.fake_cupti_launch_kernel(b"bwd_" + ctx.name, BACKWARD_NS[ctx.name])
        if ctx.name == b"two":
            lib.fake_cupti_memcpy(2, 4096, 5000)
        return grad * 2, None


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.scale.register_post_accumulate_grad_hook(
            lambda p: lib.fake_cupti_launch_kernel(b"accum_scale", 3000))

    @profile
    def forward(self, x):
        h = FakeGemm.apply(x, b"one")  # marker: layer one
        h = h * self.scale  # marker: scale
        out = FakeGemm.apply(h, b"two")  # marker: layer two
        return out


model = Model()
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(8, requires_grad=True)
    if os.environ.get("NO_GRAD") == "1":
        with torch.no_grad():
            loss = model(x).sum()  # marker: no-grad forward
    else:
        loss = model(x).sum()  # marker: forward call
    if os.environ.get("NO_BACKWARD") != "1" and os.environ.get("NO_GRAD") != "1":
        if os.environ.get("BACKWARD_THREAD") == "1":
            t = threading.Thread(target=loss.backward)
            t.start()
            t.join()
        else:
            loss.backward()  # marker: backward call
    lib.fake_cupti_launch_kernel(b"step_kernel", 1000)  # marker: step
