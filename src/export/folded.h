/* export: folded stacks (flamegraph.pl / inferno / speedscope input) and the
 * flame-graph layout, from plain arrays. Pure C, no Python; called by
 * export/cpython/fold_rows.c with the GIL held (may allocate).
 * Input: names[n_names] (frame text, sanitized here: ';' '\n' '\r' -> '_'),
 * stacks as frame-name ids root first: ids[offsets[i] .. offsets[i+1]),
 * values[i] (integers; <= 0 skipped). */
#ifndef LPROF_EXPORT_FOLDED_H
#define LPROF_EXPORT_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/base.h"

typedef struct {
    uint32_t depth; /* 0 = root frames */
    uint32_t name;  /* index into names */
    int64_t x;      /* start, in value units */
    int64_t width;  /* in value units */
} lp_flame_rect;

typedef struct lp_folded lp_folded;

/* Sorts (by the folded line text) and merges duplicate stacks. NULL on
 * out-of-memory or a bad id (then *err says which). */
LP_INTERNAL lp_folded *lp_folded_build(const char *const *names, size_t n_names, const uint32_t *ids,
                                       const size_t *offsets, const int64_t *values, size_t n_stacks,
                                       const char **err);
LP_INTERNAL void lp_folded_free(lp_folded *f);
/* Number of distinct stacks and the sum of their values. */
LP_INTERNAL size_t lp_folded_count(const lp_folded *f);
LP_INTERNAL int64_t lp_folded_total(const lp_folded *f);
/* Writes "a;b;c value\n" lines. 0, or -1 on a write error. */
LP_INTERNAL int lp_folded_write(const lp_folded *f, FILE *out);
/* Flame-graph rectangles of width >= min_width (merged by name along
 * prefixes, as flamegraph.pl does). Returns a malloc'd array (count in *n),
 * NULL on out-of-memory. */
LP_INTERNAL lp_flame_rect *lp_folded_flame(const lp_folded *f, int64_t min_width, size_t *n);

#endif
