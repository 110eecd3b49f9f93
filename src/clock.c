/* base: clock selection and TSC calibration (see clock.h). */
#define _GNU_SOURCE
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LP_INTERNAL int lp_clock_use_tsc = 0;
static double seconds_per_tick = 1e-9;
static int initialised = 0;

static int file_contains(const char *path, const char *needle) {
    char buf[8192];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) found = strstr(buf, needle) != NULL;
    fclose(f);
    return found;
}

static int tsc_is_trustworthy(void) {
#if defined(__x86_64__) || defined(__i386__)
    return file_contains("/proc/cpuinfo", " constant_tsc") &&
           file_contains("/proc/cpuinfo", " nonstop_tsc") &&
           file_contains("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc");
#else
    return 0;
#endif
}

static void calibrate_tsc(void) {
    /* Measure TSC ticks against CLOCK_MONOTONIC over ~20 ms. */
    lp_clock_use_tsc = 1;
    uint64_t ns0 = lp_clock_monotonic_ns(), t0 = lp_clock_now();
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    uint64_t ns1 = lp_clock_monotonic_ns(), t1 = lp_clock_now();
    if (t1 <= t0 || ns1 <= ns0) {
        lp_clock_use_tsc = 0;
        seconds_per_tick = 1e-9;
        return;
    }
    seconds_per_tick = (double)(ns1 - ns0) * 1e-9 / (double)(t1 - t0);
}

void lp_clock_force(lp_clock_kind kind) {
    if (kind == LP_CLOCK_TSC) {
        calibrate_tsc();
    } else {
        lp_clock_use_tsc = 0;
        seconds_per_tick = 1e-9;
    }
    initialised = 1;
}

void lp_clock_init(void) {
    if (initialised) return;
    const char *env = getenv("LPROF_CLOCK");
    int want_tsc = env ? strcmp(env, "tsc") == 0 : tsc_is_trustworthy();
    lp_clock_force(want_tsc ? LP_CLOCK_TSC : LP_CLOCK_MONOTONIC);
}

lp_clock_kind lp_clock_kind_in_use(void) { return lp_clock_use_tsc ? LP_CLOCK_TSC : LP_CLOCK_MONOTONIC; }

const char *lp_clock_name(void) { return lp_clock_use_tsc ? "tsc" : "monotonic"; }

double lp_clock_seconds_per_tick(void) { return seconds_per_tick; }
