/* GPU timeline store and GPU idle time: records kept with their launch
 * time and ids, the cap from LPROF_GPU_TRACE_MAX with drops counted, the
 * launch ring's tags, concurrent adds never past the cap; idle time of an
 * interval against overlapping busy intervals, and per line from logged
 * intervals (capped, drops counted). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "aggregate/gpu_idle.h"
#include "aggregate/gpu_trace.h"

static lp_gpu_activity kernel(uint32_t corr, uint64_t start, uint64_t end) {
    lp_gpu_activity a = {LP_GPU_KERNEL, corr, start, end, 0, LP_GPU_DIR_OTHER, "k", 0, 2, 7};
    return a;
}

TEST(records_keep_times_ids_and_launch) {
    unsetenv("LPROF_GPU_TRACE_MAX");
    REQUIRE(lp_gpu_trace_reset() == 0);
    CHECK_EQ_INT(lp_gpu_trace_capacity(), LP_GPU_TRACE_DEFAULT_CAP);
    lp_gpu_trace_note_launch(300, 5000);
    lp_gpu_trace_note_launch(301, 5100);
    lp_gpu_activity a = kernel(300, 6000, 9000);
    CHECK_EQ_INT(lp_gpu_trace_add(&a, "k", 42, 1), 1);
    lp_gpu_activity c = {LP_GPU_MEMCPY, 999, 9500, 9600, 4096, LP_GPU_DIR_H2D, NULL, 0, 0, 3};
    CHECK_EQ_INT(lp_gpu_trace_add(&c, "[memcpy HtoD]", 43, 0), 1);
    REQUIRE(lp_gpu_trace_count() == 2);
    const lp_gpu_trace_rec *r = lp_gpu_trace_at(0);
    REQUIRE(r != NULL);
    CHECK_EQ_INT(r->start_ns, 6000);
    CHECK_EQ_INT(r->end_ns, 9000);
    CHECK_EQ_INT(r->launch_ns, 5000);
    CHECK_EQ_INT(r->device, 2);
    CHECK_EQ_INT(r->stream, 7);
    CHECK_EQ_INT(r->stack, 42);
    CHECK_EQ_INT(r->attributed, 1);
    r = lp_gpu_trace_at(1);
    REQUIRE(r != NULL);
    CHECK_EQ_INT(r->launch_ns, 0); /* never noted */
    CHECK_EQ_INT(r->bytes, 4096);
    CHECK_EQ_INT(r->op, LP_GPU_MEMCPY);
    CHECK_EQ_INT(r->dir, LP_GPU_DIR_H2D);
    CHECK(lp_gpu_trace_at(2) == NULL);
    CHECK_EQ_INT(lp_gpu_trace_dropped(), 0);
}

/* The ring slot of a correlation id reused by a later id: the earlier id
 * no longer finds a time (its tag differs), the later one finds its own. */
TEST(launch_ring_tags_reused_slots) {
    REQUIRE(lp_gpu_trace_reset() == 0);
    uint32_t early = 5, late = 5 + LP_GPU_CORR_SLOTS;
    lp_gpu_trace_note_launch(early, 1000);
    CHECK_EQ_INT(lp_gpu_trace_launch_time(early), 1000);
    lp_gpu_trace_note_launch(late, 2000);
    CHECK_EQ_INT(lp_gpu_trace_launch_time(late), 2000);
    CHECK_EQ_INT(lp_gpu_trace_launch_time(early), 0);
    CHECK_EQ_INT(lp_gpu_trace_launch_time(6), 0);
    CHECK_EQ_INT(lp_gpu_trace_launch_time(0), 0);
}

TEST(cap_from_environment_and_drops_counted) {
    setenv("LPROF_GPU_TRACE_MAX", "3", 1);
    REQUIRE(lp_gpu_trace_reset() == 0);
    CHECK_EQ_INT(lp_gpu_trace_capacity(), 3);
    for (uint32_t i = 0; i < 10; i++) {
        lp_gpu_activity a = kernel(i + 1, 100 * i, 100 * i + 50);
        CHECK_EQ_INT(lp_gpu_trace_add(&a, "k", i, 1), i < 3);
    }
    CHECK_EQ_INT(lp_gpu_trace_count(), 3);
    CHECK_EQ_INT(lp_gpu_trace_dropped(), 7);
    CHECK_EQ_INT(lp_gpu_trace_at(2)->start_ns, 200);
    setenv("LPROF_GPU_TRACE_MAX", "0", 1); /* keep none: all counted */
    REQUIRE(lp_gpu_trace_reset() == 0);
    lp_gpu_activity a = kernel(1, 1, 2);
    CHECK_EQ_INT(lp_gpu_trace_add(&a, "k", 0, 1), 0);
    CHECK_EQ_INT(lp_gpu_trace_count(), 0);
    CHECK_EQ_INT(lp_gpu_trace_dropped(), 1);
    setenv("LPROF_GPU_TRACE_MAX", "junk", 1); /* not a number: the default */
    REQUIRE(lp_gpu_trace_reset() == 0);
    CHECK_EQ_INT(lp_gpu_trace_capacity(), LP_GPU_TRACE_DEFAULT_CAP);
    CHECK_EQ_INT(lp_gpu_trace_dropped(), 0);
    unsetenv("LPROF_GPU_TRACE_MAX");
}

#define THREADS    4
#define PER_THREAD 5000
static void *adder(void *arg) {
    uint32_t base = (uint32_t)(uintptr_t)arg * PER_THREAD;
    for (uint32_t i = 0; i < PER_THREAD; i++) {
        lp_gpu_activity a = kernel(base + i + 1, base + i, base + i + 1);
        lp_gpu_trace_add(&a, "k", base + i, 1);
    }
    return NULL;
}

TEST(concurrent_adds_stop_at_the_cap) {
    setenv("LPROF_GPU_TRACE_MAX", "7000", 1);
    REQUIRE(lp_gpu_trace_reset() == 0);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) REQUIRE(pthread_create(&t[i], NULL, adder, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK_EQ_INT(lp_gpu_trace_count(), 7000);
    CHECK_EQ_INT(lp_gpu_trace_dropped(), THREADS * PER_THREAD - 7000);
    for (uint32_t i = 0; i < 7000; i++) {
        const lp_gpu_trace_rec *r = lp_gpu_trace_at(i);
        REQUIRE(r != NULL);
        CHECK_EQ_INT(r->end_ns - r->start_ns, 1);
    }
    unsetenv("LPROF_GPU_TRACE_MAX");
}

TEST(idle_of_an_interval) {
    const uint64_t busy[][2] = {{100, 200}, {150, 300}, {500, 600}, {700, 700}};
    CHECK_EQ_INT(lp_gpu_idle_of(0, 100, busy, 4), 100); /* before any work */
    CHECK_EQ_INT(lp_gpu_idle_of(120, 280, busy, 4), 0); /* inside overlapping work */
    CHECK_EQ_INT(lp_gpu_idle_of(0, 1000, busy, 4), 1000 - 200 - 100);
    CHECK_EQ_INT(lp_gpu_idle_of(250, 550, busy, 4), 200); /* 300..500 */
    CHECK_EQ_INT(lp_gpu_idle_of(650, 800, busy, 4), 150); /* an empty interval is no work */
    CHECK_EQ_INT(lp_gpu_idle_of(0, 100, busy, 0), 100);
    CHECK_EQ_INT(lp_gpu_idle_of(50, 50, busy, 4), 0);
}

typedef struct {
    int n;
    const void *code[4];
    int32_t line[4];
    uint64_t spans[4], ns[4], idle[4];
} rows;

static int collect(const void *code, int32_t line, uint64_t spans, uint64_t ns, uint64_t idle, void *ud) {
    rows *r = ud;
    if (r->n == 4) return 7;
    r->code[r->n] = code;
    r->line[r->n] = line;
    r->spans[r->n] = spans;
    r->ns[r->n] = ns;
    r->idle[r->n++] = idle;
    return 0;
}

static int find(const rows *r, const void *code, int32_t line) {
    for (int i = 0; i < r->n; i++)
        if (r->code[i] == code && r->line[i] == line) return i;
    return -1;
}

/* Ticks at 2 ns each, tick 0 = 1000 ns (the kernel: ticks 500..1000);
 * intervals in ticks summed per line. */
TEST(idle_per_line_from_logged_intervals) {
    unsetenv("LPROF_GPU_SPANS_MAX");
    REQUIRE(lp_gpu_trace_reset() == 0);
    REQUIRE(lp_gpu_idle_reset() == 0);
    lp_gpu_activity a = kernel(1, 2000, 3000);
    lp_gpu_trace_add(&a, "k", 0, 1);
    static const char code_a, code_b;
    lp_gpu_idle_note(&code_a, 3, 500, 250);  /* ticks [250, 500): all idle */
    lp_gpu_idle_note(&code_a, 3, 1100, 200); /* [900, 1100): 100 idle */
    lp_gpu_idle_note(&code_b, 0, 1000, 400); /* [600, 1000): busy */
    rows r = {0};
    REQUIRE(lp_gpu_idle_compute(2.0, 0, 1000, collect, &r) == 0);
    REQUIRE(r.n == 2);
    int i = find(&r, &code_a, 3), j = find(&r, &code_b, 0);
    REQUIRE(i >= 0 && j >= 0);
    CHECK_EQ_INT(r.spans[i], 2);
    CHECK_EQ_INT(r.ns[i], 250 + 200);
    CHECK_EQ_INT(r.idle[i], 250 + 100);
    CHECK_EQ_INT(r.ns[j], 400);
    CHECK_EQ_INT(r.idle[j], 0);
    CHECK_EQ_INT(lp_gpu_idle_spans(), 3);
    CHECK_EQ_INT(lp_gpu_idle_dropped(), 0);
}

TEST(idle_log_is_capped) {
    setenv("LPROF_GPU_SPANS_MAX", "2", 1);
    REQUIRE(lp_gpu_idle_reset() == 0);
    static const char code;
    for (int i = 0; i < 5; i++) lp_gpu_idle_note(&code, i, 100 * (uint64_t)i + 100, 10);
    CHECK_EQ_INT(lp_gpu_idle_spans(), 2);
    CHECK_EQ_INT(lp_gpu_idle_dropped(), 3);
    rows r = {0};
    REQUIRE(lp_gpu_idle_compute(1.0, 0, 0, collect, &r) == 0);
    CHECK_EQ_INT(r.n, 2);
    unsetenv("LPROF_GPU_SPANS_MAX");
}

RUN_TESTS(records_keep_times_ids_and_launch, launch_ring_tags_reused_slots,
          cap_from_environment_and_drops_counted, concurrent_adds_stop_at_the_cap, idle_of_an_interval,
          idle_per_line_from_logged_intervals, idle_log_is_capped)
