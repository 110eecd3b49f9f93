"""The command's side of attaching to one process (`lprof attach`).

The command and the process share a private control folder. The command
writes the attach script there and has the process run it (remote.py:
sys.remote_exec); the script imports lprof in the process and starts the
agent (attach_agent.py), which answers in the folder's status file and saves
the profile there. Either side may go away first: the script does nothing if
the command gave up on it (whoever creates "claimed" first wins), the agent
stops if the command is gone, and the command reports a process that ended
without saving. The script runs wherever the main thread stands; inside an
import (a spawned worker starting up) the modules lprof imports may be
half initialized (`import json` in the middle of json's own import gives a
json without dumps), so there it does nothing but say so (a byte more in
"deferred"), and the command asks again, until the import is over or
BUSY_WAIT_S have passed (then "force": an import that never ends, a module
that runs the program, does not keep lprof out). A Session is one process's folder and what is known of it;
commands/attach.py drives one per process."""

import json
import os
import shutil
import tempfile
import time

from ..common.errors import LprofError
from . import attach_agent, remote
from .procfs import gone

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAVE_TIMEOUT_S = 60  # from the stop request to the saved profile
BUSY_WAIT_S = 2.0  # how long the script may find the main thread inside an import
NUDGE_AFTER_S = 1.0  # from the stop request to the nudge (see _NUDGE_SCRIPT)

# Both scripts begin with this: the process takes its turn by creating
# `name` in the folder (O_EXCL); the command takes it first when it stops
# waiting for the script, which then only removes the folder.
_CLAIM = r"""
def _lprof_claim(control, name):
    import os
    try:
        os.close(os.open(os.path.join(control, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except OSError:
        # the lprof command is done with its folder and left it to this script
        try:
            for entry in os.listdir(control):
                os.remove(os.path.join(control, entry))
            os.rmdir(control)
        except OSError:
            pass
        return False
"""

# Run by the process, in a namespace of its own (sys.remote_exec): it must
# leave the program's sys.path as it was and never raise into it.
_SCRIPT = (
    _CLAIM
    + r"""
def _lprof_in_import(frame):
    # importlib's frames below: the main thread is running a module's import
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _lprof_attach(control, parent, options):
    import os, sys  # always whole: the interpreter imported them at its start
    claimed = os.path.join(control, "claimed")
    if (not os.path.exists(claimed) and not os.path.exists(os.path.join(control, "force"))
            and _lprof_in_import(sys._getframe())):
        try:  # the command asks again
            with open(os.path.join(control, "deferred"), "ab") as fh:
                fh.write(b".")
        except OSError:
            pass
        return
    if not _lprof_claim(control, "claimed"):
        return
    import json
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
"""
)


# Run by the process on its main thread when the stop has not been saved
# NUDGE_AFTER_S after it was asked: the agent's own thread may be starved of
# the GIL (a main thread that releases and retakes it thousands of times a
# second, as a loop of short I/O calls does, bumps the GIL's switch count,
# and CPython then never asks it to give way: waiters stay asleep for
# seconds). The main thread then saves (or, when the agent's thread has begun
# saving, waits for it, which gives that thread the GIL). Whoever creates
# "nudge-claimed" first wins, as with the attach script.
_NUDGE_SCRIPT = (
    _CLAIM
    + r"""
def _lprof_nudge(control):
    import sys
    if not _lprof_claim(control, "nudge-claimed"):
        return
    agent = sys.modules.get("lprof.process.attach_agent")
    try:  # never into the program
        if agent is not None:
            agent.stop_from_main(control)
    except Exception:
        pass
"""
)


class GaveUp(LprofError):
    """The script never ran, and will do nothing when it does."""


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


class Session:
    def __init__(self, pid, options):
        self.pid = pid
        self.control = _private_folder(pid)
        # the folder stays when the process was asked to run the script and
        # has not yet: it reads the script later (a missing file would be an
        # error printed in the program), finds it given up, removes the folder
        self.pending = False
        self.requested = False
        self.deferred = 0  # the script's answers "inside an import": asked again
        self.deferred_since = None
        self.stop_asked = None  # monotonic time of ask_stop()
        self.nudged = False
        self.nudge_requested = False  # the nudge may run later: close() claims it
        self.script = os.path.join(self.control, "attach.py")
        with open(self.script, "w") as fh:
            fh.write(_SCRIPT + f"\n_lprof_attach({self.control!r}, {PACKAGE_PARENT!r}, {options!r})\n")
        os.chmod(self.script, 0o644)
        self.live_path = os.path.join(self.control, attach_agent.LIVE_NAME)

    @classmethod
    def adopt(cls, pid, control):
        """A process that started its own recording in `control` (a child
        forked by an attached process): nothing to ask, only to read."""
        s = cls.__new__(cls)
        s.pid, s.control = pid, control
        s.pending = s.requested = False
        s.deferred, s.deferred_since = 0, None
        s.stop_asked, s.nudged, s.nudge_requested = None, False, False
        s.script = None
        s.live_path = os.path.join(control, attach_agent.LIVE_NAME)
        return s

    def request(self):
        """Asks the process to run the script (raises LprofError)."""
        self.requested = True  # a Ctrl-C inside the call may come after the request
        try:
            remote.run_file(self.pid, self.script)
        except LprofError:  # refused: nothing will read the script
            self.requested = False
            raise

    def status(self):
        try:
            with open(os.path.join(self.control, "status")) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def _claim(self):
        """Takes the script's place: True when it had not started (it will
        now do nothing)."""
        try:
            os.close(os.open(os.path.join(self.control, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def poll_start(self, deadline, timeout_s):
        """The process's first status, or None while there is none yet;
        raises LprofError when it ended or never answered by the deadline."""
        st = self.status()
        if st is not None:
            return st
        if gone(self.pid):
            self._claim()
            raise LprofError(f"attach: process {self.pid} ended before sampling started", 1)
        now = time.monotonic()
        if self._ask_again(now):
            return None
        if now > deadline and self._claim():
            self.pending = True
            raise GaveUp(
                f"attach: process {self.pid} ran no Python code on its main thread within "
                f"{timeout_s:g} s (blocked in a long call: a sleep, a lock, I/O?); "
                f"nothing was started (--start-timeout S waits longer)",
                1,
            )
        if now > deadline + SAVE_TIMEOUT_S:  # the script began but never answered
            raise LprofError(
                f"attach: process {self.pid} began attaching but did not start "
                f"sampling within {SAVE_TIMEOUT_S} s",
                1,
            )
        return None

    def _ask_again(self, now):
        """The script found the main thread inside an import: asks again
        (with "force" once that has lasted BUSY_WAIT_S). True when it did."""
        try:
            deferred = os.path.getsize(os.path.join(self.control, "deferred"))
        except OSError:
            return False
        if deferred <= self.deferred:
            return False
        self.deferred = deferred
        if self.deferred_since is None:
            self.deferred_since = now
        if now - self.deferred_since > BUSY_WAIT_S:
            open(os.path.join(self.control, "force"), "w").close()
        self.request()
        return True

    def _claim_nudge(self):
        try:
            os.close(
                os.open(os.path.join(self.control, "nudge-claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            )
            return True
        except OSError:
            return False

    def give_up_start(self):
        """Ctrl-C before the start: the script, if it runs later, does nothing
        (and a process never asked has no script to run)."""
        self.pending = self.requested and self._claim()

    def ended(self):
        """The final status when the process has saved (or failed to), else None."""
        st = self.status()
        return st if st is not None and st["state"] != "started" else None

    def ask_stop(self):
        self.stop_asked = time.monotonic()
        try:
            open(os.path.join(self.control, "stop"), "w").close()
        except OSError:
            pass

    def _nudge(self):
        """Asks the main thread to save (_NUDGE_SCRIPT), once; a process that
        cannot be asked (gone; a child forked from another thread than its
        main one, which sys.remote_exec cannot reach) just goes on saving."""
        self.nudged = True
        path = os.path.join(self.control, "nudge.py")
        try:
            with open(path, "w") as fh:
                fh.write(_NUDGE_SCRIPT + f"\n_lprof_nudge({self.control!r})\n")
            os.chmod(path, 0o644)
        except OSError:
            return
        self.nudge_requested = True  # a Ctrl-C inside the call may come after the request
        try:
            remote.run_file(self.pid, path)
        except LprofError:  # refused, or the process is gone: nothing will run it
            self.nudge_requested = False

    def poll_end(self):
        """The final status, or None while the process is still saving;
        raises LprofError when it ended without saving."""
        st = self.ended()
        if st is not None:
            return st
        if (
            not self.nudged
            and self.stop_asked is not None
            and time.monotonic() - self.stop_asked > NUDGE_AFTER_S
        ):
            self._nudge()
        if gone(self.pid):
            st = self.ended()  # saved just before it ended
            if st is not None:
                return st
            raise LprofError(
                f"attach: process {self.pid} ended before its profile was saved (killed, or os._exit)", 1
            )
        return None

    def close(self):
        if self.nudge_requested and self._claim_nudge():
            self.pending = True  # the nudge has not run: it will find the folder and remove it
        if not self.pending:
            shutil.rmtree(self.control, ignore_errors=True)
