/* memsample: the byte sampler is unbiased and its spread matches sqrt(T/N). */
#include "harness.h"
#include "collect/shim/shared/memsample.h"

/* Estimated bytes for `total` bytes allocated in pieces of `size`. */
static double estimate(lp_memsample *s, uint64_t total, uint64_t size) {
    double est = 0;
    for (uint64_t done = 0; done < total; done += size) {
        if (lp_memsample_step(s, size)) {
            est += lp_memsample_weight(size, s->mean);
            lp_memsample_redraw(s);
        }
    }
    return est;
}

static void check_unbiased(uint64_t size, uint64_t total, uint64_t mean, double max_rel_std) {
    lp_memsample s;
    lp_memsample_init(&s, mean, 42);
    const int trials = 400;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < trials; i++) {
        double e = estimate(&s, total, size) / (double)total;
        sum += e;
        sum2 += e * e;
    }
    double m = sum / trials, sd = sqrt(sum2 / trials - m * m);
    /* bias: the mean of 400 trials has std sd/20; allow 4 of those */
    CHECK_NEAR(m, 1.0, 4 * sd / 20 + 1e-9);
    CHECK(sd <= max_rel_std);
}

TEST(small_objects_unbiased) {
    /* 10 MiB in 64 B objects at T = 16 KiB: sqrt(T/N) = 3.9% */
    check_unbiased(64, 10u << 20, 16384, 0.05);
}

TEST(page_objects_unbiased) { check_unbiased(4096, 10u << 20, 16384, 0.05); }

TEST(large_objects_exact) {
    /* a 1 MiB allocation at T = 16 KiB is sampled with p = 1 - e^-64 */
    lp_memsample s;
    lp_memsample_init(&s, 16384, 7);
    CHECK_NEAR(estimate(&s, 10u << 20, 1u << 20), (double)(10u << 20), 1.0);
}

TEST(weight_formula) {
    CHECK_NEAR(lp_memsample_weight(16384, 16384), 16384 / (1 - exp(-1.0)), 1e-6);
    /* tiny objects: weight tends to T */
    CHECK_NEAR(lp_memsample_weight(1, 16384), 16384.5, 0.01);
    CHECK_EQ_INT(lp_memsample_weight(0, 16384), 0);
}

TEST(countdown_mean) {
    lp_memsample s;
    lp_memsample_init(&s, 1000, 1);
    double sum = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        lp_memsample_redraw(&s);
        sum += (double)s.until;
    }
    /* exponential of mean 1000 (+0.5 from ceil): std of the mean is 1000/sqrt(n) = 7 */
    CHECK_NEAR(sum / n, 1000.5, 30);
}

TEST(seeds_differ) {
    lp_memsample a, b;
    lp_memsample_init(&a, 16384, 1);
    lp_memsample_init(&b, 16384, 2);
    CHECK(a.until != b.until || a.rng != b.rng);
}

/* The sampled path's first step: an unseeded sampler is seeded and the
 * allocation tested again against the new countdown;
 * a seeded one takes the sample, at the mean given, with a new countdown. */
TEST(take_seeds_then_redraws) {
    lp_memsample s = {0};
    CHECK_EQ_INT(lp_memsample_take(&s, 16384, 0, 99), 0); /* no bytes cross no countdown */
    CHECK(s.rng != 0);
    CHECK(s.until > 0);
    lp_memsample again = {0};
    CHECK_EQ_INT(lp_memsample_take(&again, 16384, (size_t)1 << 40, 99), 1); /* crosses any countdown */
    s.until = 0;
    uint64_t rng = s.rng;
    CHECK_EQ_INT(lp_memsample_take(&s, 4096, 1, 99), 1);
    CHECK_EQ_INT(s.mean, 4096);
    CHECK(s.until > 0);
    CHECK(s.rng != rng);
}

RUN_TESTS(small_objects_unbiased, page_objects_unbiased, large_objects_exact, weight_formula, countdown_mean,
          seeds_differ, take_seeds_then_redraws)
