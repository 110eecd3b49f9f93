/* own_alloc: the installed guard wraps every allocation lprof makes for itself. */
#include <stdlib.h>

#include "harness.h"
#include "common/own_alloc.h"

static int depth, calls;
static int enter(void) {
    calls++;
    return depth++;
}
static void leave(int prev) { depth = prev; }
static const lp_alloc_guard guard = {enter, leave};

TEST(guard_wraps_each_allocation) {
    lp_own_alloc_set_guard(&guard);
    void *p = lp_own_malloc(16), *q = lp_own_calloc(4, 8);
    p = lp_own_realloc(p, 64);
    CHECK(p != NULL && q != NULL);
    CHECK_EQ_INT(calls, 3);
    CHECK_EQ_INT(depth, 0); /* left as it was */
    free(p);
    free(q);
}

TEST(no_guard_plain_allocation) {
    lp_own_alloc_set_guard(NULL);
    calls = 0;
    void *p = lp_own_malloc(8);
    CHECK(p != NULL);
    CHECK_EQ_INT(calls, 0);
    free(p);
}

RUN_TESTS(guard_wraps_each_allocation, no_guard_plain_allocation)
