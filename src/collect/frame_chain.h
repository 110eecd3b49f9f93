/* collect: a thread's stacks sent as changes from its previous one.
 *
 * Consecutive samples of a thread mostly share their root side (a 500-deep
 * recursion, a server's request stack): the signal handler writes only the
 * leaf-side frames that differ from the thread's previous sample, and how
 * many root-side frames the two share; the drain rebuilds the whole stack
 * from its own copy of the previous one. A ring of 256 KiB then holds
 * thousands of deep samples instead of 64, so a 100 ms drain period keeps
 * up at 10 kHz (issue #35: deep stacks at the rate asked).
 *
 * Both sides keep one chain per ring. The producer's chain changes only
 * with a record it commits; a record sharing nothing (the first after a
 * registration) depends on no earlier one, so the two chains cannot drift
 * apart: the drain's is rebuilt from the records it reads, in order. */
#ifndef LPROF_COLLECT_FRAME_CHAIN_H
#define LPROF_COLLECT_FRAME_CHAIN_H

#include <stdint.h>

#include "common/base.h"
#include "common/rawframe.h"

#define LP_FRAME_CHAIN_MAX 256 /* frames kept: the sampler's depth */

typedef struct {
    uint32_t n;
    lp_rawframe root_first[LP_FRAME_CHAIN_MAX];
} lp_frame_chain;

/* Producer: `frames` (leaf first, n <= LP_FRAME_CHAIN_MAX) were captured.
 * Returns how many root-side frames equal the chain's (code, offset and
 * flags); the chain becomes `frames`. The record then keeps frames[0 ..
 * n - shared), which are already in place. Signal-safe: loads and stores. */
LP_INTERNAL uint32_t lp_frame_chain_encode(lp_frame_chain *c, const lp_rawframe *frames,
                                           uint32_t n) LP_SIGNAL_SAFE;

/* Consumer: a record of `kept` leaf-side frames (leaf first) and `shared`
 * root-side frames of the chain. Writes the whole stack, leaf first, into
 * out (room for `max`) and makes it the chain; returns its depth, or -1
 * when the record cannot follow the chain (shared beyond it, or too deep). */
LP_INTERNAL int lp_frame_chain_decode(lp_frame_chain *c, const lp_rawframe *kept, uint32_t nkept,
                                      uint32_t shared, lp_rawframe *out, uint32_t max);

/* Either side: forget the previous stack (the next record shares nothing).
 * Atomic: a slot's registration resets the wall thread's chain, which that
 * thread may be encoding into; any order leaves both ends agreeing. */
static inline void lp_frame_chain_reset(lp_frame_chain *c) { __atomic_store_n(&c->n, 0, __ATOMIC_RELAXED); }

#endif
