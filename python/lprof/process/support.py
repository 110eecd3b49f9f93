"""Which interpreters lprof runs on, said in one line where it does not.

setup.py refuses to build on the same interpreters (it cannot import this
package before the build, so it states the rule again)."""

import sys

MIN_VERSION = (3, 10)


def unsupported_reason():
    """None on a supported interpreter, else one line saying why not."""
    if sys.implementation.name != "cpython":
        return f"lprof supports CPython only, not {sys.implementation.name}"
    if sys.version_info[:2] < MIN_VERSION:
        return "lprof needs CPython %d.%d or newer, this is %d.%d" % (MIN_VERSION + sys.version_info[:2])
    # a free-threaded build (Py_GIL_DISABLED) has "t" in its ABI flags (PEP 703);
    # read there, not through sysconfig, whose import costs every start ~1 ms
    if "t" in getattr(sys, "abiflags", ""):
        # the frame walker reads other threads' stacks and the tracer keeps
        # per-thread state on the GIL's word: docs/design.md, free-threading
        return (
            "free-threaded CPython (%d.%dt) is not supported yet by lprof: "
            "run it with the default build (python%d.%d)" % (sys.version_info[:2] * 2)
        )
    return None
