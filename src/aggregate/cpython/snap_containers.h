/* aggregate: the two growable containers the stack snapshot builds with:
 * an open-addressing map from a 64-bit key to an int32 value, and a vector
 * of fixed-size items. Plain malloc (the snapshot runs with the GIL, never
 * in a hook or a signal handler). */
#ifndef LPROF_AGGREGATE_CPYTHON_SNAP_CONTAINERS_H
#define LPROF_AGGREGATE_CPYTHON_SNAP_CONTAINERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

/* a growable open-addressing map: 64-bit key -> int32 value */
typedef struct {
    uint64_t *keys; /* key + 1; 0 = empty */
    int32_t *vals;
    size_t mask, used;
} idmap;

static inline int idmap_init(idmap *m, size_t expect) {
    size_t cap = 1024;
    while (cap < 2 * expect) cap <<= 1;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->mask = cap - 1;
    m->used = 0;
    return m->keys && m->vals ? 0 : -1;
}

static inline void idmap_free(idmap *m) {
    free(m->keys);
    free(m->vals);
}

/* Slot of key: found (keys[i] == key + 1) or empty. */
static inline size_t idmap_slot(const idmap *m, uint64_t key) {
    size_t i = (size_t)lp_hash_mix64(key) & m->mask;
    while (m->keys[i] && m->keys[i] != key + 1) i = (i + 1) & m->mask;
    return i;
}

static inline int idmap_grow(idmap *m) {
    idmap bigger;
    if (idmap_init(&bigger, m->mask + 1) < 0) {
        idmap_free(&bigger);
        return -1;
    }
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->keys[i]) continue;
        size_t j = idmap_slot(&bigger, m->keys[i] - 1);
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    bigger.used = m->used;
    idmap_free(m);
    *m = bigger;
    return 0;
}

/* a growable array of items of `item` bytes */
typedef struct {
    char *data;
    size_t len, cap, item;
} vec;

static inline int vec_push(vec *v, const void *item) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 1024;
        char *d = realloc(v->data, cap * v->item);
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    memcpy(v->data + v->len * v->item, item, v->item);
    v->len++;
    return 0;
}

#endif
