"""The stack metrics an export can draw, declared once (no imports at load:
the command line's choices read it before anything else is loaded)."""

# export metric -> (stack metric columns summed, unit of the output integers);
# CPU time's columns are None here: columns() reads them from the C metric
# list (lprof.model.stacks.CPU_COLUMNS)
METRICS = {
    "cpu": (None, "us"),
    "wall": (("wall_s",), "us"),
    # time coroutines waited, under the await chain they waited in (--wall, 3.12+)
    "wait": (("wait_s",), "us"),
    # the sampled time threads held the GIL: which stacks keep the others out
    "gil": (("gil_s",), "us"),
    "alloc": (("alloc_bytes",), "bytes"),
    "peak": (("peak_bytes",), "bytes"),
    "leak": (("live_bytes",), "bytes"),
    "gpu": (("gpu_kernel_s", "gpu_copy_s"), "us"),
    # the part of it in collectives (NCCL, oneCCL kernels: src/aggregate/gpu_names.c)
    "gpu-comm": (("gpu_comm_s",), "us"),
    # the part run by autograd's backward for ops created on the line (under "[backward]")
    "gpu-backward": (("gpu_backward_s",), "us"),
    # device memory allocated / live at the device's peak: per tensor from
    # PyTorch's allocator history when it ran (lprof.collect.torch_memory),
    # else what cudaMalloc and friends handed out
    "gpu-mem": (("gpu_alloc_bytes",), "bytes"),
    "gpu-peak": (("gpu_peak_bytes",), "bytes"),
}
# the metrics of the formats that hold time (Chrome trace, pstats)
TIME_METRICS = ("cpu", "wall")


def columns(metric):
    """The stack columns `metric` sums (KeyError for an unknown one)."""
    cols = METRICS[metric][0]
    if cols is None:
        from ..model.stacks import CPU_COLUMNS

        return CPU_COLUMNS
    return cols
