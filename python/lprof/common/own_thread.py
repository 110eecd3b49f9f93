"""lprof's own background threads (the sampler's drain, the periodic
writer). Started with the low-level _thread module, so the program never
sees them (threading.active_count(), threading.enumerate()); never
registered with the sampler, so never sampled; and their allocations are
never recorded (memory_ignore_current_thread). Code run on them must not
call threading.current_thread(), which would register a dummy thread.

They block every asynchronous signal, so a signal sent to the process
(os.kill(os.getpid(), ...), Ctrl-C, SIGTERM) is always taken by one of the
program's threads, as without lprof, never by one of lprof's."""
import _thread
import signal

from .. import _lprof


# synchronous signals (faults) cannot be blocked meaningfully; KILL/STOP cannot be at all
_ASYNC_SIGNALS = set(signal.valid_signals()) - {
    signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS,
    signal.SIGKILL, signal.SIGSTOP}


class OwnThread:
    def __init__(self, target):
        self._target = target
        self._done = _thread.allocate_lock()
        self.ident = None
        self.native_id = None

    def start(self):
        self._done.acquire()
        # the new thread inherits the mask in force when it is created
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS)
        try:
            self.ident = _thread.start_new_thread(self._run, ())
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _run(self):
        self.native_id = _thread.get_native_id()
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
