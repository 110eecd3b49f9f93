"""The GPU columns of both listings (lprof --gpu): per line, device time of
the kernels and copies it launched (and its share), kernels run, bytes copied
host to device and back, device memory it allocated (the lprof.gpu module
charges them by the one attribution rule)."""
from .memory_report import fmt_bytes

HEADER = f" {'GPU s':>9} {'GPU%':>6} {'kernels':>8} {'H2D':>9} {'D2H':>9} {'GPU mem':>9}"
BLANK = " " * len(HEADER)
LEGEND = ("GPU s = device time of the kernels and copies the line launched (* = partly from "
          "threads without Python, charged to the line that started them), GPU% = its share, "
          "kernels = kernels run, H2D / D2H = bytes copied to / from the device, GPU mem = "
          "device memory allocated (per tensor when PyTorch's allocator history was read)")


def for_listing(profile, accept=None, functions=None):
    """{(file, line): columns} of lines whose file `accept` takes."""
    from .. import gpu
    cols = gpu.line_columns(profile, functions=functions)
    if accept is None:
        return cols
    return {k: v for k, v in cols.items() if accept(k[0])}


def cells(g, total):
    if not g:
        return BLANK
    mark = "*" if g.get("other_thread_s") else " "
    pct = f"{100.0 * g['gpu_s'] / total:5.1f}%" if total and g["gpu_s"] else ""
    secs = f"{g['gpu_s']:.6f}" if g["gpu_s"] else ""
    kernels = f"{int(g['kernels'])}" if g["kernels"] else ""
    return (f" {secs:>8}{mark} {pct:>6} {kernels:>8} {fmt_bytes(g['h2d_bytes']):>9} "
            f"{fmt_bytes(g['d2h_bytes']):>9} {fmt_bytes(g['alloc_bytes']):>9}")


def summary(profile):
    from .. import gpu
    return gpu.summary(profile)
