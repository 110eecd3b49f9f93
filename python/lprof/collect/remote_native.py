"""`lprof dump --native`: every thread of another process stopped (ptrace),
its C stack unwound (libunwind-ptrace) and its Python stack read while it
is stopped, then released (src/collect/remote/remote_native.c); here the two
are put together per thread: the C frames in order, each call of the eval
loop replaced by the Python frames it runs (src/collect/remote/native_merge.c)."""

import bisect
import os

from ..common.errors import LprofError
from . import remote_stacks


# From 3.14 the eval calls among the C frames are found by the entry frame
# each keeps on its stack, not by name: GCC builds (Debian's 3.14, 3.15)
# put most of the eval loop in a cold part that no symbol names
# (docs/design-remote.md); 3.10-3.13 keep the name rule they were verified with.
_EVAL_BY_STACK = 0x030E0000


def _message(nstatus, pid, verb):
    from .. import _lprof as c

    if nstatus == c.REMOTE_NATIVE_NOPERM:
        return (
            f"{verb} --native: not permitted to ptrace process {pid} (EPERM): run lprof as root, "
            f"or as its user with /proc/sys/kernel/yama/ptrace_scope at 0 "
            f"(sysctl kernel.yama.ptrace_scope=0), and no other tracer (a debugger) attached"
        ), 1
    if nstatus == c.REMOTE_NATIVE_UNAVAILABLE:
        return (
            f"{verb} --native: this lprof was built without libunwind-ptrace (install libunwind-dev "
            f"and rebuild lprof)"
        ), 2
    if nstatus == c.REMOTE_NATIVE_NOLIB:
        return (
            f"{verb} --native: libunwind-ptrace's libraries do not load here (libunwind-ptrace.so.0, "
            f"libunwind-x86_64.so.8: install libunwind8 / libunwind-dev)"
        ), 2
    return f"{verb}: no process {pid}", 2


class _Maps:
    """/proc/PID/maps' file mappings: an address to (basename, offset in the file)."""

    def __init__(self, pid):
        self.starts, self.rows = [], []
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) < 6 or not parts[5].strip().startswith("/"):
                        continue
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    self.rows.append((lo, hi, int(parts[2], 16), os.path.basename(parts[5].strip())))
        except OSError:
            pass
        self.rows.sort()
        self.starts = [r[0] for r in self.rows]

    def find(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and addr < self.rows[i][1]:
            lo, _hi, off, name = self.rows[i]
            return name, addr - lo + off
        return None, None


def _native_doc(frame, maps):
    ip, name, offset = frame[:3]
    lib, lib_offset = maps.find(ip)
    return {
        "kind": "native",
        "function": name,
        "offset": offset if name else None,
        "library": lib,
        "library_offset": lib_offset,
        "address": ip,
    }


def _python_doc(frame):
    doc = {"kind": "python", "file": frame[0], "function": frame[1], "line": frame[2]}
    if len(frame) > 3:
        doc["locals"] = dict(frame[3])
    return doc


def read(pid, runtime, layout, verb="dump", with_locals=False):
    """Every Python thread's merged stack: remote_stacks.read's dicts, each
    with "stack" (innermost first: {"kind": "python", file, function, line}
    or {"kind": "native", function, offset, library, library_offset,
    address}) and "merge" ("ok", "mismatch": the C frames leafward of the
    first eval call then every Python frame, "no native stack": the thread
    exited or did not unwind); and a list of notes (threads skipped).
    LprofError (one line) when the process cannot be stopped or read."""
    from .. import _lprof as c

    status, nstatus, version, threads, natives, left_out = c.remote_dump_native(
        pid, runtime, layout, with_locals
    )
    if nstatus != c.REMOTE_NATIVE_OK:
        raise LprofError(*_message(nstatus, pid, verb))
    if status != c.REMOTE_OK:
        msg, code = remote_stacks._message(status, pid, version, verb)
        raise LprofError(msg, code)
    maps = _Maps(pid)
    by_tid = {n[0]: n for n in natives}
    by_tls = {n[2]: n for n in natives if n[2]}
    notes = []
    if left_out:
        notes.append(f"{left_out} threads past lprof's limit were not stopped or shown")
    gone = [n[0] for n in natives if n[1] == c.REMOTE_NATIVE_GONE]
    if gone:
        notes.append(
            "thread%s %s exited during the dump: skipped"
            % ("s" if len(gone) > 1 else "", ", ".join(map(str, gone)))
        )
    out, matched = [], set()
    for tid, ntid, frames, st, entries in threads:
        # 3.11+ gives the OS thread id; 3.10 only pthread_self(), glibc's thread pointer (fs_base)
        nat = by_tid.get(ntid) if ntid else by_tls.get(tid)
        t = {
            "thread_id": tid,
            "native_id": ntid or (nat[0] if nat else 0),
            "name": None,
            "frames": [tuple(f) for f in frames],
            "complete": st == c.REMOTE_OK,
        }
        t["name"] = remote_stacks.thread_name(pid, t["native_id"])
        if nat is None or nat[1] != c.REMOTE_NATIVE_OK:
            t["merge"] = "no native stack"
            t["stack"] = [_python_doc(f) for f in frames]
        else:
            matched.add(nat[0])
            nframes = nat[4]
            items, mismatch = c.native_merge(
                list(nframes), bool(nat[3]), list(entries), len(frames), version >= _EVAL_BY_STACK
            )
            t["merge"] = "mismatch" if mismatch else "ok"
            t["stack"] = [
                _python_doc(frames[i]) if kind == 1 else _native_doc(nframes[i], maps) for kind, i in items
            ]
        out.append(t)
    nostop = [n[0] for n in natives if n[1] == c.REMOTE_NATIVE_NOSTOP]
    if nostop:
        notes.append(
            "thread%s %s did not stop (uninterruptible sleep): no C stack"
            % ("s" if len(nostop) > 1 else "", ", ".join(map(str, nostop)))
        )
    other = [n[0] for n in natives if n[1] == c.REMOTE_NATIVE_OK and n[0] not in matched]
    if other:
        notes.append(
            "%d thread%s without a Python thread state not shown (%s)"
            % (len(other), "s" if len(other) > 1 else "", ", ".join(map(str, other[:16])))
        )
    return out, notes
