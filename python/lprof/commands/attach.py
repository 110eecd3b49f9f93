"""`lprof attach PID`: sample a Python process that is already running
(Python 3.14+ in the process), until a duration is over, Ctrl-C, or the
process ends; then save and print its profile as a run's.

The command and the process share a private control folder. The command
writes the attach script there and has the process run it
(process/remote.py: sys.remote_exec); the script imports lprof in the
process and starts the agent (process/attach_agent.py), which answers in the
folder's status file and saves the profile there. Either side may go away
first: the script does nothing if the command gave up on it (whoever creates
"claimed" first wins), the agent stops sampling if the command is gone, and
the command reports a process that ended without saving."""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

from ..common import files
from ..common.errors import LprofError
from ..model import profile_file
from ..process import attach_agent, remote
from . import output_paths
from .options import add_sampled_listing_options

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLL_S = 0.05
SAVE_TIMEOUT_S = 60  # from the stop request to the saved profile

# Run by the process, in a namespace of its own (sys.remote_exec): it must
# leave the program's sys.path as it was and never raise into it.
_SCRIPT = r'''
def _lprof_attach(control, parent, options):
    import json, os, sys
    try:
        os.close(os.open(os.path.join(control, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        # the lprof command gave up waiting and left its folder to this script
        try:
            for name in os.listdir(control):
                os.remove(os.path.join(control, name))
            os.rmdir(control)
        except OSError:
            pass
        return
    added = parent not in sys.path
    if added:
        sys.path.insert(0, parent)
    try:
        from lprof.process import attach_agent
    except BaseException as exc:
        message = "cannot import lprof in the process (Python %d.%d, from %s): %s: %s" % (
            sys.version_info[0], sys.version_info[1], parent, type(exc).__name__, exc)
        if "_lprof" in str(exc):
            message += " (lprof's C extension is not built for that Python version: install " \
                       "lprof with it, or build it there with that python's setup.py build_ext)"
        try:
            with open(os.path.join(control, "status.tmp"), "w") as fh:
                json.dump({"state": "error", "message": message, "pid": os.getpid()}, fh)
            os.replace(os.path.join(control, "status.tmp"), os.path.join(control, "status"))
        except OSError:
            pass
        return
    finally:
        if added and parent in sys.path:
            sys.path.remove(parent)
    attach_agent.begin(control, options)
'''


def parser():
    p = argparse.ArgumentParser(
        prog="lprof attach", allow_abbrev=False,
        description="Profile a running Python process (Python 3.14+ in the process, through "
                    "sys.remote_exec): sample every thread, or with -l time every line of the "
                    "code -p names, until the duration is over, Ctrl-C, or the process ends; "
                    "then save and print its profile.")
    p.add_argument("pid", type=int, help="the process to attach to")
    p.add_argument("-d", "--duration", type=float, metavar="S",
                   help="stop after S seconds (default: at Ctrl-C, or when the process ends)")
    p.add_argument("-o", "--outfile", metavar="FILE",
                   help="profile file (default: attach-PID.sample.lprof)")
    p.add_argument("-l", "--line-by-line", action="store_true",
                   help="exact timing of every line of the code named by -p, instead of "
                        "sampling (as lprof -l; what the process has imported)")
    p.add_argument("-p", "--prof-mod", action="append", default=[], metavar="TARGET",
                   help="-l: a function, class or module to time (pkg.mod.func, "
                        "pkg.mod:Class.method, pkg.mod, or a source file); repeat or separate "
                        "with commas")
    p.add_argument("-z", "--skip-zero", action="store_true",
                   help="-l: hide functions that did not run while attached")
    p.add_argument("--wall", action="store_true", help="sample wall time instead of CPU time")
    p.add_argument("--rate", type=int, metavar="HZ", help="samples per second (default 1000)")
    p.add_argument("--native", nargs="?", const="on", default=None, choices=["on", "all"],
                   help="stacks gain native (C/C++) frames through libunwind")
    p.add_argument("--memory", action="store_true",
                   help="memory columns too: Python objects' allocations per line (native "
                        "allocations need the program started under lprof --memory)")
    p.add_argument("--memory-sample-bytes", type=int, default=16384, metavar="BYTES",
                   help="mean bytes between sampled allocations (default 16384)")
    p.add_argument("--top", action="store_true",
                   help="while attached, show the hottest lines live (redrawn every --interval "
                        "seconds; on a terminal the screen is redrawn, else frames are printed)")
    p.add_argument("--interval", type=float, default=1.0, metavar="S",
                   help="--top: seconds between frames (default 1)")
    p.add_argument("--top-lines", type=int, default=20, metavar="N",
                   help="--top: lines per frame (default 20)")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report")
    p.add_argument("--start-timeout", type=float, default=30, metavar="S",
                   help="how long to wait for the process's main thread to run Python code "
                        "and start sampling (default 30)")
    p.add_argument("-q", "--quiet", action="store_true", help="print no listing")
    add_sampled_listing_options(p.add_argument_group("sampled listing"))
    return p


def _check(args):
    from .._lprof import SAMPLER_MAX_RATE_HZ
    if args.pid <= 0:
        raise LprofError(f"attach: {args.pid} is not a process id", 2)
    if args.pid == os.getpid():
        raise LprofError("attach: that is lprof's own process", 2)
    if args.duration is not None and not args.duration > 0:
        raise LprofError(f"--duration {args.duration}: must be more than 0 seconds", 2)
    if args.top and not 0.1 <= args.interval <= 3600:
        raise LprofError(f"--interval {args.interval}: must be between 0.1 and 3600 seconds", 2)
    if args.top_lines < 1:
        raise LprofError(f"--top-lines {args.top_lines}: must be at least 1", 2)
    if not args.start_timeout > 0:
        raise LprofError(f"--start-timeout {args.start_timeout}: must be more than 0 seconds", 2)
    if args.memory_sample_bytes < 1:
        raise LprofError(f"--memory-sample-bytes {args.memory_sample_bytes}: must be at least 1", 2)
    if args.rate is not None and not 1 <= args.rate <= SAMPLER_MAX_RATE_HZ:
        raise LprofError(f"--rate {args.rate}: must be between 1 and {SAMPLER_MAX_RATE_HZ} "
                         f"samples a second", 2)
    args.targets = [t.strip() for v in args.prof_mod for t in v.split(",") if t.strip()]
    if args.line_by_line:
        if not args.targets:
            raise LprofError("-l: name the code to time with -p (pkg.mod.func, "
                             "pkg.mod:Class.method, pkg.mod or a file)", 2)
        for flag, given in (("--wall", args.wall), ("--native", args.native),
                            ("--rate", args.rate is not None), ("--top", args.top)):
            if given:
                raise LprofError(f"{flag} is for sampling; -l times every line of the -p code", 2)
    elif args.targets:
        raise LprofError("-p names the code -l times: add -l", 2)
    args.outfile = args.outfile or (f"attach-{args.pid}.lprof" if args.line_by_line
                                    else f"attach-{args.pid}.sample.lprof")
    output_paths.check([("--outfile", args.outfile), ("--html", args.html)])


def _status(control):
    try:
        with open(os.path.join(control, "status")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _gone(pid):
    """True when the process has ended (a zombie has, too)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _claim(control):
    """Takes the script's place: True when it had not started (it will now
    do nothing)."""
    try:
        os.close(os.open(os.path.join(control, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


class _GaveUp(LprofError):
    """The script never ran, and will do nothing when it does."""


def _wait_started(control, args):
    deadline = time.monotonic() + args.start_timeout
    while True:
        st = _status(control)
        if st is not None:
            return st
        if _gone(args.pid):
            _claim(control)
            raise LprofError(f"attach: process {args.pid} ended before sampling started", 1)
        if time.monotonic() > deadline and _claim(control):
            raise _GaveUp(
                f"attach: process {args.pid} ran no Python code on its main thread within "
                f"{args.start_timeout:g} s (blocked in a long call: a sleep, a lock, I/O?); "
                f"nothing was started (--start-timeout S waits longer)", 1)
        if time.monotonic() > deadline + SAVE_TIMEOUT_S:  # the script began but never answered
            raise LprofError(f"attach: process {args.pid} began attaching but did not start "
                             f"sampling within {SAVE_TIMEOUT_S} s", 1)
        time.sleep(POLL_S)


class _Stop(Exception):
    pass


def _on_term(signo, frame):
    raise _Stop()


class _LiveView:
    """--top: draws a frame whenever the process has written a newer live
    snapshot (process/attach_agent.py)."""

    def __init__(self, control, args):
        self.path = os.path.join(control, attach_agent.LIVE_NAME)
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


def _record(control, args):
    """Waits for the end of the recording; returns the final status."""
    end = time.monotonic() + args.duration if args.duration else None
    view = _LiveView(control, args) if args.top else None
    old_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        while end is None or time.monotonic() < end:
            st = _status(control)
            if st and st["state"] != "started":
                return st  # the program ended (or exec'd): the agent saved it
            if _gone(args.pid):
                break
            if view is not None:
                view.tick()
            time.sleep(POLL_S)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
    # from here on Ctrl-C stops the command; the agent then just stops sampling
    open(os.path.join(control, "stop"), "w").close()
    deadline = time.monotonic() + SAVE_TIMEOUT_S
    while time.monotonic() < deadline:
        st = _status(control)
        if st and st["state"] != "started":
            return st
        if _gone(args.pid):
            st = _status(control)
            if st and st["state"] != "started":
                return st
            raise LprofError(f"attach: process {args.pid} ended before its profile was saved "
                             f"(killed, or os._exit)", 1)
        time.sleep(POLL_S)
    raise LprofError(f"attach: process {args.pid} did not save its profile within "
                     f"{SAVE_TIMEOUT_S} s", 1)


def _options(args):
    return {"cli_pid": os.getpid(), "targets": args.targets,
            "mode": "lines" if args.line_by_line else "wall" if args.wall else "cpu",
            "rate_hz": args.rate, "native": args.native, "memory": args.memory,
            "memory_sample_bytes": args.memory_sample_bytes,
            "live_s": args.interval if args.top else None}


def _private_folder(pid):
    """The control folder: this user's alone, handed to the process's user
    when lprof runs as root and the process does not."""
    control = tempfile.mkdtemp(prefix=f"lprof-attach-{pid}-")
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        owner = os.getuid()
    if owner != os.getuid() and os.getuid() == 0:
        os.chown(control, owner, -1)
    return control


def main(args):
    _check(args)
    remote.executable_of(args.pid)  # no such process: said before anything is made
    control = _private_folder(args.pid)
    # the folder stays when the process was asked to run the script and has
    # not yet: it reads the script later (a missing file would be an error
    # printed in the program), finds it given up and removes the folder
    pending = False
    try:
        script = os.path.join(control, "attach.py")
        with open(script, "w") as fh:
            fh.write(_SCRIPT + f"\n_lprof_attach({control!r}, {PACKAGE_PARENT!r}, "
                               f"{_options(args)!r})\n")
        os.chmod(script, 0o644)
        try:
            remote.run_file(args.pid, script)
            st = _wait_started(control, args)
        except KeyboardInterrupt:
            pending = _claim(control)  # the script, if it runs later, does nothing
            raise LprofError("attach: interrupted before sampling started", 130) from None
        except _GaveUp:
            pending = True
            raise
        if st["state"] == "error":
            raise LprofError(f"attach: {st['message']}", 1)
        if not args.quiet:
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
            sys.stderr.write(f"lprof: attached to process {args.pid} (Python {st['python']}): "
                             f"{verb} {what}{also} {until}\n")
        try:
            st = _record(control, args)
        except KeyboardInterrupt:  # a second Ctrl-C while the profile is saved
            raise LprofError("attach: interrupted; no profile saved (the process goes on, "
                             "unprofiled)", 130) from None
        if st["state"] == "error":
            raise LprofError(f"attach: {st['message']}", 1)
        with open(st["file"], "rb") as fh:
            data = fh.read()
        prof = profile_file.decode(data, name=st["file"])
        files.save_bytes(data, args.outfile)
    finally:
        if not pending:
            shutil.rmtree(control, ignore_errors=True)
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
        ended = (prof["meta"].get("attached") or {}).get("ended_by")
        sys.stderr.write(f"lprof: profile of process {args.pid} ({ended}) written to "
                         f"{args.outfile}\n")
    return 0
