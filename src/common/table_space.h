/* common: the bounded tables' two shared steps (aggregate/gpu_trace.c,
 * gpu_idle.c): a capacity read from the environment, and address space
 * for a table that grows only when a bigger one is asked for (MAP_NORESERVE:
 * pages are touched as records arrive). */
#ifndef LPROF_COMMON_TABLE_SPACE_H
#define LPROF_COMMON_TABLE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

/* The number in environment variable `name` (decimal, at most `max`), else
 * `dflt` (unset, empty or not a number). */
LP_INTERNAL uint32_t lp_env_cap(const char *name, uint32_t dflt, uint32_t max);
/* *table holds at least `bytes` after it (*have: its size), mapped anew
 * only when bigger is asked; 0, or -1 with *table NULL and *have 0. */
LP_INTERNAL int lp_table_reserve(void **table, size_t *have, size_t bytes);

#endif
