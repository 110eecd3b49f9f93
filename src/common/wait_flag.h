/* common: waiting for a thread lprof just started to reach its own code.
 * A new thread's start-up (the C runtime's, a sanitizer's, CPython's thread
 * state) allocates; a program that forks while that runs can fork inside an
 * allocator that takes no lock around fork, and the child then hangs at its
 * first allocation of that size. So the starters wait until the thread says
 * it has got that far: the program's first line never races a start-up. */
#ifndef LPROF_COMMON_WAIT_FLAG_H
#define LPROF_COMMON_WAIT_FLAG_H

#include <stdint.h>
#include <time.h>

#include "common/clock.h"

/* How long a starter waits for its thread: far more than a start takes;
 * bounded for the own threads, which need the GIL and may never get it when
 * started during finalisation. */
#define LP_THREAD_START_WAIT_NS 2000000000ull

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
