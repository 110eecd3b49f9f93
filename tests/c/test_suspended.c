/* collect/suspended.c: the table of suspended frames keeps every suspension
 * until its cap, however the frames' addresses fall into its sets. */
#include <stdint.h>
#include <stdlib.h>

#include "collect/suspended.h"
#include "harness.h"

#define FIRST_SLOTS (2048 * 8)

static char addresses[1 << 24]; /* many candidates: where they fall depends on ASLR */

/* Nine addresses whose hashes agree in their low `same` bits (one set of
 * every table up to 2^same sets) but, where differ > 0, not all in the low
 * `differ` bits. */
static int colliding(const void *out[9], int same, int differ) {
    uint64_t same_mask = ((uint64_t)1 << same) - 1, differ_mask = ((uint64_t)1 << differ) - 1;
    uint64_t want = lp_suspended_hash(&addresses[0]);
    int n = 0;
    out[n++] = &addresses[0];
    for (size_t i = 1; i < sizeof addresses && n < 9; i++) {
        uint64_t h = lp_suspended_hash(&addresses[i]);
        if ((h & same_mask) != (want & same_mask)) continue;
        /* the ninth must part from the first eight within the cap */
        if (differ && n == 8 && (h & differ_mask) == (want & differ_mask)) continue;
        if (differ && n < 8 && (h & differ_mask) != (want & differ_mask)) continue;
        out[n++] = &addresses[i];
    }
    return n;
}

static lp_suspended at(const void *frame, uint64_t t) {
    lp_suspended e = {.frame = frame, .code = &addresses[1], .t = t};
    return e;
}

/* Frame i suspends at 100 + i: every put succeeds (room or an eviction). */
static void put_nine(lp_suspended_table *tab, const void *frames[9]) {
    for (int i = 0; i < 9; i++) {
        lp_suspended e = at(frames[i], 100 + (uint64_t)i);
        CHECK_EQ_INT(lp_suspended_put(tab, &e), 0);
    }
}

/* Nine frames of one set in tables of 2048 to 8192 sets: the ninth finds
 * its set full, and one doubling (or two) leaves it full still; the table
 * keeps doubling until it fits, and none is evicted. (The await test with
 * 20,000 coroutines lost one wait this way, once, in CI on 3.12.) */
TEST(test_a_set_still_full_after_one_doubling_grows_again) {
    const void *frames[9];
    REQUIRE(colliding(frames, 13, 15) == 9);
    lp_suspended_table tab = {0};
    put_nine(&tab, frames);
    CHECK_EQ_INT(tab.evicted, 0);
    CHECK(tab.sets >= 16384);
    for (int i = 0; i < 9; i++) {
        lp_suspended out;
        CHECK_EQ_INT(lp_suspended_take(&tab, frames[i], &addresses[1], &out), 1);
        CHECK_EQ_INT(out.t, 100 + i);
    }
    free(tab.entries);
}

/* Nine frames sharing a set in every table up to the cap: the oldest goes,
 * counted, and the other eight stay. */
TEST(test_a_set_full_at_the_cap_evicts_its_oldest) {
    const void *frames[9];
    REQUIRE(colliding(frames, 15, 0) == 9);
    lp_suspended_table tab = {0};
    put_nine(&tab, frames);
    CHECK_EQ_INT(tab.evicted, 1);
    CHECK_EQ_INT(tab.sets, 32768);
    lp_suspended out;
    CHECK_EQ_INT(lp_suspended_take(&tab, frames[0], &addresses[1], &out), 0);
    for (int i = 1; i < 9; i++) CHECK_EQ_INT(lp_suspended_take(&tab, frames[i], &addresses[1], &out), 1);
    free(tab.entries);
}

/* A frame suspending again replaces its entry; a take with another code
 * (a dead frame's entry) is refused. */
TEST(test_a_frame_has_one_entry_and_its_code_must_match) {
    lp_suspended_table tab = {0};
    lp_suspended e = at(&addresses[5], 1);
    CHECK_EQ_INT(lp_suspended_put(&tab, &e), 0);
    e.t = 2;
    CHECK_EQ_INT(lp_suspended_put(&tab, &e), 0);
    CHECK_EQ_INT(tab.sets * 8, FIRST_SLOTS);
    lp_suspended out;
    CHECK_EQ_INT(lp_suspended_take(&tab, &addresses[5], &addresses[2], &out), 0);
    CHECK_EQ_INT(lp_suspended_take(&tab, &addresses[5], &addresses[1], &out), 1);
    CHECK_EQ_INT(out.t, 2);
    CHECK_EQ_INT(lp_suspended_take(&tab, &addresses[5], &addresses[1], &out), 0);
    free(tab.entries);
}

RUN_TESTS(test_a_set_still_full_after_one_doubling_grows_again, test_a_set_full_at_the_cap_evicts_its_oldest,
          test_a_frame_has_one_entry_and_its_code_must_match)
