/* aggregate: the one write API for collectors (sampler, memory hooks, GPU).
 * agg owns the process-wide stack table; collectors never include
 * stacktab.h for writing, they call these.
 *
 * Locking and drain rules (the only place they are stated):
 * - lp_agg_intern / lp_agg_extend / lp_agg_add: any thread, GIL or not,
 *   inside malloc hooks; lock-free, no malloc, no Python. Not from a
 *   signal handler (the sampler handler writes its per-thread ring and the
 *   drain interns later, under the GIL).
 * - Code pointers stored in interned stacks are kept alive by the code
 *   registry (aggregate/cpython/resolve.c): its scan, run under the GIL after
 *   every drain (~100 ms), at stop and from the code-destruction hook, takes
 *   a strong reference on every code object that appears in a new node, so a
 *   code object can never die (and its address be reused) with unresolved
 *   stacks.
 * - Samples a collector holds outside the table (the sampler's per-thread
 *   rings) reach it through the collector's drain, which the collector
 *   registers here (lp_agg_set_source); aggregate calls lp_agg_drain and
 *   never a collector itself. GIL held for the source functions.
 * - lp_agg_reset: GIL held, no collector running. */
#ifndef LPROF_AGG_H
#define LPROF_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "aggregate/metrics.h"
#include "aggregate/stacktab.h"
#include "aggregate/task_split.h"

/* Creates the global tables (idempotent). 0 on success, -1 if mmap failed. */
LP_INTERNAL int lp_agg_init(void);
/* The global stack table (NULL before lp_agg_init). */
LP_INTERNAL lp_stacktab *lp_agg_stacks(void);
/* lp_stacktab_prefault on the global table (0 parts before lp_agg_init). */
LP_INTERNAL uint32_t lp_agg_prefault(uint32_t part);

/* Interns a raw stack, frames LEAF FIRST; thread = PyThreadState.thread_id.
 * Returns a stack id (LP_STACK_OVERFLOW when full; LP_STACK_OVERFLOW too
 * before lp_agg_init). */
LP_INTERNAL uint32_t lp_agg_intern(uint64_t thread, const lp_rawframe *frames, size_t n, int truncated);
/* One more frame under `stack` (lp_stacktab_extend). */
LP_INTERNAL uint32_t lp_agg_extend(uint32_t stack, void *code, int32_t offset);
LP_INTERNAL void lp_agg_add(uint32_t stack, lp_metric m, int64_t value);
/* The part of a sampling value (lp_agg_add's, already added) that asyncio
 * task `task` took (aggregate/task_split.h): GIL held; task 0 adds nothing. */
LP_INTERNAL void lp_agg_add_task(uint32_t stack, uint32_t task, lp_metric m, int64_t value);
/* The global task split (NULL before lp_agg_init); read under the GIL. */
LP_INTERNAL const lp_task_split *lp_agg_task_split(void);

/* A collector whose samples wait outside the table until drained (the
 * sampler: its rings). drain moves them in and returns how many; pending is
 * 1 while some wait; running is 1 while the collector runs. Registered once
 * at module init, GIL held; called with the GIL held. */
typedef struct {
    uint64_t (*drain)(void);
    int (*pending)(void);
    int (*running)(void);
    /* a code object is dying (NULL: nothing to do): returns once nothing
     * the source reads can still name it unseen (collect/outside_read.h) */
    void (*code_dying)(const void *code);
} lp_agg_source;
LP_INTERNAL void lp_agg_set_source(const lp_agg_source *source);
/* Tells the registered source a code object is dying (before its drain). */
LP_INTERNAL void lp_agg_code_dying(const void *code);
/* The registered source's drain (0 when none is registered). */
LP_INTERNAL uint64_t lp_agg_drain(void);
/* 1 when the registered source holds samples not yet drained. */
LP_INTERNAL int lp_agg_has_pending(void);
/* 1 while the registered source runs (the table may not be reset then). */
LP_INTERNAL int lp_agg_source_running(void);

/* Drops all stacks and rows (GIL held, no collector running). */
LP_INTERNAL void lp_agg_reset(void);

#endif
