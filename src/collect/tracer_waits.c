/* tracer: the suspended frames' table (see tracer_waits.h). */
#include "collect/tracer_waits.h"

#include <stdlib.h>
#include <string.h>

#include "common/own_alloc.h"

#define WAYS 8
#define FIRST_SETS 2048 /* powers of two */
#define MAX_SETS 32768

static lp_tw_entry *table; /* sets * WAYS, lazily */
static size_t sets;
static uint64_t evicted;

static uint64_t hash_of(const void *frame) {
    uint64_t h = (uint64_t)(uintptr_t)frame;
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ull;
    return h >> 32;
}

static lp_tw_entry *set_of(const void *frame) { return &table[(hash_of(frame) & (sets - 1)) * WAYS]; }

/* A free way of frame's set, or NULL when all eight are taken. */
static lp_tw_entry *free_way(const void *frame) {
    lp_tw_entry *set = set_of(frame);
    for (int i = 0; i < WAYS; i++)
        if (set[i].frame == NULL) return &set[i];
    return NULL;
}

/* Doubles the sets: each old set splits over two new ones (one more hash
 * bit), so every entry finds a free way. 0, or -1 at the cap or when the
 * allocation fails (the old table stays). */
static int grow(void) {
    size_t want = sets ? sets * 2 : FIRST_SETS;
    if (want > MAX_SETS) return -1;
    lp_tw_entry *fresh = lp_own_calloc(want * WAYS, sizeof *fresh);
    if (fresh == NULL) return -1;
    lp_tw_entry *old = table;
    size_t old_sets = sets;
    table = fresh;
    sets = want;
    for (size_t i = 0; i < old_sets * WAYS; i++)
        if (old[i].frame != NULL) *free_way(old[i].frame) = old[i];
    free(old);
    return 0;
}

int lp_tw_put(const lp_tw_entry *e) {
    if (table == NULL && grow() < 0) {
        evicted++;
        return -1;
    }
    lp_tw_entry *set = set_of(e->frame), *slot = NULL;
    for (int i = 0; i < WAYS && slot == NULL; i++)
        if (set[i].frame == e->frame) slot = &set[i];
    if (slot == NULL) slot = free_way(e->frame);
    if (slot == NULL && grow() == 0) slot = free_way(e->frame);
    if (slot == NULL) { /* at the cap: the one suspended longest ago makes room */
        set = set_of(e->frame);
        slot = &set[0];
        for (int i = 1; i < WAYS; i++)
            if (set[i].t < slot->t) slot = &set[i];
        evicted++;
    }
    *slot = *e;
    return 0;
}

int lp_tw_take(const void *frame, const void *code, lp_tw_entry *out) {
    if (table == NULL || frame == NULL) return 0;
    lp_tw_entry *set = set_of(frame);
    for (int i = 0; i < WAYS; i++) {
        if (set[i].frame != frame) continue;
        if (set[i].code != code) return 0; /* a dead frame's: another code suspends there next */
        *out = set[i];
        set[i].frame = NULL;
        return 1;
    }
    return 0;
}

uint64_t lp_tw_evicted(void) { return evicted; }

void lp_tw_reset(void) {
    if (table != NULL) memset(table, 0, sets * WAYS * sizeof *table);
    evicted = 0;
}
