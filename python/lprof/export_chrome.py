"""Chrome trace export (trace-event format, JSON object form): opens in
Perfetto (ui.perfetto.dev) and chrome://tracing.

A profile keeps stacks with their totals, not the moment each sample was
taken, so each thread's track is its stacks laid end to end (a flame chart,
as speedscope's "left heavy" view): complete ("X") events nest exactly, and
an event's duration is the time of that frame on that thread, in
microseconds. Where the profile has a memory timeline (--memory), it is a
real timeline and becomes a counter track ("C") at its own times.

Thread tracks are numbered 1..n (the trace format's tids are small
integers); each is named after its thread, with the thread's id."""
import json

from .stacks import frame_name

METRICS = {"cpu": ("cpu_python_s", "cpu_native_s", "cpu_system_s"), "wall": ("wall_s",)}
PID = 1


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


def trace(profile, metric="cpu"):
    if metric not in METRICS:
        raise ValueError(f"a trace holds time: --metric cpu or wall, not {metric!r}")
    st = profile.get("stacks") or {}
    if "nodes" in st:
        from .model.profile_file import stacks_from_columns
        st = stacks_from_columns(st)
    frames = st.get("frames", [])
    names = [frame_name(f) for f in frames]
    by_thread = _rows_by_thread(st, METRICS[metric])
    mem = (profile.get("memory") or {}).get("timeline") or []
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
                       "ts": int(round(t_s * 1e6)), "args": {"bytes": live}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"exporter": "lprof", "metric": metric,
                          "layout": "per thread, stacks laid end to end (totals, not sample "
                                    "times); the memory counter is a real timeline",
                          "thread_totals_us": totals}}


def write(profile, out_path, metric="cpu"):
    from .outputs import write_text
    write_text(out_path, json.dumps(trace(profile, metric), separators=(",", ":")))
