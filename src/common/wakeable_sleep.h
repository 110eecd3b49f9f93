/* common: the periodic sleep of lprof's own threads, cut short by their stop.
 * A thread that wakes every period (the wall/CPU sampler thread, the other
 * threads' clock) sleeps on its running flag with a futex: stopping it wakes
 * it at once, where a plain clock_nanosleep made every stop (so every run's
 * end) wait up to a whole period (10 ms for the clock). */
#ifndef LPROF_COMMON_WAKEABLE_SLEEP_H
#define LPROF_COMMON_WAKEABLE_SLEEP_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps until the absolute CLOCK_MONOTONIC time `until`, or until *running
 * is no longer 1 (lp_sleep_stop). */
static inline void lp_sleep_while_running(int *running, const struct timespec *until) {
    while (__atomic_load_n(running, __ATOMIC_ACQUIRE) == 1) {
        /* FUTEX_WAIT_BITSET: the time is absolute, on CLOCK_MONOTONIC */
        long rc = syscall(SYS_futex, running, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 1, until, NULL,
                          FUTEX_BITSET_MATCH_ANY);
        if (rc == -1 && errno == ETIMEDOUT) return;
        /* woken, interrupted, or the flag already changed: look again */
    }
}

/* Clears *running and wakes the thread sleeping on it. */
static inline void lp_sleep_stop(int *running) {
    __atomic_store_n(running, 0, __ATOMIC_RELEASE);
    syscall(SYS_futex, running, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

#endif
