"""lprof's own background threads (the sampler's drain, the periodic
writer). Started with the low-level _thread module, so the program never
sees them (threading.active_count(), threading.enumerate()); never
registered with the sampler, so never sampled; and their allocations are
never recorded (memory_ignore_current_thread). Code run on them must not
call threading.current_thread(), which would register a dummy thread."""
import _thread

from . import _lprof


class OwnThread:
    def __init__(self, target):
        self._target = target
        self._done = _thread.allocate_lock()
        self.ident = None

    def start(self):
        self._done.acquire()
        self.ident = _thread.start_new_thread(self._run, ())

    def _run(self):
        try:
            _lprof.memory_ignore_current_thread()
            self._target()
        except BaseException:  # never break the program for the profiler
            pass
        finally:
            self._done.release()

    def join(self, timeout):
        if self._done.acquire(timeout=timeout):
            self._done.release()

    def is_current(self):
        return _thread.get_ident() == self.ident
