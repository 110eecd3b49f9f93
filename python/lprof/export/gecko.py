"""Firefox Profiler export: the "processed profile" format that
profiler.firefox.com opens ("Load a profile from file"), written at
PROCESSED_VERSION; the Profiler upgrades a file of an older processed
version to its own on loading, so a file written at a settled version keeps
opening as the format moves on (docs/formats.md says which fields lprof
fills and how).

One Profiler thread per sampled thread (per process of a merged profile),
each with its own string array and tables: the samples come from the
profile's sample timeline (model/timeline.py), each at the start of the time
it covers and weighted by that time in milliseconds ("tracing-ms": lprof's
samples are CPU-time weighted in CPU mode), so the call tree sums times,
not sample counts. Each run of consecutive samples of a thread (the Chrome
export's rule: a gap longer than two samples and 10 ms closes it) is an
interval marker ("On CPU" in CPU mode, "Sampled" in wall mode) and each gap
between runs an "Off CPU" / "Not sampled" marker. Without a timeline (older
files) a thread's stacks are laid end to end, as the Chrome export does.
GPU work (lprof --gpu with a GPU timeline) becomes one marker per kernel,
copy and memset on a thread per device stream."""

import gzip
import json

from ..common.files import atomic_path
from ..model import gpu_timeline
from ..model import stacks as stacks_model
from ..model import timeline as timeline_model
from ..model.frames import GPU, MARKER, NATIVE, THREAD, Frame
from .chrome_trace import GAP_MIN_US
from .stack_rows import time_columns

# the processed format's version written (the Profiler's changelog: v53 took
# the category columns off the stack table, v54 the frame table's
# implementation column, v55 gave marker schemas "fields"; v56 moved the
# string arrays out of the threads, which lprof does not need)
PROCESSED_VERSION = 55
# the Gecko (raw) format version the Profiler expects in meta.version beside it
GECKO_VERSION = 30

# name, colour (the Profiler's palette), subcategories (the first one generic)
CATEGORIES = [
    ("Other", "grey", ["Other"]),
    ("Python", "yellow", ["Other", "user code", "library"]),
    ("Native", "orange", ["Other"]),
    ("System", "lightblue", ["Other"]),  # lprof's marker frames: [truncated], ...
    ("Idle/Wait", "transparent", ["Other"]),  # a thread off CPU / not sampled
    ("GPU", "green", ["Other"]),
]
CAT = {name: i for i, (name, _c, _s) in enumerate(CATEGORIES)}
_KIND_CATEGORY = {NATIVE: CAT["Native"], GPU: CAT["GPU"], MARKER: CAT["System"], THREAD: CAT["Other"]}
INSTANT, INTERVAL = 0, 1
_MAX_SAFE_INT = (1 << 53) - 1

MARKER_SCHEMA = [
    {
        "name": "lprofSpan",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "tooltipLabel": "{marker.name}",
        "tableLabel": "{marker.data.samples} samples",
        "chartLabel": "{marker.name}",
        "description": "A run of consecutive samples of the thread (or a gap between runs).",
        "fields": [
            {"key": "samples", "label": "Samples", "format": "integer"},
            {"key": "covered", "label": "Time covered", "format": "milliseconds"},
        ],
    },
    {
        "name": "lprofGPU",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "tooltipLabel": "{marker.name}",
        "tableLabel": "{marker.data.launched_from}",
        "chartLabel": "{marker.name}",
        "description": "A kernel, copy or memset on a GPU stream.",
        "fields": [
            {"key": "device", "label": "Device", "format": "integer"},
            {"key": "stream", "label": "Stream", "format": "integer"},
            {"key": "op", "label": "Operation", "format": "string"},
            {"key": "bytes", "label": "Bytes", "format": "bytes"},
            {"key": "launched_from", "label": "Launched from", "format": "string"},
        ],
    },
]


class _Thread:
    """One Profiler thread's tables being filled."""

    def __init__(self, frames, name, pid, tid, main, process_name, start_ms, end_ms):
        self.frames = frames  # the stacks section's frames, as Frames
        self.strings, self.string_index = [], {}
        self.frame_of, self.func_of, self.stack_of, self.resource_of = {}, {}, {}, {}
        self.frame_table = {
            c: []
            for c in (
                "address",
                "inlineDepth",
                "category",
                "subcategory",
                "func",
                "nativeSymbol",
                "innerWindowID",
                "line",
                "column",
            )
        }
        self.func_table = {
            c: []
            for c in ("name", "isJS", "relevantForJS", "resource", "fileName", "lineNumber", "columnNumber")
        }
        self.resource_table = {c: [] for c in ("lib", "name", "host", "type")}
        self.stack_table = {"frame": [], "prefix": []}
        self.samples = {"stack": [], "time": [], "weight": []}
        self.markers = {c: [] for c in ("data", "name", "startTime", "endTime", "phase", "category")}
        self.head = {
            "name": name,
            "pid": pid,
            "tid": tid,
            "isMainThread": main,
            "processName": process_name,
            "processType": "default",
            "processStartupTime": start_ms,
            "processShutdownTime": end_ms,
            "registerTime": start_ms,
            "unregisterTime": end_ms,
            "pausedRanges": [],
            "showMarkersInTimeline": True,
        }

    def string(self, s):
        s = str(s)
        i = self.string_index.get(s)
        if i is None:
            i = self.string_index[s] = len(self.strings)
            self.strings.append(s)
        return i

    def _resource(self, obj):
        """A resource per native object file (its base name)."""
        if obj not in self.resource_of:
            self.resource_of[obj] = len(self.resource_table["name"])
            t = self.resource_table
            t["lib"].append(None)
            t["name"].append(self.string(obj.rsplit("/", 1)[-1]))
            t["host"].append(None)
            t["type"].append(0)
        return self.resource_of[obj]

    def _func(self, f):
        key = (f.file, f.function, f.first_line) if f.kind != NATIVE else (f.file, f.function)
        if key not in self.func_of:
            self.func_of[key] = len(self.func_table["name"])
            t = self.func_table
            native = f.kind == NATIVE
            name = f.function if f.kind != NATIVE else f.label
            t["name"].append(self.string(name))
            t["isJS"].append(False)
            t["relevantForJS"].append(False)
            t["resource"].append(self._resource(f.file) if native else -1)
            t["fileName"].append(self.string(f.file) if f.kind not in (GPU, THREAD) else None)
            t["lineNumber"].append(f.first_line or None if not native else None)
            t["columnNumber"].append(None)
        return self.func_of[key]

    def frame(self, fid):
        """The thread's frame index of the stacks section's frame fid."""
        i = self.frame_of.get(fid)
        if i is None:
            f = self.frames[fid]
            kind = f.kind
            if kind in _KIND_CATEGORY:
                cat, sub = _KIND_CATEGORY[kind], 0
            else:
                cat, sub = CAT["Python"], 1 if stacks_model.is_user_file(f.file) else 2
            i = self.frame_of[fid] = len(self.frame_table["func"])
            t = self.frame_table
            t["address"].append(-1)
            t["inlineDepth"].append(0)
            t["category"].append(cat)
            t["subcategory"].append(sub)
            t["func"].append(self._func(f))
            t["nativeSymbol"].append(None)
            t["innerWindowID"].append(None)
            t["line"].append(f.line or None if kind not in (NATIVE, GPU) else None)
            t["column"].append(None)
        return i

    def stack(self, ids):
        """The stack index of frame ids, root first (None: no frames)."""
        prefix = None
        for fid in ids:
            frame = self.frame(fid)
            key = (prefix, frame)
            s = self.stack_of.get(key)
            if s is None:
                s = self.stack_of[key] = len(self.stack_table["frame"])
                self.stack_table["frame"].append(frame)
                self.stack_table["prefix"].append(prefix)
            prefix = s
        return prefix

    def sample(self, time_ms, ids, weight_ms):
        self.samples["stack"].append(self.stack(ids))
        self.samples["time"].append(round(time_ms, 3))
        self.samples["weight"].append(round(weight_ms, 3))

    def marker(self, name, start_ms, end_ms, category, data, phase=INTERVAL):
        m = self.markers
        m["name"].append(self.string(name))
        m["startTime"].append(round(start_ms, 3))
        m["endTime"].append(round(end_ms, 3) if end_ms is not None else None)
        m["phase"].append(phase)
        m["category"].append(category)
        m["data"].append(data)

    def done(self):
        def table(cols):
            n = len(next(iter(cols.values())))
            return dict(cols, length=n)

        samples = table(self.samples)
        samples["weightType"] = "tracing-ms"
        return dict(
            self.head,
            stringArray=self.strings,
            frameTable=table(self.frame_table),
            funcTable=table(self.func_table),
            resourceTable=table(self.resource_table),
            nativeSymbols={"libIndex": [], "address": [], "name": [], "functionSize": [], "length": 0},
            stackTable=table(self.stack_table),
            samples=samples,
            markers=table(self.markers),
        )


def _tid(thread_id):
    """A thread id as the Profiler keeps it: a number where JavaScript holds
    it exactly, else its decimal string."""
    return thread_id if isinstance(thread_id, int) and 0 <= thread_id <= _MAX_SAFE_INT else str(thread_id)


def _timeline_threads(profile, parts, frames, origin_s, end_ms, mode):
    on, off = ("On CPU", "Off CPU") if mode == "cpu" else ("Sampled", "Not sampled")
    argv = " ".join(str(a) for a in profile.get("meta", {}).get("argv", []))
    threads, pids = [], {}
    for part in parts:
        pid = str(part.get("pid") or 0)
        pids[pid] = pids.get(pid, 0) + 1
        if pids[pid] > 1:  # two hosts' processes of one pid stay apart
            pid = f"{pid}.{pids[pid]}"
        off_ms = (part.get("start_s", origin_s) - origin_s) * 1000.0
        by_thread = timeline_model.samples(part)
        order = sorted(by_thread.items(), key=lambda kv: kv[1][0][0])  # by first sample
        pname = f"{argv} (pid {part.get('pid')})" if argv else f"pid {part.get('pid')}"
        # the process's main thread: Python's, else the first one sampled
        named = [i for i, _s in order if part["threads"][i][1] == "MainThread"]
        main = named[0] if named else order[0][0]
        for index, samples in order:
            thread_id, name = part["threads"][index]
            th = _Thread(frames, name, pid, _tid(thread_id), index == main, pname, off_ms, end_ms)
            last = None  # end of the previous sample, us
            last_cover = 0
            run = None  # [start us, samples, covered us]
            prev_ms = 0.0
            for end, cover, ids in samples:
                start = end - cover
                if last is not None:
                    if start - last > max(2 * max(cover, last_cover), GAP_MIN_US):
                        _close_run(th, run, on, off_ms, last)
                        th.marker(
                            off,
                            off_ms + last / 1000.0,
                            off_ms + start / 1000.0,
                            CAT["Idle/Wait"],
                            {"type": "lprofSpan", "samples": 0, "covered": 0},
                        )
                        run = None
                    else:
                        start = last  # contiguous: samples butt
                run = run or [start, 0, 0]
                run[1] += 1
                run[2] += cover
                t_ms = max(off_ms + max(start, 0) / 1000.0, prev_ms)
                th.sample(t_ms, ids, cover / 1000.0)
                prev_ms = t_ms
                last, last_cover = max(end, start), cover
            _close_run(th, run, on, off_ms, last)
            threads.append(th.done())
    return threads


def _close_run(th, run, name, off_ms, end_us):
    if run:
        th.marker(
            name,
            off_ms + max(run[0], 0) / 1000.0,
            off_ms + end_us / 1000.0,
            CAT["Python"],
            {"type": "lprofSpan", "samples": run[1], "covered": round(run[2] / 1000.0, 3)},
        )


def _flame_threads(profile, st, frames, cols, end_ms):
    """Without a timeline: each thread's stacks with time end to end from 0."""
    names = (profile.get("sampling") or {}).get("threads", {})
    pid = str(profile.get("meta", {}).get("pid") or 0)
    by_thread = {}
    for ids, thread, m in st.get("stacks", []):
        ms = sum(m.get(c, 0) for c in cols) * 1000.0
        if ms > 0 and ids:
            by_thread.setdefault(thread, []).append((list(ids), ms))
    threads = []
    for n, thread in enumerate(sorted(by_thread, key=str)):
        name = names.get(str(thread), "thread")
        th = _Thread(
            frames, f"{name} (totals, stacks end to end)", pid, _tid(thread), n == 0, "lprof", 0.0, end_ms
        )
        x = 0.0
        for ids, ms in sorted(by_thread[thread], key=lambda r: [frames[i].label for i in r[0]]):
            th.sample(x, ids, ms)
            x += ms
        threads.append(th.done())
    return threads


def _gpu_threads(profile, frames, origin_s, end_ms):
    threads, pids = [], {}
    for part in (profile.get("gpu_timeline") or {}).get("parts", []):
        if not part.get("start_ns"):
            continue
        off_ms = (part.get("start_s", origin_s) - origin_s) * 1000.0
        pid = str(part.get("pid") or 0)
        pids[pid] = pids.get(pid, 0) + 1
        if pids[pid] > 1:  # as the sample threads: two hosts' processes of one pid
            pid = f"{pid}.{pids[pid]}"
        by_stream = {}
        for r in gpu_timeline.records(part):
            by_stream.setdefault((r["device"], r["stream"]), []).append(r)
        for (dev, stream), recs in sorted(by_stream.items()):
            th = _Thread(
                frames,
                f"GPU {dev} stream {stream}",
                pid,
                f"gpu{dev}.{stream}",
                False,
                f"GPU {dev} (pid {part.get('pid')})",
                off_ms,
                end_ms,
            )
            for r in sorted(recs, key=lambda r: r["start_ns"]):
                site = ""
                if r["stack"] and all(0 <= i < len(frames) for i in r["stack"]):
                    f = stacks_model.charge(frames, r["stack"]) or frames[r["stack"][-1]]
                    site = f"{f.file}:{f.line}"
                op = gpu_timeline.OPS[r["op"]] if 0 <= r["op"] < len(gpu_timeline.OPS) else "gpu"
                start = off_ms + r["start_ns"] / 1e6
                th.marker(
                    r["name"],
                    start,
                    start + r["dur_ns"] / 1e6,
                    CAT["GPU"],
                    {
                        "type": "lprofGPU",
                        "device": dev,
                        "stream": stream,
                        "op": op,
                        "bytes": r["bytes"],
                        "launched_from": site,
                    },
                )
            threads.append(th.done())
    return threads


def profile_doc(profile, metric="cpu"):
    """The processed profile (a dict) of an lprof profile."""
    cols = time_columns(metric, "a Firefox Profiler profile")
    meta = profile.get("meta", {})
    sampling = profile.get("sampling") or {}
    st = stacks_model.row_form(profile.get("stacks") or {})
    frames = [Frame.of(f) for f in st.get("frames", [])]
    started = meta.get("started") or 0.0
    tl = profile.get("timeline") or {}
    parts = [p for p in tl.get("parts", []) if p.get("t_us")]
    origin_s = min([started] + [p.get("start_s", started) for p in parts]) if parts else started
    duration_ms = (meta.get("duration_s") or sampling.get("duration_s") or 0) * 1000.0
    end_ms = (started - origin_s) * 1000.0 + duration_ms
    mode = sampling.get("mode", metric)
    if parts:
        threads = _timeline_threads(profile, parts, frames, origin_s, end_ms, mode)
        layout = "timeline"
    else:
        threads = _flame_threads(profile, st, frames, cols, end_ms)
        layout = "totals"
    threads += _gpu_threads(profile, frames, origin_s, end_ms)
    if not threads:
        raise ValueError(
            f"the profile has no stacks with {metric} data (profiles of lprof -l "
            f"alone hold none; sample with lprof script.py or -l --sample)"
        )
    if threads and not any(t["isMainThread"] for t in threads):
        threads[0]["isMainThread"] = True
    rate = sampling.get("rate_hz_effective") or sampling.get("rate_hz_requested") or 1000
    argv = " ".join(str(a) for a in meta.get("argv", []))
    doc_meta = {
        "version": GECKO_VERSION,
        "preprocessedProfileVersion": PROCESSED_VERSION,
        "product": "lprof",
        "importedFrom": "lprof",
        "arguments": argv,
        "interval": round(1000.0 / rate, 6),
        "startTime": origin_s * 1000.0,
        "profilingStartTime": 0,
        "profilingEndTime": max(end_ms, 0),
        "processType": 0,
        "stackwalk": 1 if sampling.get("native") else 0,
        "symbolicated": True,
        "usesOnlyOneStackType": not sampling.get("native"),
        "sourceCodeIsNotOnSearchfox": True,
        "keepProfileThreadOrder": True,
        "platform": "Linux",
        "categories": [{"name": n, "color": c, "subcategories": list(s)} for n, c, s in CATEGORIES],
        "markerSchema": MARKER_SCHEMA,
        "extra": [
            {
                "label": "lprof",
                "entries": [
                    {"label": "Metric", "format": "string", "value": mode},
                    {
                        "label": "Layout",
                        "format": "string",
                        "value": "sample timeline"
                        if layout == "timeline"
                        else "totals: each thread's stacks end to end (no sample timeline)",
                    },
                    {
                        "label": "lprof version",
                        "format": "string",
                        "value": str(meta.get("lprof_version", "")),
                    },
                ],
            }
        ],
    }
    return {"meta": doc_meta, "libs": [], "pages": [], "counters": [], "threads": threads}


def write(profile, out_path, metric="cpu"):
    doc = profile_doc(profile, metric)
    data = json.dumps(doc, separators=(",", ":"))
    with atomic_path(out_path) as tmp:
        if out_path.endswith(".gz"):
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                fh.write(data)
        else:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(data)
