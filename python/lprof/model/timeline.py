"""The sample timeline: when each thread was seen in which stack.

The C side (src/aggregate/timeline.c) keeps a bounded list of samples (time,
thread, stack, weight), thinned evenly when full; stacks_snapshot() hands it
over in columns, sorted by time, with its stacks as a trie of the stacks
section's frame ids. This module turns that into the profile's "timeline"
section (docs/formats.md), merges sections of several processes (each keeps
its own part: threads and clocks of different processes are not mixed) and
decodes a part into samples for the Chrome trace export.

Section: {"parts": [part, ...]}, one part per process:
  {"pid", "start_s" (unix time of t = 0), "stride" (each entry stands for this
   many samples of its thread), "threads": [[thread id, name], ...],
   "nodes": {"parent": [node or -1, ...], "frame": [frame id, ...]},
   "t_us": [delta-encoded microseconds from start_s], "node": [...],
   "thread": [index into threads], "weight_us": [the sample's time, us]}
"""

import os
import time


def origin_ns(start_s):
    """CLOCK_MONOTONIC nanoseconds at unix time start_s (Python's monotonic
    clock is CLOCK_MONOTONIC on Linux, as the sampler's)."""
    return max(0, time.monotonic_ns() - int(round((time.time() - start_s) * 1e9)))


def _ints(raw, code):
    # memoryview, not array: the array module's import is a shared library
    # loaded at every run's start (a millisecond)
    return memoryview(raw).cast(code).tolist()


def from_snapshot(raw, start_s):
    """The part of this process from stacks_snapshot()'s timeline columns
    (None: no samples), thread names filled in later (name_threads)."""
    if raw is None:
        return None
    dt, node, thread, weight, parent, frame, keys, stride = raw
    t_us = _ints(dt, "q")
    if not t_us:
        return None
    return {
        "pid": os.getpid(),
        "start_s": start_s,
        "stride": int(stride),
        "threads": [[k, "thread"] for k in _ints(keys, "Q")],
        "nodes": {"parent": _ints(parent, "i"), "frame": _ints(frame, "i")},
        "t_us": t_us,
        "node": _ints(node, "i"),
        "thread": _ints(thread, "i"),
        "weight_us": _ints(weight, "I"),
    }


def section(part):
    return {"parts": [part]} if part else None


def name_threads(section, names):
    """Thread names ({str(thread id): name}, the sampling section's)."""
    for part in (section or {}).get("parts", []):
        part["threads"] = [[k, names.get(str(k), n)] for k, n in part["threads"]]


def remap_frames(part, remap):
    """A copy of a part whose frame ids are remap[old id] (a merge)."""
    out = dict(part)
    out["nodes"] = {
        "parent": list(part["nodes"]["parent"]),
        "frame": [remap[f] for f in part["nodes"]["frame"]],
    }
    return out


def stacks_of(part):
    """Frame ids root first, per node of the part's trie."""
    parent, frame = part["nodes"]["parent"], part["nodes"]["frame"]
    paths = []
    for i, f in enumerate(frame):  # a parent comes before its children
        up = parent[i]
        paths.append((paths[up] if up >= 0 else ()) + (f,))
    return paths


def samples(part):
    """Per thread index: [(end_us, covered_us, frame ids root first)] in time
    order, end_us from the part's start_s. A sample covers the time before
    it: its weight (CPU time in CPU mode, the period in wall mode) times the
    stride (the samples a thinned entry stands for)."""
    paths = stacks_of(part)
    stride = part.get("stride", 1)
    out = {}
    t = 0
    for dt, node, th, w in zip(part["t_us"], part["node"], part["thread"], part["weight_us"]):
        t += dt
        out.setdefault(th, []).append((t, w * stride, paths[node]))
    return out
