"""One process's recording: its collectors (lprof.collect.make), when it
started, the profile they make, and the checkpoint thread of -i. The lprof
command's own process (commands/run.py) and every child it follows
(lprof.process.follow) record through it; each keeps only what is its own (the
parent: the fault guard and the HTML report; a child: its marker file and
its one save)."""

import sys
import threading
import time

from ..common import headroom


class Recording:
    def __init__(self, collectors, modes, argv=None, started=None):
        """argv: the profile's command line (None: sys.argv as it is when the
        profile is built); started: unix time (None: when start() runs)."""
        self.collectors, self.modes = collectors, modes
        self.argv = argv
        self.started = started
        self._checkpoints = None
        self._stop = threading.Event()

    def start(self):
        if self.started is None:
            self.started = time.time()
        headroom.take()  # for building the profile, should the program use up its address space
        for c in self.collectors:
            c.start()

    def stop(self):
        """Gives the headroom back first (a collector's stop takes its final
        snapshot, and the build follows), then stops the checkpoints and the
        collectors (each stop is idempotent)."""
        headroom.release()
        self._stop.set()
        for c in reversed(self.collectors):
            c.stop()

    def build(self, exit_code=None):
        """The profile of what the collectors hold now."""
        from ..model import assemble

        argv = list(sys.argv) if self.argv is None else self.argv
        return assemble.profile(
            self.modes, self.collectors, argv=argv, started=self.started or time.time(), exit_code=exit_code
        )

    def start_checkpoints(self, interval, checkpoint):
        """Calls checkpoint() every `interval` seconds on lprof's own thread
        (unseen by the program, never sampled) until stop() or
        stop_checkpoints()."""
        from ..common.own_thread import OwnThread

        self._checkpoints = OwnThread(lambda: self._every(interval, checkpoint))
        self._checkpoints.start()

    def _every(self, interval, checkpoint):
        while not self._stop.wait(interval):
            if checkpoint() is False:
                return

    def stop_checkpoints(self, join_timeout=None):
        """No checkpoint starts from now on; join_timeout: wait that long for
        the thread (None: do not wait)."""
        self._stop.set()
        if self._checkpoints is not None and join_timeout is not None:
            self._checkpoints.join(timeout=join_timeout)

    @property
    def checkpointing(self):
        return self._checkpoints is not None
