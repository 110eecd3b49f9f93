"""lprof inside a process that `lprof attach` joined (Python 3.14+).

The attach command hands the process a small script through sys.remote_exec
(commands/attach.py writes it); the process runs it on its main thread at the
next Python instruction there, and it calls begin() here. begin() starts the
collectors (the sampler, which takes every thread already running and those
started later; or, for -l, the line tracer on the named code; memory hooks
with --memory) and an lprof thread (common/own_thread.py, unseen by the
program) that ends the recording when one of these happens first:

  - the command asks (a "stop" file in the control folder: its duration is
    over, or Ctrl-C): the profile is saved there, the command prints it
    (by the main thread, stop_from_main, when the command's nudge finds
    this thread starved of the GIL);
  - the command is gone (killed) or its control folder is: sampling stops,
    nothing is written, the program goes on as before;
  - the program ends (atexit, or os._exit: multiprocessing's workers end
    that way) or replaces itself (exec): the profile is saved with what was
    sampled until then.

What the command reads is the control folder's "status" file, a JSON object
replaced whole: {"state": "started" | "saved" | "error", ...}.

Nothing here may raise into the program: every failure becomes an "error"
status, and the program runs on unprofiled."""

import _thread
import atexit
import json
import os
import shutil
import sys
import time

from .. import _lprof
from ..collect import exec_guard, memory, sampling, trace_targets
from ..common.files import save_bytes
from ..common.own_thread import OwnThread
from ..model import assemble, profile_file
from . import procfs

POLL_S = 0.05  # how often the lprof thread looks at the control folder
PROFILE_NAME = "profile.lprof"
LIVE_NAME = "live.lprof"  # the profile so far, rewritten every live_s seconds (--top)

_current = None  # the attached recording, one per process
_fork_hook = [False]


def write_status(control, state, **fields):
    """The status file, replaced whole by the one atomic writer (the command
    never reads half of one)."""
    save_bytes(
        json.dumps(dict(fields, state=state, pid=os.getpid())).encode(), os.path.join(control, "status")
    )


class _Attached:
    def __init__(self, control, options):
        self.control = control
        self.cli_pid = int(options["cli_pid"])
        self.mode = options.get("mode", "cpu")
        if self.mode == "lines":  # -l: the exact line tracer on the named code, alone
            self.collectors = [trace_targets.NamedCodeCollector(options["targets"])]
            self.functions = len(self.collectors[0].codes)
        else:
            why = options.get("native") and _lprof.native_unwind_check()
            if why:
                raise RuntimeError(f"--native: {why}")
            self.collectors = [
                sampling.SamplingCollector(
                    mode=self.mode, rate_hz=options.get("rate_hz"), native=options.get("native")
                )
            ]
            self.functions = None
        if options.get("memory"):
            # Python objects only: the allocator shim is preloaded at a run's start
            self.collectors.append(
                memory.MemoryCollector(sample_bytes=options.get("memory_sample_bytes") or 16384, quiet=True)
            )
        self.live_s = options.get("live_s")
        self.options = options
        # the memory hooks and the line tracer come into a forked child
        # installed: only sampling starts afresh there
        self.follow_forks = (
            bool(options.get("children")) and self.mode != "lines" and not options.get("memory")
        )
        self.pid = os.getpid()
        self.started = None
        self.done = False
        self._remove_exec_hook = None
        self._remove_exit_hook = None

    def start(self):
        if self.mode != "lines" and sampling.running():
            raise RuntimeError("lprof is already sampling this process")
        if _lprof.memory_running():  # its stacks share the table reset below
            raise RuntimeError("lprof is already recording this process's memory")
        _lprof.stacks_reset()
        self.started = time.time()
        started = []
        try:
            for c in self.collectors:
                c.start()
                started.append(c)
            OwnThread(self._watch).start()
        except BaseException:
            for c in reversed(started):
                c.stop()
            raise
        atexit.register(self._at_exit)
        self._remove_exec_hook = exec_guard.before_exec(self._before_exec)
        self._remove_exit_hook = exec_guard.before_os_exit(lambda _status: self._at_exit())

    def _watch(self):
        stop_file = os.path.join(self.control, "stop")
        next_live = time.monotonic() + self.live_s if self.live_s else None
        while not self.done:
            time.sleep(POLL_S)
            if next_live is not None and time.monotonic() >= next_live:
                self._write_live()
                next_live = time.monotonic() + self.live_s
            if os.path.exists(stop_file):
                self.finish("stopped")
            elif not os.path.isdir(self.control):
                self.finish(None)  # nobody will read it: sampling just stops
            elif not procfs.exists(self.cli_pid):
                # the folder first (the command cannot remove it): once sampling
                # stops, the program may end before this thread runs again
                shutil.rmtree(self.control, ignore_errors=True)
                self.finish(None)

    def _profile(self, reason):
        modes = [self.mode] + (["memory"] if len(self.collectors) > 1 else [])
        prof = assemble.profile(modes, self.collectors, argv=sys.argv, started=self.started)
        prof["meta"]["attached"] = {"ended_by": reason}
        return prof

    def _write_live(self):
        """The profile so far, for the command's live view (--top)."""
        with _finish_lock:
            if self.done:
                return
            try:
                profile_file.save(self._profile("running"), os.path.join(self.control, LIVE_NAME))
            except Exception:  # a missed frame of the view; the recording goes on
                pass

    def _at_exit(self):
        if os.getpid() == self.pid:  # not in a forked child, which has no recording
            self.finish("program exited")

    def _before_exec(self):
        if os.getpid() == self.pid:
            self.finish("program exec'd")

    def finish(self, reason):
        """Stops sampling; saves the profile unless reason is None. Once:
        the lprof thread, atexit, os._exit and exec may all get here, and
        the lock is held to the end, so that the program's exit waits for a
        save the lprof thread has begun (else the process ended in the middle
        of it: a pool worker's os._exit during the command's stop)."""
        with _finish_lock:
            if self.done:  # done, or begun by this very thread (a signal handler)
                return
            self.done = True
            self._finish(reason)

    def _finish(self, reason):
        global _current
        try:
            failed = None
            for c in reversed(self.collectors):
                try:
                    c.stop()
                except Exception as exc:  # the others still stop
                    failed = failed or exc
            if failed is not None:
                raise failed
            if reason is not None and os.path.isdir(self.control):
                prof = self._profile(reason)
                path = os.path.join(self.control, PROFILE_NAME)
                profile_file.save(prof, path)
                write_status(self.control, "saved", file=path, ended_by=reason)
        except BaseException as exc:  # never into the program
            _report(self.control, f"could not save the profile: {type(exc).__name__}: {exc}")
        finally:
            # the exit hooks go only now: an exit meanwhile waits in finish()
            atexit.unregister(self._at_exit)
            if self._remove_exec_hook is not None:
                self._remove_exec_hook()
            if self._remove_exit_hook is not None:
                self._remove_exit_hook()
            if _current is self:
                _current = None


_finish_lock = _thread.RLock()


FORKED_PREFIX = "forked-"  # a forked child's control folder, inside its parent's


def _forget_in_child():
    """A forked child has no recording of its own (the sampler reset itself
    there), unless the attach follows children (--children, sampling without
    --memory): then the child starts one at once, in a control folder inside
    its parent's that the command finds. sys.remote_exec could not reach a
    child forked from a thread other than the main one (a fork-method pool's
    replacement workers), and one reached later would miss its first
    moments. Not in the child subprocess forks to exec."""
    global _current, _finish_lock
    _finish_lock = _thread.RLock()  # another thread of the parent may have held it
    parent, _current = _current, None
    if parent is None or not parent.follow_forks or exec_guard.forked_for_exec():
        return
    control = os.path.join(parent.control, f"{FORKED_PREFIX}{os.getpid()}")
    try:
        os.mkdir(control, 0o700)
    except OSError:
        return  # the command is gone, or will attach to it by remote_exec
    begin(control, parent.options)


def stop_from_main(control):
    """The command's nudge (attach_session._NUDGE_SCRIPT), on the main
    thread: the stop it asked for is saved here when the agent's thread has
    not begun it (starved of the GIL); when it has, finish() waits on the
    lock for it, which hands that thread the GIL."""
    rec = _current
    if _finish_lock._is_owned():
        return  # run inside this thread's own finish (exit, exec): it saves
    if rec is not None and rec.control == control and os.path.exists(os.path.join(control, "stop")):
        rec.finish("stopped")


def _report(control, message):
    try:
        write_status(control, "error", message=message)
    except OSError:
        pass


def begin(control, options):
    """Called by the attach script on the program's main thread."""
    global _current
    try:
        if _current is not None:
            raise RuntimeError("another lprof attach is recording this process")
        rec = _Attached(control, options)
        rec.start()
        _current = rec
        if not _fork_hook[0]:
            os.register_at_fork(after_in_child=_forget_in_child)
            _fork_hook[0] = True
        write_status(
            control,
            "started",
            python="%d.%d.%d" % sys.version_info[:3],
            native_memory=memory.native_covered(),
            functions=rec.functions,
        )
    except BaseException as exc:
        _report(
            control,
            str(exc) if isinstance(exc, (RuntimeError, LookupError)) else f"{type(exc).__name__}: {exc}",
        )
