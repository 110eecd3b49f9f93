"""The GPU timeline: every kernel, copy and memset with its device times.

The C side (src/aggregate/gpu_trace.c) keeps a bounded store of the device
work the join saw, its times already on CLOCK_MONOTONIC (the backends align
them: CUPTI through cuptiGetTimestamp, Level Zero through
zeDeviceGetGlobalTimestamps or, where the driver lacks it, the first timed
work's append time); stacks_snapshot() hands it over in columns with the
leaf node of each record in the stacks section's trie. This module turns
that into the profile's "gpu_timeline" section (docs/formats.md), merges
sections of several processes (one part each, as the sample timeline) and
gives the Chrome export its events.

Section: {"parts": [part, ...]}, one part per process:
  {"pid", "start_s" (unix time of t = 0, as the sample timeline's),
   "origin_ns" (CLOCK_MONOTONIC of t = 0: processes of one host compare
   device times exactly through it; absent in older files),
   "clock": {backend: how its device times were aligned},
   "capacity" (records the store keeps), "dropped" (records past it: not
   in the part, counted), "names": [work names], "stacks": [[frame ids
   root first], ...] (launch stacks), "threads": [thread ids],
   columns, one entry per record in store order:
   "start_ns", "dur_ns" (device start from start_s, duration), "launch_ns"
   (the launch call's CPU time from start_s, None if unknown), "device",
   "stream" (CUDA stream id, Level Zero command list serial), "op" (0
   kernel, 1 copy, 2 memset), "dir" (copies: 0 other, 1 HtoD, 2 DtoH,
   3 DtoD), "bytes", "corr" (correlation id), "name" (index into names),
   "stack" (index into stacks, -1: no launch record), "thread" (index into
   threads, -1: unknown)}
"""

import os
from array import array
from bisect import bisect_right

from .frames import Frame

OPS = ("kernel", "memcpy", "memset")
DIRS = ("", "HtoD", "DtoH", "DtoD")
_INT64_MIN = -(1 << 63)


def _ints(raw, code):
    a = array(code)
    a.frombytes(raw)
    return a.tolist()


def from_snapshot(raw, parent_b, frame_b, frames, start_s, clock=None, origin_ns=None):
    """The part of this process from stacks_snapshot()'s gpu columns and
    trie (None: no record stored, none dropped)."""
    if raw is None:
        return None
    (
        start,
        end,
        launch,
        device,
        stream,
        op,
        dir_,
        attr,
        nbytes,
        corr,
        node,
        name,
        thread,
        raw_names,
        capacity,
        dropped,
    ) = raw
    parent, frame = _ints(parent_b, "i"), _ints(frame_b, "i")
    start, end, launch = _ints(start, "q"), _ints(end, "q"), _ints(launch, "q")
    node, name_ix, keys = _ints(node, "i"), _ints(name, "i"), _ints(thread, "Q")
    attr = _ints(attr, "B")
    names, name_index = [], {}
    stacks, stack_index = [], {}
    threads, thread_index = [], {}
    out_name, out_stack, out_thread = [], [], []

    def intern(table, index, key):
        i = index.get(key)
        if i is None:
            i = index[key] = len(table)
            table.append(list(key) if isinstance(key, tuple) else key)
        return i

    for i, nd in enumerate(node):
        label = raw_names[name_ix[i]] if name_ix[i] >= 0 else "[GPU work]"
        path = ()
        if nd >= 0:
            leaf = Frame.of(frames[frame[nd]]) if frame[nd] < len(frames) else None
            if leaf and leaf.is_gpu and leaf.function:
                label = leaf.function  # the resolved (demangled) name of the leaf frame
            up = parent[nd]
            ids = []
            while up >= 0:
                ids.append(frame[up])
                up = parent[up]
            path = tuple(reversed(ids))
        out_name.append(intern(names, name_index, label))
        out_stack.append(intern(stacks, stack_index, path) if attr[i] and path else -1)
        out_thread.append(intern(threads, thread_index, keys[i]) if keys[i] else -1)
    out = {
        "pid": os.getpid(),
        "start_s": start_s,
        "clock": dict(clock or {}),
        "capacity": int(capacity),
        "dropped": int(dropped),
        "names": names,
        "stacks": stacks,
        "threads": threads,
        "start_ns": start,
        "dur_ns": [max(0, e - s) for s, e in zip(start, end)],
        "launch_ns": [None if t == _INT64_MIN else t for t in launch],
        "device": _ints(device, "I"),
        "stream": _ints(stream, "I"),
        "op": _ints(op, "B"),
        "dir": _ints(dir_, "B"),
        "bytes": _ints(nbytes, "Q"),
        "corr": _ints(corr, "I"),
        "name": out_name,
        "stack": out_stack,
        "thread": out_thread,
    }
    if origin_ns is not None:
        out["origin_ns"] = int(origin_ns)
    return out


def section(part):
    return {"parts": [part]} if part else None


def remap_frames(part, remap):
    """A copy of a part whose frame ids are remap[old id] (a merge)."""
    out = dict(part)
    out["stacks"] = [[remap[f] for f in ids] for ids in part.get("stacks", [])]
    return out


def records(part):
    """The part's records as dicts, in store order."""
    names, stacks, threads = part.get("names", []), part.get("stacks", []), part.get("threads", [])
    cols = (
        "start_ns",
        "dur_ns",
        "launch_ns",
        "device",
        "stream",
        "op",
        "dir",
        "bytes",
        "corr",
        "name",
        "stack",
        "thread",
    )
    for row in zip(*(part.get(c, []) for c in cols)):
        r = dict(zip(cols, row))
        r["name"] = names[r["name"]] if 0 <= r["name"] < len(names) else "[GPU work]"
        r["stack"] = stacks[r["stack"]] if 0 <= r["stack"] < len(stacks) else None
        r["thread"] = threads[r["thread"]] if 0 <= r["thread"] < len(threads) else None
        yield r


def dropped(section):
    return sum(p.get("dropped", 0) for p in (section or {}).get("parts", []))


def busy_intervals(part):
    """The union of the part's records' [start, end) in ns from its start_s,
    as sorted disjoint (starts, ends) lists."""
    spans = sorted((s, s + d) for s, d in zip(part.get("start_ns", []), part.get("dur_ns", [])) if d > 0)
    starts, ends = [], []
    for s, e in spans:
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def overlaps(starts, ends, lo, hi):
    """Whether [lo, hi) meets any of the disjoint sorted intervals."""
    i = bisect_right(starts, hi) - 1
    if i >= 0 and starts[i] == hi:
        i -= 1
    return i >= 0 and ends[i] > lo


def sampled_idle(tl_part, gpu_part, frames_raw):
    """GPU idle time of a sampled run, per line: a sample counts as idle
    when no GPU work of the process overlaps the wall interval it covers
    ([its time - its weight, its time]); its weight times the stride goes
    to the line the attribution rule charges its stack to. Returns [[file,
    line, function, idle_s, samples_s]] (samples_s: the time of every
    sample charged to the line, idle or not)."""
    from . import stacks as stacks_model
    from . import timeline as timeline_model
    from .frames import GPU, MARKER, table

    starts, ends = busy_intervals(gpu_part)
    frames = table(frames_raw)
    paths = timeline_model.stacks_of(tl_part)
    shift_ns = int(round((tl_part.get("start_s", 0) - gpu_part.get("start_s", 0)) * 1e9))
    stride = tl_part.get("stride", 1)
    charged = {}
    out = {}
    t = 0
    for dt, node, _th, w in zip(tl_part["t_us"], tl_part["node"], tl_part["thread"], tl_part["weight_us"]):
        t += dt
        if node not in charged:
            f = stacks_model.charge(frames, paths[node])
            charged[node] = None if f is None or f.kind in (GPU, MARKER) else (f.file, f.line, f.function)
        key = charged[node]
        if key is None:
            continue
        end = t * 1000 + shift_ns
        row = out.setdefault(key, [0.0, 0.0])
        row[1] += w * stride * 1e-6
        if not overlaps(starts, ends, end - w * 1000, end):
            row[0] += w * stride * 1e-6
    return [[path, line, func, idle, total] for (path, line, func), (idle, total) in out.items()]
