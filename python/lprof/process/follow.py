"""Following child processes: each child profiles itself into a session
folder, the lprof command merges what is there when the program ends.

Parent (the lprof command): `Session(options)` names the folder (the first
child makes it) and puts LPROF_FOLLOW (JSON: the folder and the run's
collector options) and lprof's bootstrap folder (PYTHONPATH) into the
environment that children inherit.

Children, two ways in:
- a fresh interpreter (multiprocessing spawn and forkserver, subprocess
  running Python, torchrun workers): `_bootstrap/sitecustomize.py` calls
  start_from_env() before the child's program runs;
- a fork (os.fork, multiprocessing fork, the forkserver's children): the
  at-fork hook below drops what the child inherited (the parent's stacks,
  line counts, memory account) and starts the same collectors afresh.
A child writes `<folder>/<host>.<pid>.lprof` (atomically) when it ends: at
interpreter exit, in os._exit (multiprocessing's forked children end that
way), or on SIGTERM where the program left SIGTERM to its default (pools
terminate their workers so; the child then still dies by SIGTERM). SIGTERM
is taken by lprof's C handler (faults.Guard), whose watcher thread saves:
a Python-level handler runs only when the main thread next runs bytecode,
and a worker blocked on a lock the pool holds for good never does (a
SIGTERM landing just before its sem_wait left it hanging). A fatal signal
(SIGSEGV, abort()) writes the child's last in-memory checkpoint and a note
`<pid>.died`; SIGKILL leaves nothing: the parent names each child that died
so, how, and what of it was lost (Session.losses), never losing its own.
While a child runs, `<folder>/<pid>.running` exists; the parent waits for
those markers whose process is alive, a few seconds at most."""

import atexit
import json
import os
import signal
import sys
import time

from ..collect import exec_guard
from ..collect import sampling as _sampling
from ..collect.recording import Recording
from . import procfs

ENV = "LPROF_FOLLOW"
WAIT_S = 5.0  # longest wait for children still writing at the parent's end

_config = None  # {"dir", "options"} while following in this process
_child = None  # this process's _Child, when it is a followed child
_hooks_done = False


def _bootstrap_path(env):
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # lprof/
    parts = [os.path.join(package, "_bootstrap"), os.path.dirname(package)]
    old = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(parts + [p for p in old if p not in parts])


class Session:
    """The parent's side: the folder, the environment, the harvest."""

    def __init__(self, options):
        global _config
        self.dir = _folder_name()  # made by the first child (most runs have none)
        self.pid = os.getpid()
        self._told = False
        self.quiet = False  # lprof -q: the losses are not said
        _config = {"dir": self.dir, "options": dict(options)}
        os.environ[ENV] = json.dumps(_config)
        _bootstrap_path(os.environ)
        _install_fork_hook()

    def is_parent(self):
        return os.getpid() == self.pid

    def _names(self):
        try:
            return os.listdir(self.dir)
        except OSError:
            return []

    def has_children(self):
        return any(n.endswith((".lprof", ".running")) for n in self._names())

    def running(self):
        """Pids of children that have not written their profile and are alive."""
        out = []
        for n in self._names():
            if n.endswith(".running"):
                try:
                    pid = int(n[: -len(".running")])
                except ValueError:
                    continue
                if procfs.alive(pid):
                    out.append(pid)
        return out

    def wait(self, timeout=WAIT_S):
        """Waits until no child is still writing; the pids still running at the end."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.running()
            if not pids or time.monotonic() >= deadline:
                return pids
            time.sleep(0.02)

    def files(self):
        """Paths of the children's profiles, oldest first. Says first, on
        stderr, which children died without saving their profile (once)."""
        if not self._told:
            self._told = True
            for line in [] if self.quiet else self.losses():
                sys.stderr.write(line + "\n")
        paths = [os.path.join(self.dir, n) for n in self._names() if n.endswith(".lprof")]

        def mtime(p):
            try:
                return os.stat(p).st_mtime
            except OSError:
                return 0.0

        return sorted(paths, key=lambda p: (mtime(p), p))

    def losses(self):
        """One line per child that ended without saving its profile: which
        process, how it died (a fatal signal's note, written by C at its
        death: the signal and the age of the checkpoint it wrote), and what
        of it is lost. The checkpoint a fatal signal wrote is marked with
        the signal (meta.exit_code) before it is merged."""
        names = set(self._names())
        out = []
        for n in sorted(names):
            if not n.endswith(".running"):
                continue
            try:
                pid = int(n[: -len(".running")])
            except ValueError:
                continue
            if procfs.alive(pid):
                continue  # still running: said by the caller
            kept = any(m.endswith(f".{pid}.lprof") for m in names)
            note = _read_note(os.path.join(self.dir, f"{pid}.died"))
            if note is None:
                how = "ended without saving its profile (killed by SIGKILL or another signal lprof cannot catch)"
            else:
                how = f"was killed by {_signal_name(note[0])}"
            if note is not None and note[1] is not None and kept:
                self._mark_killed(pid, note[0])
                what = (
                    f"its profile as of lprof's last checkpoint, {note[1]:.1f} s before, is merged; "
                    f"what it ran after that is lost"
                )
            elif kept:
                what = "its last -i checkpoint is merged; what it ran after that is lost"
            else:
                what = (
                    "it died before lprof's first checkpoint: its profile is lost"
                    if note is not None
                    else "its profile is lost"
                )
            out.append(f"lprof: child process {pid} {how}; {what}")
        return out

    def _mark_killed(self, pid, signum):
        """The child's file as the fatal signal left it (a checkpoint, whose
        exit_code is null), rewritten with the signal as its exit code."""
        from ..model import profile_file

        for n in self._names():
            if n.endswith(f".{pid}.lprof"):
                path = os.path.join(self.dir, n)
                try:
                    prof = profile_file.load(path)
                    prof.setdefault("meta", {})["exit_code"] = -signum
                    profile_file.save(prof, path)
                except Exception:  # merged as it is
                    pass

    def close(self):
        global _config
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
        if os.environ.get(ENV) and self.is_parent():
            os.environ.pop(ENV, None)
            _config = None


def _folder_name():
    """A private folder's name in the temporary directory; the first child
    makes it (so a run without children leaves nothing behind, even one
    that ends by os._exit)."""
    base = next(
        (b for b in (os.environ.get(k) for k in ("TMPDIR", "TEMP", "TMP")) if b and os.path.isdir(b)), "/tmp"
    )
    return os.path.join(os.path.abspath(base), f"lprof-children-{os.getpid()}-{os.urandom(6).hex()}")


def _own_folder(path):
    """Makes the session folder, or accepts it if this user already made it
    (a folder someone else made, or a link, is refused: nothing is written)."""
    try:
        os.mkdir(path, 0o700)
        return True
    except FileExistsError:
        pass
    except OSError:
        return False
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _read_note(path):
    """(signal, age of the checkpoint written in s or None) from a child's
    `<pid>.died` (export/emergency.c), or None where there is none."""
    try:
        with open(path) as fh:
            sig, age = fh.read().split()[:2]
        sig, age = int(sig), int(age)
    except (OSError, ValueError):
        return None
    return sig, (age / 1000 if age >= 0 else None)


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _Child(Recording):
    """A followed child's recording, with what only it has: its file and
    marker in the session folder, its SIGTERM watcher, its one save."""

    def __init__(self, config, collectors, modes):
        # argv None: the child's sys.argv as it is when its profile is built
        super().__init__(collectors, modes, argv=None, started=time.time())
        self.dir = config["dir"]
        self.pid = os.getpid()
        self.saved = False
        self._guard = None
        import _thread

        self._save_lock = _thread.allocate_lock()
        from ..common import procinfo

        self.path = os.path.join(self.dir, f"{procinfo.short_host(os.uname().nodename)}.{self.pid}.lprof")
        self.marker = os.path.join(self.dir, f"{self.pid}.running")
        self.note = os.path.join(self.dir, f"{self.pid}.died")  # written at a fatal signal (C)
        self.interval = float(config["options"].get("output_interval") or 0)

    def start(self):
        if not _own_folder(self.dir):
            return False
        try:
            with open(self.marker, "wb"):
                pass
        except OSError:
            return False
        Recording.start(self)
        self._arm_guard()
        if self.interval > 0:  # -i: checkpoints, so a killed child keeps what it wrote
            import threading

            self._lock = threading.Lock()
            self.start_checkpoints(self.interval, self._checkpoint)
        return True

    def _arm_guard(self):
        """faults.Guard, without os wrappers (os._exit has its own hook
        below): SIGTERM, where the program left it at its default, is saved
        by a watcher thread, then the child dies by it; a fatal signal
        (SIGSEGV in a C extension, abort()) writes the last in-memory
        checkpoint (every few seconds, at most 2% of the time; -i's file
        instead where -i runs) and a note `<pid>.died` the lprof command
        reads to say which child died, how, and what of it was lost."""
        from .. import _lprof
        from ..model import profile_file
        from . import faults

        try:
            term = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # else the program's own
            _lprof.emergency_disarm()  # a fork's copy of the parent's guard
            self._guard = faults.arm(
                self._saved_by_sigterm,
                lambda: profile_file.encode(self.build()),
                self.path,
                checkpoints=self.interval <= 0,
                wrap_os=False,
                quiet=True,
                term=term,
                note=self.note,
            )
        except (OSError, ValueError):
            self._guard = None

    def _saved_by_sigterm(self, how, exit_code):
        """The guard's finish, on its watcher thread; it dies by SIGTERM after."""
        self.save(exit_code=exit_code, by_signal=True)

    def _write(self, exit_code=None):
        from ..model import profile_file

        profile_file.save(self.build(exit_code), self.path)

    def _checkpoint(self):
        with self._lock:
            if self.saved:
                return False  # the last checkpoint: the child's one save is done
            try:
                self._write()
            except Exception:  # a failed checkpoint must not end the child
                pass

    def save(self, exit_code=None, by_signal=False):
        """Writes this child's part once. by_signal: the SIGTERM guard's
        watcher thread, which then kills the child; a normal save holds
        SIGTERM back on its thread meanwhile (a pool terminates a worker
        that is already ending: it must finish writing, then die by it)."""
        if os.getpid() != self.pid:
            return
        from . import faults

        with faults.saving_here():  # a SIGTERM's pending call leaves this thread alone
            self._save(exit_code, by_signal)

    def _save(self, exit_code, by_signal):
        held = None
        with self._save_lock:  # the guard's save waits for a normal one, and finds it done
            if self.saved:
                return
            self.saved = True
            if not by_signal:
                held = _hold_sigterm()
            try:
                if self._guard is not None:  # no in-memory checkpoint while the collectors stop
                    self._guard.stop_checkpoints()
                if self.checkpointing:
                    self.stop_checkpoints()
                    with self._lock:  # a checkpoint under way ends first
                        pass
                for c in reversed(self.collectors):
                    c.stop()
                self._write(exit_code)
            except Exception:  # never break the child program; its part is lost
                if os.environ.get("LPROF_DEBUG_FOLLOW"):
                    import traceback

                    traceback.print_exc()
            finally:
                try:
                    os.unlink(self.marker)
                except OSError:
                    pass
        if not by_signal:
            if self._guard is not None:
                self._guard.end()  # SIGTERM has its default action from here on
            if held is not None:  # one held back meanwhile ends the child now, as it would have
                signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def abandon(self):
        """Stops profiling without saving (the child turned out to be an
        lprof command of its own)."""
        self.saved = True
        if self._guard is not None:
            self._guard.end()
        if self.checkpointing:
            self.stop_checkpoints()
        for c in reversed(self.collectors):
            try:
                c.stop()
            except Exception:
                pass
        try:
            os.unlink(self.marker)
        except OSError:
            pass


def _hold_sigterm():
    """Blocks SIGTERM on this thread; the previous mask, or None."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (AttributeError, OSError, ValueError):
        return None


def _start_child(config, forked):
    """Starts this child's collectors; SIGTERM is held back meanwhile, so a
    pool terminating a worker that is still starting gets its (short)
    profile too, once the handler is in place."""
    held = _hold_sigterm()
    try:
        _start_child_collectors(config, forked)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _start_child_collectors(config, forked):
    global _child, _config
    from types import SimpleNamespace

    from .. import _lprof
    from ..collect import make

    _config = config
    if forked:  # forget the parent's numbers: this process profiles its own part
        if _lprof.memory_running():
            _lprof.memory_stop()
        _lprof.stacks_reset()
        _lprof.tracer_clear()
    collectors, modes = make(SimpleNamespace(**config["options"]), quiet=True)
    child = _Child(config, collectors, modes)
    _child = child
    if not child.start():
        _child = None
        return
    _install_exit_hooks()


def start_from_env():
    """Called by the bootstrap sitecustomize in a fresh child interpreter."""
    spec = os.environ.get(ENV)
    if not spec or _child is not None:
        return
    config = json.loads(spec)
    helper = procfs.multiprocessing_helper()
    if helper == "resource_tracker":  # multiprocessing's machinery, alive until the parent ends
        return
    global _config
    _config = config
    _install_fork_hook()
    if helper == "forkserver":  # not profiled itself; the children it forks are
        return
    _start_child(config, forked=False)


def leave_inherited():
    """For an lprof command started as a child of a followed program: it
    profiles its own program into its own file, so the inherited following
    stops here (and its children are not this session's either)."""
    global _child, _config
    if _child is not None:
        _child.abandon()
        _child = None
    _config = None
    os.environ.pop(ENV, None)


# -- hooks ------------------------------------------------------------------
def _after_fork_in_child():
    global _child
    if _config is None or exec_guard.forked_for_exec():
        return  # (subprocess's child for a preexec_fn: it execs, and that program is followed)
    _child = None
    try:
        _start_child(_config, forked=True)
    except Exception:  # never break the child program
        pass


def _install_fork_hook():
    global _hooks_done
    if not _hooks_done and hasattr(os, "register_at_fork"):
        _sampling.install_fork_hook()  # the sampler's reset runs before ours
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _hooks_done = True


_exit_hooks_done = False


def _save_at_exit():
    if _child is not None:
        _child.save()


def _save_before_os_exit(status):
    """Before os._exit: a followed child's profile, with its exit status."""
    if _child is not None:
        _child.save(exit_code=status)


def _install_exit_hooks():
    global _exit_hooks_done
    if not _exit_hooks_done:  # inherited across fork with the atexit list and exec_guard's
        atexit.register(_save_at_exit)
        exec_guard.before_os_exit(_save_before_os_exit)
        _exit_hooks_done = True
