/* base: clock selection and TSC calibration (see clock.h). */
#define _GNU_SOURCE
#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LP_INTERNAL int lp_clock_use_tsc = 0;
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

/* The TSC rate is measured against CLOCK_MONOTONIC from a base point taken
 * at start-up to the moment the unit is asked for (at the end of a run, over
 * seconds), so start-up never sleeps to calibrate. At least MIN_BASE_NS must
 * have passed; a caller asking earlier waits out the rest. */
#define MIN_BASE_NS (5 * 1000 * 1000)
static uint64_t base_tsc, base_ns;

static void start_tsc(void) {
    lp_clock_use_tsc = 1;
    base_ns = lp_clock_monotonic_ns();
    base_tsc = lp_clock_now();
}

static double measure_tsc(void) {
    uint64_t ns = lp_clock_monotonic_ns();
    if (ns - base_ns < MIN_BASE_NS) {
        uint64_t wait = MIN_BASE_NS - (ns - base_ns);
        struct timespec pause = {0, (long)wait};
        nanosleep(&pause, NULL);
        ns = lp_clock_monotonic_ns();
    }
    uint64_t t = lp_clock_now();
    if (t <= base_tsc) return 1e-9;
    return (double)(ns - base_ns) * 1e-9 / (double)(t - base_tsc);
}

void lp_clock_force(lp_clock_kind kind) {
    if (kind == LP_CLOCK_TSC) start_tsc();
    else lp_clock_use_tsc = 0;
    initialised = 1;
}

void lp_clock_init(void) {
    if (initialised) return;
    const char *env = getenv("LPROF_CLOCK");
    int want_tsc = env ? strcmp(env, "tsc") == 0 : tsc_is_trustworthy();
    lp_clock_force(want_tsc ? LP_CLOCK_TSC : LP_CLOCK_MONOTONIC);
}

const char *lp_clock_name(void) { return lp_clock_use_tsc ? "tsc" : "monotonic"; }

double lp_clock_seconds_per_tick(void) { return lp_clock_use_tsc ? measure_tsc() : 1e-9; }
