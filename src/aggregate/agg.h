/* aggregate: the one write API for collectors (sampler, memory hooks, GPU).
 * agg owns the process-wide stack table; collectors never include
 * stacktab.h for writing, they call these.
 *
 * Locking and drain rules (the only place they are stated):
 * - lp_agg_intern / lp_agg_add / lp_agg_max / lp_agg_set: any thread, GIL or
 *   not, inside malloc hooks; lock-free, no malloc, no Python. Not from a
 *   signal handler (the sampler handler writes its per-thread ring and the
 *   drain interns later, under the GIL).
 * - Code pointers stored in interned stacks are kept alive by the sampler's
 *   code registry (collect/cpython/sampler.c): the drain, run under the GIL every ~100 ms,
 *   at stop and from the code-destruction hook, takes a strong reference on
 *   every code object that appears in a new node, so a code object can never
 *   die (and its address be reused) with unresolved stacks.
 * - lp_agg_reset: GIL held, no collector running. */
#ifndef LPROF_AGG_H
#define LPROF_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "aggregate/metrics.h"
#include "aggregate/stacktab.h"

/* Creates the global tables (idempotent). 0 on success, -1 if mmap failed. */
LP_INTERNAL int lp_agg_init(void);
/* The global stack table (NULL before lp_agg_init). */
LP_INTERNAL lp_stacktab *lp_agg_stacks(void);

/* Interns a raw stack, frames LEAF FIRST; thread = PyThreadState.thread_id.
 * Returns a stack id (LP_STACK_OVERFLOW when full; LP_STACK_OVERFLOW too
 * before lp_agg_init). */
LP_INTERNAL uint32_t lp_agg_intern(uint64_t thread, const lp_rawframe *frames, size_t n, int truncated);
/* One more frame under `stack` (lp_stacktab_extend). */
LP_INTERNAL uint32_t lp_agg_extend(uint32_t stack, void *code, int32_t offset);
LP_INTERNAL void lp_agg_add(uint32_t stack, lp_metric m, int64_t value);
LP_INTERNAL void lp_agg_max(uint32_t stack, lp_metric m, int64_t value);
LP_INTERNAL void lp_agg_set(uint32_t stack, lp_metric m, int64_t value);

/* Drops all stacks and rows (GIL held, no collector running). */
LP_INTERNAL void lp_agg_reset(void);

#endif
