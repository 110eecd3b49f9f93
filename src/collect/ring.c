/* base: SPSC ring of variable-length records (see ring.h).
 * Record = 8-byte header (uint32 length) + payload padded to 8 bytes. A
 * record never wraps: when the contiguous space to the end is too short the
 * producer writes a WRAP header and starts again at offset 0. */
#include "collect/ring.h"

#include <string.h>

#define WRAP 0xffffffffu
#define HDR  8u

static uint32_t padded(uint32_t len) { return (len + 7u) & ~7u; }

int lp_ring_init(lp_ring *r, void *buf, uint32_t size) {
    if (size < 64 || (size & (size - 1))) return -1;
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->size = size;
    return 0;
}

void *lp_ring_reserve(lp_ring *r, uint32_t len) {
    uint64_t head = r->head; /* only we write it */
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t need = HDR + padded(len);
    uint32_t at = (uint32_t)(head & (r->size - 1));
    uint32_t to_end = r->size - at;
    uint64_t used = head - tail;
    if (need > r->size / 2) goto full;
    if (to_end < need) { /* skip to the start; the skipped bytes count as used */
        if (used + to_end + need > r->size) goto full;
        *(uint32_t *)(r->buf + at) = WRAP;
        head += to_end;
        __atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
        at = 0;
    } else if (used + need > r->size) {
        goto full;
    }
    return r->buf + at + HDR;
full:
    __atomic_store_n(&r->dropped, r->dropped + 1, __ATOMIC_RELAXED);
    return NULL;
}

void lp_ring_commit(lp_ring *r, uint32_t len) {
    uint32_t at = (uint32_t)(r->head & (r->size - 1));
    *(uint32_t *)(r->buf + at) = len;
    __atomic_store_n(&r->head, r->head + HDR + padded(len), __ATOMIC_RELEASE);
}

void *lp_ring_peek(lp_ring *r, uint32_t *len) {
    for (;;) {
        uint64_t tail = r->tail;
        uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        if (tail == head) return NULL;
        uint32_t at = (uint32_t)(tail & (r->size - 1));
        uint32_t l = *(uint32_t *)(r->buf + at);
        if (l == WRAP) {
            __atomic_store_n(&r->tail, tail + (r->size - at), __ATOMIC_RELEASE);
            continue;
        }
        *len = l;
        return r->buf + at + HDR;
    }
}

void lp_ring_release(lp_ring *r) {
    uint32_t at = (uint32_t)(r->tail & (r->size - 1));
    uint32_t l = *(uint32_t *)(r->buf + at);
    __atomic_store_n(&r->tail, r->tail + HDR + padded(l), __ATOMIC_RELEASE);
}

int lp_ring_half_full(const lp_ring *r) {
    return r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) > r->size / 2;
}

int lp_ring_mostly_full(const lp_ring *r) {
    uint64_t used = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    return used > r->size / 4 * 3;
}

int lp_ring_empty(const lp_ring *r) {
    return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

void lp_ring_reset(lp_ring *r) {
    __atomic_store_n(&r->tail, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}
