/* block_copy: reads served from 4 KiB block copies. A fake memory with a
 * hole stands in for another thread's (the fetch counts its calls); the
 * prefetch is checked on this process's own memory (process_vm_readv). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "harness.h"
#include "collect/block_copy.h"

static unsigned char *fake; /* 8 blocks, block 5 unreadable */
static int fake_calls;

static int fake_fetch(void *dst, const void *src, size_t n) {
    fake_calls++;
    uintptr_t at = (uintptr_t)src, lo = (uintptr_t)fake;
    if (at < lo || at + n > lo + 8 * LP_BLOCK_SIZE) return -1;
    uintptr_t hole = lo + 5 * LP_BLOCK_SIZE;
    if (at < hole + LP_BLOCK_SIZE && at + n > hole) return -1;
    memcpy(dst, src, n);
    return 0;
}

static lp_block_copy copies; /* 512 KiB: static */

static void setup(void) {
    if (!fake) fake = aligned_alloc(LP_BLOCK_SIZE, 8 * LP_BLOCK_SIZE);
    for (size_t i = 0; i < 8 * LP_BLOCK_SIZE; i++) fake[i] = (unsigned char)(i * 7 + 3);
    fake_calls = 0;
    lp_block_copy_reset(&copies, fake_fetch);
}

TEST(many_reads_in_one_block_fetch_it_once) {
    setup();
    for (int i = 0; i < 100; i++) {
        uint64_t v = 0, want;
        REQUIRE(lp_block_copy_read(&copies, &v, fake + 8 * i, sizeof v) == 0);
        memcpy(&want, fake + 8 * i, sizeof want);
        CHECK(v == want);
    }
    CHECK_EQ_INT(fake_calls, 1);
    CHECK_EQ_INT(copies.fetches, 1);
}

TEST(a_read_across_blocks_comes_back_whole) {
    setup();
    unsigned char buf[300];
    REQUIRE(lp_block_copy_read(&copies, buf, fake + 2 * LP_BLOCK_SIZE - 100, sizeof buf) == 0);
    CHECK(memcmp(buf, fake + 2 * LP_BLOCK_SIZE - 100, sizeof buf) == 0);
    CHECK_EQ_INT(fake_calls, 2);
}

TEST(an_unreadable_block_fails_every_read_of_it) {
    setup();
    unsigned char b[8];
    CHECK(lp_block_copy_read(&copies, b, fake + 5 * LP_BLOCK_SIZE + 16, 8) == -1);
    CHECK(lp_block_copy_read(&copies, b, fake + 5 * LP_BLOCK_SIZE + 64, 8) == -1);
    CHECK_EQ_INT(fake_calls, 1); /* remembered as unreadable */
    /* a read running into the hole fails; one beside it does not */
    CHECK(lp_block_copy_read(&copies, b, fake + 5 * LP_BLOCK_SIZE - 4, 8) == -1);
    CHECK(lp_block_copy_read(&copies, b, fake + 4 * LP_BLOCK_SIZE, 8) == 0);
}

TEST(a_reset_forgets_the_copies) {
    setup();
    uint32_t v;
    REQUIRE(lp_block_copy_read(&copies, &v, fake, sizeof v) == 0);
    fake[0] ^= 0xff; /* the memory moves on */
    REQUIRE(lp_block_copy_read(&copies, &v, fake, sizeof v) == 0);
    CHECK((v & 0xff) != fake[0]); /* still the copy */
    lp_block_copy_reset(&copies, fake_fetch);
    REQUIRE(lp_block_copy_read(&copies, &v, fake, sizeof v) == 0);
    CHECK((v & 0xff) == fake[0]);
}

static int own_fetch(void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    return 0;
}

TEST(when_every_slot_is_taken_reads_go_through_the_fetch) {
    size_t blocks = LP_BLOCK_SLOTS + 40;
    unsigned char *big =
        mmap(NULL, blocks * LP_BLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(big != MAP_FAILED);
    for (size_t i = 0; i < blocks; i++) big[i * LP_BLOCK_SIZE + 9] = (unsigned char)i;
    lp_block_copy_reset(&copies, own_fetch);
    int ok = 1;
    for (size_t i = 0; i < blocks; i++) {
        unsigned char b = 0;
        if (lp_block_copy_read(&copies, &b, big + i * LP_BLOCK_SIZE + 9, 1) != 0 || b != (unsigned char)i)
            ok = 0;
    }
    CHECK(ok);
    CHECK(copies.used == LP_BLOCK_SLOTS - 1);
    munmap(big, blocks * LP_BLOCK_SIZE);
}

TEST(a_prefetch_copies_a_range_in_one_call) {
    size_t blocks = 10;
    unsigned char *mem = aligned_alloc(LP_BLOCK_SIZE, blocks * LP_BLOCK_SIZE);
    REQUIRE(mem != NULL);
    for (size_t i = 0; i < blocks * LP_BLOCK_SIZE; i++) mem[i] = (unsigned char)(i * 13);
    fake_calls = 0;
    lp_block_copy_reset(&copies, fake_fetch); /* the fake refuses this memory: any read through it fails */
    uintptr_t lo = (uintptr_t)mem + 100, hi = (uintptr_t)mem + 7 * LP_BLOCK_SIZE + 5;
    CHECK_EQ_INT(lp_block_copy_prefetch(&copies, lo, hi), 8);
    CHECK_EQ_INT(copies.fetches, 1);
    unsigned char buf[7 * LP_BLOCK_SIZE];
    REQUIRE(lp_block_copy_read(&copies, buf, mem + 100, sizeof buf) == 0);
    CHECK(memcmp(buf, mem + 100, sizeof buf) == 0);
    CHECK_EQ_INT(fake_calls, 0); /* all of it from the copies */
    /* a second prefetch over held blocks copies nothing again */
    CHECK_EQ_INT(lp_block_copy_prefetch(&copies, lo, hi), 0);
    free(mem);
}

RUN_TESTS(many_reads_in_one_block_fetch_it_once, a_read_across_blocks_comes_back_whole,
          an_unreadable_block_fails_every_read_of_it, a_reset_forgets_the_copies,
          when_every_slot_is_taken_reads_go_through_the_fetch, a_prefetch_copies_a_range_in_one_call)
