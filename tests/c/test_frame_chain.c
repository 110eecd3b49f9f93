/* frame_chain: a thread's stacks as changes from its previous one. Random
 * walks of a stack (calls and returns at the leaf, a line moving, a frame
 * flag changing) go through the encoding and come back whole; the records
 * keep only what changed; a record that cannot follow is refused. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "collect/frame_chain.h"

static int codes[64]; /* their addresses are the fake code objects */

static lp_rawframe frame(int code, int32_t offset, uint32_t flags) {
    lp_rawframe f = {&codes[code], offset, flags};
    return f;
}

static int same_stack(const lp_rawframe *a, const lp_rawframe *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (a[i].code != b[i].code || a[i].offset != b[i].offset || a[i].flags != b[i].flags) return 0;
    return 1;
}

/* one record as the handler leaves it: frames[0 .. n - shared) */
static uint32_t send(lp_frame_chain *producer, const lp_rawframe *leaf_first, uint32_t n, lp_rawframe *kept) {
    uint32_t shared = lp_frame_chain_encode(producer, leaf_first, n);
    memcpy(kept, leaf_first, (n - shared) * sizeof *kept);
    return shared;
}

TEST(random_walks_come_back_whole) {
    static lp_frame_chain producer, consumer;
    lp_frame_chain_reset(&producer);
    lp_frame_chain_reset(&consumer);
    lp_rawframe root_first[LP_FRAME_CHAIN_MAX], leaf_first[LP_FRAME_CHAIN_MAX];
    lp_rawframe kept[LP_FRAME_CHAIN_MAX], out[LP_FRAME_CHAIN_MAX];
    uint32_t n = 0, total_kept = 0, total = 0;
    srand(7);
    for (int step = 0; step < 20000; step++) {
        int op = rand() % 10;
        if ((op < 3 && n < LP_FRAME_CHAIN_MAX) || n == 0)
            root_first[n++] = frame(rand() % 64, rand() % 100, 0); /* a call */
        else if (op < 5) n--;                                      /* a return */
        else if (op < 8) root_first[n - 1].offset = rand() % 100;  /* the leaf's line moves */
        else if (op == 8) root_first[rand() % n].flags ^= 1u;      /* a flag changes (same code, same line) */
        /* else: the same stack again */
        if (n == 0) continue;
        for (uint32_t i = 0; i < n; i++) leaf_first[i] = root_first[n - 1 - i];
        uint32_t shared = send(&producer, leaf_first, n, kept);
        int got = lp_frame_chain_decode(&consumer, kept, n - shared, shared, out, LP_FRAME_CHAIN_MAX);
        REQUIRE(got == (int)n);
        REQUIRE(same_stack(out, leaf_first, n));
        total_kept += n - shared;
        total += n;
    }
    CHECK(total_kept * 5 < total); /* the leaf side changes, the root side stays */
}

TEST(a_deep_recursion_keeps_only_its_leaf) {
    static lp_frame_chain producer, consumer;
    lp_frame_chain_reset(&producer);
    lp_frame_chain_reset(&consumer);
    lp_rawframe leaf_first[LP_FRAME_CHAIN_MAX], kept[LP_FRAME_CHAIN_MAX], out[LP_FRAME_CHAIN_MAX];
    for (int i = 0; i < LP_FRAME_CHAIN_MAX; i++) leaf_first[i] = frame(1, 40, 0);
    CHECK_EQ_INT(send(&producer, leaf_first, LP_FRAME_CHAIN_MAX, kept), 0); /* the first is whole */
    CHECK_EQ_INT(lp_frame_chain_decode(&consumer, kept, LP_FRAME_CHAIN_MAX, 0, out, LP_FRAME_CHAIN_MAX),
                 LP_FRAME_CHAIN_MAX);
    for (int line = 0; line < 50; line++) {
        leaf_first[0].offset = 60 + line % 2;
        uint32_t shared = send(&producer, leaf_first, LP_FRAME_CHAIN_MAX, kept);
        CHECK_EQ_INT(shared, LP_FRAME_CHAIN_MAX - 1);
        CHECK_EQ_INT(lp_frame_chain_decode(&consumer, kept, 1, shared, out, LP_FRAME_CHAIN_MAX),
                     LP_FRAME_CHAIN_MAX);
        CHECK(same_stack(out, leaf_first, LP_FRAME_CHAIN_MAX));
    }
    /* the same stack again: nothing kept at all */
    CHECK_EQ_INT(send(&producer, leaf_first, LP_FRAME_CHAIN_MAX, kept), LP_FRAME_CHAIN_MAX);
}

TEST(a_record_that_cannot_follow_is_refused) {
    static lp_frame_chain producer, consumer;
    lp_frame_chain_reset(&producer);
    lp_frame_chain_reset(&consumer);
    lp_rawframe leaf_first[3] = {frame(2, 1, 0), frame(1, 1, 0), frame(0, 1, 0)};
    lp_rawframe kept[3], out[LP_FRAME_CHAIN_MAX];
    CHECK_EQ_INT(send(&producer, leaf_first, 3, kept), 0);
    /* the drain never saw that record (its chain is empty): the next one,
     * sharing 2 frames, cannot be rebuilt */
    leaf_first[0].offset = 5;
    uint32_t shared = send(&producer, leaf_first, 3, kept);
    CHECK_EQ_INT(shared, 2);
    CHECK_EQ_INT(lp_frame_chain_decode(&consumer, kept, 1, shared, out, LP_FRAME_CHAIN_MAX), -1);
    /* a whole stack (a new registration resets the producer) starts again */
    lp_frame_chain_reset(&producer);
    CHECK_EQ_INT(send(&producer, leaf_first, 3, kept), 0);
    CHECK_EQ_INT(lp_frame_chain_decode(&consumer, kept, 3, 0, out, LP_FRAME_CHAIN_MAX), 3);
    CHECK(same_stack(out, leaf_first, 3));
    /* no room for the whole stack: refused, not overrun */
    CHECK_EQ_INT(lp_frame_chain_decode(&consumer, kept, 3, 0, out, 2), -1);
}

RUN_TESTS(random_walks_come_back_whole, a_deep_recursion_keeps_only_its_leaf,
          a_record_that_cannot_follow_is_refused)
