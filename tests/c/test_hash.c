/* common/hash.h: the mixer spreads sequential keys (ids, aligned addresses)
 * over the buckets of a power-of-two table as at random, by its low bits
 * and by its high bits, and each input bit reaches every output bit; the
 * Fibonacci hash spreads keys in arithmetic progression more evenly than
 * at random (what the tables that cannot probe rely on). */
#include <stdint.h>

#include "common/hash.h"
#include "harness.h"

#define BUCKETS 1024
#define KEYS    (BUCKETS * 64) /* 64 a bucket on average */

/* Keys base + i * stride into BUCKETS buckets by `shift`: the fullest and
 * emptiest bucket stay within 50% of the mean (a binomial spread of 64 keys
 * a bucket has a standard deviation of 8: 4 sigma is 32). */
static void check_spread(uint64_t base, uint64_t stride, unsigned shift) {
    static uint32_t count[BUCKETS];
    for (int b = 0; b < BUCKETS; b++) count[b] = 0;
    for (uint64_t i = 0; i < KEYS; i++) count[(lp_hash_mix64(base + i * stride) >> shift) & (BUCKETS - 1)]++;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int b = 0; b < BUCKETS; b++) {
        if (count[b] < lo) lo = count[b];
        if (count[b] > hi) hi = count[b];
    }
    CHECK(lo >= 32);
    CHECK(hi <= 96);
}

TEST(sequential_ids_spread_over_low_bits) {
    check_spread(0, 1, 0);
    check_spread(1u << 20, 1, 0);
}
/* addresses of 16- and 64-byte blocks, and of pages: the low bits of the
 * keys never change */
TEST(aligned_addresses_spread_over_low_bits) {
    check_spread(0x7f0000000000ull, 16, 0);
    check_spread(0x7f0000000000ull, 64, 0);
    check_spread(0x555555554000ull, 4096, 0);
}
TEST(sequential_keys_spread_over_high_bits) {
    check_spread(0, 1, 54);
    check_spread(0x7f0000000000ull, 64, 40);
}

/* Avalanche: flipping any one input bit flips each output bit in about half
 * of 4096 keys. */
TEST(every_input_bit_reaches_every_output_bit) {
    for (int in = 0; in < 64; in++) {
        uint32_t flips[64] = {0};
        for (uint64_t k = 0; k < 4096; k++) {
            uint64_t key = lp_hash_mix64(k ^ 0xa5a5a5a5a5a5a5a5ull); /* varied keys */
            uint64_t d = lp_hash_mix64(key) ^ lp_hash_mix64(key ^ ((uint64_t)1 << in));
            for (int out = 0; out < 64; out++) flips[out] += (uint32_t)(d >> out & 1);
        }
        for (int out = 0; out < 64; out++) {
            if (flips[out] < 1700 || flips[out] > 2400) {
                CHECK(flips[out] >= 1700 && flips[out] <= 2400);
                return;
            }
        }
    }
}

/* Keys base + i * stride, 64 a bucket on average: every bucket within 8 of
 * the mean (one standard deviation at random: a random hash fails this). */
static void check_even(uint64_t base, uint64_t stride) {
    static uint32_t count[BUCKETS];
    for (int b = 0; b < BUCKETS; b++) count[b] = 0;
    for (uint64_t i = 0; i < KEYS; i++) count[lp_hash_fib32(base + i * stride) & (BUCKETS - 1)]++;
    for (int b = 0; b < BUCKETS; b++) {
        if (count[b] < 56 || count[b] > 72) {
            CHECK(count[b] >= 56 && count[b] <= 72);
            return;
        }
    }
}

TEST(fibonacci_spreads_progressions_evenly) {
    check_even(0, 1);
    check_even(0x7f1234560000ull, 16);
    check_even(0x7f1234560000ull, 48); /* same-sized objects */
    check_even(0x7f1234560000ull, 112);
    check_even(0x555555554000ull, 4096);
    check_even(0x7f0000000000ull, (8u << 20) + 4096); /* thread stacks */
}

TEST(pointers_hash_as_their_bits) {
    static char block[2];
    CHECK(lp_hash_ptr(&block[0]) == lp_hash_mix64((uint64_t)(uintptr_t)&block[0]));
    CHECK(lp_hash_ptr(&block[0]) != lp_hash_ptr(&block[1]));
}

RUN_TESTS(sequential_ids_spread_over_low_bits, aligned_addresses_spread_over_low_bits,
          sequential_keys_spread_over_high_bits, every_input_bit_reaches_every_output_bit,
          fibonacci_spreads_progressions_evenly, pointers_hash_as_their_bits)
