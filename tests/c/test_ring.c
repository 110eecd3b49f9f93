/* ring: FIFO order, wrap-around, full -> drop counted, producer/consumer threads. */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "collect/ring.h"

static uint8_t mem[1024] __attribute__((aligned(8)));

static int push_u32s(lp_ring *r, uint32_t first, uint32_t count) {
    uint32_t *p = lp_ring_reserve(r, count * 4);
    if (!p) return 0;
    for (uint32_t i = 0; i < count; i++) p[i] = first + i;
    lp_ring_commit(r, count * 4);
    return 1;
}

TEST(fifo_and_wrap) {
    lp_ring r;
    REQUIRE(lp_ring_init(&r, mem, sizeof mem) == 0);
    uint32_t next = 0, expect = 0;
    for (int round = 0; round < 200; round++) {
        uint32_t n = 1 + (uint32_t)(round % 13); /* lengths that force wraps */
        REQUIRE(push_u32s(&r, next, n));
        next += n;
        uint32_t len;
        uint32_t *p = lp_ring_peek(&r, &len);
        REQUIRE(p != NULL);
        CHECK_EQ_INT(len, n * 4);
        for (uint32_t i = 0; i < n; i++) CHECK_EQ_INT(p[i], expect + i);
        expect += n;
        lp_ring_release(&r);
    }
    CHECK(lp_ring_empty(&r));
    CHECK_EQ_INT(r.dropped, 0);
}

TEST(full_drops_and_counts) {
    lp_ring r;
    REQUIRE(lp_ring_init(&r, mem, sizeof mem) == 0);
    int pushed = 0;
    while (push_u32s(&r, 0, 14)) pushed++; /* 64-byte records */
    CHECK_EQ_INT(pushed, 1024 / 64);
    CHECK_EQ_INT(r.dropped, 1);
    CHECK(!push_u32s(&r, 0, 1) || 0);
    CHECK_EQ_INT(r.dropped, 2);
    uint32_t len;
    CHECK(lp_ring_peek(&r, &len) != NULL);
    lp_ring_release(&r);
    CHECK(push_u32s(&r, 0, 14)); /* room again */
    CHECK(lp_ring_init(&r, mem, 100) == -1);
}

static lp_ring shared;
static uint8_t shared_mem[4096] __attribute__((aligned(8)));
#define N_RECORDS 200000u

static void *producer(void *arg) {
    (void)arg;
    uint32_t i = 0;
    while (i < N_RECORDS) {
        uint32_t n = 1 + i % 7;
        uint32_t *p = lp_ring_reserve(&shared, n * 4);
        if (!p) continue;
        for (uint32_t k = 0; k < n; k++) p[k] = i;
        lp_ring_commit(&shared, n * 4);
        i++;
    }
    return NULL;
}

TEST(two_threads_spsc) {
    REQUIRE(lp_ring_init(&shared, shared_mem, sizeof shared_mem) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, producer, NULL) == 0);
    uint32_t expect = 0, bad = 0;
    while (expect < N_RECORDS) {
        uint32_t len;
        uint32_t *p = lp_ring_peek(&shared, &len);
        if (!p) continue;
        if (len != (1 + expect % 7) * 4) bad++;
        for (uint32_t k = 0; k < len / 4; k++) bad += p[k] != expect;
        lp_ring_release(&shared);
        expect++;
    }
    pthread_join(th, NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK(lp_ring_empty(&shared));
}

RUN_TESTS(fifo_and_wrap, full_drops_and_counts, two_threads_spsc)
