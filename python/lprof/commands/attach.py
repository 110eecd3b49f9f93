"""`lprof attach PID`: profile a Python process that is already running
(Python 3.14+ in the process), and with --children the Python processes
below it, those there at the start and those started while attached, until
a duration is over, Ctrl-C, or the process ends; then save and print the
profile as a run's (merged across processes with --children).

The protocol with each process is process/attach_session.py's; this module
drives the sessions: start PID's, let children join as they answer, wait,
stop them all, gather."""

import os
import re
import signal
import sys
import time

from ..common import files
from ..common.errors import LprofError
from ..model import profile_file
from ..process import remote
from ..process.attach_session import SAVE_TIMEOUT_S, GaveUp, Session
from ..process.attach_agent import FORKED_PREFIX
from ..process.procfs import gone, pythons_below
from .attach_args import check, parser  # noqa: F401 (cli.py calls parser())

POLL_S = 0.05
FOLLOW_S = 0.25  # --children: how often the processes below PID are listed
WAIT_NOTE_S = 2.0  # a start that takes longer is said
SETTLE_S = 5.0  # --children: how long the start waits for those there at the start


class _Stop(Exception):
    pass


def _on_term(signo, frame):
    raise _Stop()


class _LiveView:
    """--top: draws a frame when the processes have written newer live
    snapshots (process/attach_agent.py): at once when every one has, else
    once most of an interval has passed since the last frame (processes
    write on their own clocks; one that ended writes no more)."""

    def __init__(self, sessions, args):
        self.sessions = sessions  # grows as children join
        self.args = args
        self.mtimes = {}
        self.latest = {}  # path -> the newest snapshot read
        self.shown = {}  # path -> the snapshot the last frame used
        self.changed = set()
        self.drawn_at = time.monotonic()
        self.cache = {}
        self.tty = sys.stdout.isatty()

    def _read_new(self, paths):
        for path in paths:
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue
            if mtime == self.mtimes.get(path):
                continue
            try:
                self.latest[path] = profile_file.load(path)
            except LprofError:  # replaced while read: the next tick has it
                continue
            self.mtimes[path] = mtime
            self.changed.add(path)

    def tick(self):
        paths = [s.live_path for s in self.sessions]
        self._read_new(paths)
        if not self.changed:
            return
        waited = time.monotonic() - self.drawn_at
        if len(self.changed) < len(paths) and waited < 0.8 * self.args.interval:
            return
        from ..render import top

        order = [p for p in paths if p in self.latest]
        frame = top.render(
            [self.shown[p] for p in order if p in self.shown],
            [self.latest[p] for p in order],
            self.args.pid,
            limit=self.args.top_lines,
            cache=self.cache,
        )
        self.shown = dict(self.latest)
        self.changed.clear()
        self.drawn_at = time.monotonic()
        sys.stdout.write(("\x1b[H\x1b[2J" + frame) if self.tty else frame + "\n")
        sys.stdout.flush()


def _options(args):
    return {
        "cli_pid": os.getpid(),
        "targets": args.targets,
        "mode": "lines" if args.line_by_line else "wall" if args.wall else "cpu",
        "rate_hz": args.rate,
        "native": args.native,
        "memory": args.memory,
        "memory_sample_bytes": args.memory_sample_bytes,
        "children": args.children,
        "live_s": args.interval if args.top else None,
    }


_left = {}  # a reason to leave a child out (its pid blanked) -> [first pid, how many more]


def _left_out(exc):
    """A child process that could not be profiled: said, then left out. A
    reason said once is not repeated (a pool can start dozens of workers):
    left_out_summary() counts the others."""
    pid = re.search(r"process (\d+)", exc.message)
    key = re.sub(r"process \d+", "process N", exc.message)
    if key in _left:
        _left[key][1] += 1
        return
    _left[key] = [pid.group(1) if pid else "?", 0]
    sys.stderr.write(f"lprof: {exc.message}; left out\n")


def _left_out_summary():
    for first, more in _left.values():
        if more:
            sys.stderr.write(f"lprof: {more} more child process(es) left out as process {first} was\n")


def _start(session, args):
    """Asks PID's process and waits until it has started; returns its first
    status. Its failure ends the command. A wait past WAIT_NOTE_S is said
    (a main thread blocked in one long call runs the script only after it)."""
    session.request()
    t0 = time.monotonic()
    deadline = t0 + args.start_timeout
    said = []

    def poll(s):
        st = s.poll_start(deadline, args.start_timeout)
        if st is None and not said and not args.quiet and time.monotonic() - t0 > WAIT_NOTE_S:
            said.append(True)
            sys.stderr.write(
                f"lprof: waiting for process {args.pid}'s main thread to run Python "
                f"code (blocked in a long call?); up to {args.start_timeout:g} s "
                f"(--start-timeout)\n"
            )
        return st

    started, _waiting = _poll_all([session], session, poll)
    return started[0][1]


class _Children:
    """--children: the Python processes below PID join the recording as they
    answer, those there at the start and those started later (a pool's new
    worker, a server's replacement), each seen in two listings in a row (a
    process just started may not answer remote_exec yet). One that cannot
    be profiled is named in one line and left out; one that ended before it
    started had nothing to profile and is left out without a word."""

    def __init__(self, args, sessions, recording):
        self.args = args
        self.sessions = sessions  # every Session made, closed by main()
        self.recording = recording  # the sessions sampling now: joined here
        self.seen = {args.pid}
        self.candidates = set(pythons_below(args.pid))  # there at the start: no wait
        self.joining = []  # [(session, deadline)]
        self.next_look = 0.0

    def _adopt_forked(self):
        """Children forked by a recording process started their own recording
        in a folder inside its folder (process/attach_agent.py): join them."""
        for parent in list(self.recording) + [s for s, _d in self.joining]:
            try:
                names = os.listdir(parent.control)
            except OSError:
                continue
            for name in names:
                pid = name[len(FORKED_PREFIX) :]
                if not (name.startswith(FORKED_PREFIX) and pid.isdigit()) or int(pid) in self.seen:
                    continue
                self.seen.add(int(pid))
                s = Session.adopt(int(pid), os.path.join(parent.control, name))
                self.sessions.append(s)
                self.joining.append((s, time.monotonic() + self.args.start_timeout))

    def tick(self):
        now = time.monotonic()
        self._adopt_forked()
        if now >= self.next_look:
            self.next_look = now + FOLLOW_S
            below = set(pythons_below(self.args.pid)) - self.seen
            for pid in sorted(below & self.candidates):
                self.seen.add(pid)
                self._ask(pid)
            self.candidates = below
        for entry in list(self.joining):
            s, deadline = entry
            try:
                st = s.poll_start(deadline, self.args.start_timeout)
            except LprofError as exc:
                self.joining.remove(entry)
                if not gone(s.pid):
                    _left_out(exc)
                continue
            if st is None:
                continue
            self.joining.remove(entry)
            if st["state"] != "error":
                self.recording.append(s)
            elif not gone(s.pid):
                _left_out(LprofError(f"attach: process {s.pid}: {st['message']}"))

    def _ask(self, pid):
        try:
            s = Session(pid, _options(self.args))
        except OSError:
            return
        self.sessions.append(s)
        try:
            s.request()
        except LprofError as exc:
            if not gone(pid):
                _left_out(exc)
            return
        self.joining.append((s, time.monotonic() + self.args.start_timeout))

    def settle(self, grace_s):
        """At the start: waits until the processes there at the start have
        joined or been left out (at most grace_s: a blocked one joins later),
        so that a short recording covers them from its start."""
        until = time.monotonic() + grace_s
        self.tick()
        while self.joining and time.monotonic() < until:
            time.sleep(POLL_S)
            self.tick()

    def give_up(self):
        """The recording is over: those still joining will do nothing."""
        for s, _deadline in self.joining:
            s.give_up_start()
        self.joining = []


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


def _announce(args, st, children):
    what = ("wall" if args.wall else "CPU") + " time"
    if args.line_by_line:
        what = f"the lines of {st.get('functions', '?')} function(s)"
    until = f"for {args.duration:g} s" if args.duration else "until Ctrl-C"
    also = ""
    if args.memory:
        also = (
            " and allocations"
            if st.get("native_memory")
            else " and Python objects' allocations (native ones are not covered: the "
            "allocator shim is preloaded only at a run's start)"
        )
    verb = "timing" if args.line_by_line else "sampling"
    more = f" and {children} child process(es)" if args.children else ""
    sys.stderr.write(
        f"lprof: attached to process {args.pid}{more} (Python {st.get('python', '?')}): "
        f"{verb} {what}{also} {until}\n"
    )


def _record(recording, children, args, stop_now=False):
    """Waits for the end of the recording (the duration, Ctrl-C, SIGTERM, or
    every process over), letting children join (--children), stops every
    process; returns [(session, final status)] of those that saved."""
    end = time.monotonic() + args.duration if args.duration else None
    view = _LiveView(recording, args) if args.top else None
    old_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        while not stop_now and (end is None or time.monotonic() < end):
            if children is not None:
                children.tick()
            if all(s.ended() is not None or gone(s.pid) for s in recording):
                break  # every program ended (or exec'd): the agents saved
            if view is not None:
                view.tick()
            time.sleep(POLL_S)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if children is not None:
            children.give_up()
    # from here on Ctrl-C stops the command; the agents then just stop
    for s in recording:
        s.ask_stop()
    done, waiting = _poll_all(
        recording, recording[0], lambda s: s.poll_end(), until=time.monotonic() + SAVE_TIMEOUT_S
    )
    if any(s is recording[0] for s in waiting):
        raise LprofError(f"attach: process {args.pid} did not save its profile within {SAVE_TIMEOUT_S} s", 1)
    for s in waiting:
        _left_out(LprofError(f"attach: process {s.pid} did not save its profile within {SAVE_TIMEOUT_S} s"))
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


# attach's fallback reads stacks at this rate at most (each read walks every thread)
OUTSIDE_RATE_HZ = 100


def _python_version(pid):
    """The target's (major, minor) from outside, or None when not found
    (an embedding program: the remote_exec path says what it finds)."""
    from ..process import remote_target

    try:
        return remote_target.find(pid, "attach").version
    except LprofError:
        return None


def _outside(args, why, gave_up=None):
    """The process cannot run lprof's code (a Python before 3.14, or a main
    thread that never came back to Python within --start-timeout): sample
    its stacks from outside instead, with lprof dump's reader, and print a
    listing of wall-clock samples per line and thread. Only for plain
    sampling: -l, --memory and --children need code in the process. After a
    start that timed out (`gave_up`), its error stands when the process cannot
    be read from outside either (or the mode needs code in it)."""
    from ..collect import remote_stacks
    from ..process import remote_target
    from ..render import stack_dump

    needs_code = [
        f
        for f, on in (
            ("-l", args.line_by_line),
            ("--memory", args.memory),
            ("--children", args.children),
            ("--top", args.top),
        )
        if on
    ]
    if needs_code and gave_up is not None:
        raise gave_up
    if needs_code:
        raise LprofError(
            f"{why}; {needs_code[0]} needs lprof's code in the process (lprof dump "
            f"{args.pid} reads its stacks from outside)",
            2,
        )
    rate = min(args.rate or OUTSIDE_RATE_HZ, OUTSIDE_RATE_HZ)
    try:
        target = remote_target.find(args.pid, "attach")
        layout = remote_target.layout(target, "attach")
        remote_stacks.read(args.pid, target.runtime, layout, "attach")  # readable, or one line
    except LprofError as exc:
        if gave_up is None:
            raise
        raise LprofError(
            f"{gave_up.message} (nor could it be read from outside: {exc.message.removeprefix('attach: ')})",
            gave_up.exit_code,
        ) from None

    def announce():
        if not args.quiet:
            until = f"for {args.duration:g} s" if args.duration else "until Ctrl-C or its end"
            sys.stderr.write(
                f"lprof: {why.removeprefix('attach: ')}: sampling it from outside "
                f"instead ({rate} Hz wall-clock stacks read with process_vm_readv, "
                f"{until}; a listing only, no profile file)\n"
            )
            sys.stderr.flush()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    result = remote_stacks.sample(
        args.pid,
        target.runtime,
        layout,
        args.duration,
        rate,
        stop=lambda: bool(stop),
        verb="attach",
        on_start=announce,
    )
    if not args.quiet:
        sys.stdout.write(stack_dump.format_samples(args.pid, result))
    return 0


def main(args):
    check(args)
    remote.executable_of(args.pid)  # no such process: said before anything is made
    version = _python_version(args.pid)
    if version is not None and version < (3, 14):
        return _outside(
            args,
            f"attach: process {args.pid} runs Python {version[0]}.{version[1]}, "
            f"which cannot be asked to run lprof's code (sys.remote_exec is "
            f"3.14+)",
        )
    _left.clear()
    sessions = []  # every one made, closed at the end
    try:
        first = Session(args.pid, _options(args))
        sessions.append(first)
        try:
            st = _start(first, args)
        except KeyboardInterrupt:
            first.give_up_start()
            raise LprofError("attach: interrupted before sampling started", 130) from None
        except GaveUp as exc:
            return _outside(args, exc.message.split(";")[0], gave_up=exc)
        recording = [first]
        children = _Children(args, sessions, recording) if args.children else None
        stop_now = False
        if children is not None:
            try:
                children.settle(min(args.start_timeout, SETTLE_S))
            except KeyboardInterrupt:  # PID is sampling: stop and save as at any Ctrl-C
                stop_now = True
        if not args.quiet:
            _announce(args, st, len(recording) - 1)
        try:
            done = _record(recording, children, args, stop_now)
        except KeyboardInterrupt:  # a second Ctrl-C while the profiles are saved
            raise LprofError(
                "attach: interrupted; no profile saved (the process goes on, unprofiled)", 130
            ) from None
        prof = _gather(done, args)
        _left_out_summary()
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

        sys.stdout.write(
            render(
                prof,
                reduced=args.reduced,
                profile_only=args.profile_only or None,
                profile_all=args.profile_all,
                threshold_pct=args.threshold,
                per_thread=args.per_thread,
            )
        )
    if not args.quiet:
        attached = prof["meta"].get("attached") or {}
        more = attached.get("processes", 1) - 1
        who = f"process {args.pid}" + (f" and {more} child process(es), merged" if more else "")
        sys.stderr.write(f"lprof: profile of {who} ({attached.get('ended_by')}) written to {args.outfile}\n")
    return 0
