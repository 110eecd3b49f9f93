/* collect/eh_frames.c: the walk lprof uses once at start to find the eval
 * loop's parts. Checked against what the compiler knows (each function's
 * address, a local variable's place on the stack) and against libunwind's
 * walk of the same stack. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>

#include "collect/eh_frames.h"
#include "collect/native_unwind.h"
#include "harness.h"

#define NOINLINE __attribute__((noinline, noclone))

enum { MAX = 32 };
static lp_eh_frame frames[MAX];
static int nframes;
static uintptr_t unw_ips[MAX];
static int n_unw;
static uintptr_t
    middle_local_at; /* where middle() keeps a local: the eval loop's entry frame, in miniature */
static volatile int sink;

NOINLINE static int inner(void) {
    nframes = lp_eh_frames_here(frames, MAX);
    n_unw = lp_native_unwind_here(unw_ips, MAX);
    return sink + 1; /* work after the calls: no tail call */
}

NOINLINE static int middle(void) {
    volatile int local = 7;
    middle_local_at = (uintptr_t)&local;
    int r = inner();
    return r + local;
}

NOINLINE static int outer(void) { return middle() + sink + 1; }

static int in_function(const lp_eh_frame *f, void *fn) {
    return f->start == (uintptr_t)fn && f->ip - 1 >= f->start && f->ip - 1 < f->end;
}

TEST(frames_name_their_functions_leaf_first) {
    nframes = 0;
    outer();
    REQUIRE(nframes >= 3);
    CHECK(in_function(&frames[0], (void *)inner));
    CHECK(in_function(&frames[1], (void *)middle));
    CHECK(in_function(&frames[2], (void *)outer));
    for (int i = 1; i < nframes; i++) CHECK(frames[i - 1].sp < frames[i].sp);
}

/* what find_eval_loop relies on: a frame's locals lie between its own
 * stack pointer and its caller's */
TEST(a_local_lies_in_its_own_frame_span) {
    outer();
    REQUIRE(nframes >= 3);
    int holder = -1;
    for (int i = 0; i + 1 < nframes; i++)
        if (middle_local_at >= frames[i].sp && middle_local_at < frames[i + 1].sp) holder = i;
    CHECK_EQ_INT(holder, 1);
}

/* the same frames as libunwind's walk of the same stack: its first return
 * address is into inner too, from its own call */
TEST(return_addresses_agree_with_libunwind) {
    const char *why = NULL;
    if (lp_native_unwind_load(&why) < 0) {
        printf("skipped: %s\n", why);
        return;
    }
    outer();
    REQUIRE(nframes >= 3 && n_unw >= 2);
    CHECK(unw_ips[0] - 1 >= frames[0].start && unw_ips[0] - 1 < frames[0].end);
    int n = nframes < n_unw ? nframes : n_unw;
    for (int i = 1; i < n && i < 6; i++) CHECK(frames[i].ip == unw_ips[i]);
}

TEST(no_range_outside_code) {
    uintptr_t lo = 1, hi = 1;
    CHECK_EQ_INT(lp_eh_function_range((uintptr_t)&middle_local_at, &lo, &hi), -1);
    CHECK(lo == 1 && hi == 1);
    CHECK_EQ_INT(lp_eh_function_range((uintptr_t)(void *)outer, &lo, &hi), 0);
    CHECK(lo == (uintptr_t)(void *)outer && hi > lo && hi - lo < 4096);
}

RUN_TESTS(frames_name_their_functions_leaf_first, a_local_lies_in_its_own_frame_span,
          return_addresses_agree_with_libunwind, no_range_outside_code)
