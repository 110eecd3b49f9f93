/* timeline: entries in order; full -> every other entry of each thread kept
 * and the stride doubled, evenly over a long run; interleaved threads thinned
 * each on its own count; bounded; clear. */
#include <stdint.h>

#include "harness.h"
#include "aggregate/timeline.h"

TEST(keeps_everything_below_capacity) {
    lp_timeline *tl = lp_timeline_create(16);
    REQUIRE(tl != NULL);
    for (uint32_t i = 0; i < 10; i++) lp_timeline_add(tl, 1000 + i, 7, i, 250);
    CHECK_EQ_INT(lp_timeline_count(tl), 10);
    CHECK_EQ_INT(lp_timeline_stride(tl), 1);
    const lp_timeline_entry *e = lp_timeline_entries(tl);
    for (uint32_t i = 0; i < 10; i++) {
        CHECK_EQ_INT(e[i].t_ns, 1000 + i);
        CHECK_EQ_INT(e[i].thread, 7);
        CHECK_EQ_INT(e[i].stack, i);
        CHECK_EQ_INT(e[i].weight_ns, 250);
    }
    lp_timeline_add(tl, 2000, 7, 1, (uint64_t)1 << 40); /* weight saturates */
    CHECK_EQ_INT(e[10].weight_ns, UINT32_MAX);
    lp_timeline_destroy(tl);
}

/* One thread, many times the capacity: never more than the capacity, the
 * stride a power of two, kept samples evenly spaced over the whole run. */
TEST(long_run_thins_evenly) {
    const uint32_t cap = 64, total = 100000;
    lp_timeline *tl = lp_timeline_create(cap);
    REQUIRE(tl != NULL);
    for (uint32_t i = 0; i < total; i++) {
        lp_timeline_add(tl, (uint64_t)i * 1000, 1, i, 1000);
        REQUIRE(lp_timeline_count(tl) <= cap);
    }
    uint32_t n = lp_timeline_count(tl), stride = lp_timeline_stride(tl);
    const lp_timeline_entry *e = lp_timeline_entries(tl);
    CHECK(stride >= total / cap && stride <= 2 * total / cap * 2);
    CHECK((stride & (stride - 1)) == 0);
    CHECK(n >= cap / 2);
    CHECK_EQ_INT(e[0].stack, 0); /* the start of the run is still there */
    /* evenly spaced: every gap is the stride (the last one, where thinning
     * left its parity, within one stride) */
    for (uint32_t i = 1; i + 1 < n; i++) CHECK_EQ_INT(e[i].stack - e[i - 1].stack, stride);
    CHECK(total - 1 - e[n - 1].stack < 2 * stride); /* and its end */
    lp_timeline_destroy(tl);
}

/* Two threads strictly alternating: a global every-other rule would keep one
 * thread only; each thread keeps half of its own. */
TEST(interleaved_threads_each_thinned) {
    lp_timeline *tl = lp_timeline_create(32);
    REQUIRE(tl != NULL);
    for (uint32_t i = 0; i < 1000; i++) lp_timeline_add(tl, i, 100 + (i % 2), i, 1);
    uint32_t n = lp_timeline_count(tl), per[2] = {0, 0};
    const lp_timeline_entry *e = lp_timeline_entries(tl);
    for (uint32_t i = 0; i < n; i++) {
        REQUIRE(e[i].thread == 100 || e[i].thread == 101);
        per[e[i].thread - 100]++;
        if (i) CHECK(e[i].t_ns > e[i - 1].t_ns);
    }
    CHECK(per[0] > 0 && per[1] > 0);
    CHECK(per[0] >= per[1] - 1 && per[1] >= per[0] - 1);
    lp_timeline_destroy(tl);
}

/* More threads than entries: thinning cannot make room; stays bounded. */
TEST(bounded_with_many_threads) {
    lp_timeline *tl = lp_timeline_create(4);
    REQUIRE(tl != NULL);
    for (uint32_t i = 0; i < 100; i++) lp_timeline_add(tl, i, 1000 + i, i, 1);
    CHECK(lp_timeline_count(tl) <= 4);
    lp_timeline_clear(tl);
    CHECK_EQ_INT(lp_timeline_count(tl), 0);
    CHECK_EQ_INT(lp_timeline_stride(tl), 1);
    lp_timeline_add(tl, 5, 1, 2, 3);
    CHECK_EQ_INT(lp_timeline_count(tl), 1);
    lp_timeline_destroy(tl);
}

TEST(global_exists) {
    lp_timeline *g = lp_timeline_global();
    REQUIRE(g != NULL);
    CHECK(g == lp_timeline_global());
    CHECK_EQ_INT(lp_timeline_count(g), 0);
}

RUN_TESTS(keeps_everything_below_capacity, long_run_thins_evenly, interleaved_threads_each_thinned,
          bounded_with_many_threads, global_exists)
