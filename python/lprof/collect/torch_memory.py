"""Tensor memory per line (lprof --gpu with PyTorch): what the CUDA caching
allocator handed to tensors, from its own history, not from cudaMalloc
(which lprof sees per allocator segment, not per tensor).

When the program imports torch, lprof turns on
torch.cuda.memory._record_memory_history (Python stacks, a bounded number
of entries); at the end it reads torch.cuda.memory._snapshot() and turns it
into, per line and per stack: bytes allocated, bytes live when the device's
tensor total peaked, bytes still live at exit. read_snapshot() is the pure
part (a dict, or a pickle file as torch.cuda.memory._dump_snapshot writes
it), tested without torch.

Snapshot format (torch >= 2.1): "segments": [{"device", "blocks": [{"size",
"state" ("active_allocated", "active_pending_free", "inactive"), "frames"}]}],
"device_traces": [per device: [{"action" ("alloc", "free_requested",
"free_completed", "segment_alloc", ...), "addr", "size", "frames"}]]; frames
are {"filename", "line", "name"}, innermost first."""
import os
import pickle
import sys

from ..common import libdirs
from ..model import stacks as stacks_model

MAX_ENTRIES = 200000  # trace entries torch keeps (a ring: older ones are overwritten)
UNKNOWN = ("<torch>", "[tensor memory without a Python frame]", 0, 0)


def _torch_dir():
    import importlib.util
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locs = list(spec.submodule_search_locations or []) if spec else []
    return os.path.realpath(locs[0]) if locs else None


def program_frame(filename, _torch=[]):
    """True for a frame of the program: not torch (also a source checkout of
    it), not library code by lprof's rule (the standard library, installed
    packages, lprof itself, generated modules), not code given as text."""
    if not filename or filename.startswith("<"):
        return False
    if not _torch:
        _torch.append(_torch_dir())
    real = os.path.realpath(filename)
    if _torch[0] and real.startswith(_torch[0] + os.sep):
        return False
    return not libdirs.is_library_file(filename)


def _given_as_text(filename):
    return filename.startswith("<") and stacks_model.is_user_file(filename)


def load(path_or_dict):
    if isinstance(path_or_dict, dict):
        return path_or_dict
    with open(path_or_dict, "rb") as fh:
        snap = pickle.load(fh)
    if not isinstance(snap, dict) or "segments" not in snap:
        raise ValueError(f"{path_or_dict}: not a torch memory snapshot (no 'segments')")
    return snap


class _Table:
    """Interned frames and stacks (root first), with per-stack bytes."""

    def __init__(self, accept):
        self.accept = accept
        self.frames, self.frame_ids = [], {}
        self.stacks = {}

    def stack_of(self, frames):
        """The program's frames of a torch stack (innermost first in the
        snapshot), root first, as frame ids; where it has none, its frames of
        code given as text (`python -c`, a notebook cell), as lprof's
        attribution rule does; else the unknown marker."""
        kept = [f for f in reversed(frames or []) if self.accept(f.get("filename", ""))]
        if not kept:
            kept = [f for f in reversed(frames or []) if _given_as_text(f.get("filename", ""))]
        key = tuple((f.get("filename", ""), f.get("name", ""), 0, int(f.get("line", 0))) for f in kept) or (UNKNOWN,)
        ids = []
        for fr in key:
            if fr not in self.frame_ids:
                self.frame_ids[fr] = len(self.frames)
                self.frames.append(list(fr))
            ids.append(self.frame_ids[fr])
        return tuple(ids)

    def add(self, ids, col, n):
        row = self.stacks.setdefault(ids, {"gpu_alloc_bytes": 0, "gpu_peak_bytes": 0, "gpu_live_bytes": 0})
        row[col] += n


def _replay(trace, table):
    """One device's trace: bytes allocated per stack, and the live bytes
    per stack at the trace's peak of the device's tensor total. Returns
    (peak bytes, unknown frees)."""
    live, total, peak, peak_at, unknown = {}, 0, 0, -1, 0
    for i, e in enumerate(trace):
        act = e.get("action")
        if act == "alloc":
            ids = table.stack_of(e.get("frames"))
            live[e.get("addr")] = (int(e.get("size", 0)), ids)
            table.add(ids, "gpu_alloc_bytes", int(e.get("size", 0)))
            total += int(e.get("size", 0))
            if total > peak:
                peak, peak_at = total, i
        elif act == "free_completed":
            gone = live.pop(e.get("addr"), None)
            if gone is None:
                unknown += 1  # its alloc was before the trace's window
            else:
                total -= gone[0]
    # second pass: who held the memory at the peak
    live = {}
    for e in trace[:peak_at + 1]:
        act = e.get("action")
        if act == "alloc":
            live[e.get("addr")] = (int(e.get("size", 0)), table.stack_of(e.get("frames")))
        elif act == "free_completed":
            live.pop(e.get("addr"), None)
    for size, ids in live.values():
        table.add(ids, "gpu_peak_bytes", size)
    return peak, unknown


def read_snapshot(snap, accept=None):
    """A snapshot (dict, or a pickle file's path) -> {"lines": [[file, line,
    function, alloc, peak, live], ...], "stacks": {"frames": [[file, func,
    0, line]], "stacks": [[ids root first, 0, {gpu_alloc_bytes,
    gpu_peak_bytes, gpu_live_bytes}]]}, "stats": {...}}. Each line is charged
    by the innermost program frame of the stack (accept: filename -> bool,
    default program_frame). Live-at-exit comes from the segments' blocks
    still allocated (exact even when the trace ring dropped old entries)."""
    snap = load(snap)
    table = _Table(accept or program_frame)
    peaks, unknown, entries = [], 0, 0
    for trace in snap.get("device_traces") or []:
        p, u = _replay(list(trace or []), table)
        peaks.append(p)
        unknown += u
        entries += len(trace or [])
    live_total = 0
    for seg in snap.get("segments") or []:
        for blk in seg.get("blocks") or []:
            if blk.get("state") not in ("active_allocated", "active_pending_free"):
                continue
            size = int(blk.get("requested_size") or blk.get("size") or 0)
            frames = blk.get("frames")
            if frames is None and blk.get("history"):  # torch 2.0's layout, as _memory_viz reads it
                frames = blk["history"][0].get("frames")
                size = int(blk["history"][0].get("real_size", size))
            table.add(table.stack_of(frames), "gpu_live_bytes", size)
            live_total += size
    lines = {}
    for ids, m in table.stacks.items():
        fr = table.frames[ids[-1]]
        key = (fr[0], fr[3], fr[1])
        row = lines.setdefault(key, [0, 0, 0])
        row[0] += m["gpu_alloc_bytes"]
        row[1] += m["gpu_peak_bytes"]
        row[2] += m["gpu_live_bytes"]
    return {"lines": [[f, ln, fn] + vals for (f, ln, fn), vals in sorted(lines.items())],
            "stacks": {"frames": table.frames,
                       "stacks": [[list(ids), 0, m] for ids, m in table.stacks.items()]},
            "stats": {"peak_bytes": sum(peaks), "live_bytes": live_total, "trace_entries": entries,
                      "unknown_frees": unknown,
                      "window_full": any(len(t or []) >= MAX_ENTRIES for t in snap.get("device_traces") or [])}}


# ---- inside the profiled program (needs torch with CUDA) ----

def start_recording():
    """Turns on the allocator's history at CUDA's first use in the program
    (at once if that has come); False where torch has no CUDA."""
    torch = sys.modules.get("torch")
    try:
        # not torch.cuda.is_available(): it may initialise the driver, and a
        # program that forks before its first CUDA call needs it untouched
        if torch is None or not getattr(torch.version, "cuda", None):
            return False
        cuda = torch.cuda
        if cuda.is_initialized():
            _record(torch)
        else:  # run by torch's own lazy initialisation, right after the driver's
            cuda._lazy_call(lambda: _record(torch))
        return True
    except Exception:  # an old torch, or one without CUDA: GPU columns as before
        return False


def _record(torch):
    try:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=MAX_ENTRIES)
    except Exception:  # never the program's error: its CUDA start-up runs this
        pass


def take_snapshot():
    """The snapshot, read into lprof's form, then recording off; None if
    torch cannot give one."""
    torch = sys.modules.get("torch")
    try:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
    except Exception:
        return None
    return read_snapshot(snap)
