/* collect/task_ids.c (live asyncio tasks' serials by address, read from the
 * signal handler) and aggregate/task_split.c (the stacks' sampled time by
 * task): serials are never reused, a dead task's address is forgotten
 * without hiding the tasks probed past it, the probe bound holds, and the
 * split keeps each (stack, task) pair's columns apart. */
#include <stdint.h>

#include "aggregate/task_split.h"
#include "collect/task_ids.h"
#include "common/hash.h"
#include "harness.h"

static uint64_t cells[1 << 22]; /* candidate addresses: aligned, distinct */

/* n addresses of cells whose home slot is the same. */
static int same_home(uintptr_t *out, int n, int skip) {
    uint32_t want = UINT32_MAX;
    int k = 0;
    for (size_t i = (size_t)skip; i < LP_ARRAY_LEN(cells) && k < n; i++) {
        uintptr_t a = (uintptr_t)&cells[i];
        uint32_t home = (uint32_t)lp_hash_mix64((uint64_t)a) & (LP_TASK_IDS_SLOTS - 1);
        if (want == UINT32_MAX) want = home;
        if (home == want) out[k++] = a;
    }
    return k;
}

TEST(test_a_serial_is_found_and_never_given_again) {
    uintptr_t a = (uintptr_t)&cells[7];
    uint32_t first = lp_task_ids_insert(a);
    CHECK(first != 0);
    CHECK_EQ_INT(lp_task_ids_find(a), first);
    CHECK_EQ_INT(lp_task_ids_insert(a), first); /* registered once */
    lp_task_ids_remove(a);
    CHECK_EQ_INT(lp_task_ids_find(a), 0);
    uint32_t again = lp_task_ids_insert(a); /* a new task at the dead one's address */
    CHECK(again != 0 && again != first);
    CHECK_EQ_INT(lp_task_ids_find(a), again);
    lp_task_ids_remove(a);
    CHECK_EQ_INT(lp_task_ids_find(0), 0);
    CHECK_EQ_INT(lp_task_ids_insert(0), 0);
}

TEST(test_a_removed_task_hides_none_probed_past_it) {
    uintptr_t a[3];
    REQUIRE(same_home(a, 3, 1000) == 3);
    uint32_t s0 = lp_task_ids_insert(a[0]), s1 = lp_task_ids_insert(a[1]);
    REQUIRE(s0 && s1 && s0 != s1);
    lp_task_ids_remove(a[0]); /* a tombstone before a[1] */
    CHECK_EQ_INT(lp_task_ids_find(a[1]), s1);
    uint32_t s2 = lp_task_ids_insert(a[2]); /* takes the tombstone */
    CHECK(s2 != 0);
    CHECK_EQ_INT(lp_task_ids_find(a[2]), s2);
    CHECK_EQ_INT(lp_task_ids_find(a[1]), s1);
    CHECK_EQ_INT(lp_task_ids_find(a[0]), 0);
    lp_task_ids_remove(a[1]);
    lp_task_ids_remove(a[2]);
}

TEST(test_tasks_past_the_probe_bound_are_refused_and_counted) {
    enum { N = LP_TASK_IDS_PROBES + 3 };
    uintptr_t a[N];
    REQUIRE(same_home(a, N, 200000) == N);
    uint64_t refused = lp_task_ids_refused();
    int given = 0;
    for (int i = 0; i < N; i++) given += lp_task_ids_insert(a[i]) != 0;
    /* the bound, less any slot of the run already taken by another home */
    CHECK(given <= LP_TASK_IDS_PROBES);
    CHECK(given >= LP_TASK_IDS_PROBES - 4);
    CHECK_EQ_INT(lp_task_ids_refused() - refused, N - given);
    CHECK_EQ_INT(lp_task_ids_find(a[N - 1]), 0);
    for (int i = 0; i < N; i++) lp_task_ids_remove(a[i]);
    for (int i = 0; i < N; i++) CHECK_EQ_INT(lp_task_ids_find(a[i]), 0);
}

TEST(test_the_split_keeps_each_stack_and_task_apart) {
    lp_task_split *t = lp_task_split_create(16);
    REQUIRE(t != NULL);
    lp_task_split_add(t, 5, 1, LP_M_WALL, 100);
    lp_task_split_add(t, 5, 1, LP_M_WALL, 50);
    lp_task_split_add(t, 5, 2, LP_M_WALL, 7);
    lp_task_split_add(t, 6, 1, LP_M_WAIT, 9);
    lp_task_split_add(t, 6, 1, LP_M_GIL, 3);
    lp_task_split_add(t, 5, 0, LP_M_WALL, 1000);      /* no task */
    lp_task_split_add(t, 5, 1, LP_M_COUNT, 1000);     /* no such column */
    lp_task_split_add(t, 5, 1, LP_M_GPU_KERNEL, 100); /* not a sampling column */
    CHECK_EQ_INT(lp_task_split_count(t), 3);
    int64_t wall[3] = {0}, wait = 0, gil = 0;
    for (uint32_t i = 0; i < lp_task_split_count(t); i++) {
        uint32_t stack, task;
        int64_t v[LP_TASK_SPLIT_METRICS];
        lp_task_split_get(t, i, &stack, &task, v);
        if (stack == 5) wall[task] = v[LP_M_WALL];
        if (stack == 6 && task == 1) {
            wait = v[LP_M_WAIT];
            gil = v[LP_M_GIL];
        }
        CHECK_EQ_INT(v[LP_M_CPU_PYTHON], 0);
    }
    CHECK_EQ_INT(wall[1], 150);
    CHECK_EQ_INT(wall[2], 7);
    CHECK_EQ_INT(wait, 9);
    CHECK_EQ_INT(gil, 3);
    /* 16 pairs, three quarters usable: the rest refused and counted */
    for (uint32_t s = 100; s < 120; s++) lp_task_split_add(t, s, 4, LP_M_WALL, 1);
    CHECK_EQ_INT(lp_task_split_count(t), 12);
    CHECK_EQ_INT(lp_task_split_full(t), 11);
    lp_task_split_add(t, 5, 1, LP_M_WALL, 1); /* a pair it holds still adds */
    lp_task_split_clear(t);
    CHECK_EQ_INT(lp_task_split_count(t), 0);
    CHECK_EQ_INT(lp_task_split_full(t), 0);
    lp_task_split_add(t, 5, 1, LP_M_WALL, 1);
    CHECK_EQ_INT(lp_task_split_count(t), 1);
    lp_task_split_destroy(t);
}

RUN_TESTS(test_a_serial_is_found_and_never_given_again, test_a_removed_task_hides_none_probed_past_it,
          test_tasks_past_the_probe_bound_are_refused_and_counted,
          test_the_split_keeps_each_stack_and_task_apart)
