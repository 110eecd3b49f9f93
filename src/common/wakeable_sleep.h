/* common: the periodic sleep of lprof's own threads, cut short by their stop
 * (and the futex wait and wake it is made of, for the drain's wake-up).
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

/* Sleeps while *word is `value`, until the absolute CLOCK_MONOTONIC time
 * `until` or a wake: 1 when the time is up, 0 otherwise (woken,
 * interrupted, or the word already differed). */
static inline int lp_futex_wait_until(int *word, int value, const struct timespec *until) {
    /* FUTEX_WAIT_BITSET: the time is absolute, on CLOCK_MONOTONIC */
    long rc = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, value, until, NULL,
                      FUTEX_BITSET_MATCH_ANY);
    return rc == -1 && errno == ETIMEDOUT;
}

/* Wakes up to n threads sleeping on *word (async-signal-safe: one syscall). */
static inline void lp_futex_wake(int *word, int n) {
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

/* Sleeps until the absolute CLOCK_MONOTONIC time `until`, or until *running
 * is no longer 1 (lp_sleep_stop). */
static inline void lp_sleep_while_running(int *running, const struct timespec *until) {
    while (__atomic_load_n(running, __ATOMIC_ACQUIRE) == 1)
        if (lp_futex_wait_until(running, 1, until)) return;
}

/* Clears *running and wakes the thread sleeping on it. */
static inline void lp_sleep_stop(int *running) {
    __atomic_store_n(running, 0, __ATOMIC_RELEASE);
    lp_futex_wake(running, INT_MAX);
}

#endif
