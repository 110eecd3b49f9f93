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
small integers); each is named after its thread, with the thread's id.

Where the profile has a GPU timeline (lprof --gpu: model/gpu_timeline.py),
each device is a trace process ("GPU n", pids from GPU_PID_BASE) with a
thread track per stream (CUDA) or command list (Level Zero), and each
kernel, copy and memset a complete event there at its device times, on the
same clock as the CPU tracks. Each is tied to its launch by a flow (ph "s"
at the launch call's time on the launching thread's track, binding to the
slice open there, to ph "f" at the work's start, binding to its event) and
an instant event ("launch: name") marks the launch call. In the timeline
layout the launching thread's track is its sample track; in the flame
layout (no real CPU times) it is a track of its own, "<thread> GPU launches"."""

import json
import math

from ..model import gpu_timeline
from ..model import stacks as stacks_model
from ..model.frames import Frame
from ..model.frames import table as frame_table
from ..model import timeline as timeline_model
from .stack_rows import frame_name, time_columns

PID = 1
_FIRST_SPARE_PID = 1 << 22  # above Linux's largest pid
GAP_MIN_US = 10_000  # shorter gaps between samples: timer or scheduling jitter
GPU_PID_BASE = _FIRST_SPARE_PID + (1 << 20)  # device processes: above the spare pids
_STREAM_WORD = {"levelzero": "command list", "cuda": "stream"}


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
    events, open_ = [], []  # open_: [(frame id, start us)]
    x = 0

    def close(down_to):
        while len(open_) > down_to:
            fid, start = open_.pop()
            f = Frame.of(frames[fid])
            events.append(
                (
                    start,
                    start - x,
                    len(open_),
                    {
                        "name": names[fid],
                        "cat": "stack",
                        "ph": "X",
                        "pid": PID,
                        "tid": tid,
                        "ts": start,
                        "dur": x - start,
                        "args": {"file": f.file, "line": f.line, "function": f.function},
                    },
                )
            )

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
    f = Frame.of(frames[fid])
    return {
        "name": names[fid],
        "cat": "stack",
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": start,
        "dur": end - start,
        "args": {"file": f.file, "line": f.line, "function": f.function},
    }


def _timeline_events(samples, names, frames, pid, tid, shift):
    """X events of one thread from its samples [(end_us, covered_us, ids)]:
    spans of the same frame over consecutive samples merge; a gap longer than
    two samples and 10 ms closes every span (shorter ones are a late timer or
    sampler thread, not idleness). Returns (events, busy microseconds)."""
    events, open_ = [], []  # open_: [(frame id, start us)], root first
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
                close(0, last_end)  # not sampled meanwhile: idle
            else:
                start = last_end  # contiguous: spans butt
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


def _gpu_parts(profile):
    return [p for p in (profile.get("gpu_timeline") or {}).get("parts", []) if p.get("start_ns")]


def _gpu_first_us(profile, started):
    """The earliest GPU or launch time of the profile, us from its start (None: no GPU timeline)."""
    first = []
    for part in _gpu_parts(profile):
        off = _offset_us(part.get("start_s", started), started)
        times = part["start_ns"] + [t for t in part.get("launch_ns", []) if t is not None]
        first.append(off + min(times) / 1000.0)
    return min(first) if first else None


def _gpu_events(profile, frames, names, started, shift, thread_track):
    """Device tracks, work events, launch instants and flows of the GPU
    timeline. thread_track(pid, thread key) -> (trace pid, tid) of the
    launching thread's track, adding its metadata where it is new."""
    events = []
    flow = 0
    ftable = frame_table(frames)
    for pi, part in enumerate(_gpu_parts(profile)):
        off = _offset_us(part.get("start_s", started), started) + shift
        pid = part.get("pid") or PID
        clock = part.get("clock") or {}
        word = _STREAM_WORD.get(next(iter(clock), "cuda"), "stream") if len(clock) == 1 else "stream"
        tracks = {}
        for r in gpu_timeline.records(part):
            dev, stream = r["device"], r["stream"]
            gpid = GPU_PID_BASE + pi * 256 + min(dev, 255)
            if (dev, None) not in tracks:
                tracks[(dev, None)] = True
                events.append(
                    {
                        "name": "process_name",
                        "ph": "M",
                        "pid": gpid,
                        "tid": 0,
                        "args": {"name": f"GPU {dev} (pid {pid})"},
                    }
                )
                events.append(
                    {
                        "name": "process_sort_index",
                        "ph": "M",
                        "pid": gpid,
                        "tid": 0,
                        "args": {"sort_index": 1000 + pi * 256 + dev},
                    }
                )
            if (dev, stream) not in tracks:
                tracks[(dev, stream)] = len([k for k in tracks if k[0] == dev and k[1] is not None]) + 1
                events.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": gpid,
                        "tid": tracks[(dev, stream)],
                        "args": {"name": f"{word} {stream}"},
                    }
                )
            tid = tracks[(dev, stream)]
            ts = round(off + r["start_ns"] / 1000.0, 3)
            op = gpu_timeline.OPS[r["op"]] if r["op"] < len(gpu_timeline.OPS) else "gpu"
            args = {"device": dev, word.replace(" ", "_"): stream, "correlation": r["corr"]}
            if r["op"] != 0:
                args["bytes"] = r["bytes"]
            if r["op"] == 1 and 0 < r["dir"] < len(gpu_timeline.DIRS):
                args["direction"] = gpu_timeline.DIRS[r["dir"]]
            site = None
            if r["stack"] and all(i < len(frames) for i in r["stack"]):
                # the launching line by the attribution rule, as the listing charges it
                f = stacks_model.charge(ftable, r["stack"]) or Frame.of(frames[r["stack"][-1]])
                site = {"file": f.file, "line": f.line, "function": f.function}
                args["launched_from"] = f"{f.file}:{f.line}"
                args["launch_stack"] = [names[i] for i in r["stack"]]
            events.append(
                {
                    "name": r["name"],
                    "cat": f"gpu,{op}",
                    "ph": "X",
                    "pid": gpid,
                    "tid": tid,
                    "ts": ts,
                    "dur": round(r["dur_ns"] / 1000.0, 3),
                    "args": args,
                }
            )
            if r["launch_ns"] is None or r["thread"] is None:
                continue
            cpid, ctid = thread_track(pid, r["thread"])
            lts = round(off + r["launch_ns"] / 1000.0, 3)
            flow += 1
            largs = dict(site or {}, correlation=r["corr"])
            events.append(
                {
                    "name": f"launch: {r['name']}",
                    "cat": "gpu,launch",
                    "ph": "i",
                    "s": "t",
                    "pid": cpid,
                    "tid": ctid,
                    "ts": lts,
                    "args": largs,
                }
            )
            events.append(
                {
                    "name": "launch",
                    "cat": "gpu,flow",
                    "ph": "s",
                    "id": flow,
                    "pid": cpid,
                    "tid": ctid,
                    "ts": lts,
                    "bp": "e",
                }
            )
            events.append(
                {
                    "name": "launch",
                    "cat": "gpu,flow",
                    "ph": "f",
                    "id": flow,
                    "pid": gpid,
                    "tid": tid,
                    "ts": ts,
                    "bp": "e",
                }
            )
    return events


def _gpu_note(profile):
    tl = profile.get("gpu_timeline")
    if not tl:
        return {}
    clock = {}
    for p in tl.get("parts", []):
        clock.update(p.get("clock") or {})
    return {"gpu_clock": clock, "gpu_dropped": gpu_timeline.dropped(tl)}


def _timeline_trace(profile, tl, frames, names, mem, metric):
    meta = profile.get("meta", {})
    started = meta.get("started", 0) or 0
    parts = tl.get("parts", [])
    # times from the profile's start; every part shifted alike so none is negative
    offsets = [_offset_us(p.get("start_s", started), started) for p in parts]
    first = [
        off + p["t_us"][0] - p["weight_us"][0] * p.get("stride", 1)
        for off, p in zip(offsets, parts)
        if p["t_us"]
    ]
    gfirst = _gpu_first_us(profile, started)
    shift = max(
        0, -min(first + [_us(t) for t, _ in mem] + [0] + ([math.floor(gfirst)] if gfirst is not None else []))
    )
    argv = " ".join(str(a) for a in meta.get("argv", []))
    events, totals, pids = [], {}, []
    tracks = {}  # (process pid, thread key) -> (trace pid, tid)
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
            tracks[(part.get("pid") or PID, thread)] = (pid, tid)
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": pid,
                    "tid": tid,
                    "args": {"name": f"{label} ({thread})"},
                }
            )
            evs, busy = _timeline_events(samples, names, frames, pid, tid, off + shift)
            events.extend(evs)
            totals[f"{pid}:{thread}"] = busy
        tracks[("next", pid)] = len(order) + 1

    def thread_track(proc, thread):
        if (proc, thread) not in tracks:  # a thread that was never sampled
            tpid = proc if proc in pids else (pids[0] if pids else PID)
            tid = tracks.get(("next", tpid), 1)
            tracks[("next", tpid)] = tid + 1
            tracks[(proc, thread)] = (tpid, tid)
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": tpid,
                    "tid": tid,
                    "args": {"name": f"thread ({thread})"},
                }
            )
        return tracks[(proc, thread)]

    events.extend(_gpu_events(profile, frames, names, started, shift, thread_track))
    mem_pid = pids[0] if pids else PID
    for t_s, live in mem:
        events.append(
            {
                "name": "live memory",
                "ph": "C",
                "pid": mem_pid,
                "tid": 0,
                "ts": _us(t_s) + shift,
                "args": {"bytes": live},
            }
        )
    mode = (profile.get("sampling") or {}).get("mode", metric)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "exporter": "lprof",
            "metric": mode,
            "layout": f"timeline: per process and thread, {mode} samples at their "
            f"times (a sample covers the time before it; a gap: not "
            f"sampled); the memory counter is a real timeline",
            "time_origin_us": -shift,
            "thread_busy_us": totals,
            **_gpu_note(profile),
        },
    }


def trace(profile, metric="cpu"):
    cols = time_columns(metric, "a trace")
    st = stacks_model.row_form(profile.get("stacks") or {})
    frames = st.get("frames", [])
    names = [frame_name(f) for f in frames]
    by_thread = _rows_by_thread(st, cols)
    mem = (profile.get("memory") or {}).get("timeline") or []
    tl = profile.get("timeline")
    if tl and any(p.get("t_us") for p in tl.get("parts", [])):
        return _timeline_trace(profile, tl, frames, names, mem, metric)
    if not by_thread and not mem and not _gpu_parts(profile):
        raise ValueError(
            f"the profile has no stacks with {metric} data (profiles of lprof -l "
            f"alone hold none; sample with lprof script.py or -l --sample)"
        )
    meta = profile.get("meta", {})
    thread_names = (profile.get("sampling") or {}).get("threads", {})
    argv = " ".join(str(a) for a in meta.get("argv", []))
    events = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": PID,
            "tid": 0,
            "args": {"name": f"lprof: {argv}" if argv else "lprof"},
        }
    ]
    totals = {}
    for tid, thread in enumerate(sorted(by_thread, key=str), 1):
        label = thread_names.get(str(thread), "thread")
        events.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": PID,
                "tid": tid,
                "args": {"name": f"{label} ({thread}) {metric} time, stacks end to end"},
            }
        )
        evs, total = _flame_events(by_thread[thread], names, frames, tid)
        events.extend(evs)
        totals[str(thread)] = total
    for t_s, live in mem:
        events.append(
            {"name": "live memory", "ph": "C", "pid": PID, "tid": 0, "ts": _us(t_s), "args": {"bytes": live}}
        )
    launch_tracks = {}

    def thread_track(_proc, thread):  # no real CPU times here: launches get tracks of their own
        if thread not in launch_tracks:
            tid = launch_tracks[thread] = len(by_thread) + len(launch_tracks) + 1
            label = thread_names.get(str(thread), "thread")
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": PID,
                    "tid": tid,
                    "args": {"name": f"{label} ({thread}) GPU launches"},
                }
            )
        return PID, launch_tracks[thread]

    started = meta.get("started", 0) or 0
    gfirst = _gpu_first_us(profile, started)
    gshift = max(0, -math.floor(gfirst)) if gfirst is not None else 0
    events.extend(_gpu_events(profile, frames, names, started, gshift, thread_track))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "exporter": "lprof",
            "metric": metric,
            "layout": "per thread, stacks laid end to end (totals, not sample "
            "times: the profile has no sample timeline); the memory "
            "counter is a real timeline",
            "thread_totals_us": totals,
            **_gpu_note(profile),
        },
    }


def write(profile, out_path, metric="cpu"):
    from ..common.files import write_text  # the atomic writer, for a text

    write_text(out_path, json.dumps(trace(profile, metric), separators=(",", ":")))
