"""A rank of a two-rank Level Zero program for the collectives tests
(lprof --gpu, no GPU): on tests/gpu/fake_ze_driver.c in its real-time mode,
with RANK set as torchrun sets it. From known lines: a compute kernel
(gemm_xe, 40 groups: 400 us), then three oneCCL all-reduces
(allreduce_execution_float32_sum, 30 groups: 300 us), the k-th starting
at COLL_T0_NS + k ms on rank 0 and COLL_LATE_NS later on rank 1, whose
all-reduce is that much shorter (both end together: rank 0 waits). Device
times come from fake_ze_start_next_at: CLOCK_MONOTONIC, as both ranks see
it (COLL_LATE_NS a multiple of 10 us here: whole groups of 10 us)."""
import ctypes
import os

from ze_program import check, kernel, open_device, GroupCount, ze

driver = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"])
driver.fake_ze_start_next_at.argtypes = [ctypes.c_uint64]

rank = int(os.environ["RANK"])
t0 = int(os.environ["COLL_T0_NS"])
late = int(os.environ["COLL_LATE_NS"]) if rank == 1 else 0

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
gemm, allreduce = kernel(mod, b"gemm_xe"), kernel(mod, b"allreduce_execution_float32_sum")
groups = (300_000 - late) // 10_000


def main():
    check(ze.zeCommandListAppendLaunchKernel(lst, gemm, ctypes.byref(GroupCount(40, 1, 1)), None, 0, None))  # marker: compute
    for k in range(3):
        driver.fake_ze_start_next_at(t0 + k * 1_000_000 + late)
        check(ze.zeCommandListAppendLaunchKernel(lst, allreduce, ctypes.byref(GroupCount(groups, 1, 1)), None, 0, None))  # marker: allreduce


main()
print("ze done")
