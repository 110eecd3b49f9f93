/* base: bounded single-producer single-consumer ring of variable-length
 * records in caller-provided memory, with a drop counter.
 * Producer side (reserve/commit) is signal-safe: plain loads/stores and
 * atomics, no malloc, no locks. One producer and one consumer at a time. */
#ifndef LPROF_RING_H
#define LPROF_RING_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

typedef struct {
    uint64_t head;    /* bytes ever produced; written by the producer */
    uint64_t tail;    /* bytes ever consumed; written by the consumer */
    uint64_t dropped; /* reservations refused (full); written by the producer */
    uint8_t *buf;
    uint32_t size; /* power of two, multiple of 8 */
} lp_ring;

/* size: power of two >= 64. Returns 0, or -1 for a bad size. */
LP_INTERNAL int lp_ring_init(lp_ring *r, void *buf, uint32_t size);
/* Space for a record of up to `len` bytes, 8-aligned; NULL (and dropped++)
 * when full. Follow with lp_ring_commit(actual_len <= len). */
LP_INTERNAL void *lp_ring_reserve(lp_ring *r, uint32_t len) LP_SIGNAL_SAFE;
LP_INTERNAL void lp_ring_commit(lp_ring *r, uint32_t len) LP_SIGNAL_SAFE;
/* Consumer: the oldest record (its length in *len) or NULL if empty. */
LP_INTERNAL void *lp_ring_peek(lp_ring *r, uint32_t *len);
LP_INTERNAL void lp_ring_release(lp_ring *r);
LP_INTERNAL int lp_ring_empty(const lp_ring *r);
/* Producer: whether more than half the ring is in use (time to drain). */
LP_INTERNAL int lp_ring_half_full(const lp_ring *r) LP_SIGNAL_SAFE;
/* Either side: more than three quarters in use (the drain is behind). */
LP_INTERNAL int lp_ring_mostly_full(const lp_ring *r) LP_SIGNAL_SAFE;
/* Consumer-side reset: drops everything (producer must be quiet). */
LP_INTERNAL void lp_ring_reset(lp_ring *r);

#endif
