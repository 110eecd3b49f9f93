"""A PyTorch CUDA program of known structure for `make gpu-check`: per step,
a matmul, an elementwise op, a host-to-device copy (16 MiB from pinned
memory) and CPU-only work, each a one-line function: torch.profiler names a
Python frame by its function's first line, so one-line functions let its
per-function totals be compared with lprof's per-line ones.
Run as a script: python3 this.py STEPS."""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev)
b = torch.randn(4096, 4096, device=dev)
host = torch.randn(2048, 2048).pin_memory()


def matmul(): return a @ b  # marker: matmul


def elementwise(c): return torch.relu(c) + 1.0  # marker: elementwise


def h2d(): return host.to(dev, non_blocking=True)  # marker: h2d


def cpu(): return sum(i * i for i in range(20000))  # marker: cpu


def step():
    c = matmul()
    return elementwise(c), h2d(), cpu()


for _ in range(5):  # warm-up: cuBLAS handles, allocator segments
    step()
torch.cuda.synchronize()
for _ in range(STEPS):
    step()
torch.cuda.synchronize()
print("ok")
