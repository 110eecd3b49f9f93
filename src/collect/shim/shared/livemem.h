/* shim/shared (the shim and the extension both compile it): the sampled
 * blocks still alive (the per-stack account that their
 * allocations and frees update is aggregate/memacct.h).
 *
 * lp_livemem is a fixed-capacity open-addressing table address -> sampled
 * block (weight, stack, time), backed by mmap and guarded by a spinlock,
 * with a lock-free counting filter in front so that the free() of a block
 * that was never sampled costs one byte load. Full table: the insert is
 * dropped and counted in `overflow` (its bytes stay counted as allocated).
 *
 * Pure C, never calls malloc; shared by the shim and the extension. Its
 * struct is visible (not opaque) because the free hooks inline the filter
 * test: one byte load on every free() of the process. */
#ifndef LPROF_LIVEMEM_H
#define LPROF_LIVEMEM_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "common/hash.h"

enum { LP_MEM_NATIVE = 0, LP_MEM_PYTHON = 1, LP_MEM_MMAP = 2 };

typedef struct lp_live_block {
    uintptr_t addr; /* 0: empty slot */
    uint64_t size;  /* requested bytes */
    double weight;  /* estimated bytes this sample stands for */
    uint64_t t_ns;  /* monotonic time of the allocation */
    uint32_t stack; /* owner's stack id; 0 = not attributed */
    uint16_t kind;  /* LP_MEM_* */
    uint16_t gen;   /* registration generation (shim) */
} lp_live_block;

typedef struct lp_livemem {
    lp_live_block *slots;
    uint8_t *filter;  /* saturating counters indexed by address granule */
    uint8_t *touched; /* per group of LP_LIVEMEM_GROUP slots: ever written since clear */
    uint32_t mask;    /* slots - 1 */
    uint32_t count;
    uint32_t limit; /* max count (load factor 3/4) */
    int lock;
    uint64_t overflow; /* inserts dropped because the table was full */
} lp_livemem;

#define LP_LIVEMEM_FILTER_BITS 20
/* Slots per `touched` flag: a snapshot scans only groups that were written,
 * not the whole mapping (reading untouched pages would fault each one in). */
#define LP_LIVEMEM_GROUP_BITS 6

/* Maps the table (2^log2_slots slots) and the filter; 0 ok, -1 no memory. */
LP_INTERNAL int lp_livemem_init(lp_livemem *t, unsigned log2_slots);
LP_INTERNAL void lp_livemem_destroy(lp_livemem *t);
/* Forgets every block (keeps the mapping). */
LP_INTERNAL void lp_livemem_clear(lp_livemem *t);

/* The home slot's hash of address a (the table takes its low bits). */
static inline uint32_t lp_livemem_hash(uintptr_t a) { return (uint32_t)lp_hash_mix64(a); }

/* The filter counter of address a: one per 64-byte granule, in address
 * order (addresses 64 MiB apart share one). Locality matters more than
 * spread here: every free reads a counter, and a program frees objects in
 * runs (a list, a dict, a pool), which then read neighbouring counters. A
 * multiplicative hash spread those reads over the whole 1 MiB and missed the
 * cache on nearly every free (10% of an allocation-heavy run). Folding in
 * higher address bits would not lower the false-positive rate, which is the
 * share of counters in use, and cost five instructions per free. */
static inline uint32_t lp_livemem_filter_index(uintptr_t a) {
    return (uint32_t)(a >> 6) & ((1u << LP_LIVEMEM_FILTER_BITS) - 1);
}

/* Could `p` be a sampled block? False positives are possible, misses not.
 * The table must be initialised (the PyMem hooks are installed only then). */
static inline int lp_livemem_maybe_ready(const lp_livemem *t, const void *p) {
    return __atomic_load_n(&t->filter[lp_livemem_filter_index((uintptr_t)p)], __ATOMIC_RELAXED) != 0;
}

/* As lp_livemem_maybe_ready, for a table that may not be mapped yet. */
static inline int lp_livemem_maybe(const lp_livemem *t, const void *p) {
    if (LP_UNLIKELY(t->filter == NULL)) return 0;
    return lp_livemem_maybe_ready(t, p);
}

/* Returns 1 inserted, 2 inserted over an existing block with the same
 * address (that one is copied to *replaced), 0 dropped (table full). */
LP_INTERNAL int lp_livemem_insert(lp_livemem *t, const lp_live_block *b,
                                  lp_live_block *replaced) LP_HOOK_SAFE;
/* Who keeps a table's sampled blocks: attribute gives a new block its
 * stack id (b has all else set), replaced takes a block whose free went
 * unseen (its address was handed out again), as freed at t_ns. */
typedef struct {
    uint32_t (*attribute)(const lp_live_block *b);
    void (*replaced)(const lp_live_block *old, uint64_t t_ns);
} lp_livemem_owner;

/* The sampled path's last step, the same in the shim and the PyMem hooks:
 * b (addr, size, t_ns, kind, gen set; the rest zero) gets its weight at
 * mean `mean` and its stack from the owner, and goes into the table (the
 * return value of lp_livemem_insert). Call with the allocator guard set. */
LP_INTERNAL int lp_livemem_record(lp_livemem *t, lp_live_block *b, uint64_t mean,
                                  const lp_livemem_owner *owner) LP_HOOK_SAFE;
/* Removes the block at addr; 1 and *out filled if it was there, else 0. */
LP_INTERNAL int lp_livemem_remove(lp_livemem *t, uintptr_t addr, lp_live_block *out) LP_HOOK_SAFE;
/* Visits every block under the lock; fn must not touch the table. */
LP_INTERNAL void lp_livemem_foreach(lp_livemem *t, void (*fn)(const lp_live_block *, void *), void *ctx);
/* For fork handlers: hold the table across fork(). */
LP_INTERNAL void lp_livemem_lock(lp_livemem *t);
LP_INTERNAL void lp_livemem_unlock(lp_livemem *t);

#endif
