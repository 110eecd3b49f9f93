"""Tensor memory per line (lprof --gpu with PyTorch): what PyTorch's
caching allocator (CUDA's, or XPU's where torch has the same history API)
handed to tensors, from its own history, not from cudaMalloc / zeMemAlloc
(which lprof sees per allocator segment, not per tensor).

When the program imports torch, lprof turns on
torch.<device>.memory._record_memory_history (Python stacks, allocation
stacks on free entries too, a bounded number of entries) at the device's
first use, and wraps torch.autograd.backward/grad to know the line that
called backward; at the end it reads torch.<device>.memory._snapshot() and
the allocator's own peak counter, and turns them into, per line and per
stack: bytes allocated, bytes live when the device's tensor total peaked,
bytes still live at exit. read_snapshot()/read_snapshots() are the pure
part (a dict, or a pickle file as _dump_snapshot writes it), tested
without torch.

The rules (docs/design-gpu.md):
- the window's start: the history is a ring; what was live before its
  first entry is rebuilt by walking it back from the blocks allocated at
  snapshot time (an alloc in the window was not live before it, a
  completed free was), then the window is replayed from that baseline.
  Baseline tensors are charged to their allocating stacks: a block's own
  frames, or those of a free entry (lprof records context="alloc", where
  torch writes the allocation's stack on frees).
- backward: an alloc entry with no frames at all whose time_us falls in a
  backward call's span is charged to that call's stack (the latest started
  call, where calls nest or overlap).

Snapshot format (torch >= 2.1): "segments": [{"device", "blocks": [{"address",
"size", "requested_size", "state" ("active_allocated", "active_pending_free",
"inactive"), "frames"}]}], "device_traces": [per device: [{"action"
("alloc", "free_requested", "free_completed", "segment_alloc", ...), "addr",
"size", "stream", "time_us", "frames"}]]; frames are {"filename", "line",
"name"}, innermost first."""

import collections
import functools
import os
import pickle
import sys
import time

from ..common import libdirs
from ..model import stacks as stacks_model
from ..model.frames import Frame

MAX_ENTRIES = 200000  # trace entries torch keeps (a ring: older ones are overwritten)
UNKNOWN = ("<torch>", "[tensor memory without a Python frame]", 0, 0)
BEFORE = ("<torch>", "[tensor memory allocated before the history began]", 0, 0)
LIVE_STATES = ("active_allocated", "active_pending_free", "active_awaiting_free")


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

    def stack_of(self, frames, none=UNKNOWN):
        """The program's frames of a torch stack (innermost first in the
        snapshot), root first, as frame ids; where it has none, its frames of
        code given as text (`python -c`, a notebook cell), as lprof's
        attribution rule does; else the unknown marker (`none` where the
        entry has no frames at all)."""
        kept = [f for f in reversed(frames or []) if self.accept(f.get("filename", ""))]
        if not kept:
            kept = [f for f in reversed(frames or []) if _given_as_text(f.get("filename", ""))]
        key = tuple((f.get("filename", ""), f.get("name", ""), 0, int(f.get("line", 0))) for f in kept) or (
            (UNKNOWN if frames else none),
        )
        ids = []
        for fr in key:
            if fr not in self.frame_ids:
                self.frame_ids[fr] = len(self.frames)
                self.frames.append(list(fr))
            ids.append(self.frame_ids[fr])
        return tuple(ids)

    def is_marker(self, ids, marker):
        return len(ids) == 1 and tuple(self.frames[ids[0]]) == marker

    def add(self, ids, col, n):
        row = self.stacks.setdefault(ids, {"gpu_alloc_bytes": 0, "gpu_peak_bytes": 0, "gpu_live_bytes": 0})
        row[col] += n


def _size(e):
    return int(e.get("size", 0) or 0)


class _Backward:
    """The program's backward calls, [(start_us, end_us, frames)], and the
    rule that charges a frameless allocation to one: the call whose time
    span holds the allocation's time_us, the latest started where calls
    nest or overlap."""

    def __init__(self, calls):
        self.calls = sorted(calls or [], key=lambda c: c[0])
        self.starts = [c[0] for c in self.calls]

    def frames_at(self, t_us):
        if t_us is None or not self.calls:
            return None
        import bisect

        j = bisect.bisect_right(self.starts, t_us) - 1
        for k in range(j, max(j - 64, -1), -1):  # nested or concurrent calls: a few back
            start, end, frames = self.calls[k]
            if start <= t_us <= end:
                return frames
        return None


def _window_start(trace, end_blocks):
    """What was live before the trace's first entry: {addr: (size, frames)}.
    Walks the trace back from the snapshot's live blocks: an alloc in the
    window was not live before it, a completed free was. None where the
    blocks have no addresses (torch 2.0): the start is unknown."""
    if end_blocks is None:
        return None
    state = {addr: (size, frames) for addr, size, frames in end_blocks}
    for e in reversed(trace):
        act = e.get("action")
        if act == "alloc":
            state.pop(e.get("addr"), None)
        elif act == "free_completed":
            state[e.get("addr")] = (_size(e), e.get("frames"))
    return state


def _replay(trace, end_blocks, table, backward, st):
    """One device: the state at the window's start (charged to the lines
    that allocated it where its frames are known), then the window's
    allocs and completed frees; the peak of live bytes over the window from
    that baseline, and who held them then. Fills st (the device's stats);
    returns {addr: (size, stack ids)} live at the end."""
    start = _window_start(trace, end_blocks)
    st["window_start_known"] = start is not None
    live, total, before = {}, 0, set()
    for addr, (size, frames) in (start or {}).items():
        ids = table.stack_of(frames, none=BEFORE)
        live[addr] = (size, ids)
        before.add(addr)
        table.add(ids, "gpu_alloc_bytes", size)
        total += size
        st["baseline_bytes"] += size
        if not table.is_marker(ids, BEFORE):
            st["baseline_attributed_bytes"] += size
    at_start = dict(live)
    peak, peak_at, alloc_ids = total, -1, {}
    for i, e in enumerate(trace):
        act = e.get("action")
        if act == "alloc":
            size, frames = _size(e), e.get("frames")
            if not frames:
                frames = backward.frames_at(e.get("time_us"))
                st["backward_bytes" if frames else "frameless_bytes"] += size
            ids = alloc_ids[i] = table.stack_of(frames)
            live[e.get("addr")] = (size, ids)
            before.discard(e.get("addr"))
            table.add(ids, "gpu_alloc_bytes", size)
            total += size
            if total > peak:
                peak, peak_at = total, i
        elif act == "free_completed":
            addr = e.get("addr")
            gone = live.pop(addr, None)
            if gone is None or addr in before:
                st["unknown_frees"] += 1  # allocated before the window
                before.discard(addr)
            if gone is not None:
                total -= gone[0]
    held = dict(at_start)  # again up to the peak: who held the memory then
    for i in range(peak_at + 1):
        e = trace[i]
        if i in alloc_ids:
            held[e.get("addr")] = (_size(e), alloc_ids[i])
        elif e.get("action") == "free_completed":
            held.pop(e.get("addr"), None)
    for size, ids in held.values():
        table.add(ids, "gpu_peak_bytes", size)
    st["peak_bytes"] = peak
    return live


def _live_blocks(segments, device):
    """The device's blocks allocated at snapshot time: [(addr, size,
    frames)], addr None where torch gave none."""
    out = []
    for seg in segments:
        if int(seg.get("device", 0) or 0) != device:
            continue
        for blk in seg.get("blocks") or []:
            if blk.get("state") not in LIVE_STATES:
                continue
            size = int(blk.get("requested_size") or blk.get("size") or 0)
            frames = blk.get("frames")
            if frames is None and blk.get("history"):  # torch 2.0's layout, as _memory_viz reads it
                frames = blk["history"][0].get("frames")
                size = int(blk["history"][0].get("real_size", size))
            out.append((blk.get("address"), size, frames))
    return out


def _check(st, counter):
    """The allocator's own peak beside the replay's: agree within 0.1% of
    it for requested bytes (what the history's sizes are), 1% + 1 MiB for
    allocated bytes (rounded up per block)."""
    if not counter:
        return
    name, theirs = counter
    slack = theirs // 1000 if name.startswith("requested") else theirs // 100 + (1 << 20)
    st["allocator_counter"], st["allocator_peak_bytes"] = name, theirs
    st["allocator_agrees"] = abs(theirs - st["peak_bytes"]) <= slack


def read_snapshots(parts, accept=None, backward=None, max_entries=MAX_ENTRIES):
    """Snapshots of one run, [(backend ("cuda", "xpu"), snapshot dict or
    pickle path, {device index: (counter name, allocator's peak bytes)})],
    into one result (see read_snapshot); backward: the program's backward
    calls [(start_us, end_us, frames innermost first)] for frameless
    allocations (made on autograd's threads)."""
    table = _Table(accept or program_frame)
    calls = _Backward(backward)
    devices = []
    for backend, snap, peaks in parts:
        snap = load(snap)
        segments = snap.get("segments") or []
        traces = list(snap.get("device_traces") or [])
        used = {int(s.get("device", 0) or 0) for s in segments} | {d for d, t in enumerate(traces) if t}
        for d in sorted(used):
            trace = list(traces[d] or []) if d < len(traces) else []
            blocks = _live_blocks(segments, d)
            st = dict.fromkeys(
                (
                    "peak_bytes",
                    "live_bytes",
                    "baseline_bytes",
                    "baseline_attributed_bytes",
                    "backward_bytes",
                    "frameless_bytes",
                    "unknown_frees",
                ),
                0,
            )
            st.update(
                device=f"{backend}:{d}", trace_entries=len(trace), window_full=len(trace) >= max_entries
            )
            known = None if any(addr is None for addr, _s, _f in blocks) else blocks
            live = _replay(trace, known, table, calls, st)
            for addr, size, frames in blocks:
                # a block's own frames, or those its alloc was charged by
                # (a backward call's, where torch recorded none)
                ids = live[addr][1] if addr in live else table.stack_of(frames)
                table.add(ids, "gpu_live_bytes", size)
                st["live_bytes"] += size
            _check(st, (peaks or {}).get(d))
            devices.append(st)
    lines = {}
    for ids, m in table.stacks.items():
        fr = Frame.of(table.frames[ids[-1]])
        key = (fr.file, fr.line, fr.function)
        row = lines.setdefault(key, [0, 0, 0])
        row[0] += m["gpu_alloc_bytes"]
        row[1] += m["gpu_peak_bytes"]
        row[2] += m["gpu_live_bytes"]
    stats = {
        k: sum(st[k] for st in devices)
        for k in (
            "peak_bytes",
            "live_bytes",
            "trace_entries",
            "unknown_frees",
            "baseline_bytes",
            "baseline_attributed_bytes",
            "backward_bytes",
            "frameless_bytes",
        )
    }
    stats["window_full"] = any(st["window_full"] for st in devices)
    stats["devices"] = devices
    return {
        "lines": [[f, ln, fn] + vals for (f, ln, fn), vals in sorted(lines.items())],
        "stacks": {"frames": table.frames, "stacks": [[list(ids), 0, m] for ids, m in table.stacks.items()]},
        "stats": stats,
    }


def read_snapshot(
    snap, accept=None, backward=None, backend="cuda", allocator_peaks=None, max_entries=MAX_ENTRIES
):
    """A snapshot (dict, or a pickle file's path) -> {"lines": [[file, line,
    function, alloc, peak, live], ...], "stacks": {"frames": [[file, func,
    0, line]], "stacks": [[ids root first, 0, {gpu_alloc_bytes,
    gpu_peak_bytes, gpu_live_bytes}]]}, "stats": {..., "devices": [per
    device]}}. Each line is charged by the innermost program frame of the
    stack (accept: filename -> bool, default program_frame). The window's
    start is rebuilt from the blocks live at snapshot time and the window's
    frees, so the peak counts tensors allocated before a wrapped history;
    live-at-exit comes from the blocks."""
    return read_snapshots([(backend, snap, allocator_peaks or {})], accept, backward, max_entries)


# ---- inside the profiled program (needs torch built for CUDA or XPU) ----

_RECORDING = {}  # backend -> {"reset": allocator peaks reset when recording began}
_BACKWARD = collections.deque(maxlen=1 << 20)  # (start_us, end_us, frames) per backward call
_BACKWARD_STACKS = {}  # interned frames lists
_HOOKS = []  # (module, name, original) while profiling
NOTES = []  # why a backend lprof traces has no tensor memory


def _device_module(torch, backend):
    """torch.cuda / torch.xpu where this torch is built for it and its
    memory module has the history API; else None (and, for a build that
    has the device but not the API, a note)."""
    if torch is None:
        return None
    mod = getattr(torch, backend, None)
    if backend == "cuda":
        built = bool(getattr(getattr(torch, "version", None), "cuda", None))
    else:
        built = bool(getattr(getattr(torch, "version", None), backend, None))
        if not built and hasattr(mod, "_is_compiled"):
            try:
                built = bool(mod._is_compiled())
            except Exception:
                built = False
    if not built or mod is None:
        return None
    memory = getattr(mod, "memory", None)
    missing = [n for n in ("_record_memory_history", "_snapshot") if not hasattr(memory, n)]
    missing += [n for n in ("is_initialized", "_lazy_call") if not hasattr(mod, n)]
    if missing:
        NOTES.append(
            f"no {backend.upper()} tensor memory: this torch's torch.{backend} lacks " + ", ".join(missing)
        )
        return None
    return mod


def start_recording(backends=("cuda",)):
    """Turns on the allocator's history for each backend at the device's
    first use in the program (at once if that has come), and wraps
    torch.autograd.backward/grad to know which line called backward.
    Returns the backends recording (empty where torch has none of them)."""
    torch = sys.modules.get("torch")
    started = []
    del NOTES[:]
    # LPROF_TORCH_MEMORY=0: no allocator history (its Python stack per
    # allocation is a cost of its own); backward's mapping stays
    off = os.environ.get("LPROF_TORCH_MEMORY") == "0"
    devices = False
    for backend in backends:
        try:
            mod = _device_module(torch, backend)
            if mod is None:
                continue
            devices = True
            if off:
                NOTES.append(f"no {backend.upper()} tensor memory: LPROF_TORCH_MEMORY=0")
                continue
            # not is_available(): it may initialise the driver, and a
            # program that forks before its first device call needs it untouched
            if mod.is_initialized():
                _record(mod, backend, at_init=False)
            else:  # run by torch's own lazy initialisation, right after the driver's
                mod._lazy_call(functools.partial(_record, mod, backend, True))
            started.append(backend)
        except Exception:  # an old torch: GPU columns as before
            continue
    if started or (off and devices):
        _install_backward_hooks(torch)
    return started


def history_entries():
    """The history's ring size: LPROF_TORCH_MEMORY_ENTRIES, else 200,000."""
    try:
        return max(1, int(os.environ.get("LPROF_TORCH_MEMORY_ENTRIES") or MAX_ENTRIES))
    except ValueError:
        return MAX_ENTRIES


def _record(mod, backend, at_init):
    entries = history_entries()
    try:
        mod.memory._record_memory_history(
            enabled="all", context="alloc", stacks="python", max_entries=entries
        )
    except Exception:  # never the program's error: its device start-up runs this
        return
    rec = _RECORDING[backend] = {"reset": False, "max_entries": entries}
    # the allocator's own peak, to check the replay's against: reset here
    # only at the device's start (nothing is allocated yet, so the program
    # sees no change); when lprof starts later the counters are left alone
    reset = getattr(mod, "reset_peak_memory_stats", None)
    if at_init and reset is not None and hasattr(mod, "memory_stats"):
        try:
            for d in range(mod.device_count()):
                reset(d)
            rec["reset"] = True
        except Exception:
            pass


def _caller_frames(frame):
    """The calling thread's Python stack, innermost first, as torch writes
    frames (interned: a loop calls backward from one stack)."""
    key = []
    while frame is not None and len(key) < 256:
        key.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    key = tuple(key)
    got = _BACKWARD_STACKS.get(key)
    if got is None:
        got = _BACKWARD_STACKS[key] = [{"filename": f, "line": ln, "name": n} for f, ln, n in key]
    return got


def _backward_start():
    """Before a backward call (run by _lprof.gpu_call_around, so frame 1 is
    the caller of backward): its stack and start time."""
    frames = _caller_frames(sys._getframe(1))
    return time.time_ns() // 1000, frames


def _backward_end(token):
    start, frames = token
    # torch's time_us is the Unix clock in microseconds; +1: the end
    # is truncated like the entries' times
    _BACKWARD.append((start, time.time_ns() // 1000 + 1, frames))


def _wrap(module, name):
    """Wraps module.name with C (_lprof.gpu_call_around): no frame of
    lprof's is on the stack while backward runs (the stack snapshot cuts
    stacks at lprof's frames: the backward() line would lose its CPU samples
    and its GPU work from threads without Python)."""
    orig = getattr(module, name, None)
    if orig is None or getattr(orig, "_lprof_backward", False):
        return
    from .. import _lprof

    backward_call = functools.update_wrapper(
        functools.partial(_lprof.gpu_call_around, _backward_start, _backward_end, orig), orig
    )
    backward_call._lprof_backward = True
    setattr(module, name, backward_call)
    _HOOKS.append((module, name, orig, backward_call))


def _install_backward_hooks(torch):
    """torch.Tensor.backward calls torch.autograd.backward by name; the
    engine's other entry from Python is torch.autograd.grad."""
    autograd = getattr(torch, "autograd", None)
    if autograd is None:
        return
    for name in ("backward", "grad"):
        try:
            _wrap(autograd, name)
        except Exception:
            pass


def _remove_backward_hooks():
    while _HOOKS:
        module, name, orig, ours = _HOOKS.pop()
        if getattr(module, name, None) is ours:  # not if the program replaced it since
            setattr(module, name, orig)


def _allocator_peaks(mod, snap, rec):
    peaks = {}
    stats = getattr(mod, "memory_stats", None)
    if not rec.get("reset") or stats is None:
        return peaks
    for d, trace in enumerate(snap.get("device_traces") or []):
        if not trace:
            continue
        try:
            s = stats(d)
        except Exception:
            continue
        for name in ("requested_bytes.all.peak", "allocated_bytes.all.peak"):
            if name in s:
                peaks[d] = (name, int(s[name]))
                break
    return peaks


def take_snapshot():
    """Each recording backend's snapshot and allocator peaks, read into
    lprof's form, then recording and the backward wrappers off; None if
    torch cannot give one."""
    torch = sys.modules.get("torch")
    _remove_backward_hooks()
    parts, entries = [], MAX_ENTRIES
    for backend, rec in list(_RECORDING.items()):
        entries = rec["max_entries"]
        mod = getattr(torch, backend, None)
        try:
            snap = mod.memory._snapshot()
            mod.memory._record_memory_history(enabled=None)
        except Exception:
            continue
        parts.append((backend, snap, _allocator_peaks(mod, snap, rec)))
    _RECORDING.clear()
    calls = list(_BACKWARD)
    _BACKWARD.clear()
    _BACKWARD_STACKS.clear()
    if not parts:
        return None
    return read_snapshots(parts, backward=calls, max_entries=entries)
