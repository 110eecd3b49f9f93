/* collect: stacks as changes from the previous one (see frame_chain.h). */
#include "collect/frame_chain.h"

static int same_frame(const lp_rawframe *a, const lp_rawframe *b) {
    return a->code == b->code && a->offset == b->offset && a->flags == b->flags;
}

uint32_t lp_frame_chain_encode(lp_frame_chain *c, const lp_rawframe *frames, uint32_t n) {
    if (n > LP_FRAME_CHAIN_MAX) n = LP_FRAME_CHAIN_MAX;
    uint32_t had = __atomic_load_n(&c->n, __ATOMIC_RELAXED); /* see lp_frame_chain_reset */
    uint32_t limit = n < had ? n : had;
    uint32_t shared = 0;
    while (shared < limit && same_frame(&c->root_first[shared], &frames[n - 1 - shared])) shared++;
    for (uint32_t j = shared; j < n; j++) c->root_first[j] = frames[n - 1 - j];
    __atomic_store_n(&c->n, n, __ATOMIC_RELAXED);
    return shared;
}

int lp_frame_chain_decode(lp_frame_chain *c, const lp_rawframe *kept, uint32_t nkept, uint32_t shared,
                          lp_rawframe *out, uint32_t max) {
    uint32_t n = nkept + shared;
    if (shared > c->n || n > LP_FRAME_CHAIN_MAX || n > max) {
        c->n = 0; /* lost: the next record that shares nothing starts again */
        return -1;
    }
    for (uint32_t i = 0; i < nkept; i++) c->root_first[n - 1 - i] = kept[i];
    c->n = n;
    for (uint32_t i = 0; i < n; i++) out[i] = c->root_first[n - 1 - i];
    return (int)n;
}
