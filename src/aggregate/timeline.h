/* aggregate: the sample timeline, a bounded list of (time, thread, stack,
 * weight) in the order the drain sees samples, so that an export can show
 * what each thread was doing when (the stack table keeps only totals).
 *
 * Bounded: a fixed capacity reserved once. When it is full, every other
 * entry of each thread is dropped and the stride doubles: from then on a
 * thread's sample is kept once per `stride` of its samples, so a long run
 * keeps an evenly thinned timeline (every kept entry stands for `stride`
 * samples of its thread) and the memory never grows.
 *
 * Context: one writer at a time (the sampler's drain, GIL held); readers
 * under the same lock. Never from a signal handler or allocator hook. */
#ifndef LPROF_AGGREGATE_TIMELINE_H
#define LPROF_AGGREGATE_TIMELINE_H

#include <stdint.h>

#include "common/base.h"

typedef struct {
    uint64_t t_ns;      /* CLOCK_MONOTONIC when the sample was taken */
    uint64_t thread;    /* thread key, as the stack table's roots */
    uint32_t stack;     /* stack id in the stack table */
    uint32_t weight_ns; /* the sample's time weight (saturates at ~4.3 s) */
} lp_timeline_entry;

typedef struct lp_timeline lp_timeline;

/* Capacity in entries (at least 2). NULL if the memory cannot be reserved. */
LP_INTERNAL lp_timeline *lp_timeline_create(uint32_t capacity);
LP_INTERNAL void lp_timeline_destroy(lp_timeline *tl);
/* Forgets every entry; stride back to 1. */
LP_INTERNAL void lp_timeline_clear(lp_timeline *tl);
/* Appends one sample (or skips it, per the thread's stride). */
LP_INTERNAL void lp_timeline_add(lp_timeline *tl, uint64_t t_ns, uint64_t thread, uint32_t stack,
                                 uint64_t weight_ns);
LP_INTERNAL uint32_t lp_timeline_count(const lp_timeline *tl);
LP_INTERNAL uint32_t lp_timeline_stride(const lp_timeline *tl);
/* The entries, count of them, in drain order (per thread in time order). */
LP_INTERNAL const lp_timeline_entry *lp_timeline_entries(const lp_timeline *tl);

/* The process-wide timeline the sampler's drain appends to (created on
 * first use, capacity LP_TIMELINE_CAPACITY; NULL if that failed). */
#define LP_TIMELINE_CAPACITY (1u << 20)
LP_INTERNAL lp_timeline *lp_timeline_global(void);

#endif
