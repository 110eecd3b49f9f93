"""A PyTorch CUDA program of known structure for `make gpu-check`: per step,
a matmul line, an elementwise line, a host-to-device copy line (16 MiB from
pinned memory) and a CPU-only line. Run as a script: python3 this.py STEPS."""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev)
b = torch.randn(4096, 4096, device=dev)
host = torch.randn(2048, 2048).pin_memory()


def step():
    c = a @ b  # marker: matmul
    d = torch.relu(c) + 1.0  # marker: elementwise
    e = host.to(dev, non_blocking=True)  # marker: h2d
    s = sum(i * i for i in range(20000))  # marker: cpu
    return d, e, s


for _ in range(5):  # warm-up: cuBLAS handles, allocator segments
    step()
torch.cuda.synchronize()
for _ in range(STEPS):
    step()
torch.cuda.synchronize()
print("ok")
