"""Imports, before the program runs, every module lprof's own threads and a
followed child's save import lazily.

A thread that is importing a module holds that module's import lock. When
the program forks meanwhile (its first lines may fork at once), the child
inherits the lock held by a thread it does not have, and the child's first
import of that module waits forever: lprof's fault watcher built its first
checkpoint (0.5 s in) while the program forked 20 times, and the child's
save at its os._exit hung on `from ..model import assemble` (seen under two
CPU hogs, 1 run in ~20, tests/python/test_thread_start_handshake.py). A
module already imported takes no lock, so importing them all here, on the
main thread and before any of lprof's threads starts, leaves none to be
held at a fork."""

import importlib

# what the checkpoints, the drain, the fault watcher and a child's save
# import inside functions (start-up cost stays off the plain command line:
# this runs only for a run that profiles)
MODULES = (
    "lprof.model.assemble",
    "lprof.model.sections",
    "lprof.model.stacks",
    "lprof.model.timeline",
    "lprof.model.selection",
    "lprof.model.shares",
    "lprof.model.profile_file",
    "lprof.model.frames",
    "lprof.common.own_thread",
    "lprof.common.files",
    "lprof.common.procinfo",
    "lprof.collect.exec_guard",
    "lprof.process.faults",
    "lprof.process.follow",
    "shutil",
    "stat",
    "opcode",
    "importlib.util",
)
# Not here: what only reads profiles (model.validate, through
# profile_file.load) and merges them (model.merge): the parent does both on
# its main thread once the program is over (merging its children), never on
# one of lprof's threads; 1 ms of every run's start-up.
# what only a run that traces lines writes: line_profiler's pickle
# (kernprof_file); 2.4 ms of imports that a sampling run does not pay.
# traceback is left out: lprof's threads print one only with
# LPROF_DEBUG_FOLLOW set, and the program's own are printed on its main thread
LINE_MODULES = ("lprof.model.kernprof_file", "pickletools")


def import_all(extra=()):
    for name in MODULES + tuple(extra):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional part (its own feature says so when used)
            pass
