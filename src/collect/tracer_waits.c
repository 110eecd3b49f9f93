/* tracer: the suspended frames' table (see tracer_waits.h). */
#include "collect/tracer_waits.h"

#include <string.h>

#include "common/own_alloc.h"

#define WAYS 8
#define SETS 2048 /* power of two */

static lp_tw_entry *table; /* SETS * WAYS, lazily */
static uint64_t evicted;

static size_t set_of(const void *frame) {
    uint64_t h = (uint64_t)(uintptr_t)frame;
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 40) & (SETS - 1);
}

int lp_tw_put(const lp_tw_entry *e) {
    if (table == NULL) {
        table = lp_own_calloc((size_t)SETS * WAYS, sizeof *table);
        if (table == NULL) {
            evicted++;
            return -1;
        }
    }
    lp_tw_entry *set = &table[set_of(e->frame) * WAYS], *slot = NULL;
    for (int i = 0; i < WAYS && slot == NULL; i++)
        if (set[i].frame == e->frame) slot = &set[i];
    for (int i = 0; i < WAYS && slot == NULL; i++)
        if (set[i].frame == NULL) slot = &set[i];
    if (slot == NULL) {
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
    lp_tw_entry *set = &table[set_of(frame) * WAYS];
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
    if (table != NULL) memset(table, 0, (size_t)SETS * WAYS * sizeof *table);
    evicted = 0;
}
