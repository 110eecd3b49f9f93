"""lprof: line-level CPU, wall and memory profiler for Python, written in C.

`from lprof import profile` gives the `@profile` decorator; it is a no-op
unless lprof -l (or `profile.enable()`) turns tracing on."""
__version__ = "0.1.0"

from .decorator import profile  # noqa: E402


def start(mode="cpu", rate_hz=100):
    """Starts whole-program sampling of this process (see lprof.sampling)."""
    from . import sampling
    return sampling.start(mode=mode, rate_hz=rate_hz)


def stop():
    """Stops sampling started by start(); returns the profile dict."""
    from . import sampling
    return sampling.stop()


def sampling(**kwargs):
    """Context manager: sample the enclosed region (`with lprof.sampling(): ...`)."""
    from . import sampling as _sampling
    return _sampling.sampling(**kwargs)


__all__ = ["profile", "start", "stop", "sampling", "__version__"]
