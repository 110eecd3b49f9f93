"""Backward GPU time on the forward lines through Level Zero, without a GPU:
CPU torch, and kernels appended on tests/gpu/fake_ze_driver.c (10 us per
group) by a custom autograd Function applied on one line of a model: its
forward appends gemm_xe of 1 group, its backward axpy_xe of 4 groups. Two
steps."""
import ctypes

import torch
from ze_program import GroupCount, check, kernel, open_device, ze

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
gemm, axpy = kernel(mod, b"gemm_xe"), kernel(mod, b"axpy_xe")


def append(k, groups):
    check(ze.zeCommandListAppendLaunchKernel(lst, k, ctypes.byref(GroupCount(groups, 1, 1)), None, 0, None))


class FakeXe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        append(gemm, 1)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        append(axpy, 4)
        return grad * 2


def model(x):
    return FakeXe.apply(x)  # marker: xe layer


for step in range(2):
    loss = model(torch.randn(8, requires_grad=True)).sum()
    loss.backward()  # marker: xe backward
print("ze done")
