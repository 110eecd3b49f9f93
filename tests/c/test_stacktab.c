/* stacktab: interning identity, per-thread roots, truncation marker,
 * capacity exhaustion -> overflow bucket, concurrent inserts from 2 threads. */
#include <pthread.h>
#include <stdint.h>

#include "aggregate/agg.h"
#include "harness.h"
#include "aggregate/stacktab.h"

static void *P(uintptr_t x) { return (void *)x; }

TEST(same_stack_same_id) {
    lp_stacktab *t = lp_stacktab_create(1024, 64);
    REQUIRE(t);
    lp_rawframe a[3] = {{P(0x30), 6}, {P(0x20), 4}, {P(0x10), 2}};
    lp_rawframe b[3] = {{P(0x30), 8}, {P(0x20), 4}, {P(0x10), 2}};
    uint32_t ia = lp_stacktab_intern(t, 1, a, 3, 0);
    uint32_t ib = lp_stacktab_intern(t, 1, b, 3, 0);
    CHECK(ia != LP_STACK_OVERFLOW && ib != LP_STACK_OVERFLOW);
    CHECK(ia != ib);
    CHECK_EQ_INT(lp_stacktab_intern(t, 1, a, 3, 0), ia);
    /* shared prefix: root + 2 frames + 2 leaves + reserved node 0 */
    CHECK_EQ_INT(lp_stacktab_node_count(t), 1 + 1 + 2 + 2);
    uint32_t other_thread = lp_stacktab_intern(t, 2, a, 3, 0);
    CHECK(other_thread != ia);
    CHECK_EQ_INT(lp_stacktab_thread(t, other_thread), 2);
    CHECK_EQ_INT(lp_stacktab_thread(t, ia), 1);
    uint32_t tr = lp_stacktab_intern(t, 1, a, 3, 1);
    CHECK(tr != ia);
    /* walk tr to its root: leaf a[0], a[1], a[2], truncated marker, root */
    lp_stacknode n = lp_stacktab_node(t, tr);
    CHECK(n.valid && n.code == a[0].code && n.offset == 6);
    n = lp_stacktab_node(t, n.parent);
    n = lp_stacktab_node(t, n.parent);
    CHECK(n.code == a[2].code);
    n = lp_stacktab_node(t, n.parent);
    CHECK_EQ_INT(n.offset, LP_OFFSET_TRUNCATED);
    n = lp_stacktab_node(t, n.parent);
    CHECK_EQ_INT(n.offset, LP_OFFSET_THREAD_ROOT);
    CHECK_EQ_INT(n.parent, LP_STACK_NONE);

    lp_stacktab_add(t, ia, LP_M_SAMPLES, 3);
    lp_stacktab_add(t, ia, LP_M_SAMPLES, 4);
    lp_stacktab_max(t, ia, LP_M_PEAK_BYTES, 10);
    lp_stacktab_max(t, ia, LP_M_PEAK_BYTES, 5);
    int64_t v[LP_M_COUNT];
    lp_stacktab_get(t, ia, v);
    CHECK_EQ_INT(v[LP_M_SAMPLES], 7);
    CHECK_EQ_INT(v[LP_M_PEAK_BYTES], 10);
    CHECK_EQ_INT(v[LP_M_WALL], 0);

    /* retire: the same key now gets a new node */
    lp_stacktab_retire(t, ia);
    uint32_t again = lp_stacktab_intern(t, 1, a, 3, 0);
    CHECK(again != ia && again != LP_STACK_OVERFLOW);

    lp_stacktab_clear(t);
    CHECK_EQ_INT(lp_stacktab_node_count(t), 1);
    CHECK_EQ_INT(lp_stacktab_row_count(t), 1);
    lp_stacktab_destroy(t);
}

TEST(capacity_exhaustion_goes_to_overflow) {
    lp_stacktab *t = lp_stacktab_create(16, 4);
    REQUIRE(t);
    uint32_t ok = 0, over = 0;
    for (uintptr_t i = 1; i <= 40; i++) {
        lp_rawframe f = {P(i * 16), 0};
        uint32_t id = lp_stacktab_intern(t, 7, &f, 1, 0);
        if (id == LP_STACK_OVERFLOW) over++;
        else ok++;
        lp_stacktab_add(t, id, LP_M_SAMPLES, 1);
    }
    CHECK_EQ_INT(ok, 16 - 2); /* node 0 and the thread root take two */
    CHECK_EQ_INT(over, 40 - ok);
    /* rows: 3 usable (row 0 is the overflow row); everything else lands there */
    int64_t total = 0, v[LP_M_COUNT];
    for (uint32_t r = 0; r < lp_stacktab_row_count(t); r++)
        if (lp_stacktab_row(t, r, v) != LP_STACK_NONE) total += v[LP_M_SAMPLES];
    CHECK_EQ_INT(total, 40);
    lp_stacktab_get(t, LP_STACK_OVERFLOW, v);
    CHECK_EQ_INT(v[LP_M_SAMPLES], 40 - 3);
    CHECK(lp_stacktab_overflows(t) > 0);
    lp_stacktab_destroy(t);
}

static lp_stacktab *shared;
static uint32_t ids[2][500];

static void *inserter(void *arg) {
    int who = (int)(intptr_t)arg;
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < 500; i++) {
            lp_rawframe f[4] = {
                {P(0x1000 + (uintptr_t)i * 8), i}, {P(0x900), 2}, {P(0x800), 1}, {P(0x700), 0}};
            uint32_t id = lp_stacktab_intern(shared, 99, f, 4, 0);
            if (rep == 0) ids[who][i] = id;
            else if (ids[who][i] != id) ids[who][i] = LP_STACK_NONE;
            lp_stacktab_add(shared, id, LP_M_ALLOC_BYTES, 1);
        }
    }
    return NULL;
}

TEST(concurrent_inserts_two_threads) {
    shared = lp_stacktab_create(4096, 1024);
    REQUIRE(shared);
    pthread_t a, b;
    REQUIRE(pthread_create(&a, NULL, inserter, (void *)0) == 0);
    REQUIRE(pthread_create(&b, NULL, inserter, (void *)1) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int mismatch = 0;
    for (int i = 0; i < 500; i++) mismatch += ids[0][i] != ids[1][i] || ids[0][i] == LP_STACK_NONE;
    CHECK_EQ_INT(mismatch, 0);
    int64_t total = 0, v[LP_M_COUNT];
    uint32_t rows = 0;
    for (uint32_t r = 0; r < lp_stacktab_row_count(shared); r++)
        if (lp_stacktab_row(shared, r, v) != LP_STACK_NONE && v[LP_M_ALLOC_BYTES]) {
            total += v[LP_M_ALLOC_BYTES];
            rows++;
        }
    CHECK_EQ_INT(total, 2 * 20 * 500);
    CHECK_EQ_INT(rows, 500);
    lp_stacktab_destroy(shared);
}

TEST(agg_global_table) {
    REQUIRE(lp_agg_init() == 0);
    lp_rawframe f = {P(0x42), 10};
    uint32_t id = lp_agg_intern(5, &f, 1, 0);
    lp_agg_add(id, LP_M_WALL, 1000);
    int64_t v[LP_M_COUNT];
    lp_stacktab_get(lp_agg_stacks(), id, v);
    CHECK_EQ_INT(v[LP_M_WALL], 1000);
    CHECK(strcmp(lp_metric_infos[LP_M_PEAK_BYTES].name, "peak_bytes") == 0);
    CHECK_EQ_INT(lp_metric_infos[LP_M_PEAK_BYTES].merge, LP_MERGE_MAX);
    lp_agg_reset();
    lp_stacktab_get(lp_agg_stacks(), id, v);
    CHECK_EQ_INT(v[LP_M_WALL], 0);
}

/* prefault: the index becomes resident (a 2^20-node table: 8 MiB of it)
 * and every entry stays as it was: the stacks interned before keep their
 * ids, new ones are added. */
TEST(prefault_makes_the_index_resident_and_keeps_its_entries) {
    lp_stacktab *t = lp_stacktab_create(1u << 20, 64);
    REQUIRE(t);
    lp_rawframe a[2] = {{P(0x20), 4}, {P(0x10), 2}};
    lp_rawframe b[2] = {{P(0x40), 4}, {P(0x10), 2}};
    uint32_t ia = lp_stacktab_intern(t, 1, a, 2, 0);
    lp_stacktab_size before, after;
    lp_stacktab_measure(t, &before);
    uint32_t parts = lp_stacktab_prefault(t, 0);
    CHECK_EQ_INT(parts, 4); /* 2^21 entries of 4 bytes, in 2 MiB parts */
    for (uint32_t part = 1; part < parts; part++) CHECK_EQ_INT(lp_stacktab_prefault(t, part), parts);
    CHECK_EQ_INT(lp_stacktab_prefault(t, parts), parts); /* past the end: nothing */
    lp_stacktab_measure(t, &after);
    if (before.resident_bytes || after.resident_bytes) /* 0: mincore cannot tell */
        CHECK(before.resident_bytes < (8u << 20) && after.resident_bytes >= (8u << 20));
    CHECK_EQ_INT(lp_stacktab_intern(t, 1, a, 2, 0), ia);
    uint32_t ib = lp_stacktab_intern(t, 1, b, 2, 0);
    CHECK(ib != ia && ib != LP_STACK_OVERFLOW);
    CHECK_EQ_INT(lp_stacktab_node_count(t), 1 + 1 + 1 + 2);
    lp_stacktab_destroy(t);
}

RUN_TESTS(prefault_makes_the_index_resident_and_keeps_its_entries, same_stack_same_id,
          capacity_exhaustion_goes_to_overflow, concurrent_inserts_two_threads, agg_global_table)
