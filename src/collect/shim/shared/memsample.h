/* shim/shared (the shim and the extension both compile it): byte-interval
 * (Poisson) sampling of allocations.
 *
 * Every thread keeps a countdown of bytes until its next sample, drawn from
 * an exponential distribution of mean T. An allocation of s bytes is sampled
 * when the countdown crosses zero inside it, i.e. with probability
 * p = 1 - exp(-s/T); its weight s/p makes every sum of weights an unbiased
 * estimate of the bytes allocated (relative error ~ sqrt(T/N) for N bytes).
 * Pure C with no state of its own: shared by the shim and the extension. */
#ifndef LPROF_MEMSAMPLE_H
#define LPROF_MEMSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

#define LP_MEMSAMPLE_DEFAULT_BYTES 16384u

typedef struct lp_memsample {
    int64_t until; /* bytes left before the next sample */
    uint64_t rng;  /* xorshift64* state; 0 means not seeded */
    uint64_t mean; /* T in bytes (>= 1) */
} lp_memsample;

/* Seeds the generator and draws the first countdown. */
LP_INTERNAL void lp_memsample_init(lp_memsample *s, uint64_t mean_bytes, uint64_t seed) LP_HOOK_SAFE;

/* Draws a new countdown (call after a sample was taken). */
LP_INTERNAL void lp_memsample_redraw(lp_memsample *s) LP_HOOK_SAFE;

/* Unbiased weight in bytes of a sampled allocation of `size` bytes. */
LP_INTERNAL double lp_memsample_weight(uint64_t size, uint64_t mean) LP_HOOK_SAFE;

/* The sampled path's first step, the same in the shim and the PyMem hooks,
 * for an allocation whose countdown ran out (lp_memsample_step gave 1). A
 * thread's first allocation finds its sampler unseeded: it is seeded from
 * `seed` (bits that differ between threads: the sampler's address) and the
 * time, and the allocation is tested again against the seeded countdown;
 * 0: not sampled after all. Otherwise draws the next countdown at `mean`
 * and returns 1: sample it. */
LP_INTERNAL int lp_memsample_take(lp_memsample *s, uint64_t mean, size_t size, uint64_t seed) LP_HOOK_SAFE;

/* Hot path: 1 when this allocation is sampled. The caller must then call
 * lp_memsample_take() (kept apart so the hot path stays inline and tiny). */
static inline int lp_memsample_step(lp_memsample *s, size_t size) {
    s->until -= (int64_t)size;
    return LP_UNLIKELY(s->until <= 0);
}

#endif
