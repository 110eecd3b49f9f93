/* common: how lprof starts its own threads.
 * Quietly: with every signal blocked, so that the program's signals (and the
 * sampler's) go to the program's threads, and the new thread inherits the
 * mask. And to the end: a new thread's start-up (the C runtime's, a sanitizer's, CPython's thread
 * state) allocates; a program that forks while that runs can fork inside an
 * allocator that takes no lock around fork, and the child then hangs at its
 * first allocation of that size. So the starters wait until the thread says
 * it has got that far: the program's first line never races a start-up. */
#ifndef LPROF_COMMON_THREAD_START_H
#define LPROF_COMMON_THREAD_START_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"

/* How long a starter waits for its thread: far more than a start takes;
 * bounded for the own threads, which need the GIL and may never get it when
 * started during finalisation. */
#define LP_THREAD_START_WAIT_NS 2000000000ull

/* pthread_create with every signal blocked in the new thread; its result. */
static inline int lp_thread_create_quiet(pthread_t *thread, void *(*body)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, NULL, body, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Polls *flag until it is non-zero or timeout_ns passed; 1 when it was set. */
static inline int lp_wait_for_flag(const int *flag, uint64_t timeout_ns) {
    uint64_t end = lp_clock_monotonic_ns() + timeout_ns;
    const struct timespec pause = {0, 20000}; /* a thread starts in ~50-200 us */
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        if (lp_clock_monotonic_ns() >= end) return 0;
        nanosleep(&pause, NULL);
    }
    return 1;
}

#endif
