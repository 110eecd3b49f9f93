/* common: the hashes behind every C hash table, in one place.
 *
 * lp_hash_mix64, for tables that probe (open addressing: stack trie,
 * snapshot maps, code and frame tables, live blocks, GPU blocks and waits):
 * splitmix64's finalizer. Each input bit flips each output bit with
 * probability close to 1/2, so any run of bits, the low ones included,
 * indexes a power-of-two table as if at random.
 *
 * lp_hash_fib32, for tables that cannot probe past a bucket (the suspended
 * frames' eight-way sets, the timeline's direct-mapped thread slots), where
 * a collision costs an eviction or a restart: Fibonacci hashing. Keys in an
 * arithmetic progression (sequential ids, addresses of same-sized objects)
 * land evenly spaced, with fewer collisions than at random.
 *
 * Pure arithmetic, header-only: safe in signal handlers and allocation
 * hooks, and the shim compiles it too. */
#ifndef LPROF_COMMON_HASH_H
#define LPROF_COMMON_HASH_H

#include <stdint.h>

static inline uint64_t lp_hash_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* An address: the pointer's bits, mixed. */
static inline uint64_t lp_hash_ptr(const void *p) { return lp_hash_mix64((uint64_t)(uintptr_t)p); }

/* The top 32 bits of x * 2^64 / phi: any run of its low bits indexes a
 * power-of-two table (a table that doubles splits each bucket in two). */
static inline uint32_t lp_hash_fib32(uint64_t x) { return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32); }

#endif
