"""The frame vocabulary of a stacks section: the one place a frame's kind is
told from its fields. C writes these frames (aggregate/cpython/resolve.c,
from the raw frames of src/common/rawframe.h); a frame is stored as the list
[file, function, first_line, line]. Kinds:
- PYTHON: a line of Python code (a file, "<string>", "<stdin>", a notebook cell)
- NATIVE (lprof --native): a C/C++ function; file is its object file, no lines
- GPU (lprof --gpu): GPU work hung under its launching stack; file "<gpu>"
- MARKER: lprof's own frames ("[truncated]", "[other]", "[no Python frame]",
  ...); file "<lprof>"
- THREAD: a thread's root in a picture (never stored in a profile); file "<thread>"
"""
PYTHON, NATIVE, GPU, MARKER, THREAD = "python", "native", "gpu", "marker", "thread"

GPU_FILE = "<gpu>"
MARKER_FILE = "<lprof>"
THREAD_FILE = "<thread>"


def is_native(frame):
    """A native frame (lprof --native): an object file, no source lines."""
    return frame[2] == 0 and frame[3] == 0 and not frame[0].startswith("<")


def is_gpu(frame):
    """GPU work hung under its launching stack (lprof --gpu): no line."""
    return frame[0] == GPU_FILE


def kind(frame):
    file = frame[0]
    if file == GPU_FILE:
        return GPU
    if file == MARKER_FILE:
        return MARKER
    if file == THREAD_FILE:
        return THREAD
    return NATIVE if is_native(frame) else PYTHON


def label(frame):
    """The frame as one line of text (folded stacks, flame graphs, traces)."""
    file, func, _first, line = frame[:4]
    k = kind(frame)
    if k in (GPU, THREAD):  # GPU work, a thread: the name alone
        return func
    if k == NATIVE:  # an object file, no line
        return f"{func} ({file.rsplit('/', 1)[-1]})"
    return f"{func} ({file}:{line})"
