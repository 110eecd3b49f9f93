/* livemem: the sampled-block table against a reference, the filter, overflow. */
#include <stdlib.h>

#include "harness.h"
#include "collect/shim/shared/livemem.h"
#include "collect/shim/shared/memsample.h"

static lp_live_block blk(uintptr_t addr, double w, uint32_t stack) {
    lp_live_block b = {0};
    b.addr = addr;
    b.size = (uint64_t)w;
    b.weight = w;
    b.stack = stack;
    return b;
}

TEST(insert_remove_matches_reference) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 12) == 0);
    enum { N = 2000 };
    static uintptr_t addrs[N];
    static int present[N];
    srand(3);
    for (int i = 0; i < N; i++) addrs[i] = ((uintptr_t)rand() << 16 | (uintptr_t)i) << 4;
    for (int round = 0; round < 40000; round++) {
        int i = rand() % N;
        if (present[i]) {
            lp_live_block out;
            CHECK_EQ_INT(lp_livemem_remove(&t, addrs[i], &out), 1);
            CHECK_EQ_INT(out.stack, (uint32_t)i);
            present[i] = 0;
        } else {
            lp_live_block b = blk(addrs[i], 100, (uint32_t)i);
            int rc = lp_livemem_insert(&t, &b, NULL);
            CHECK_EQ_INT(rc, 1);
            present[i] = 1;
        }
    }
    uint32_t n = 0;
    for (int i = 0; i < N; i++) {
        if (present[i]) {
            n++;
            CHECK(lp_livemem_maybe(&t, (void *)addrs[i])); /* no false negatives */
        }
        lp_live_block out;
        CHECK_EQ_INT(lp_livemem_remove(&t, addrs[i], &out), present[i]);
    }
    CHECK_EQ_INT(t.count, 0);
    CHECK(n > 0);
    lp_livemem_destroy(&t);
}

TEST(replace_same_address) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 6) == 0);
    lp_live_block a = blk(0x1000, 10, 1), b = blk(0x1000, 20, 2), old = {0};
    CHECK_EQ_INT(lp_livemem_insert(&t, &a, &old), 1);
    CHECK_EQ_INT(lp_livemem_insert(&t, &b, &old), 2);
    CHECK_EQ_INT(old.stack, 1);
    CHECK_EQ_INT(t.count, 1);
    lp_livemem_destroy(&t);
}

TEST(overflow_counted) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 4) == 0); /* 16 slots, 12 usable */
    int inserted = 0;
    for (uintptr_t i = 1; i <= 20; i++) {
        lp_live_block b = blk(i * 64, 1, 1);
        inserted += lp_livemem_insert(&t, &b, NULL) == 1;
    }
    CHECK_EQ_INT(inserted, 12);
    CHECK_EQ_INT(t.overflow, 8);
    lp_livemem_destroy(&t);
}

TEST(filter_mostly_rejects_unsampled) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 14) == 0);
    for (uintptr_t i = 1; i <= 5000; i++) {
        lp_live_block b = blk(i * 4096 * 7, 1, 1);
        lp_livemem_insert(&t, &b, NULL);
    }
    int hits = 0;
    for (uintptr_t i = 1; i <= 100000; i++) hits += lp_livemem_maybe(&t, (void *)(0x7f0000000000 + i * 48));
    CHECK(hits < 2000); /* ~0.5% expected with 5000 of 2^20 counters set */
    lp_livemem_destroy(&t);
}

static void count_blocks(const lp_live_block *b, void *ctx) { *(double *)ctx += b->weight; }

TEST(foreach_sums) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 8) == 0);
    for (uintptr_t i = 1; i <= 50; i++) {
        lp_live_block b = blk(i * 16, (double)i, 1);
        lp_livemem_insert(&t, &b, NULL);
    }
    double sum = 0;
    lp_livemem_foreach(&t, count_blocks, &sum);
    CHECK_NEAR(sum, 50 * 51 / 2, 1e-9);
    lp_livemem_destroy(&t);
}

static int replaced_calls;
static lp_live_block replaced_block;
static uint64_t replaced_t;

static uint32_t attribute_by_size(const lp_live_block *b) { return (uint32_t)b->size + 1; }
static void note_replaced(const lp_live_block *old, uint64_t t_ns) {
    replaced_calls++;
    replaced_block = *old;
    replaced_t = t_ns;
}

/* A recorded block gets its weight at the mean and its stack from the
 * owner; one recorded again at its address hands the first to replaced. */
TEST(record_weighs_attributes_and_replaces) {
    lp_livemem t;
    REQUIRE(lp_livemem_init(&t, 4) == 0);
    static const lp_livemem_owner owner = {attribute_by_size, note_replaced};
    lp_live_block a = {.addr = 0x1000, .size = 100, .t_ns = 5, .kind = LP_MEM_PYTHON};
    CHECK_EQ_INT(lp_livemem_record(&t, &a, 16384, &owner), 1);
    CHECK_NEAR(a.weight, lp_memsample_weight(100, 16384), 1e-9);
    CHECK_EQ_INT(a.stack, 101);
    CHECK_EQ_INT(replaced_calls, 0);
    lp_live_block b = {.addr = 0x1000, .size = 7, .t_ns = 9};
    CHECK_EQ_INT(lp_livemem_record(&t, &b, 16384, &owner), 2);
    CHECK_EQ_INT(replaced_calls, 1);
    CHECK_EQ_INT(replaced_block.stack, 101);
    CHECK_EQ_INT(replaced_block.kind, LP_MEM_PYTHON);
    CHECK_EQ_INT(replaced_t, 9);
    lp_live_block out;
    CHECK_EQ_INT(lp_livemem_remove(&t, 0x1000, &out), 1);
    CHECK_EQ_INT(out.stack, 8);
    lp_livemem_destroy(&t);
}

RUN_TESTS(insert_remove_matches_reference, replace_same_address, overflow_counted,
          filter_mostly_rejects_unsampled, foreach_sums, record_weighs_attributes_and_replaces)
