/* memacct and the leak rule: the account writes each stack's memory columns
 * into the stack table, copies live bytes into PEAK_BYTES at the peak, keeps
 * a bounded timeline; lp_leak_judge names steady growth, not one burst. */
#include "aggregate/leak.h"
#include "aggregate/memacct.h"
#include "aggregate/stacktab.h"
#include "harness.h"

static int64_t col(lp_stacktab *t, uint32_t stack, lp_metric m) {
    int64_t v[LP_M_COUNT];
    lp_stacktab_get(t, stack, v);
    return v[m];
}

TEST(account_writes_columns_and_peak) {
    lp_stacktab *t = lp_stacktab_create(64, 64);
    REQUIRE(t != NULL);
    lp_rawframe f[3] = {{(void *)0x1000, 2}, {(void *)0x2000, 4}, {(void *)0x3000, 6}};
    uint32_t s1 = lp_stacktab_intern(t, 1, f, 1, 0);
    uint32_t s2 = lp_stacktab_intern(t, 1, f + 1, 1, 0);
    uint32_t s3 = lp_stacktab_intern(t, 1, f + 2, 1, 0);
    lp_memacct *a = lp_memacct_create(t, 0);
    REQUIRE(a != NULL);
    uint64_t now = 1000;
    lp_memacct_alloc(a, s1 + 1, 100, 100, 1, now += 1000000); /* stack 1 keeps 100 */
    lp_memacct_alloc(a, s2 + 1, 300, 300, 0, now += 1000000); /* stack 2 peaks at 300 */
    lp_memacct_free(a, s2 + 1, 300, now += 1000000);
    lp_memacct_alloc(a, s3 + 1, 50, 25, 0, now += 1000000);
    lp_memacct_free(a, 0, 7, now += 1000000); /* a block from before the start */
    lp_memacct_mark(a, now += 1000000);
    lp_memacct_totals tot;
    lp_memacct_get_totals(a, &tot);
    CHECK_NEAR(tot.peak, 400, 1e-9);
    CHECK_NEAR(tot.live, 143, 1e-9);
    CHECK_NEAR(tot.unattributed_freed, 7, 1e-9);
    CHECK_EQ_INT(col(t, s1, LP_M_PEAK_BYTES), 100);
    CHECK_EQ_INT(col(t, s2, LP_M_PEAK_BYTES), 300);
    CHECK_EQ_INT(col(t, s3, LP_M_PEAK_BYTES), 0);
    CHECK_EQ_INT(col(t, s1, LP_M_PYTHON_BYTES), 100);
    CHECK_EQ_INT(col(t, s2, LP_M_PYTHON_BYTES), 0);
    CHECK_EQ_INT(col(t, s2, LP_M_FREED_BYTES), 300);
    CHECK_EQ_INT(col(t, s2, LP_M_FREE_SAMPLES), 1);
    CHECK_EQ_INT(col(t, s3, LP_M_ALLOC_COUNT), 2000); /* 50 bytes of 25-byte blocks, in thousandths */
    CHECK_EQ_INT(col(t, s3, LP_M_ALLOC_SAMPLES), 1);
    lp_stacktab_set_difference(t, LP_M_LIVE_BYTES, LP_M_ALLOC_BYTES, LP_M_FREED_BYTES);
    CHECK_EQ_INT(col(t, s1, LP_M_LIVE_BYTES), 100);
    CHECK_EQ_INT(col(t, s2, LP_M_LIVE_BYTES), 0);
    double tl[LP_MEMACCT_TIMELINE][2];
    uint32_t n = lp_memacct_timeline(a, tl, LP_MEMACCT_TIMELINE);
    CHECK(n >= 1);
    CHECK_NEAR(tl[n - 1][1], 143, 1e-9);
    lp_stacktab_clear_column(t, LP_M_LIVE_BYTES);
    CHECK_EQ_INT(col(t, s1, LP_M_LIVE_BYTES), 0);
    lp_memacct_destroy(a);
    lp_stacktab_destroy(t);
}

TEST(timeline_bounded) {
    lp_stacktab *t = lp_stacktab_create(8, 8);
    lp_memacct *a = lp_memacct_create(t, 0);
    REQUIRE(a != NULL);
    for (uint64_t i = 1; i <= 100000; i++) lp_memacct_alloc(a, 1, 1, 1, 0, i * 20000000ull);
    static double tl[LP_MEMACCT_TIMELINE][2];
    uint32_t n = lp_memacct_timeline(a, tl, LP_MEMACCT_TIMELINE);
    CHECK(n <= LP_MEMACCT_TIMELINE);
    CHECK(n >= LP_MEMACCT_TIMELINE / 4);
    CHECK(tl[n - 1][0] > 1900.0); /* still spans the run */
    for (uint32_t i = 1; i < n; i++) CHECK(tl[i][0] >= tl[i - 1][0]);
    lp_memacct_destroy(a);
    lp_stacktab_destroy(t);
}

static lp_leak_input survivors_over(double seconds, int count, double bytes_each) {
    lp_leak_input in = {0};
    for (int i = 0; i < count; i++) {
        double ms = 1000.0 * seconds * i / count;
        in.t_ms += ms;
        in.t2_ms2 += ms * ms;
    }
    in.alloc_samples = in.survivors = count;
    in.survivor_bytes = in.net_bytes = count * bytes_each;
    return in;
}

TEST(leak_rule) {
    lp_leak_verdict v;
    lp_leak_input steady = survivors_over(10.0, 100, 1000); /* 10 s, 100 KB */
    lp_leak_judge(&steady, 1e6, 10.0, &v);
    CHECK_NEAR(v.span_s, 10.0, 0.5);
    CHECK_NEAR(v.slope, 10000, 600);
    CHECK(v.score > LP_LEAK_SCORE);
    CHECK(v.is_leak);
    lp_leak_input burst = survivors_over(0.01, 100, 1000); /* all at once: kept, not leaking */
    lp_leak_judge(&burst, 1e6, 10.0, &v);
    CHECK(!v.is_leak);
    lp_leak_input freed = steady;
    freed.alloc_samples = 2000;
    freed.free_samples = 1900; /* most blocks came back */
    lp_leak_judge(&freed, 1e6, 10.0, &v);
    CHECK(v.score < 0.5);
    CHECK(!v.is_leak);
    lp_leak_input small = steady;
    lp_leak_judge(&small, 1e9, 10.0, &v); /* 100 KB of a 1 GB peak */
    CHECK(!v.is_leak);
}

RUN_TESTS(account_writes_columns_and_peak, timeline_bounded, leak_rule)
