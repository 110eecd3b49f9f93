/* aggregate: the memory account. Each sampled allocation and free adds to
 * its stack's row in the stack table (alloc/freed bytes, counts, Python
 * share, sample counts); the account itself keeps what is not per stack:
 * the running live total, its peak (copying every stack's live bytes into
 * the PEAK_BYTES column at each new peak, in 1% steps) and a bounded
 * timeline of live bytes.
 *
 * Stacks are passed as stack id + 1, the form the live-block tables store;
 * 0 means "not attributed" (a block sampled before the account started).
 * alloc/free are hook-safe: any thread, GIL or not, a short spin lock, no
 * malloc. The rest: GIL held. Opaque: read it through the accessors. */
#ifndef LPROF_AGGREGATE_MEMACCT_H
#define LPROF_AGGREGATE_MEMACCT_H

#include <stdint.h>

#include "aggregate/stacktab.h"
#include "common/base.h"

typedef struct lp_memacct lp_memacct;

#define LP_MEMACCT_TIMELINE 2048

/* Maps an account writing into `tab`; NULL when out of memory. */
LP_INTERNAL lp_memacct *lp_memacct_create(lp_stacktab *tab, uint64_t t0_ns);
LP_INTERNAL void lp_memacct_destroy(lp_memacct *a);
/* Forgets the totals and the timeline and restarts the clock at t0_ns (the
 * stack table's columns are the table owner's to clear). */
LP_INTERNAL void lp_memacct_reset(lp_memacct *a, uint64_t t0_ns);

/* A sampled allocation of `size` bytes standing for `weight` bytes. */
LP_INTERNAL void lp_memacct_alloc(lp_memacct *a, uint32_t stack_plus1, double weight, uint64_t size,
                                  int python, uint64_t t_ns) LP_HOOK_SAFE;
/* A sampled block was freed. */
LP_INTERNAL void lp_memacct_free(lp_memacct *a, uint32_t stack_plus1, double weight,
                                 uint64_t t_ns) LP_HOOK_SAFE;
/* Records the current live total in the timeline and takes the peak
 * snapshot if the live total is at its peak (e.g. at stop). */
LP_INTERNAL void lp_memacct_mark(lp_memacct *a, uint64_t t_ns);

typedef struct {
    uint64_t t0_ns;
    double live, peak;
    uint64_t peak_t_ns;
    double unattributed_freed; /* frees of blocks sampled before the start */
} lp_memacct_totals;
LP_INTERNAL void lp_memacct_get_totals(lp_memacct *a, lp_memacct_totals *out);
/* Copies up to max (seconds since t0, live bytes) points; returns how many. */
LP_INTERNAL uint32_t lp_memacct_timeline(lp_memacct *a, double (*out)[2], uint32_t max);

/* For fork handlers: hold the account across fork(). */
LP_INTERNAL void lp_memacct_lock(lp_memacct *a);
LP_INTERNAL void lp_memacct_unlock(lp_memacct *a);

#endif
