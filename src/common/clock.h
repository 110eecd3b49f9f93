/* base: the tracer's timestamp source and its unit.
 *
 * lp_clock_now() returns ticks of the fastest trustworthy monotonic clock:
 * the TSC when the CPU advertises an invariant one (constant_tsc and
 * nonstop_tsc) and the kernel itself uses it as clocksource, otherwise
 * CLOCK_MONOTONIC in nanoseconds. lp_clock_seconds_per_tick() converts. */
#ifndef LPROF_CLOCK_H
#define LPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "common/base.h"

typedef enum { LP_CLOCK_MONOTONIC = 0, LP_CLOCK_TSC = 1 } lp_clock_kind;

/* Chooses the clock; idempotent, call with no locks held. The TSC's unit is
 * measured from this moment to each lp_clock_seconds_per_tick() call. */
LP_INTERNAL void lp_clock_init(void);
LP_INTERNAL const char *lp_clock_name(void);
LP_INTERNAL double lp_clock_seconds_per_tick(void);
/* For tests: force a clock kind (restarts the TSC measurement). */
LP_INTERNAL void lp_clock_force(lp_clock_kind kind);

extern LP_INTERNAL int lp_clock_use_tsc;

static inline uint64_t lp_clock_monotonic_ns(void) LP_SIGNAL_SAFE;
static inline uint64_t lp_clock_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lp_clock_now(void) LP_SIGNAL_SAFE;
static inline uint64_t lp_clock_now(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (LP_LIKELY(lp_clock_use_tsc)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return lp_clock_monotonic_ns();
}

#endif
