/* aggregate: the memory account (see memacct.h). */
#define _GNU_SOURCE
#include "aggregate/memacct.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "common/own_map.h"
#include "common/spinlock.h"

struct lp_memacct {
    lp_stacktab *tab;
    int lock;
    uint64_t t0_ns;
    double live; /* sum over stacks of allocated - freed */
    double peak;
    uint64_t peak_t_ns;
    double snap_peak; /* live when PEAK_BYTES was last copied */
    double unattributed_freed;
    /* timeline of (seconds since t0, live bytes); halves itself when full */
    double tl[LP_MEMACCT_TIMELINE][2];
    uint32_t tl_len;
    uint64_t tl_min_dt_ns;
    uint64_t tl_last_ns;
    double tl_last_live;
};

lp_memacct *lp_memacct_create(lp_stacktab *tab, uint64_t t0_ns) {
    lp_memacct *a = lp_own_map(sizeof *a, 0);
    if (a == MAP_FAILED) return NULL;
    a->tab = tab;
    lp_memacct_reset(a, t0_ns);
    return a;
}

void lp_memacct_destroy(lp_memacct *a) {
    if (a) lp_own_unmap(a, sizeof *a);
}

void lp_memacct_reset(lp_memacct *a, uint64_t t0_ns) {
    lp_spin_lock(&a->lock);
    lp_stacktab *tab = a->tab;
    memset((char *)a + offsetof(lp_memacct, t0_ns), 0, sizeof *a - offsetof(lp_memacct, t0_ns));
    a->tab = tab;
    a->t0_ns = t0_ns;
    a->tl_min_dt_ns = 10 * 1000 * 1000; /* 10 ms, doubled each time the timeline halves */
    lp_spin_unlock(&a->lock);
}

void lp_memacct_lock(lp_memacct *a) { lp_spin_lock(&a->lock); }
void lp_memacct_unlock(lp_memacct *a) { lp_spin_unlock(&a->lock); }

static void timeline_push(lp_memacct *a, uint64_t t_ns) {
    if (a->tl_len == LP_MEMACCT_TIMELINE) {
        /* keep every other point and halve the rate: bounded, still spans the run */
        for (uint32_t i = 0; i < LP_MEMACCT_TIMELINE / 2; i++) {
            a->tl[i][0] = a->tl[2 * i][0];
            a->tl[i][1] = a->tl[2 * i][1];
        }
        a->tl_len = LP_MEMACCT_TIMELINE / 2;
        a->tl_min_dt_ns *= 2;
    }
    double t = t_ns > a->t0_ns ? (double)(t_ns - a->t0_ns) * 1e-9 : 0.0;
    a->tl[a->tl_len][0] = t;
    a->tl[a->tl_len][1] = a->live > 0 ? a->live : 0;
    a->tl_len++;
    a->tl_last_ns = t_ns;
    a->tl_last_live = a->live;
}

static void maybe_timeline(lp_memacct *a, uint64_t t_ns) {
    double change = fabs(a->live - a->tl_last_live);
    if (a->tl_len == 0 || t_ns - a->tl_last_ns >= a->tl_min_dt_ns ||
        (change > 0.05 * a->peak && t_ns - a->tl_last_ns >= a->tl_min_dt_ns / 16))
        timeline_push(a, t_ns);
}

static void snapshot_peak(lp_memacct *a) {
    lp_stacktab_set_difference(a->tab, LP_M_PEAK_BYTES, LP_M_ALLOC_BYTES, LP_M_FREED_BYTES);
    a->snap_peak = a->live;
}

void lp_memacct_alloc(lp_memacct *a, uint32_t stack_plus1, double weight, uint64_t size, int python,
                      uint64_t t_ns) {
    lp_spin_lock(&a->lock);
    if (stack_plus1 != 0) {
        /* rows are written under the lock so that a peak snapshot (which
         * reads every row) sees allocated and freed bytes of one instant */
        uint32_t s = stack_plus1 - 1;
        int64_t bytes = llround(weight);
        lp_stacktab_add(a->tab, s, LP_M_ALLOC_BYTES, bytes);
        lp_stacktab_add(a->tab, s, LP_M_ALLOC_COUNT, llround(1000.0 * (size ? weight / (double)size : 1.0)));
        if (python) lp_stacktab_add(a->tab, s, LP_M_PYTHON_BYTES, bytes);
        lp_stacktab_add(a->tab, s, LP_M_ALLOC_SAMPLES, 1);
    }
    a->live += weight;
    if (a->live > a->peak) {
        a->peak = a->live;
        a->peak_t_ns = t_ns;
        /* copying every row on each new peak would be quadratic while memory
         * grows; 1% steps bound the error of the shares to 1% */
        if (a->live >= a->snap_peak * 1.01) snapshot_peak(a);
    }
    maybe_timeline(a, t_ns);
    lp_spin_unlock(&a->lock);
}

void lp_memacct_free(lp_memacct *a, uint32_t stack_plus1, double weight, uint64_t t_ns) {
    lp_spin_lock(&a->lock);
    if (stack_plus1 != 0) {
        lp_stacktab_add(a->tab, stack_plus1 - 1, LP_M_FREED_BYTES, llround(weight));
        lp_stacktab_add(a->tab, stack_plus1 - 1, LP_M_FREE_SAMPLES, 1);
    } else {
        a->unattributed_freed += weight;
    }
    a->live -= weight;
    maybe_timeline(a, t_ns);
    lp_spin_unlock(&a->lock);
}

void lp_memacct_mark(lp_memacct *a, uint64_t t_ns) {
    lp_spin_lock(&a->lock);
    if (a->peak > a->snap_peak && a->live >= a->peak) snapshot_peak(a);
    timeline_push(a, t_ns);
    lp_spin_unlock(&a->lock);
}

void lp_memacct_get_totals(lp_memacct *a, lp_memacct_totals *out) {
    lp_spin_lock(&a->lock);
    out->t0_ns = a->t0_ns;
    out->live = a->live;
    out->peak = a->peak;
    out->peak_t_ns = a->peak_t_ns;
    out->unattributed_freed = a->unattributed_freed;
    lp_spin_unlock(&a->lock);
}

uint32_t lp_memacct_timeline(lp_memacct *a, double (*out)[2], uint32_t max) {
    lp_spin_lock(&a->lock);
    uint32_t n = a->tl_len < max ? a->tl_len : max;
    memcpy(out, a->tl, n * sizeof a->tl[0]);
    lp_spin_unlock(&a->lock);
    return n;
}
