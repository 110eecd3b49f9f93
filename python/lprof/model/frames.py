"""The frame vocabulary of a stacks section: the one place a frame's kind is
told from its fields. C writes these frames (aggregate/cpython/resolve.c,
from the raw frames of src/common/rawframe.h); a profile stores a frame as
the list [file, function, first_line, line], and readers take a section's
frames as Frame objects (table()). Kinds:
- PYTHON: a line of Python code (a file, "<string>", "<stdin>", a notebook cell)
- NATIVE (lprof --native): a C/C++ function; file is its object file, no lines
- GPU (lprof --gpu): GPU work hung under its launching stack; file "<gpu>"
- MARKER: lprof's own frames ("[truncated]", "[other]", "[no Python frame]",
  ...); file "<lprof>"
- THREAD: a thread's root in a picture (never stored in a profile); file "<thread>"
- TASK: an asyncio task in the task view's pictures (model/task_stacks.py;
  never stored); file "<task>"
"""

import collections
import os

PYTHON, NATIVE, GPU, MARKER, THREAD, TASK = "python", "native", "gpu", "marker", "thread", "task"

GPU_FILE = "<gpu>"
MARKER_FILE = "<lprof>"
THREAD_FILE = "<thread>"
TASK_FILE = "<task>"
# Thread 0 is no thread: it holds what no Python thread can be charged with
# (CPU time of threads without Python that none was there to take, GPU work
# whose launch is unknown), on no line; named so in every view
NO_THREAD = "0"
NO_THREAD_NAME = "no Python thread"

_SPECIAL_FILES = {GPU_FILE: GPU, MARKER_FILE: MARKER, THREAD_FILE: THREAD, TASK_FILE: TASK}


class Frame(collections.namedtuple("Frame", "file function first_line line")):
    """One frame, with its kind. A tuple (file, function, first_line, line),
    so it indexes as the stored list does."""

    __slots__ = ()

    @classmethod
    def of(cls, raw):
        """The Frame of a stored [file, function, first_line, line]."""
        return raw if type(raw) is cls else cls(raw[0], raw[1], raw[2], raw[3])

    @property
    def kind(self):
        special = _SPECIAL_FILES.get(self.file)
        if special:
            return special
        return NATIVE if self.is_native else PYTHON

    @property
    def is_native(self):
        """A native frame (lprof --native): an object file, no source lines."""
        return self.first_line == 0 and self.line == 0 and not self.file.startswith("<")

    @property
    def is_gpu(self):
        """GPU work hung under its launching stack (lprof --gpu): no line."""
        return self.file == GPU_FILE

    @property
    def has_line(self):
        """A frame a sample can be charged to: Python code or lprof's marker
        (native frames' time is their calling line's; GPU work is its
        launch's)."""
        return not (self.is_native or self.is_gpu)

    @property
    def label(self):
        """The frame as one line of text (folded stacks, flame graphs, traces)."""
        kind = self.kind
        if kind in (GPU, THREAD, TASK):  # GPU work, a thread, a task: the name alone
            return self.function
        if kind == NATIVE:  # an object file, no line
            return f"{self.function} ({self.file.rsplit('/', 1)[-1]})"
        return f"{self.function} ({self.file}:{self.line})"

    @property
    def short_label(self):
        """The label with a file's folder left out, and code given as text,
        a marker or GPU work without a line named alone (the HTML report)."""
        if self.is_native:
            return f"{self.function} ({os.path.basename(self.file)})"
        if self.file.startswith("<"):
            return f"{self.function} ({self.file}:{self.line})" if self.line else self.function
        return f"{self.function} ({os.path.basename(self.file)}:{self.line})"


def table(raw_frames):
    """A stacks section's stored frames as Frames, by frame id."""
    return [Frame.of(f) for f in raw_frames]


def thread_name(names, thread, default=None):
    """A thread id's name in a profile's sampling.threads ({str id: name})."""
    key = str(thread)
    if key in names:
        return names[key]
    return NO_THREAD_NAME if key == NO_THREAD else default


def python_threads(names):
    """The ids of a profile's sampling.threads that are threads: all but
    thread 0, which holds the CPU time of threads without Python."""
    return [k for k in names or {} if str(k) != NO_THREAD]
