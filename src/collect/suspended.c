/* collect: the suspended frames' tables (see suspended.h). */
#include "collect/suspended.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/own_alloc.h"

#define WAYS       8
#define FIRST_SETS 2048 /* powers of two */
#define MAX_SETS   32768

uint64_t lp_suspended_hash(const void *frame) { return lp_hash_fib32((uint64_t)(uintptr_t)frame); }

static lp_suspended *set_of(lp_suspended_table *tab, const void *frame) {
    return &tab->entries[(lp_suspended_hash(frame) & (tab->sets - 1)) * WAYS];
}

/* A free way of frame's set, or NULL when all eight are taken. */
static lp_suspended *free_way(lp_suspended_table *tab, const void *frame) {
    lp_suspended *set = set_of(tab, frame);
    for (int i = 0; i < WAYS; i++)
        if (set[i].frame == NULL) return &set[i];
    return NULL;
}

/* Doubles the sets: each old set splits over two new ones (one more hash
 * bit), so every entry finds a free way. 0, or -1 at the cap or when the
 * allocation fails (the old table stays). */
static int grow(lp_suspended_table *tab) {
    size_t want = tab->sets ? tab->sets * 2 : FIRST_SETS;
    if (want > MAX_SETS) return -1;
    lp_suspended *fresh = lp_own_calloc(want * WAYS, sizeof *fresh);
    if (fresh == NULL) return -1;
    lp_suspended *old = tab->entries;
    size_t old_sets = tab->sets;
    tab->entries = fresh;
    tab->sets = want;
    for (size_t i = 0; i < old_sets * WAYS; i++)
        if (old[i].frame != NULL) *free_way(tab, old[i].frame) = old[i];
    free(old);
    return 0;
}

int lp_suspended_put(lp_suspended_table *tab, const lp_suspended *e) {
    if (tab->entries == NULL && grow(tab) < 0) {
        tab->evicted++;
        return -1;
    }
    lp_suspended *set = set_of(tab, e->frame), *slot = NULL;
    for (int i = 0; i < WAYS && slot == NULL; i++)
        if (set[i].frame == e->frame) slot = &set[i];
    if (slot == NULL) slot = free_way(tab, e->frame);
    /* One doubling may leave the set full (its eight and this one all share
     * the next hash bit: 1 in 256), so double until there is room or the cap. */
    while (slot == NULL && grow(tab) == 0) slot = free_way(tab, e->frame);
    if (slot == NULL) { /* at the cap: the one suspended longest ago makes room */
        set = set_of(tab, e->frame);
        slot = &set[0];
        for (int i = 1; i < WAYS; i++)
            if (set[i].t < slot->t) slot = &set[i];
        tab->evicted++;
    }
    *slot = *e;
    return 0;
}

int lp_suspended_take(lp_suspended_table *tab, const void *frame, const void *code, lp_suspended *out) {
    if (tab->entries == NULL || frame == NULL) return 0;
    lp_suspended *set = set_of(tab, frame);
    for (int i = 0; i < WAYS; i++) {
        if (set[i].frame != frame) continue;
        if (set[i].code != code) return 0; /* a dead frame's: another code suspends there next */
        *out = set[i];
        set[i].frame = NULL;
        return 1;
    }
    return 0;
}

void lp_suspended_reset(lp_suspended_table *tab) {
    if (tab->entries != NULL) memset(tab->entries, 0, tab->sets * WAYS * sizeof *tab->entries);
    tab->evicted = 0;
}
