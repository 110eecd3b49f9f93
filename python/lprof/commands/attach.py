"""`lprof attach PID`: profile a Python process that is already running
(Python 3.14+ in the process), and with --children the Python processes it
started, until a duration is over, Ctrl-C, or the process ends; then save and
print the profile as a run's (merged across processes with --children).

The protocol with each process is process/attach_session.py's; this module
drives the sessions: start them all, wait, stop them all, gather."""
import os
import signal
import sys
import time

from ..common import files
from ..common.errors import LprofError
from ..model import profile_file
from ..process import remote
from ..process.attach_session import SAVE_TIMEOUT_S, GaveUp, Session, gone
from .attach_args import check, parser  # noqa: F401 (cli.py calls parser())

POLL_S = 0.05


class _Stop(Exception):
    pass


def _on_term(signo, frame):
    raise _Stop()


class _LiveView:
    """--top: draws a frame whenever the process has written a newer live
    snapshot (process/attach_agent.py)."""

    def __init__(self, session, args):
        self.path = session.live_path
        self.args = args
        self.previous = None
        self.mtime = None
        self.cache = {}
        self.tty = sys.stdout.isatty()

    def tick(self):
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError:
            return
        if mtime == self.mtime:
            return
        self.mtime = mtime
        try:
            prof = profile_file.load(self.path)
        except LprofError:  # replaced while read: the next tick has it
            return
        from ..render import top
        frame = top.render(self.previous, prof, self.args.pid, limit=self.args.top_lines,
                           cache=self.cache)
        self.previous = prof
        sys.stdout.write(("\x1b[H\x1b[2J" + frame) if self.tty else frame + "\n")
        sys.stdout.flush()


def _options(args):
    return {"cli_pid": os.getpid(), "targets": args.targets,
            "mode": "lines" if args.line_by_line else "wall" if args.wall else "cpu",
            "rate_hz": args.rate, "native": args.native, "memory": args.memory,
            "memory_sample_bytes": args.memory_sample_bytes,
            "live_s": args.interval if args.top else None}


def descendants(pid):
    """Every process below `pid` (children, theirs, ...), from /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            out.append(child)
            todo.append(child)
    return out


def _pythons_below(pid):
    """The descendants that run a Python executable (a shell or a compiler
    in between is no Python to attach to)."""
    out = []
    for child in descendants(pid):
        try:
            exe = os.path.basename(os.readlink(f"/proc/{child}/exe"))
        except OSError:
            continue
        if exe.startswith("python"):
            out.append(child)
    return out


def _left_out(exc):
    """A child process that could not be profiled: said, then left out."""
    sys.stderr.write(f"lprof: {exc.message}; left out\n")


def _start(sessions, args):
    """Asks every process and waits until each has started; returns the
    sessions that did, with their first status. The first process's
    failure ends the command; a child's only leaves it out."""
    first = sessions[0]
    asked = []
    for s in sessions:
        try:
            s.request()
            asked.append(s)
        except LprofError as exc:
            if s is first:
                raise
            _left_out(exc)
    deadline = time.monotonic() + args.start_timeout
    started, _waiting = _poll_all(asked, first,
                                  lambda s: s.poll_start(deadline, args.start_timeout))
    return started


def _poll_all(sessions, first, poll, until=None):
    """Polls each session until it answers (poll(s) -> status, None while
    waiting, LprofError when it cannot) or `until` (monotonic) passes;
    returns ([(session, status)] of those that answered without error, the
    sessions still waiting). `first`'s failure raises; another's is said
    and left out."""
    waiting, answered = list(sessions), []
    while waiting and (until is None or time.monotonic() < until):
        for s in list(waiting):
            try:
                st = poll(s)
            except LprofError as exc:
                if s is first:
                    raise
                _left_out(exc)
                waiting.remove(s)
                continue
            if st is None:
                continue
            waiting.remove(s)
            if st["state"] != "error":
                answered.append((s, st))
            elif s is first:
                raise LprofError(f"attach: {st['message']}", 1)
            else:
                _left_out(LprofError(f"attach: process {s.pid}: {st['message']}"))
        if waiting:
            time.sleep(POLL_S)
    return answered, waiting


def _announce(args, started):
    st = started[0][1]
    what = ("wall" if args.wall else "CPU") + " time"
    if args.line_by_line:
        what = f"the lines of {st['functions']} function(s)"
    until = f"for {args.duration:g} s" if args.duration else "until Ctrl-C"
    also = ""
    if args.memory:
        also = (" and allocations" if st.get("native_memory") else
                " and Python objects' allocations (native ones are not covered: the "
                "allocator shim is preloaded only at a run's start)")
    verb = "timing" if args.line_by_line else "sampling"
    more = f" and {len(started) - 1} child process(es)" if len(started) > 1 else ""
    sys.stderr.write(f"lprof: attached to process {args.pid}{more} (Python {st['python']}): "
                     f"{verb} {what}{also} {until}\n")


def _record(sessions, args):
    """Waits for the end of the recording (the duration, Ctrl-C, SIGTERM, or
    every process over), stops every process; returns [(session, final
    status)] of those that saved."""
    end = time.monotonic() + args.duration if args.duration else None
    view = _LiveView(sessions[0], args) if args.top else None
    old_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        while end is None or time.monotonic() < end:
            if all(s.ended() is not None or gone(s.pid) for s in sessions):
                break  # every program ended (or exec'd): the agents saved
            if view is not None:
                view.tick()
            time.sleep(POLL_S)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
    # from here on Ctrl-C stops the command; the agents then just stop
    for s in sessions:
        s.ask_stop()
    done, waiting = _poll_all(sessions, sessions[0], lambda s: s.poll_end(),
                              until=time.monotonic() + SAVE_TIMEOUT_S)
    if any(s is sessions[0] for s in waiting):
        raise LprofError(f"attach: process {args.pid} did not save its profile within "
                         f"{SAVE_TIMEOUT_S} s", 1)
    for s in waiting:
        _left_out(LprofError(f"attach: process {s.pid} did not save its profile within "
                             f"{SAVE_TIMEOUT_S} s"))
    return done


def _gather(done, args):
    """The profile to save and print: the one process's, or all merged."""
    loaded = []
    for s, st in done:
        with open(st["file"], "rb") as fh:
            data = fh.read()
        loaded.append((s, st, data, profile_file.decode(data, name=st["file"])))
    if len(loaded) == 1:
        _s, _st, data, prof = loaded[0]
        files.save_bytes(data, args.outfile)
        return prof
    from ..model.merge import merge_profiles
    ended_by = loaded[0][3]["meta"].get("attached")
    prof = merge_profiles((p, f"process {s.pid}") for s, _st, _d, p in loaded)
    prof["meta"]["attached"] = dict(ended_by or {}, processes=len(loaded))
    profile_file.save(prof, args.outfile)
    return prof


def main(args):
    check(args)
    remote.executable_of(args.pid)  # no such process: said before anything is made
    pids = [args.pid] + (_pythons_below(args.pid) if args.children else [])
    sessions = []
    try:
        for pid in pids:
            sessions.append(Session(pid, _options(args)))
        try:
            started = _start(sessions, args)
        except KeyboardInterrupt:
            for s in sessions:
                s.give_up_start()
            raise LprofError("attach: interrupted before sampling started", 130) from None
        except GaveUp:
            for s in sessions[1:]:
                s.give_up_start()
            raise
        if not args.quiet:
            _announce(args, started)
        try:
            done = _record([s for s, _st in started], args)
        except KeyboardInterrupt:  # a second Ctrl-C while the profiles are saved
            raise LprofError("attach: interrupted; no profile saved (the process goes on, "
                             "unprofiled)", 130) from None
        prof = _gather(done, args)
    finally:
        for s in sessions:
            s.close()
    return _show(prof, args)


def _show(prof, args):
    if args.html:
        from .. import export as exports
        exports.write(prof, "html", args.html, fold_imports=True)
    if not args.quiet and "lines" in prof["meta"]["modes"]:
        from ..render.listing import render_lines
        sys.stdout.write(render_lines(prof, skip_zero=args.skip_zero))
    elif not args.quiet:
        from ..render.sampled_listing import render
        sys.stdout.write(render(prof, reduced=args.reduced,
                                profile_only=args.profile_only or None,
                                profile_all=args.profile_all, threshold_pct=args.threshold,
                                per_thread=args.per_thread))
    if not args.quiet:
        attached = prof["meta"].get("attached") or {}
        more = attached.get("processes", 1) - 1
        who = f"process {args.pid}" + (f" and {more} child process(es), merged" if more else "")
        sys.stderr.write(f"lprof: profile of {who} ({attached.get('ended_by')}) written to "
                         f"{args.outfile}\n")
    return 0
