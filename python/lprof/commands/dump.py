"""`lprof dump PID`: every thread's Python stack in another process now,
read from outside (process_vm_readv through lprof's C reader): nothing runs
in the process, so one sleeping, blocked in a C call or hung is read as it
is. Python 3.10-3.15 (3.10-3.12: with lprof's extension built for the
target's version; 3.13+: the target's _Py_DebugOffsets; docs/design-remote.md).
--native stops the threads (ptrace) to add their C frames (collect/remote_native.py)."""

import json
import sys

from ..collect import remote_native, remote_stacks
from ..common.errors import LprofError
from ..process import remote_target
from ..render import stack_dump
from . import parsers


def parser():
    p = parsers.parser(
        prog="lprof dump",
        allow_abbrev=False,
        description="Print every thread's Python stack in a running process, read from outside "
        "(no code runs in it: works on a process that sleeps, waits in a C call or "
        "hangs). The innermost call is printed last, as in a traceback.",
    )
    p.add_argument("pid", type=int, help="the process to read")
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {pid, python, threads: [{thread_id, native_id, name, "
        "frames: [{file, function, line}] innermost first, complete}]}",
    )
    p.add_argument(
        "--locals",
        action="store_true",
        help="each frame's bound local variables too, read from outside: None, "
        "bools, ints, floats and str excerpts by value, other objects by type "
        "(containers with their length)",
    )
    p.add_argument(
        "--native",
        action="store_true",
        help="C frames too: every thread is stopped for the read (ptrace; released at once, "
        "the process then runs on as before), its C stack unwound (libunwind-ptrace) and each "
        "call of the interpreter's eval loop replaced by the Python frames it runs; C frames "
        "without a symbol are shown as library+offset. Needs ptrace permission (root, or "
        "kernel.yama.ptrace_scope=0). With --json each thread has stack: [{kind: python "
        "(file, function, line) or native (function, offset, library, library_offset, address)}] "
        "innermost first, and merge: ok, mismatch or no native stack",
    )
    return p


def _frame_doc(frame):
    doc = {"file": frame[0], "function": frame[1], "line": frame[2]}
    if len(frame) > 3:
        doc["locals"] = dict(frame[3])
    return doc


def _native_main(args, target, layout):
    try:
        # a Ctrl-C during the C call is seen once it has released every thread
        threads, notes = remote_native.read(args.pid, target.runtime, layout, "dump", args.locals)
    except KeyboardInterrupt:
        raise LprofError(f"dump --native: interrupted (process {args.pid}'s threads were released)", 130)
    if args.json:
        doc = {
            "pid": args.pid,
            "python": "%d.%d" % target.version if target.version else None,
            "native": True,
            "threads": [{k: v for k, v in t.items() if k != "frames"} for t in threads],
            "notes": notes,
        }
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(stack_dump.format_native_dump(args.pid, target.version, threads, notes))
    if not threads:
        raise LprofError(f"dump: process {args.pid} has no Python thread (starting or exiting)", 1)
    return 0


def main(args):
    target = remote_target.find(args.pid, "dump")
    layout = remote_target.layout(target, "dump")
    if args.native:
        return _native_main(args, target, layout)
    threads = remote_stacks.read(args.pid, target.runtime, layout, "dump", args.locals)
    if args.json:
        doc = {
            "pid": args.pid,
            "python": "%d.%d" % target.version if target.version else None,
            "threads": [dict(t, frames=[_frame_doc(f) for f in t["frames"]]) for t in threads],
        }
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(stack_dump.format_dump(args.pid, target.version, threads))
    if not threads:
        raise LprofError(f"dump: process {args.pid} has no Python thread (starting or exiting)", 1)
    return 0
