/* aggregate: the stacks' sampled time split by asyncio task (task_split.h).
 * Open addressing on (stack, task); a second array lists the used slots in
 * the order they were taken, for the snapshot to read back. */
#include "aggregate/task_split.h"

#include <stdlib.h>

#include "common/hash.h"

_Static_assert(LP_M_CPU_PYTHON == 0, "the sampling columns come first in metrics.h");

struct lp_task_split {
    uint64_t *keys; /* (stack << 32 | task); 0 = free (a task is never 0) */
    int64_t (*values)[LP_TASK_SPLIT_METRICS];
    uint32_t *order; /* used slots, in the order taken */
    uint32_t mask, count;
    uint64_t full;
};

lp_task_split *lp_task_split_create(uint32_t capacity) {
    uint32_t n = 16;
    while (n < capacity && n < (1u << 30)) n <<= 1;
    lp_task_split *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    /* calloc: large blocks come zeroed from the kernel, touched on use */
    t->keys = calloc(n, sizeof *t->keys);
    t->values = calloc(n, sizeof *t->values);
    t->order = calloc(n, sizeof *t->order);
    t->mask = n - 1;
    if (!t->keys || !t->values || !t->order) {
        lp_task_split_destroy(t);
        return NULL;
    }
    return t;
}

void lp_task_split_destroy(lp_task_split *t) {
    if (!t) return;
    free(t->keys);
    free(t->values);
    free(t->order);
    free(t);
}

void lp_task_split_clear(lp_task_split *t) {
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t s = t->order[i];
        t->keys[s] = 0;
        for (int m = 0; m < LP_TASK_SPLIT_METRICS; m++) t->values[s][m] = 0;
    }
    t->count = 0;
    t->full = 0;
}

void lp_task_split_add(lp_task_split *t, uint32_t stack, uint32_t task, lp_metric m, int64_t value) {
    if (!t || task == 0 || (int)m < 0 || (int)m >= LP_TASK_SPLIT_METRICS || value == 0) return;
    uint64_t key = (uint64_t)stack << 32 | task;
    /* at most three quarters full: probes stay short */
    for (uint32_t i = (uint32_t)lp_hash_mix64(key) & t->mask;; i = (i + 1) & t->mask) {
        if (t->keys[i] == key) {
            t->values[i][m] += value;
            return;
        }
        if (t->keys[i] != 0) continue;
        if ((uint64_t)(t->count + 1) * 4 > (uint64_t)(t->mask + 1) * 3) {
            t->full++;
            return;
        }
        t->keys[i] = key;
        t->values[i][m] = value;
        t->order[t->count++] = i;
        return;
    }
}

uint32_t lp_task_split_count(const lp_task_split *t) { return t ? t->count : 0; }

uint64_t lp_task_split_full(const lp_task_split *t) { return t ? t->full : 0; }

void lp_task_split_get(const lp_task_split *t, uint32_t i, uint32_t *stack, uint32_t *task,
                       int64_t values[LP_TASK_SPLIT_METRICS]) {
    uint32_t s = t->order[i];
    *stack = (uint32_t)(t->keys[s] >> 32);
    *task = (uint32_t)t->keys[s];
    for (int m = 0; m < LP_TASK_SPLIT_METRICS; m++) values[m] = t->values[s][m];
}
