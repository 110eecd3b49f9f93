/* livemem: the sampled blocks still alive, and the per-stack memory account.
 *
 * lp_livemem is a fixed-capacity open-addressing table address -> sampled
 * block (weight, stack, time), backed by mmap and guarded by a spinlock,
 * with a lock-free counting filter in front so that the free() of a block
 * that was never sampled costs one byte load. Full table: the insert is
 * dropped and counted in `overflow` (its bytes stay counted as allocated).
 *
 * lp_memacct holds per-stack counters (allocated, freed, count, Python share,
 * sampled allocs/frees), the running live total, its peak with a snapshot of
 * every stack's live bytes at the peak, and a bounded timeline.
 * Both are pure C, never call malloc, and are shared by the shim and the
 * extension. */
#ifndef LPROF_LIVEMEM_H
#define LPROF_LIVEMEM_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"

enum { LP_MEM_NATIVE = 0, LP_MEM_PYTHON = 1, LP_MEM_MMAP = 2 };

typedef struct lp_live_block {
    uintptr_t addr;  /* 0: empty slot */
    uint64_t size;   /* requested bytes */
    double weight;   /* estimated bytes this sample stands for */
    uint64_t t_ns;   /* monotonic time of the allocation */
    uint32_t stack;  /* owner's stack id; 0 = not attributed */
    uint16_t kind;   /* LP_MEM_* */
    uint16_t gen;    /* registration generation (shim) */
} lp_live_block;

typedef struct lp_livemem {
    lp_live_block *slots;
    uint8_t *filter;     /* saturating counters indexed by address granule */
    uint8_t *touched;    /* per group of LP_LIVEMEM_GROUP slots: ever written since clear */
    uint32_t mask;       /* slots - 1 */
    uint32_t count;
    uint32_t limit;      /* max count (load factor 3/4) */
    int lock;
    uint64_t overflow;   /* inserts dropped because the table was full */
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

static inline uint32_t lp_livemem_hash(uintptr_t a, unsigned bits) {
    return (uint32_t)(((uint64_t)(a >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

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
                                  lp_live_block *replaced) LP_SIGNAL_SAFE;
/* Removes the block at addr; 1 and *out filled if it was there, else 0. */
LP_INTERNAL int lp_livemem_remove(lp_livemem *t, uintptr_t addr, lp_live_block *out) LP_SIGNAL_SAFE;
/* Visits every block under the lock; fn must not touch the table. */
LP_INTERNAL void lp_livemem_foreach(lp_livemem *t, void (*fn)(const lp_live_block *, void *),
                                    void *ctx);
/* For fork handlers: hold the table across fork(). */
LP_INTERNAL void lp_livemem_lock(lp_livemem *t);
LP_INTERNAL void lp_livemem_unlock(lp_livemem *t);

/* ---- per-stack account ------------------------------------------------ */

typedef struct lp_memrow {
    double alloc_bytes;
    double freed_bytes;
    double alloc_count;    /* estimated allocations (sum of weight/size) */
    double python_bytes;   /* part of alloc_bytes from the PyMem hooks */
    double live_at_peak;   /* this stack's live bytes at the process peak */
    uint64_t sampled_allocs;
    uint64_t sampled_frees;
} lp_memrow;

#define LP_MEMACCT_TIMELINE 2048

typedef struct lp_memacct {
    lp_memrow *rows;       /* indexed by stack id; row 0 = not attributed */
    uint32_t cap;          /* rows mapped */
    uint32_t used;         /* 1 + highest stack id seen */
    int lock;
    uint64_t t0_ns;
    double live;           /* sum over rows of alloc - freed */
    double peak;
    uint64_t peak_t_ns;
    double snap_peak;      /* live when live_at_peak was last copied */
    double unattributed_freed; /* frees of blocks sampled before start */
    uint64_t dropped;      /* events with a stack id >= cap */
    /* timeline of (seconds since t0, live bytes); halves itself when full */
    double tl[LP_MEMACCT_TIMELINE][2];
    uint32_t tl_len;
    uint64_t tl_min_dt_ns;
    uint64_t tl_last_ns;
    double tl_last_live;
} lp_memacct;

LP_INTERNAL int lp_memacct_init(lp_memacct *a, uint32_t max_stacks, uint64_t t0_ns);
LP_INTERNAL void lp_memacct_destroy(lp_memacct *a);
/* A sampled allocation of `size` bytes standing for `weight` bytes. */
LP_INTERNAL void lp_memacct_alloc(lp_memacct *a, uint32_t stack, double weight, uint64_t size,
                                  int python, uint64_t t_ns) LP_SIGNAL_SAFE;
/* A sampled block was freed. */
LP_INTERNAL void lp_memacct_free(lp_memacct *a, uint32_t stack, double weight,
                                 uint64_t t_ns) LP_SIGNAL_SAFE;
/* Records the current live total in the timeline (e.g. at stop). */
LP_INTERNAL void lp_memacct_mark(lp_memacct *a, uint64_t t_ns);
LP_INTERNAL void lp_memacct_lock(lp_memacct *a);
LP_INTERNAL void lp_memacct_unlock(lp_memacct *a);

/* ---- leak statistic ---------------------------------------------------- */

/* Survivors of one stack: live sampled blocks at the end of the run. */
typedef struct lp_leakacc {
    double n, w, st, st2;   /* count, weight, sum of t (s), sum of t^2 */
} lp_leakacc;

static inline void lp_leakacc_add(lp_leakacc *l, double t_s, double weight) {
    l->n += 1; l->w += weight; l->st += t_s; l->st2 += t_s * t_s;
}

/* Growth rate of a stack's live bytes in bytes/s, assuming its survivors were
 * allocated at a steady rate (uniform in time: span = sqrt(12) * stddev).
 * *span_s receives that span. 0 when fewer than two survivors. */
LP_INTERNAL double lp_leak_slope(const lp_leakacc *l, double *span_s);
/* Laplace rule of succession: chance that the next allocation is not freed. */
LP_INTERNAL double lp_leak_score(uint64_t sampled_allocs, uint64_t sampled_frees);

#endif
