"""Collectives across ranks: per launching line and rank, the device time of
collective kernels (NCCL, oneCCL: the one rule is src/aggregate/gpu_names.c,
asked through _lprof.gpu_is_comm), split into the wait for peers and the
transfer, from each rank's GPU timeline (model/gpu_timeline.py).

Matching: on each rank (each process: a member holding several, as a rank
that forked workers, has each matched on its own and summed into the
member) the collective kernels are taken in device start order, per kernel
name; the k-th collective of a name on one rank is the k-th of that name on
every other rank that ran the name (NCCL and oneCCL
run a communicator's collectives in the same order on all its ranks).
Stream and command-list ids are not compared: they are per process. For
one matched collective, S is the last rank's start; on each rank
  wait = S - its own start (at least 0, at most its duration),
  transfer = its end - max(S, its start) (at least 0),
so wait + transfer is the kernel's time where its end comes after S. A
rank whose kernel ended before S (clocks not aligned, or mismatched
collectives: two communicators whose kernels share a name) is counted as
`inconsistent`. Collectives a rank ran more often than a peer are left
unmatched (counted), their time still comm.

Clocks: each part's device times are on its process's CLOCK_MONOTONIC
(origin_ns + start_ns; older files: start_s, the unix time of t = 0, to
the microsecond or so). CLOCK_MONOTONIC is one clock on one host only:
where the ranks ran on more than one host (meta hostname), or a backend
could not align its device clock, the wait is not computed (said why),
never a wrong number; per-line comm time stays.

Section (the "collectives" key of the "ranks" section):
  {"comparable": bool, "why": text where not, "hosts": [names],
   "matched": collectives matched across ranks, "unmatched": kernels left
   over, "inconsistent": matched kernels that ended before the last start,
   "lines": [[file, line, function, [[member, comm_s, wait_s, transfer_s,
              count], ...]], ...]}   (wait_s / transfer_s None where not
   comparable; count: collective kernels the line launched on that rank)
"""

from .frames import Frame, table as frame_table
from . import stacks as stacks_model


def _abs_ns(part):
    """A part's t = 0 on its host's CLOCK_MONOTONIC (ns), and whether exact."""
    if part.get("origin_ns") is not None:
        return int(part["origin_ns"]), True
    return int(round(part.get("start_s", 0.0) * 1e9)), False


def _not_aligned(part):
    return [
        b
        for b, how in (part.get("clock") or {}).items()
        if "not aligned" in str(how) or str(how).startswith("none")
    ]


def analyse(parts, members, frames, is_comm=None):
    """The section from [(member index, gpu_timeline part)] of a merge, its
    members and merged frames; None where no collective kernel ran."""
    if is_comm is None:
        from .. import _lprof

        is_comm = _lprof.gpu_is_comm
    from .gpu_timeline import records

    ftable = frame_table(frames)
    comm_cache = {}
    line_cache = {}
    seqs = {}  # (member, pid) -> {name: [(start, end, line key)]}
    base_exact = True
    hosts, unaligned = [], []
    for member, part in parts:
        base, exact = _abs_ns(part)
        base_exact = base_exact and exact
        for b in _not_aligned(part):
            if b not in unaligned:
                unaligned.append(b)
        # a member may hold several processes (a rank that forked workers,
        # a merged file merged again): each process is a participant
        mine = seqs.setdefault((member, part.get("pid")), {})
        for r in records(part):
            if r["op"] != 0:
                continue
            name = r["name"]
            c = comm_cache.get(name)
            if c is None:
                c = comm_cache[name] = bool(is_comm(name))
            if not c or r["stack"] is None:
                continue
            key = tuple(r["stack"])
            where = line_cache.get(key)
            if where is None:
                f = stacks_model.charge(ftable, list(key)) or Frame.of(frames[key[-1]])
                where = line_cache[key] = (f.file, f.line, f.function)
            start = base + r["start_ns"]
            mine.setdefault(name, []).append((start, start + r["dur_ns"], where))
    seqs = {m: v for m, v in seqs.items() if v}
    if not seqs:
        return None
    for m, _pid in seqs:
        host = (members[m] if 0 <= m < len(members) else {}).get("hostname")
        if host is not None and host not in hosts:
            hosts.append(host)
    why = None
    if len(hosts) > 1:
        why = (
            f"the ranks ran on {len(hosts)} hosts ({', '.join(map(str, hosts))}): their device "
            f"times are on each host's own clock, not comparable, so the wait for peers is not "
            f"computed"
        )
    elif unaligned:
        why = (
            f"{', '.join(unaligned)}: device times not aligned to the host's clock, so the wait "
            f"for peers is not computed"
        )
    comparable = why is None
    # (line key, member) -> [comm ns, wait ns, transfer ns, count]
    acc = {}
    for (m, _pid), by_name in seqs.items():
        for name, seq in by_name.items():
            seq.sort()
            for start, end, where in seq:
                cell = acc.setdefault((where, m), [0, 0, 0, 0])
                cell[0] += end - start
                cell[3] += 1
    matched = unmatched = inconsistent = 0
    if comparable:
        names = {n for by_name in seqs.values() for n in by_name}
        for name in sorted(names):
            ranks = [p for p in sorted(seqs, key=lambda k: (k[0], k[1] or 0)) if name in seqs[p]]
            n = min(len(seqs[p][name]) for p in ranks)
            unmatched += sum(len(seqs[p][name]) - n for p in ranks)
            if len(ranks) < 2:
                unmatched += n
                continue
            for k in range(n):
                last = max(seqs[p][name][k][0] for p in ranks)
                matched += 1
                for p in ranks:
                    start, end, where = seqs[p][name][k]
                    if end < last:
                        inconsistent += 1
                    cell = acc[(where, p[0])]
                    cell[1] += min(max(0, last - start), end - start)
                    cell[2] += max(0, end - max(last, start))
    lines = {}
    for (where, m), (comm, wait, transfer, count) in acc.items():
        lines.setdefault(where, []).append(
            [m, comm / 1e9, wait / 1e9 if comparable else None, transfer / 1e9 if comparable else None, count]
        )
    out = {
        "comparable": comparable,
        "hosts": hosts,
        "matched": matched,
        "unmatched": unmatched,
        "inconsistent": inconsistent,
        "lines": [[path, line, func, sorted(cells)] for (path, line, func), cells in sorted(lines.items())],
    }
    if why:
        out["why"] = why
    if comparable and not base_exact:
        out["clock_note"] = (
            "a profile without the timeline's origin_ns: its times placed through "
            "its unix start time (to about a microsecond)"
        )
    return out
