/* aggregate: the sampled time of each stack split by the asyncio task that
 * ran it (3.14+: the sampler stamps each sample with the running task's
 * serial, collect/cpython/task_ids.h). The stack table's rows stay whole;
 * this table holds, for (stack, task) pairs, the part of the row's
 * sampling columns (metrics.h group SAMPLING) that task took, so that the
 * task view (python/lprof/model/task_stacks.py) can draw each task apart.
 *
 * Context: GIL held for every call (the drain and the await collector
 * write, the snapshot reads). Fixed capacity, allocated at create: a pair
 * past it is counted (lp_task_split_full) and its time stays in the stack's
 * row only, where the view draws it under the task's coroutine record. */
#ifndef LPROF_AGGREGATE_TASK_SPLIT_H
#define LPROF_AGGREGATE_TASK_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate/metrics.h"
#include "common/base.h"

typedef struct lp_task_split lp_task_split;

/* The sampling columns a pair holds: metrics.h's first ones, in order. */
#define LP_TASK_SPLIT_METRICS (LP_M_GIL + 1)

/* capacity: pairs (rounded up to a power of two, at least 16). NULL when
 * the memory cannot be had. */
LP_INTERNAL lp_task_split *lp_task_split_create(uint32_t capacity);
LP_INTERNAL void lp_task_split_destroy(lp_task_split *t);
LP_INTERNAL void lp_task_split_clear(lp_task_split *t);
/* Adds value to the pair's column m; a metric outside the sampling columns,
 * task 0 (no task) or a full table adds nothing (the last is counted). */
LP_INTERNAL void lp_task_split_add(lp_task_split *t, uint32_t stack, uint32_t task, lp_metric m,
                                   int64_t value);
/* Pairs held, and values refused for want of room. */
LP_INTERNAL uint32_t lp_task_split_count(const lp_task_split *t);
LP_INTERNAL uint64_t lp_task_split_full(const lp_task_split *t);
/* The i-th held pair (0 <= i < count, in no particular order): its stack,
 * task and columns. */
LP_INTERNAL void lp_task_split_get(const lp_task_split *t, uint32_t i, uint32_t *stack, uint32_t *task,
                                   int64_t values[LP_TASK_SPLIT_METRICS]);

#endif
