"""Which collectors a run uses, from its options: the lprof command's own
process and every child process it follows build them here alike."""


def make(opts, quiet=False):
    """(collectors, modes) for options with the run command's attribute
    names: line_by_line, sample, wall, rate, signal, native, memory,
    memory_sample_bytes, gpu, waits. quiet: no messages on stderr (children)."""
    collectors, modes = [], []
    if opts.line_by_line:
        from .linetrace import collector as line_collector

        collectors.append(line_collector)
        modes.append("lines")
    if not opts.line_by_line or opts.sample:
        from . import sampling

        mode = "wall" if opts.wall else "cpu"
        collectors.append(
            sampling.SamplingCollector(
                mode=mode,
                rate_hz=opts.rate,
                signal=opts.signal,
                native=opts.native,
                waits=False if getattr(opts, "waits", None) is False else None,
            )
        )
        modes.append(mode)
    if opts.memory:
        from . import memory

        collectors.append(memory.MemoryCollector(sample_bytes=opts.memory_sample_bytes, quiet=quiet))
        modes.append("memory")
    gpu = getattr(opts, "gpu", None)
    if gpu:
        from . import gpu as gpu_mod

        backends = gpu_mod.BACKENDS if gpu == "all" else (gpu,)
        collectors.append(gpu_mod.GPUCollector(backends=backends, quiet=quiet))
        modes.append("gpu")
    return collectors, modes


OPTION_NAMES = (
    "line_by_line",
    "sample",
    "wall",
    "rate",
    "signal",
    "native",
    "memory",
    "memory_sample_bytes",
    "gpu",
    "waits",
)


def options_of(args):
    """The options above as a JSON-able dict (what a child is told)."""
    return {name: getattr(args, name) for name in OPTION_NAMES}
