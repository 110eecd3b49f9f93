/* livemem: the sampled-block table against a reference, the filter, overflow,
 * and the per-stack account (live, peak shares, timeline, leak statistic). */
#include <stdlib.h>

#include "harness.h"
#include "livemem.h"

static lp_live_block blk(uintptr_t addr, double w, uint32_t stack) {
    lp_live_block b = {0};
    b.addr = addr;
    b.size = (uint64_t)w;
    b.weight = w;
    b.stack = stack;
    return b;
}

TEST(insert_remove_matches_reference) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 12) == 0);
    enum { N = 2000 };
    static uintptr_t addrs[N];
    static int present[N];
    srand(3);
    for (int i = 0; i < N; i++) addrs[i] = ((uintptr_t)rand() << 16 | (uintptr_t)i) << 4;
    for (int round = 0; round < 40000; round++) {
        int i = rand() % N;
        if (present[i]) {
            lp_live_block out;
            CHECK_EQ_INT(lp_livemem_remove(&t, addrs[i], &out), 1);
            CHECK_EQ_INT(out.stack, (uint32_t)i);
            present[i] = 0;
        } else {
            lp_live_block b = blk(addrs[i], 100, (uint32_t)i);
            int rc = lp_livemem_insert(&t, &b, NULL);
            CHECK_EQ_INT(rc, 1);
            present[i] = 1;
        }
    }
    uint32_t n = 0;
    for (int i = 0; i < N; i++) {
        if (present[i]) {
            n++;
            CHECK(lp_livemem_maybe(&t, (void *)addrs[i]));  /* no false negatives */
        }
        lp_live_block out;
        CHECK_EQ_INT(lp_livemem_remove(&t, addrs[i], &out), present[i]);
    }
    CHECK_EQ_INT(t.count, 0);
    CHECK(n > 0);
    lp_livemem_destroy(&t);
}

TEST(replace_same_address) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 6) == 0);
    lp_live_block a = blk(0x1000, 10, 1), b = blk(0x1000, 20, 2), old = {0};
    CHECK_EQ_INT(lp_livemem_insert(&t, &a, &old), 1);
    CHECK_EQ_INT(lp_livemem_insert(&t, &b, &old), 2);
    CHECK_EQ_INT(old.stack, 1);
    CHECK_EQ_INT(t.count, 1);
    lp_livemem_destroy(&t);
}

TEST(overflow_counted) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 4) == 0);  /* 16 slots, 12 usable */
    int inserted = 0;
    for (uintptr_t i = 1; i <= 20; i++) {
        lp_live_block b = blk(i * 64, 1, 1);
        inserted += lp_livemem_insert(&t, &b, NULL) == 1;
    }
    CHECK_EQ_INT(inserted, 12);
    CHECK_EQ_INT(t.overflow, 8);
    lp_livemem_destroy(&t);
}

TEST(filter_mostly_rejects_unsampled) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 14) == 0);
    for (uintptr_t i = 1; i <= 5000; i++) {
        lp_live_block b = blk(i * 4096 * 7, 1, 1);
        lp_livemem_insert(&t, &b, NULL);
    }
    int hits = 0;
    for (uintptr_t i = 1; i <= 100000; i++) hits += lp_livemem_maybe(&t, (void *)(0x7f0000000000 + i * 48));
    CHECK(hits < 2000);  /* ~0.5% expected with 5000 of 2^20 counters set */
    lp_livemem_destroy(&t);
}

static void count_blocks(const lp_live_block *b, void *ctx) { *(double *)ctx += b->weight; }

TEST(foreach_sums) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 8) == 0);
    for (uintptr_t i = 1; i <= 50; i++) {
        lp_live_block b = blk(i * 16, (double)i, 1);
        lp_livemem_insert(&t, &b, NULL);
    }
    double sum = 0;
    lp_livemem_foreach(&t, count_blocks, &sum);
    CHECK_NEAR(sum, 50 * 51 / 2, 1e-9);
    lp_livemem_destroy(&t);
}

TEST(account_peak_shares) {
    static lp_memacct a;
    REQUIRE(lp_memacct_init(&a, 64, 0) == 0);
    uint64_t t = 1000;
    lp_memacct_alloc(&a, 1, 100, 100, 1, t += 1000000);  /* stack 1 keeps 100 */
    lp_memacct_alloc(&a, 2, 300, 300, 0, t += 1000000);  /* stack 2 peaks at 300 */
    lp_memacct_free(&a, 2, 300, t += 1000000);
    lp_memacct_alloc(&a, 3, 50, 50, 0, t += 1000000);
    lp_memacct_mark(&a, t += 1000000);
    CHECK_NEAR(a.peak, 400, 1e-9);
    CHECK_NEAR(a.live, 150, 1e-9);
    CHECK_NEAR(a.rows[1].live_at_peak, 100, 1e-9);
    CHECK_NEAR(a.rows[2].live_at_peak, 300, 1e-9);
    CHECK_NEAR(a.rows[3].live_at_peak, 0, 1e-9);
    CHECK_NEAR(a.rows[1].python_bytes, 100, 1e-9);
    CHECK_EQ_INT(a.rows[2].sampled_frees, 1);
    CHECK(a.tl_len >= 1);
    CHECK_NEAR(a.tl[a.tl_len - 1][1], 150, 1e-9);
    lp_memacct_destroy(&a);
}

TEST(timeline_bounded) {
    static lp_memacct a;
    REQUIRE(lp_memacct_init(&a, 4, 0) == 0);
    for (uint64_t i = 1; i <= 100000; i++) lp_memacct_alloc(&a, 1, 1, 1, 0, i * 20000000ull);
    CHECK(a.tl_len <= LP_MEMACCT_TIMELINE);
    CHECK(a.tl_len >= LP_MEMACCT_TIMELINE / 4);
    /* still spans the run: the last point is late */
    CHECK(a.tl[a.tl_len - 1][0] > 1900.0);
    for (uint32_t i = 1; i < a.tl_len; i++) CHECK(a.tl[i][0] >= a.tl[i - 1][0]);
    lp_memacct_destroy(&a);
}

TEST(leak_statistic) {
    lp_leakacc steady = {0}, once = {0};
    for (int i = 0; i < 100; i++) lp_leakacc_add(&steady, i * 0.1, 1000);  /* 10 s, 100 KB */
    double span;
    double slope = lp_leak_slope(&steady, &span);
    CHECK_NEAR(span, 10.0, 0.5);
    CHECK_NEAR(slope, 10000, 600);
    lp_leakacc_add(&once, 3.0, 1e6);
    CHECK_NEAR(lp_leak_slope(&once, &span), 0, 0);
    CHECK(lp_leak_score(100, 0) > 0.95);
    CHECK(lp_leak_score(100, 95) < 0.5);
    CHECK(lp_leak_score(1, 0) < 0.95);
}

RUN_TESTS(insert_remove_matches_reference, replace_same_address, overflow_counted,
          filter_mostly_rejects_unsampled, foreach_sums, account_peak_shares, timeline_bounded,
          leak_statistic)
