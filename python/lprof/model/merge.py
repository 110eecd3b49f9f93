"""Merging the profiles of several processes or ranks into one profile.

Used by the run command (children followed: the parent merges their files at
exit) and by `lprof merge` (one file per rank). Profiles are folded in one at
a time, so a caller can load, add and drop them one by one: memory grows with
the distinct stacks and lines, not with the number of profiles.

What merges how:
- stacks: `lprof.model.stacks.merge` (each column by its declared merge kind,
  taken from the profiles themselves: sums add, peaks take the maximum);
  threads of the same name are one thread (all the main threads together);
- per-line sections ("sampling" lines, "memory" lines and leaks): rebuilt
  from the merged stacks by the one attribution rule, as for one process;
- "functions" (lprof -l): hits and times add per (file, function, first
  line) and per line, and so do the seconds suspended ("wait") per line;
- counters of the "sampling" section add, durations and peaks take the max;
- "gpu": per-line rows rebuilt from the merged stacks; a backend is active
  where any process collected; counters add, the device memory peak is the
  largest of the processes';
- "timeline": each process keeps its own part (its own threads and start
  time; the Chrome trace shows each as its own process), frame ids mapped
  to the merged frames;
- the "ranks" section: one member per profile (pid, host, rank..., and its
  totals per column) and, per line and per stack, each column's sum over the
  members, its maximum and the member that holds it: the imbalance view
  (`lprof view --ranks`). Lines also get `cpu_s` (their cpu_*_s columns
  summed) and, from lprof -l, `line_time_s` and `line_hits`; where the GPU
  timelines hold collective kernels (NCCL, oneCCL), "collectives": per line
  and rank, comm time, the wait for peers and the transfer
  (model/collectives.py).
"""

from . import stacks as stacks_model
from . import timeline as timeline_model
from .validate import WAITS_COUNTS

_MEMBER_KEYS = (
    "pid",
    "ppid",
    "hostname",
    "rank",
    "local_rank",
    "world_size",
    "launcher",
    "duration_s",
    "exit_code",
)
_SAMPLING_SUMS = (
    "samples",
    "signals",
    "dropped",
    "in_profiler",
    "drains_behind",
    "truncated",
    "stack_overflows",
    "native_mismatch",
    "threads_unsampled",
    "cpu_total_s",
    "wall_total_s",
    "process_cpu_s",
    "lprof_cpu_s",
    "wait_total_s",
)
# the task view's parts of the sampling section (Merger._add_tasks)
_TASK_KEYS = ("tasks", "task_rows", "task_rows_refused")
# the sampling section's "waits"
_WAITS_SUMS = WAITS_COUNTS
# the sampling section's "threads_without_python": CPU of threads that run no Python
_OTHERS_SUMS = ("cpu_s", "charged_s", "uncharged_s")
# exact line timing (lprof -l) joins the imbalance view under these names
LINE_TIME, LINE_HITS = "line_time_s", "line_hits"
# the CPU columns of a line (stacks_model.CPU_COLUMNS) summed
CPU_TOTAL = "cpu_s"


class MergeError(ValueError):
    """Profiles that cannot be merged into one (e.g. CPU and wall sampling)."""


def member_of(prof, source=None):
    meta = prof.get("meta") or {}
    out = {k: meta[k] for k in _MEMBER_KEYS if meta.get(k) is not None}
    if source is not None:
        out["file"] = str(source)
    return out


def _fold(acc, key, values, member):
    """acc[key][column] = [sum, max, member holding the max]."""
    slot = acc.get(key)
    if slot is None:
        slot = acc[key] = {}
    for name, v in values.items():
        cell = slot.get(name)
        if cell is None:
            slot[name] = [v, v, member]
        else:
            cell[0] += v
            if v > cell[1]:
                cell[1], cell[2] = v, member


class Merger:
    """merger.add(profile, source) for each profile, then merger.result()."""

    def __init__(self):
        self.count = 0
        self.members = []
        self._meta = None
        self._modes = []
        self._stacks = {"frames": [], "columns": [], "stacks": []}
        self._functions = {}
        self._waits = {}  # (file, name, first line) -> {line: seconds suspended}
        self._waits_evicted = 0
        self._sampling = None
        self._memory = None
        self._gpu = None
        self._lines = {}
        self._stack_acc = {}
        self._thread_ids = {}  # thread name -> the thread id the merge uses for it
        self._timeline = []  # each process's timeline part
        self._gpu_timeline = []  # each process's GPU timeline part
        self._gpu_timeline_members = []  # the member each part came from
        self._gpu_idle = {}  # (file, name, first line) -> {line: GPU idle seconds}
        self._gpu_idle_lines = {}  # (file, line, function) -> [idle s, sampled s] (sampled runs)
        self._tasks = []  # the task view's records: each root coroutine's first, every task's own
        self._task_rows = []  # sampling.task_rows, frames, threads and task ids mapped
        self._task_rows_refused = 0
        self._task_offset = 0  # task ids of the profiles merged so far are below it

    def add(self, prof, source=None):
        meta = prof.get("meta") or {}
        samp = prof.get("sampling")
        if samp and self._sampling and samp.get("mode") != self._sampling.get("mode"):
            raise MergeError(
                f"{source or 'a profile'}: {samp.get('mode')} sampling cannot be "
                f"merged with {self._sampling.get('mode')} sampling"
            )
        member = self.count
        self.count += 1
        self.members.append(member_of(prof, source))
        if self._meta is None:
            self._meta = dict(meta)
        else:
            self._meta["duration_s"] = max(self._meta.get("duration_s") or 0, meta.get("duration_s") or 0)
        for m in meta.get("modes", []):
            if m not in self._modes:
                self._modes.append(m)
        st = prof.get("stacks")
        if st:
            self._fold_stacks(st, member)
            stacks_model.merge(self._stacks, self._by_thread_name(st, samp))
            self._add_timeline(prof.get("timeline"), st, meta)
            self._add_gpu_timeline(prof.get("gpu_timeline"), st, meta, member)
        self._add_functions(prof.get("functions") or [], member)
        self._waits_evicted += prof.get("waits_evicted", 0)
        if samp:
            self._add_sampling(samp)
            self._add_tasks(samp, st)
        if prof.get("memory"):
            self._add_memory(prof["memory"], meta)
        if prof.get("gpu"):
            self._add_gpu(prof["gpu"], member)

    def _by_thread_name(self, st, samp):
        """The section with each row's thread id replaced by the id the merge
        first saw for that thread's name: the main threads of all processes
        are one "MainThread" (a thread id means nothing across processes,
        and keeping them all would grow the merge with the number of ranks)."""
        names = (samp or {}).get("threads") or {}
        if not names:
            return st
        rows = [[ids, self._merged_thread(names, th), m] for ids, th, m in st.get("stacks", [])]
        return dict(st, stacks=rows)

    def _merged_thread(self, names, th):
        """The thread id the merge uses for thread th of a profile whose
        threads are named `names`: the first id seen for its name."""
        name = names.get(str(th))
        return th if name is None else self._thread_ids.setdefault(name, th)

    def _frame_remap(self, st):
        """The merged frame id of each of st's frames (stacks_model.merge
        has added every frame of st)."""
        index = {tuple(f): i for i, f in enumerate(self._stacks["frames"])}
        return [index[tuple(f)] for f in st.get("frames", [])]

    # -- sections ------------------------------------------------------
    def _add_timeline(self, tl, st, meta):
        """Each part kept apart, its frame ids mapped to the merged frames
        (stacks_model.merge has added every frame of st)."""
        if not tl:
            return
        remap = self._frame_remap(st)
        for part in tl.get("parts", []):
            part = timeline_model.remap_frames(part, remap)
            if part.get("pid") is None and meta.get("pid") is not None:
                part["pid"] = meta["pid"]
            self._timeline.append(part)

    def _add_gpu_timeline(self, tl, st, meta, member=None):
        """As the sample timeline: each part kept apart, frames remapped."""
        if not tl:
            return
        from . import gpu_timeline

        remap = self._frame_remap(st)
        for part in tl.get("parts", []):
            part = gpu_timeline.remap_frames(part, remap)
            if part.get("pid") is None and meta.get("pid") is not None:
                part["pid"] = meta["pid"]
            self._gpu_timeline.append(part)
            self._gpu_timeline_members.append(member)

    def _add_functions(self, functions, member):
        per_line = {}
        for fn in functions:
            key = (fn["file"], fn["name"], fn["first_line"])
            entry = self._functions.get(key)
            if entry is None:
                entry = self._functions[key] = [0.0, {}]
            entry[0] += fn.get("total_s", 0.0)
            for ln, w in fn.get("wait", []):
                waits = self._waits.setdefault(key, {})
                waits[ln] = waits.get(ln, 0.0) + w
            for ln, w in fn.get("gpu_idle", []):
                idle = self._gpu_idle.setdefault(key, {})
                idle[ln] = idle.get(ln, 0.0) + w
            for ln, hits, t in fn["lines"]:
                row = entry[1].setdefault(ln, [0, 0.0])
                row[0] += hits
                row[1] += t
                cell = per_line.setdefault((fn["file"], ln, fn["name"]), {LINE_TIME: 0.0, LINE_HITS: 0})
                cell[LINE_TIME] += t
                cell[LINE_HITS] += hits
        totals = self.members[member].setdefault("totals", {})
        for key, values in per_line.items():
            _fold(self._lines, key, values, member)
            for name, v in values.items():
                totals[name] = totals.get(name, 0) + v

    def _add_sampling(self, samp):
        if self._sampling is None:
            self._sampling = {k: v for k, v in samp.items() if k not in ("lines", "threads") + _TASK_KEYS}
            for sub in ("waits", "threads_without_python"):
                if sub in samp:
                    self._sampling[sub] = dict(samp[sub])
            return
        into = self._sampling
        for k in _SAMPLING_SUMS:
            if k in samp:
                into[k] = into.get(k, 0) + samp[k]
        for sub, keys in (("waits", _WAITS_SUMS), ("threads_without_python", _OTHERS_SUMS)):
            if sub in samp:
                acc = into.setdefault(sub, {})
                for k in keys:
                    acc[k] = acc.get(k, 0) + samp[sub].get(k, 0)
        into["duration_s"] = max(into.get("duration_s", 0.0), samp.get("duration_s", 0.0))

    def _add_tasks(self, samp, st):
        """The task view's tables: each root coroutine's first record, and
        every task told apart (3.14+) with its id moved past the ids of the
        profiles before (a task id means nothing across processes), its
        split rows' frames and threads mapped as the stacks' were."""
        offset = self._task_offset
        have = {tuple(t["root"]) for t in self._tasks if "id" not in t}
        top = 0
        for t in samp.get("tasks") or []:
            if "id" not in t:
                if tuple(t["root"]) not in have:
                    have.add(tuple(t["root"]))
                    self._tasks.append(t)
                continue
            t = dict(t, id=t["id"] + offset)
            top = max(top, t["id"])
            parent = t.get("parent")
            if parent is not None and "id" in parent:
                t["parent"] = dict(parent, id=parent["id"] + offset)
            self._tasks.append(t)
        self._task_offset = max(offset, top)
        rows = samp.get("task_rows") or []
        if rows and st:
            remap = self._frame_remap(st)
            names = samp.get("threads") or {}
            for ids, th, task, values in rows:
                th = self._merged_thread(names, th)
                self._task_rows.append([[remap[i] for i in ids], th, task + offset, dict(values)])
        self._task_rows_refused += samp.get("task_rows_refused", 0)

    def _add_memory(self, mem, meta):
        peak = mem.get("peak_bytes", 0)
        if self._memory is None:
            self._memory = {
                "sample_bytes": mem.get("sample_bytes", 0),
                "native_covered": bool(mem.get("native_covered")),
                "peak_bytes": peak,
                "peak_time_s": mem.get("peak_time_s", 0.0),
                "peak_bytes_sum": 0,
                "live_bytes": 0,
                "timeline": mem.get("timeline", []),
                "stats": {},
                "duration_s": meta.get("duration_s", 0.0),
            }
        into = self._memory
        into["native_covered"] = into["native_covered"] and bool(mem.get("native_covered"))
        if peak > into["peak_bytes"]:
            into["peak_bytes"], into["peak_time_s"] = peak, mem.get("peak_time_s", 0.0)
        into["peak_bytes_sum"] += peak
        into["live_bytes"] += mem.get("live_bytes", 0)
        into["duration_s"] = max(into["duration_s"], meta.get("duration_s", 0.0) or 0.0)

    def _add_gpu(self, gpu, member):
        """Backends: active where any process collected; notes kept with
        their process; counters add, the device memory peak is the largest."""
        if self._gpu is None:
            self._gpu = {"backends": {}, "notes": [], "stats": {}}
        into = self._gpu
        for backend, status in (gpu.get("backends") or {}).items():
            if into["backends"].get(backend) != "active":
                into["backends"][backend] = status
        pid = self.members[member].get("pid")
        into["notes"].extend(f"pid {pid}: {n}" if pid is not None else n for n in gpu.get("notes", []))
        for path, line, func, idle, total in gpu.get("idle_lines", []):
            row = self._gpu_idle_lines.setdefault((path, line, func), [0.0, 0.0])
            row[0] += idle
            row[1] += total
        for part, values in (gpu.get("stats") or {}).items():
            have = into["stats"].setdefault(part, {})
            for k, v in (values or {}).items():
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    have.setdefault(k, v)
                elif k in ("peak_bytes", "version", "active", "peak_exact", "flush_timed_out"):
                    have[k] = max(have.get(k, v), v)
                else:
                    have[k] = have.get(k, 0) + v

    def _fold_stacks(self, st, member):
        """Per line (attribution rule) and per stack (threads summed by kind)
        values of one member, folded into the imbalance accumulators."""
        totals = self.members[member].setdefault("totals", {})
        for key, values in stacks_model.lines(st).items():
            cpu = [v for name, v in values.items() if name in stacks_model.CPU_COLUMNS]
            if cpu:
                values[CPU_TOTAL] = sum(cpu)
            _fold(self._lines, key, values, member)
            for name, v in values.items():
                totals[name] = totals.get(name, 0) + v
        if "rank" not in self.members[member]:
            # per-stack imbalance is the ranks' (MPI, torchrun): a followed
            # child gets per-line imbalance only. Kept for every child, it
            # tripled the stacks in memory and file at a run's end (a test
            # suite that started one 0.1 s child: 13 MB of the 17 MB of JSON)
            return
        kinds = stacks_model.merge_kinds(st)
        frames = st.get("frames", [])
        mine = {}
        for ids, _thread, m in st.get("stacks", []):
            key = tuple(tuple(frames[i]) for i in ids)
            have = mine.setdefault(key, {})
            for name, v in m.items():
                have[name] = max(have.get(name, v), v) if kinds.get(name) == "max" else have.get(name, 0) + v
        for key, values in mine.items():
            _fold(self._stack_acc, key, values, member)

    # -- the merged profile ----------------------------------------------
    def result(self):
        if self._meta is None:
            raise MergeError("no profiles to merge")
        meta = dict(self._meta)
        meta["modes"] = list(self._modes)
        meta["processes"] = self.count
        prof = {"format": "lprof", "version": 2, "meta": meta, "functions": self._functions_section()}
        if self._waits_evicted:
            prof["waits_evicted"] = self._waits_evicted
        st = self._stacks
        if self._sampling is not None:
            from .sections import sampling_line_rows as line_rows

            threads = {str(th): name for name, th in self._thread_ids.items()}
            prof["sampling"] = dict(self._sampling, threads=threads, lines=line_rows(st))
            if self._tasks:
                prof["sampling"]["tasks"] = self._tasks
            if self._task_rows:
                prof["sampling"]["task_rows"] = self._task_rows
            if self._task_rows_refused:
                prof["sampling"]["task_rows_refused"] = self._task_rows_refused
        if self._memory is not None:
            from .sections import memory_section as build_section

            raw = dict(self._memory)
            extra = {"peak_bytes_sum": raw.pop("peak_bytes_sum")}
            prof["memory"] = dict(build_section(raw, st), **extra)
        if self._gpu is not None:
            from .sections import gpu_line_rows

            prof["gpu"] = dict(self._gpu, lines=gpu_line_rows(st))
            if self._gpu_idle_lines:
                prof["gpu"]["idle_lines"] = [
                    [p, ln, fn, i, t] for (p, ln, fn), (i, t) in self._gpu_idle_lines.items()
                ]
        if st["stacks"]:
            prof["stacks"] = st
            if self._timeline:
                prof["timeline"] = {"parts": self._timeline}
            if self._gpu_timeline:
                prof["gpu_timeline"] = {"parts": self._gpu_timeline}
        prof["ranks"] = self._ranks_section()
        return prof

    def _functions_section(self):
        out = []
        for key, (total, lines) in self._functions.items():
            path, name, first = key
            fn = {
                "file": path,
                "name": name,
                "first_line": first,
                "total_s": total,
                "lines": [[ln, h, t] for ln, (h, t) in sorted(lines.items())],
            }
            if key in self._waits:
                fn["wait"] = [[ln, w] for ln, w in sorted(self._waits[key].items())]
            if key in self._gpu_idle:
                fn["gpu_idle"] = [[ln, w] for ln, w in sorted(self._gpu_idle[key].items())]
            out.append(fn)
        out.sort(key=lambda f: (f["file"], f["first_line"], f["name"]))
        return out

    def _ranks_section(self):
        index = {tuple(f): i for i, f in enumerate(self._stacks["frames"])}
        section = {
            "members": self.members,
            "lines": [
                [path, line, func, values] for (path, line, func), values in sorted(self._lines.items())
            ],
        }
        if self._stack_acc:  # members started by a launcher (ranks) only
            section["stacks"] = [[[index[f] for f in key], values] for key, values in self._stack_acc.items()]
        if self._gpu_timeline:
            from .collectives import analyse

            coll = analyse(
                list(zip(self._gpu_timeline_members, self._gpu_timeline)),
                self.members,
                self._stacks["frames"],
            )
            if coll:
                section["collectives"] = coll
        return section


def merge_profiles(profiles):
    """One profile from an iterable of (profile, source) pairs."""
    m = Merger()
    for prof, source in profiles:
        m.add(prof, source)
    return m.result()
