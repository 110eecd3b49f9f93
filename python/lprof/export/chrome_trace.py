"""Chrome trace export (trace-event format, JSON object form): opens in
Perfetto (ui.perfetto.dev) and chrome://tracing.

Where the profile has a sample timeline (sampled runs: model/timeline.py),
each thread's track shows what it was doing over time: a sample covers the
time before it (its weight: CPU time in CPU mode, the period in wall mode),
consecutive samples with the same frames merge into one complete ("X")
event per frame, nested exactly, and a gap (the thread was not sampled:
idle in CPU mode) closes them. Each process of a merged profile is its own
trace process (its pid). Without a timeline (older profiles, lprof -l), a
thread's track is its stacks laid end to end (a flame chart of totals, as
speedscope's "left heavy" view) and otherData says so. Where the profile has
a memory timeline (--memory), it becomes a counter track ("C").

Thread tracks are numbered 1..n per process (the trace format's tids are
small integers); each is named after its thread, with the thread's id."""
import json
import math

from ..model import timeline as timeline_model
from .stack_rows import frame_name, row_form, time_columns
PID = 1
_FIRST_SPARE_PID = 1 << 22  # above Linux's largest pid
GAP_MIN_US = 10_000  # shorter gaps between samples: timer or scheduling jitter


def _rows_by_thread(st, cols):
    """{thread: {ids tuple: microseconds}} of the rows with time."""
    out = {}
    for ids, thread, m in st.get("stacks", []):
        us = int(round(sum(m.get(c, 0) for c in cols) * 1e6))
        if us <= 0 or not ids:
            continue
        per = out.setdefault(thread, {})
        per[tuple(ids)] = per.get(tuple(ids), 0) + us
    return out


def _flame_events(stacks, names, frames, tid):
    """X events of one thread: stacks sorted by their names, laid end to end."""
    order = sorted(stacks.items(), key=lambda kv: [names[i] for i in kv[0]])
    events, open_ = [], []   # open_: [(frame id, start us)]
    x = 0

    def close(down_to):
        while len(open_) > down_to:
            fid, start = open_.pop()
            f = frames[fid]
            events.append((start, start - x, len(open_), {"name": names[fid], "cat": "stack", "ph": "X", "pid": PID,
                           "tid": tid, "ts": start, "dur": x - start,
                           "args": {"file": f[0], "line": f[3], "function": f[1]}}))
    for ids, us in order:
        common = 0
        while common < len(open_) and common < len(ids) and open_[common][0] == ids[common]:
            common += 1
        close(common)
        for fid in ids[common:]:
            open_.append((fid, x))
        x += us
    close(0)
    events.sort(key=lambda e: e[:3])  # by start, outer frames first
    return [e[3] for e in events], x


def _x(names, frames, fid, pid, tid, start, end):
    f = frames[fid]
    return {"name": names[fid], "cat": "stack", "ph": "X", "pid": pid, "tid": tid, "ts": start,
            "dur": end - start, "args": {"file": f[0], "line": f[3], "function": f[1]}}


def _timeline_events(samples, names, frames, pid, tid, shift):
    """X events of one thread from its samples [(end_us, covered_us, ids)]:
    spans of the same frame over consecutive samples merge; a gap longer than
    two samples and 10 ms closes every span (shorter ones are a late timer or
    sampler thread, not idleness). Returns (events, busy microseconds)."""
    events, open_ = [], []   # open_: [(frame id, start us)], root first
    last_end = None
    last_cover = 0
    busy = 0

    def close(down_to, at):
        while len(open_) > down_to:
            fid, start = open_.pop()
            events.append(_x(names, frames, fid, pid, tid, start, at))
    for end, cover, ids in samples:
        end += shift
        start = end - cover
        if last_end is not None:
            if start - last_end > max(2 * max(cover, last_cover), GAP_MIN_US):
                close(0, last_end)      # not sampled meanwhile: idle
            else:
                start = last_end        # contiguous: spans butt
        end = max(end, start)
        common = 0
        while common < len(open_) and common < len(ids) and open_[common][0] == ids[common]:
            common += 1
        close(common, start)
        for fid in ids[common:]:
            open_.append((fid, start))
        busy += end - start
        last_end, last_cover = end, cover
    if last_end is not None:
        close(0, last_end)
    events.sort(key=lambda e: (e["ts"], -e["dur"]))  # by start, outer frames first
    return events, busy


def _us(t_s):
    """Seconds as integer microseconds (a time too large for a trace: 0)."""
    d = t_s * 1e6
    return int(round(d)) if math.isfinite(d) and abs(d) < 1e17 else 0


def _offset_us(start_s, started):
    """Microseconds from the profile's start to a part's (0 where the
    profile's own start is not a usable time)."""
    return _us(start_s - started)


def _timeline_trace(profile, tl, frames, names, mem, metric):
    meta = profile.get("meta", {})
    started = meta.get("started", 0) or 0
    parts = tl.get("parts", [])
    # times from the profile's start; every part shifted alike so none is negative
    offsets = [_offset_us(p.get("start_s", started), started) for p in parts]
    first = [off + p["t_us"][0] - p["weight_us"][0] * p.get("stride", 1)
             for off, p in zip(offsets, parts) if p["t_us"]]
    shift = max(0, -min(first + [_us(t) for t, _ in mem] + [0]))
    argv = " ".join(str(a) for a in meta.get("argv", []))
    events, totals, pids = [], {}, []
    for part, off in zip(parts, offsets):
        pid = part.get("pid") or PID
        label = f"lprof: {argv} (pid {pid})" if argv else f"lprof (pid {pid})"
        if pid in pids:  # two hosts' processes of one pid: each its own trace process
            pid = _FIRST_SPARE_PID + len(pids)
        pids.append(pid)
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}})
        by_thread = timeline_model.samples(part)
        order = sorted(by_thread.items(), key=lambda kv: kv[1][0][0])  # by first sample
        for tid, (index, samples) in enumerate(order, 1):
            thread, label = part["threads"][index]
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": f"{label} ({thread})"}})
            evs, busy = _timeline_events(samples, names, frames, pid, tid, off + shift)
            events.extend(evs)
            totals[f"{pid}:{thread}"] = busy
    mem_pid = pids[0] if pids else PID
    for t_s, live in mem:
        events.append({"name": "live memory", "ph": "C", "pid": mem_pid, "tid": 0,
                       "ts": _us(t_s) + shift, "args": {"bytes": live}})
    mode = (profile.get("sampling") or {}).get("mode", metric)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"exporter": "lprof", "metric": mode,
                          "layout": f"timeline: per process and thread, {mode} samples at their "
                                    f"times (a sample covers the time before it; a gap: not "
                                    f"sampled); the memory counter is a real timeline",
                          "time_origin_us": -shift, "thread_busy_us": totals}}


def trace(profile, metric="cpu"):
    cols = time_columns(metric, "a trace")
    st = row_form(profile.get("stacks") or {})
    frames = st.get("frames", [])
    names = [frame_name(f) for f in frames]
    by_thread = _rows_by_thread(st, cols)
    mem = (profile.get("memory") or {}).get("timeline") or []
    tl = profile.get("timeline")
    if tl and any(p.get("t_us") for p in tl.get("parts", [])):
        return _timeline_trace(profile, tl, frames, names, mem, metric)
    if not by_thread and not mem:
        raise ValueError(f"the profile has no stacks with {metric} data (profiles of lprof -l "
                         f"alone hold none; sample with lprof script.py or -l --sample)")
    meta = profile.get("meta", {})
    thread_names = (profile.get("sampling") or {}).get("threads", {})
    argv = " ".join(str(a) for a in meta.get("argv", []))
    events = [{"name": "process_name", "ph": "M", "pid": PID, "tid": 0,
               "args": {"name": f"lprof: {argv}" if argv else "lprof"}}]
    totals = {}
    for tid, thread in enumerate(sorted(by_thread, key=str), 1):
        label = thread_names.get(str(thread), "thread")
        events.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": tid,
                       "args": {"name": f"{label} ({thread}) {metric} time, stacks end to end"}})
        evs, total = _flame_events(by_thread[thread], names, frames, tid)
        events.extend(evs)
        totals[str(thread)] = total
    for t_s, live in mem:
        events.append({"name": "live memory", "ph": "C", "pid": PID, "tid": 0,
                       "ts": _us(t_s), "args": {"bytes": live}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"exporter": "lprof", "metric": metric,
                          "layout": "per thread, stacks laid end to end (totals, not sample "
                                    "times: the profile has no sample timeline); the memory "
                                    "counter is a real timeline",
                          "thread_totals_us": totals}}


def write(profile, out_path, metric="cpu"):
    from ..common.files import write_text  # the atomic writer, for a text
    write_text(out_path, json.dumps(trace(profile, metric), separators=(",", ":")))
