"""lprof: line-level CPU, wall and memory profiler for Python, written in C.

`from lprof import profile` gives the `@profile` decorator; it is a no-op
unless lprof -l (or `profile.enable()`) turns tracing on."""

__version__ = "0.1.0"

import contextlib

_FROM_DECORATOR = ("profile", "LineProfiler", "LineStats")


def __getattr__(name):
    # `from lprof import profile` imports the line tracer's Python side on first
    # use only: a sampling run (`lprof script.py`) never needs it
    if name in _FROM_DECORATOR:
        from . import decorator

        return getattr(decorator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def start(mode="cpu", rate_hz=None):
    """Starts whole-program sampling of this process (see lprof.collect.sampling)."""
    from .collect import sampling as sampler

    return sampler.start(mode=mode, rate_hz=rate_hz)


def stop():
    """Stops sampling started by start(); returns the profile dict."""
    from .collect import sampling as sampler

    return sampler.stop()


@contextlib.contextmanager
def sampling(mode="cpu", rate_hz=None):
    """Samples the enclosed region; the dict it yields gets "profile" at exit.

    with lprof.sampling() as result: work()
    print(lprof.render_listing(result["profile"]))"""
    result = {}
    start(mode=mode, rate_hz=rate_hz)
    try:
        yield result
    finally:
        result["profile"] = stop()


def render_listing(profile, **options):
    """The annotated listing of a sampled profile, as text."""
    from .render.sampled_listing import render

    return render(profile, **options)


def load_ipython_extension(ip):
    """`%load_ext lprof` in IPython / Jupyter: the %lprun, %lprof and %%lprof
    magics (lprof.magics)."""
    from .magics import load_ipython_extension as load

    load(ip)


__all__ = [
    "profile",
    "LineProfiler",
    "LineStats",
    "start",
    "stop",
    "sampling",
    "render_listing",
    "__version__",
]
