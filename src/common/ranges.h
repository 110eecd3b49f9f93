/* common: a few address ranges as one set, read inside signal handlers.
 * The interpreter's eval loop can be more than one range: an optimising
 * build (GCC's hot/cold partitioning under PGO, as Debian's CPython 3.14
 * has) splits _PyEval_EvalFrameDefault into its exported entry and a
 * separate, unnamed body where the calls happen. */
#ifndef LPROF_COMMON_RANGES_H
#define LPROF_COMMON_RANGES_H

#include <stdint.h>

#include "common/base.h"

#define LP_RANGES_MAX 4

typedef struct {
    int n;
    uintptr_t lo[LP_RANGES_MAX], hi[LP_RANGES_MAX]; /* [lo, hi) */
} lp_ranges;

static inline int lp_ranges_has(const lp_ranges *r, uintptr_t a) LP_SIGNAL_SAFE;
static inline int lp_ranges_has(const lp_ranges *r, uintptr_t a) {
    for (int i = 0; i < r->n && i < LP_RANGES_MAX; i++)
        if (a >= r->lo[i] && a < r->hi[i]) return 1;
    return 0;
}

/* Adds [lo, hi); an empty range, one already held, or one past the limit
 * is left out. Returns 1 when added. Not for use while a reader runs. */
static inline int lp_ranges_add(lp_ranges *r, uintptr_t lo, uintptr_t hi) {
    if (lo >= hi || r->n >= LP_RANGES_MAX) return 0;
    for (int i = 0; i < r->n; i++)
        if (r->lo[i] == lo && r->hi[i] == hi) return 0;
    r->lo[r->n] = lo;
    r->hi[r->n] = hi;
    r->n++;
    return 1;
}

#endif
