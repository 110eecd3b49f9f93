"""A PyTorch CUDA program of known structure for `make gpu-check`: per step,
a matmul, an elementwise op, a host-to-device copy (16 MiB from pinned
memory), CPU-only work, a torch.compile'd function (Triton kernels, launched
through cuLaunchKernelEx), a CUDA graph replay, a batch from a DataLoader
with worker processes copied to the device, and a training step of a small
model (forward, backward on autograd's device thread, optimizer). Each
measured part is a one-line function, called inside a record_function
annotation named after its line's marker: torch.profiler's per-annotation
device time is then comparable with lprof's per-line one.

Run as a script: python3 this.py STEPS [--profile-inside K]: with
--profile-inside, torch.profiler (CUDA activities) is started inside the
program after K steps and runs to the end (lprof must hand CUPTI over to it);
the program then prints how many CUDA kernel events torch.profiler saw."""
import builtins
import sys

import torch
from torch.profiler import record_function as mark  # a CPU-side annotation: no GPU work
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
INSIDE = int(sys.argv[sys.argv.index("--profile-inside") + 1]) if "--profile-inside" in sys.argv else None
BATCH_BYTES = 64 * 1024 * 4  # a DataLoader batch: 64 rows of 1024 float32
dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev)  # marker: tensor a
b = torch.randn(4096, 4096, device=dev)
host = torch.randn(2048, 2048).pin_memory()
x_small = torch.randn(1 << 20, device=dev)
static_in = torch.randn(1 << 20, device=dev)
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
xb = torch.randn(256, 1024, device=dev)


def matmul(): return a @ b  # marker: matmul


def elementwise(c): return torch.relu(c) + 1.0  # marker: elementwise


def h2d(): return host.to(dev, non_blocking=True)  # marker: h2d


def cpu(): return sum(i * i for i in range(20000))  # marker: cpu


def fused_body(x): return torch.sin(x) * 2.0 + x  # marker: compiled


fused = torch.compile(fused_body)  # lprof charges its Triton kernels to fused_body's own line


def compiled(): return fused(x_small)


def replay(): return graph.replay()  # marker: graph replay


def load(it): return next(it)[0].to(dev)  # marker: loader


def train(): model(xb).square().mean().backward(); opt.step(); opt.zero_grad()  # marker: train


def batches():
    data = TensorDataset(torch.randn(64 * (STEPS + 8), 1024))
    return iter(DataLoader(data, batch_size=64, num_workers=2, pin_memory=False))


profile = getattr(builtins, "profile", lambda f: f)  # lprof -l's decorator, when run under it


@profile
def step(it):
    # each part inside an annotation named after its marker: torch.profiler's
    # reference run (make gpu-check) charges kernels by them; under lprof -l
    # this function is the profiled one, and its calling lines get the GPU work
    with mark("gpu-check: matmul"):
        c = matmul()  # marker: call matmul
    with mark("gpu-check: elementwise"):
        e = elementwise(c)  # marker: call elementwise
    with mark("gpu-check: h2d"):
        h = h2d()  # marker: call h2d
    cpu()
    with mark("gpu-check: compiled"):
        f = compiled()
    with mark("gpu-check: graph replay"):
        replay()  # marker: call graph replay
    with mark("gpu-check: loader"):
        batch = load(it)  # marker: call loader
    with mark("gpu-check: train"):
        train()
    return e, h, f, batch


if __name__ == "__main__":
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # CUDA graphs are captured on a side stream after a warm-up
        for _ in range(3):
            static_in * 3.0 + 1.0
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = static_in * 3.0 + 1.0  # marker: captured
    it = batches()
    for _ in range(5):  # warm-up: cuBLAS handles, allocator segments, compilation
        step(it)
    torch.cuda.synchronize()
    prof = None
    import time
    t0 = time.perf_counter()
    for i in range(STEPS):
        if INSIDE is not None and i == INSIDE:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        step(it)
    torch.cuda.synchronize()
    print("gpu-check-steps %.6f" % (time.perf_counter() - t0))  # the steps alone: overhead
    if prof is not None:
        prof.__exit__(None, None, None)
        kernels = sum(1 for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
        print("inner profiler kernels", kernels)
    print("ok")
