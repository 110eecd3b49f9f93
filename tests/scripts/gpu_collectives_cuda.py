"""A rank of a two-rank CUDA program for the collectives tests (lprof --gpu,
no GPU): on tests/gpu/fake_cupti.c in its real-time mode, with RANK set as
torchrun sets it. From known lines: a compute kernel (40 us), then three
all-reduces, the k-th starting at COLL_T0_NS + k ms on rank 0 and
COLL_LATE_NS later on rank 1, both ending at COLL_T0_NS + k ms + 300 us
(rank 1 arrives late; rank 0 waits for it), then one all-gather (its
mangled name) starting at the same time on both ranks, 50 us. Device times
come from fake_cupti_launch_kernel_at: CLOCK_MONOTONIC, as both ranks see
it."""
import ctypes
import os

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_launch_kernel_at.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_set_stream.argtypes = [ctypes.c_uint32, ctypes.c_uint32]

rank = int(os.environ["RANK"])
t0 = int(os.environ["COLL_T0_NS"])
late = int(os.environ["COLL_LATE_NS"]) if rank == 1 else 0
ALLREDUCE = b"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GATHER = b"ncclDevKernel_AllGather_RING_LL"
GATHER_MANGLED = b"_Z%d%sv" % (len(GATHER), GATHER)


def main():
    lib.fake_cupti_set_stream(0, 7)
    lib.fake_cupti_launch_kernel(b"gemm_kernel", 40_000)  # marker: compute
    lib.fake_cupti_set_stream(0, 13)
    for k in range(3):
        start = t0 + k * 1_000_000
        lib.fake_cupti_launch_kernel_at(ALLREDUCE, start + late, 300_000 - late)  # marker: allreduce
    lib.fake_cupti_launch_kernel_at(GATHER_MANGLED, t0 + 5_000_000, 50_000)  # marker: allgather


main()
