"""What lprof --gpu's autograd hooks (backward GPU time on the forward lines,
python/lprof/collect/gpu_backward.py) cost per op, on CPU torch: each case
timed with the hooks off and on in one process (best of 5 runs), in
microseconds. The numbers are in docs/design-gpu.md ("Backward on the
forward lines"). Run: PYTHONPATH=python python3 bench/gpu_backward_hooks.py"""

import time

import torch

from lprof import _lprof
from lprof.collect import gpu_backward


def per_op(fn, n, ops_per_call=1):
    fn(10)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t)
    return best / n / ops_per_call * 1e6


x = torch.randn(16, requires_grad=True)
c = torch.randn(16)
lin = torch.nn.Linear(16, 16)
mlp = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(64, 64), torch.nn.ReLU())])
batch = torch.randn(32, 64)


def mul_grad(n):
    for _ in range(n):
        x * 2


def mul_no_grad(n):
    for _ in range(n):
        c * 2


def linear(n):
    for _ in range(n):
        lin(x)


def chain_backward(n):
    y = x
    for _ in range(n):
        y = y * 1.0001
    y.sum().backward()


def mlp_step(n):
    for _ in range(n):
        mlp(batch).sum().backward()


CASES = [
    ("x * 2, x requires grad (forward op)", mul_grad, 20000, 1),
    ("c * 2, no grad (forward op)", mul_no_grad, 20000, 1),
    ("nn.Linear(16, 16) forward", linear, 20000, 1),
    ("chain of muls, forward + backward (per op)", chain_backward, 20000, 1),
    ("4 x (Linear + ReLU) 32x64, train step (per step)", mlp_step, 500, 1),
]


def main():
    # the stack table the hooks intern into (as under lprof --gpu); the
    # backend's start fails here without a driver, after the table is made
    _lprof.gpu_levelzero_start("/nonexistent/libze_loader.so")
    gpu_backward.uninstall()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'case':52s} {'off us':>8s} {'on us':>8s} {'added':>8s}")
    for name, fn, n, k in CASES:
        off = per_op(fn, n, k)
        gpu_backward.install(torch)
        on = per_op(fn, n, k)
        gpu_backward.uninstall()
        print(f"{name:52s} {off:8.2f} {on:8.2f} {on - off:+8.2f}")
    print("hooked:", gpu_backward.stats())
    # for scale: torch.profiler's CPU-side cost on the same step (CPU
    # activity only: no CUPTI here), which links backward ops to forward ops
    # by sequence number itself
    off = per_op(mlp_step, 500)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        on = per_op(mlp_step, 500)
    print(
        f"{'same train step under torch.profiler (CPU activity)':52s} {off:8.2f} {on:8.2f} {on - off:+8.2f}"
    )


if __name__ == "__main__":
    main()
