/* clock: the chosen clock is monotonic and its unit matches CLOCK_MONOTONIC. */
#include "common/clock.h"
#include "harness.h"

static void check_unit_against_monotonic(void) {
    uint64_t ns0 = lp_clock_monotonic_ns(), t0 = lp_clock_now();
    struct timespec pause = {0, 30 * 1000 * 1000};
    nanosleep(&pause, NULL);
    uint64_t ns1 = lp_clock_monotonic_ns(), t1 = lp_clock_now();
    REQUIRE(t1 > t0);
    double measured = (double)(t1 - t0) * lp_clock_seconds_per_tick();
    double expected = (double)(ns1 - ns0) * 1e-9;
    CHECK_NEAR(measured / expected, 1.0, 0.02);
}

TEST(tsc_clock_unit) {
    lp_clock_force(LP_CLOCK_TSC);
    check_unit_against_monotonic();
}
TEST(monotonic_clock_unit) {
    lp_clock_force(LP_CLOCK_MONOTONIC);
    CHECK_NEAR(lp_clock_seconds_per_tick(), 1e-9, 1e-15);
    check_unit_against_monotonic();
}
TEST(clock_never_goes_back) {
    lp_clock_init();
    uint64_t prev = lp_clock_now();
    for (int i = 0; i < 100000; i++) {
        uint64_t t = lp_clock_now();
        CHECK(t >= prev);
        prev = t;
    }
}

RUN_TESTS(tsc_clock_unit, monotonic_clock_unit, clock_never_goes_back)
