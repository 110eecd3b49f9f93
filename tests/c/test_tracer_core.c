/* Synthetic event streams with fake timestamps -> exact hits and ticks. */
#include "harness.h"
#include "collect/tracer_core.h"
#include "common/clock.h"

static int ids[64]; /* distinct addresses serve as opaque code ids */

static lp_tc_code *reg(int k, int first) {
    int is_new = 0;
    lp_tc_code *c = lp_tc_register(&ids[k], first, NULL, &is_new);
    return c;
}

static uint64_t hits(lp_tc_code *c, int line) {
    int i = line - c->firstlineno;
    return (i >= 0 && (uint32_t)i < c->nlines) ? c->lines[i].hits : 0;
}

static uint64_t ticks(lp_tc_code *c, int line) {
    int i = line - c->firstlineno;
    return (i >= 0 && (uint32_t)i < c->nlines) ? c->lines[i].ticks : 0;
}

TEST(test_simple_loop) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(0, 10);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 11, 5);  /* for */
    lp_tc_line(th, a, 12, 10); /* body */
    lp_tc_line(th, a, 11, 30);
    lp_tc_line(th, a, 12, 32);
    lp_tc_line(th, a, 11, 50);
    lp_tc_line(th, a, 13, 51); /* return line */
    lp_tc_exit(th, a, 60);
    CHECK_EQ_INT(hits(a, 11), 3);
    CHECK_EQ_INT(hits(a, 12), 2);
    CHECK_EQ_INT(hits(a, 13), 1);
    CHECK_EQ_INT(ticks(a, 11), 5 + 2 + 1);
    CHECK_EQ_INT(ticks(a, 12), 20 + 18);
    CHECK_EQ_INT(ticks(a, 13), 9);
    CHECK_EQ_INT(a->total_ticks, 60);
    CHECK_EQ_INT(th->depth, 0);
    lp_tc_thread_free(th);
}

/* def fact(n):          line 1
 *     if n <= 1:         line 2
 *         return 1       line 3
 *     return n*fact(n-1) line 4     fact(2) */
TEST(test_recursion) {
    lp_tc_reset_registry();
    lp_tc_code *f = reg(1, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, f, -1, 0);
    lp_tc_line(th, f, 2, 1);
    lp_tc_line(th, f, 4, 3);
    lp_tc_enter(th, f, -1, 10);
    lp_tc_line(th, f, 2, 11);
    lp_tc_line(th, f, 3, 15);
    lp_tc_exit(th, f, 20);
    lp_tc_exit(th, f, 25);
    CHECK_EQ_INT(hits(f, 2), 2);
    CHECK_EQ_INT(hits(f, 3), 1);
    CHECK_EQ_INT(hits(f, 4), 1);
    CHECK_EQ_INT(ticks(f, 2), 2 + 4);
    CHECK_EQ_INT(ticks(f, 3), 5);
    CHECK_EQ_INT(ticks(f, 4), 22);    /* includes the nested call */
    CHECK_EQ_INT(f->total_ticks, 25); /* outermost activation only */
    CHECK_EQ_INT(f->depth, 0);
    lp_tc_thread_free(th);
}

/* Mutual recursion a -> b -> a: a's total counts its outer call only. */
TEST(test_mutual_recursion) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(2, 1), *b = reg(3, 100);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 2, 0);
    lp_tc_enter(th, b, -1, 10);
    lp_tc_line(th, b, 101, 10);
    lp_tc_enter(th, a, -1, 20);
    lp_tc_line(th, a, 3, 20);
    lp_tc_exit(th, a, 30);
    lp_tc_exit(th, b, 40);
    lp_tc_exit(th, a, 50);
    CHECK_EQ_INT(a->total_ticks, 50);
    CHECK_EQ_INT(b->total_ticks, 30);
    CHECK_EQ_INT(ticks(a, 2), 50);
    CHECK_EQ_INT(ticks(a, 3), 10);
    lp_tc_thread_free(th);
}

/* def g():        line 1
 *     x = yield 1  line 2
 *     y = x        line 3
 * Suspended time (yield -> resume) counts nowhere. */
TEST(test_generator_suspend) {
    lp_tc_reset_registry();
    lp_tc_code *g = reg(4, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, g, -1, 0);
    lp_tc_line(th, g, 2, 2);
    lp_tc_exit(th, g, 7);        /* PY_YIELD */
    lp_tc_enter(th, g, 2, 1007); /* PY_RESUME on line 2 */
    lp_tc_line(th, g, 3, 1010);
    lp_tc_exit(th, g, 1020);     /* return */
    CHECK_EQ_INT(hits(g, 2), 1); /* resuming is not a new hit */
    CHECK_EQ_INT(ticks(g, 2), 5 + 3);
    CHECK_EQ_INT(hits(g, 3), 1);
    CHECK_EQ_INT(ticks(g, 3), 10);
    CHECK_EQ_INT(g->total_ticks, 7 + 13);
    lp_tc_thread_free(th);
}

static uint64_t waits(lp_tc_code *c, int line) {
    int i = line - c->firstlineno;
    return (i >= 0 && (uint32_t)i < c->nlines) ? c->lines[i].wait_ticks : 0;
}

/* A coroutine suspends at its await (line 3) twice; the wait goes to that
 * line, the tracer's work on the frames that ran meanwhile left out; Time
 * and the function total stay as without waits. */
TEST(test_suspension_wait_same_thread) {
    lp_tc_reset_registry();
    lp_tc_code *co = reg(20, 1), *other = reg(21, 50);
    int frame; /* the coroutine's frame address */
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, co, -1, 0);
    lp_tc_line(th, co, 2, 1);
    lp_tc_line(th, co, 3, 4);
    lp_tc_suspend(th, co, &frame, 10); /* PY_YIELD: await had to wait */
    lp_tc_enter(th, other, -1, 20);    /* the event loop runs another task */
    lp_tc_line(th, other, 51, 21);
    lp_tc_overhead(th, 30, 130); /* 100 ticks of the tracer's own */
    lp_tc_exit(th, other, 200);
    lp_tc_resume(th, co, &frame, 3, 510); /* PY_RESUME on line 3 */
    lp_tc_suspend(th, co, &frame, 512);
    lp_tc_resume(th, co, &frame, 3, 612);
    lp_tc_line(th, co, 4, 615);
    lp_tc_exit(th, co, 620);
    CHECK_EQ_INT(waits(co, 3), (510 - 10 - 100) + 100);
    CHECK_EQ_INT(waits(co, 2), 0);
    CHECK_EQ_INT(waits(co, 4), 0);
    CHECK_EQ_INT(ticks(co, 3), 6 + 2 + 3);
    CHECK_EQ_INT(hits(co, 3), 1);
    CHECK_EQ_INT(co->total_ticks, 10 + 2 + 8);
    /* taken once: a second resume of the frame finds nothing */
    lp_tc_enter(th, co, -1, 700);
    lp_tc_resume(th, co, &frame, 3, 800);
    CHECK_EQ_INT(waits(co, 3), 500);
    CHECK_EQ_INT(lp_tc_waits_evicted(), 0);
    lp_tc_thread_free(th);
}

/* Resumed on another thread: the plain clock (program clocks of two
 * threads are not comparable). An entry of another code at the frame's
 * address (a dead frame's) is not taken. A fresh call (lp_tc_enter) takes
 * nothing. */
TEST(test_suspension_wait_other_thread_and_stale) {
    lp_tc_reset_registry();
    lp_tc_code *g = reg(22, 1), *h = reg(23, 10);
    int frame, other_frame;
    lp_tc_thread *a = lp_tc_thread_new(), *b = lp_tc_thread_new();
    lp_tc_overhead(a, 0, 40);
    lp_tc_enter(a, g, -1, 50);
    lp_tc_line(a, g, 2, 51);
    lp_tc_suspend(a, g, &frame, 60);
    lp_tc_resume(b, g, &frame, 2, 1060);
    lp_tc_exit(b, g, 1061);
    CHECK_EQ_INT(waits(g, 2), 1000);
    /* h suspends where g's dead frame was; g's later frame there is not h's */
    lp_tc_enter(a, h, -1, 2000);
    lp_tc_line(a, h, 11, 2001);
    lp_tc_suspend(a, h, &other_frame, 2002);
    lp_tc_enter(a, g, -1, 2100);
    lp_tc_line(a, g, 2, 2101);
    lp_tc_suspend(a, g, &frame, 2102);
    lp_tc_resume(a, h, &frame, 11, 3000); /* h never suspended at &frame */
    lp_tc_exit(a, h, 3001);
    CHECK_EQ_INT(waits(h, 11), 0);
    lp_tc_resume(a, g, &frame, 2, 4102);
    lp_tc_exit(a, g, 4103);
    CHECK_EQ_INT(waits(g, 2), 1000 + 2000);
    lp_tc_thread_free(a);
    lp_tc_thread_free(b);
}

/* Suspends n frames of g (frame i at t = 10 i + 2, line 2). */
static void suspend_many(lp_tc_thread *th, lp_tc_code *g, char *frames, int n) {
    for (int i = 0; i < n; i++) {
        lp_tc_enter(th, g, -1, 10 * (uint64_t)i);
        lp_tc_line(th, g, 2, 10 * (uint64_t)i + 1);
        lp_tc_suspend(th, g, &frames[i], 10 * (uint64_t)i + 2);
    }
}

/* More suspended frames than the first table holds: it grows, and every
 * frame keeps its suspension. */
TEST(test_suspension_table_grows) {
    lp_tc_reset_registry();
    lp_tc_code *g = reg(24, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    enum { N = 40000 }; /* over the first table's 16384 entries */
    static char frames[N];
    suspend_many(th, g, frames, N);
    CHECK_EQ_INT(lp_tc_waits_evicted(), 0);
    for (int i = 0; i < N; i++) {
        lp_tc_resume(th, g, &frames[i], 2, 10 * (uint64_t)N + 10 * (uint64_t)i);
        lp_tc_exit(th, g, 10 * (uint64_t)N + 10 * (uint64_t)i + 1);
    }
    /* each waited 10 N - 2 ticks */
    CHECK_EQ_INT(waits(g, 2), (uint64_t)N * (10 * (uint64_t)N - 2));
    lp_tc_thread_free(th);
}

/* Past the cap (262,144 frames) the oldest of a full set is evicted and
 * counted: an evicted frame's resume gets no wait, every kept frame its own,
 * and the newest suspension is always kept. (Which frames share a set
 * depends on their addresses, so the test counts instead of naming them.) */
TEST(test_suspension_table_evicts_oldest_at_cap) {
    lp_tc_reset_registry();
    lp_tc_code *g = reg(25, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    enum { N = 300000 };
    static char frames[N];
    suspend_many(th, g, frames, N); /* frame i suspends at 10 i + 2 */
    uint64_t evicted = lp_tc_waits_evicted();
    CHECK(evicted >= N - 262144);
    const uint64_t W = 20 * (uint64_t)N; /* every frame resumes W ticks after it suspended */
    uint64_t before_newest = 0;
    for (int i = 0; i < N; i++) {
        if (i == N - 1) before_newest = waits(g, 2);
        lp_tc_resume(th, g, &frames[i], 2, 10 * (uint64_t)i + 2 + W);
        lp_tc_exit(th, g, 10 * (uint64_t)i + 3 + W);
    }
    CHECK_EQ_INT(waits(g, 2) - before_newest, W);
    CHECK_EQ_INT(waits(g, 2), (N - evicted) * W);
    lp_tc_clear();
    CHECK_EQ_INT(lp_tc_waits_evicted(), 0);
    lp_tc_thread_free(th);
}

/* a calls b; b raises and unwinds; a catches it and keeps going. */
TEST(test_exception_unwind) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(5, 1), *b = reg(6, 50);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 2, 0); /* try: b() */
    lp_tc_enter(th, b, -1, 5);
    lp_tc_line(th, b, 51, 5); /* raise */
    lp_tc_exit(th, b, 9);     /* PY_UNWIND */
    lp_tc_line(th, a, 3, 12); /* except: */
    lp_tc_line(th, a, 4, 13);
    lp_tc_exit(th, a, 20);
    CHECK_EQ_INT(ticks(a, 2), 12);
    CHECK_EQ_INT(ticks(b, 51), 4);
    CHECK_EQ_INT(b->total_ticks, 4);
    CHECK_EQ_INT(hits(a, 3), 1);
    CHECK_EQ_INT(hits(a, 4), 1);
    CHECK_EQ_INT(ticks(a, 4), 7);
    CHECK_EQ_INT(a->total_ticks, 20);
    CHECK_EQ_INT(th->depth, 0);
    lp_tc_thread_free(th);
}

/* A missed exit (b) is closed when its caller exits. */
TEST(test_missed_exit) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(7, 1), *b = reg(8, 50);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 2, 0);
    lp_tc_enter(th, b, -1, 5);
    lp_tc_line(th, b, 51, 5);
    lp_tc_exit(th, a, 30);
    CHECK_EQ_INT(th->depth, 0);
    CHECK_EQ_INT(ticks(b, 51), 25);
    CHECK_EQ_INT(a->total_ticks, 30);
    CHECK_EQ_INT(b->depth, 0);
    lp_tc_exit(th, b, 40); /* stray exit: ignored */
    CHECK_EQ_INT(b->total_ticks, 25);
    lp_tc_thread_free(th);
}

/* Tracing switched on inside a running frame: its first LINE adopts it. */
TEST(test_adopt_running_frame) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(9, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_line(th, a, 5, 100);
    lp_tc_line(th, a, 6, 110);
    lp_tc_exit(th, a, 111);
    CHECK_EQ_INT(hits(a, 5), 1);
    CHECK_EQ_INT(ticks(a, 5), 10);
    CHECK_EQ_INT(ticks(a, 6), 1);
    CHECK_EQ_INT(a->total_ticks, 11);
    lp_tc_thread_free(th);
}

/* Two threads run the same function interleaved (GIL switches). */
TEST(test_two_threads) {
    lp_tc_reset_registry();
    lp_tc_code *f = reg(10, 1);
    lp_tc_thread *t1 = lp_tc_thread_new(), *t2 = lp_tc_thread_new();
    lp_tc_enter(t1, f, -1, 0);
    lp_tc_line(t1, f, 2, 0);
    lp_tc_enter(t2, f, -1, 5); /* t2 cannot use f's depth counter */
    lp_tc_line(t2, f, 2, 5);
    lp_tc_enter(t2, f, -1, 6); /* recursion on t2: not outer */
    lp_tc_line(t2, f, 3, 6);
    lp_tc_line(t1, f, 3, 10);
    lp_tc_exit(t1, f, 12);
    lp_tc_enter(t1, f, -1, 13); /* new outer call on t1 */
    lp_tc_line(t1, f, 3, 13);
    lp_tc_exit(t1, f, 14);
    lp_tc_exit(t2, f, 20);
    lp_tc_exit(t2, f, 30);
    CHECK_EQ_INT(hits(f, 2), 2);
    CHECK_EQ_INT(hits(f, 3), 3);
    CHECK_EQ_INT(ticks(f, 2), 10 + 25);
    CHECK_EQ_INT(ticks(f, 3), 2 + 1 + 14);
    CHECK_EQ_INT(f->total_ticks, 12 + 1 + 25);
    CHECK_EQ_INT(t1->uncounted + t2->uncounted, 0);
    CHECK_EQ_INT(f->depth, 0);
    lp_tc_thread_free(t1);
    lp_tc_thread_free(t2);
}

/* Bookkeeping time reported with lp_tc_overhead is not program time,
 * also for the caller's line that spans a traced callee. */
TEST(test_overhead_subtracted) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(11, 1), *b = reg(12, 50);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_overhead(th, 0, 3);
    lp_tc_line(th, a, 2, 3);
    lp_tc_overhead(th, 3, 6);
    lp_tc_enter(th, b, -1, 10);
    lp_tc_overhead(th, 10, 12);
    lp_tc_line(th, b, 51, 12);
    lp_tc_overhead(th, 12, 15);
    lp_tc_exit(th, b, 25);
    lp_tc_overhead(th, 25, 27);
    lp_tc_exit(th, a, 30);
    CHECK_EQ_INT(ticks(b, 51), 10);
    CHECK_EQ_INT(b->total_ticks, 15 - 5);
    CHECK_EQ_INT(ticks(a, 2), (30 - 3) - (3 + 2 + 3 + 2));
    CHECK_EQ_INT(a->total_ticks, 30 - 3 - 10);
    lp_tc_thread_free(th);
}

TEST(test_epoch_and_clear) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(13, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 2, 0);
    lp_tc_new_epoch(); /* tracing switched off and on */
    CHECK(lp_tc_top_code(th) == NULL);
    lp_tc_exit(th, a, 50); /* stale frame gone: ignored */
    CHECK_EQ_INT(ticks(a, 2), 0);
    CHECK_EQ_INT(th->depth, 0);
    lp_tc_enter(th, a, -1, 60);
    CHECK(lp_tc_top_code(th) == a);
    lp_tc_line(th, a, 300, 60); /* far line: array grows */
    lp_tc_exit(th, a, 70);
    CHECK_EQ_INT(hits(a, 300), 1);
    CHECK_EQ_INT(ticks(a, 300), 10);
    CHECK_EQ_INT(hits(a, 2), 1);
    lp_tc_line(th, a, 0, 80); /* before firstlineno: no line */
    lp_tc_exit(th, a, 90);
    lp_tc_clear();
    CHECK_EQ_INT(hits(a, 300), 0);
    CHECK_EQ_INT(a->total_ticks, 0);
    lp_tc_thread_free(th);
}

TEST(test_registry) {
    lp_tc_reset_registry();
    int is_new = 0;
    for (int k = 0; k < 64; k++) {
        lp_tc_code *c = lp_tc_register(&ids[k], k, NULL, &is_new);
        REQUIRE(c != NULL);
        CHECK_EQ_INT(is_new, 1);
    }
    CHECK_EQ_INT(lp_tc_ncodes(), 64);
    for (int k = 0; k < 64; k++) {
        lp_tc_code *c = lp_tc_find(&ids[k]);
        REQUIRE(c != NULL);
        CHECK_EQ_INT(c->firstlineno, k);
        CHECK(lp_tc_code_at((size_t)k) == c);
    }
    lp_tc_register(&ids[5], 5, NULL, &is_new);
    CHECK_EQ_INT(is_new, 0);
    CHECK(lp_tc_find(&is_new) == NULL);
    lp_tc_reset_registry();
}

/* Deep recursion grows the shadow stack. */
TEST(test_deep_stack) {
    lp_tc_reset_registry();
    lp_tc_code *f = reg(14, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    for (int d = 0; d < 1000; d++) {
        lp_tc_enter(th, f, -1, (uint64_t)d);
        lp_tc_line(th, f, 2, (uint64_t)d);
    }
    CHECK_EQ_INT(th->depth, 1000);
    for (int d = 0; d < 1000; d++) lp_tc_exit(th, f, 2000);
    CHECK_EQ_INT(hits(f, 2), 1000);
    CHECK_EQ_INT(f->total_ticks, 2000);
    CHECK_EQ_INT(f->depth, 0);
    lp_tc_thread_free(th);
    lp_tc_reset_registry();
}

/* One event stream, sent as the bindings send it: the inline LINE path
 * first, lp_tc_line when it declines. `fast` counts the events it took. */
static void fast_or_slow(lp_tc_thread *th, lp_tc_code *c, int line, uint64_t t, int *fast) {
    if (lp_tc_line_fast(th, c->id, line, t)) (*fast)++;
    else lp_tc_line(th, c, line, t);
}

/* The inline LINE path gives exactly what lp_tc_line gives, overhead
 * subtracted, and declines what it cannot do: no frame, another code's
 * frame, a line past the array, a frame from before an on/off switch. */
TEST(test_line_fast_path) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(15, 10), *b = reg(16, 100);
    lp_tc_thread *th = lp_tc_thread_new();
    int fast = 0;
    CHECK(!lp_tc_line_fast(th, a->id, 11, 0)); /* no frame yet */
    lp_tc_enter(th, a, -1, 0);
    fast_or_slow(th, a, 11, 2, &fast); /* array not made yet: declined */
    CHECK_EQ_INT(fast, 0);
    fast_or_slow(th, a, 12, 5, &fast);
    lp_tc_overhead(th, 5, 7);
    fast_or_slow(th, a, 11, 9, &fast);
    CHECK_EQ_INT(fast, 2);
    CHECK(!lp_tc_line_fast(th, b->id, 101, 10));                 /* a's frame is on top */
    CHECK(!lp_tc_line_fast(th, a->id, 9, 10));                   /* before the def line */
    CHECK(!lp_tc_line_fast(th, a->id, 10 + (int)a->nlines, 10)); /* past the array */
    fast_or_slow(th, a, 10 + (int)a->nlines + 5, 12, &fast);     /* grows it */
    fast_or_slow(th, a, 12, 20, &fast);
    lp_tc_exit(th, a, 30);
    CHECK_EQ_INT(fast, 3);
    CHECK_EQ_INT(hits(a, 11), 2);
    CHECK_EQ_INT(hits(a, 12), 2);
    CHECK_EQ_INT(ticks(a, 11), 3 + 3);
    CHECK_EQ_INT(ticks(a, 12), (9 - 5 - 2) + 10);
    CHECK_EQ_INT(ticks(a, 10 + 16 + 5), 8);
    CHECK_EQ_INT(a->total_ticks, 30 - 2);
    lp_tc_enter(th, a, -1, 40);
    lp_tc_line(th, a, 11, 41);
    lp_tc_new_epoch();
    CHECK(!lp_tc_line_fast(th, a->id, 12, 42)); /* stale frame */
    CHECK_EQ_INT(hits(a, 12), 2);
    lp_tc_thread_free(th);
    lp_tc_reset_registry();
}

/* A fake clock for the calibration: every read moves it 1000 ticks on. */
static uint64_t fake_clock_value;
static uint64_t fake_clock(void) { return fake_clock_value += 1000; }
static uint64_t real_clock(void) { return lp_clock_now(); }

/* The inline path charges lp_tc_fast_line_cost per event as overhead, and
 * the calibration sets that cost from rounds timed as a whole. */
TEST(test_fast_line_cost) {
    lp_tc_reset_registry();
    lp_tc_code *a = reg(17, 1);
    lp_tc_thread *th = lp_tc_thread_new();
    lp_tc_enter(th, a, -1, 0);
    lp_tc_line(th, a, 2, 0); /* makes the array: slow path */
    lp_tc_fast_line_cost = 3;
    CHECK(lp_tc_line_fast(th, a->id, 3, 10));
    CHECK_EQ_INT(th->ovh, 3);
    CHECK(lp_tc_line_fast(th, a->id, 2, 20));
    CHECK_EQ_INT(th->ovh, 6);
    lp_tc_exit(th, a, 30);
    CHECK_EQ_INT(ticks(a, 2), 10 + (30 - 20 - 3));
    CHECK_EQ_INT(ticks(a, 3), 10 - 3);
    CHECK_EQ_INT(a->total_ticks, 30 - 6);
    /* 1000 ticks per round of 256 events, rounded down */
    CHECK_EQ_INT(lp_tc_calibrate_fast_line(fake_clock), 1000 / 256);
    CHECK_EQ_INT(lp_tc_fast_line_cost, 3);
    CHECK_EQ_INT(lp_tc_ncodes(), 1); /* the private frame left no record */
    lp_clock_init();
    lp_tc_calibrate_fast_line(real_clock);
    CHECK(lp_tc_fast_line_cost < 100000); /* a real clock: some ticks, not a pause */
    lp_tc_fast_line_cost = 0;
    lp_tc_thread_free(th);
    lp_tc_reset_registry();
}

RUN_TESTS(test_simple_loop, test_recursion, test_mutual_recursion, test_generator_suspend,
          test_exception_unwind, test_missed_exit, test_adopt_running_frame, test_two_threads,
          test_overhead_subtracted, test_epoch_and_clear, test_registry, test_deep_stack, test_line_fast_path,
          test_fast_line_cost, test_suspension_wait_same_thread, test_suspension_wait_other_thread_and_stale,
          test_suspension_table_grows, test_suspension_table_evicts_oldest_at_cap)
