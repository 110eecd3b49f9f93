/* The contract between the LD_PRELOAD shim (src/collect/shim/, liblprof_shim.so) and
 * the _lprof extension. Versioned: the shim exports one function,
 * LP_SHIM_API_SYMBOL, returning a table whose `abi` must equal LP_SHIM_ABI
 * and whose `size` is at least sizeof(lp_shim_api); the extension finds it
 * with dlsym(RTLD_DEFAULT, ...) and treats its absence as "no native
 * coverage". Only fixed-width types cross this boundary.
 *
 * Roles: the shim samples native allocations (malloc family, large anonymous
 * mmap) with an exponential byte countdown per thread and keeps the sampled
 * blocks that are still alive (address -> size, weight, stack, time). Before
 * hooks are registered (interpreter start-up) it counts but attributes
 * nothing (stack 0). The extension gives it two callbacks: one to attribute a
 * sampled allocation (returns a stack id != 0), one told of each free of a
 * block it attributed. Callbacks run on the allocating thread inside the
 * shim's reentrancy guard (allocations they make are not sampled), GIL or
 * not; they must not block on locks that an allocating thread may hold. */
#ifndef LPROF_SHIM_H
#define LPROF_SHIM_H

#include <stdint.h>

#define LP_SHIM_ABI        1u
#define LP_SHIM_API_SYMBOL "lprof_shim_api_v1"
/* Set by lprof.process.preload in the environment of a process started with the shim. */
#define LP_SHIM_ENV_MARKER "LPROF_SHIM_PRELOADED"

/* Kinds of memory. */
#define LP_SHIM_KIND_NATIVE 0u /* malloc family */
#define LP_SHIM_KIND_PYTHON 1u /* PyMem hooks (extension side only) */
#define LP_SHIM_KIND_MMAP   2u /* anonymous private mmap >= 1 MiB called directly */

/* One sampled live block; layout shared with src/collect/shim/shared/livemem.h lp_live_block. */
typedef struct lp_shim_block {
    uint64_t addr;
    uint64_t size;  /* requested bytes */
    double weight;  /* bytes this sample stands for (size / p) */
    uint64_t t_ns;  /* CLOCK_MONOTONIC at allocation */
    uint32_t stack; /* value returned by on_alloc; 0 = unattributed */
    uint16_t kind;
    uint16_t gen; /* registration generation */
} lp_shim_block;

typedef struct lp_shim_hooks {
    uint32_t abi;  /* LP_SHIM_ABI */
    uint32_t size; /* sizeof(lp_shim_hooks) */
    /* A sampled allocation of `size` bytes worth `weight` bytes; returns the
     * stack id to remember with the block (0 = unattributed). */
    uint32_t (*on_alloc)(uint64_t addr, uint64_t size, double weight, uint32_t kind, uint64_t t_ns);
    /* A block this registration attributed was freed (or realloc'ed away). */
    void (*on_free)(const lp_shim_block *block, uint64_t t_ns);
} lp_shim_hooks;

typedef struct lp_shim_stats {
    uint64_t sampled;          /* samples taken since load */
    double sampled_bytes;      /* sum of their weights */
    double startup_bytes;      /* sampled before hooks were registered */
    double unattributed_freed; /* frees of blocks no current registration owns */
    uint64_t live_blocks;      /* sampled blocks alive now */
    uint64_t overflow;         /* samples dropped because the table was full */
    uint64_t mmaps_tracked;    /* anonymous mappings sampled */
    uint64_t sample_bytes;     /* mean interval T */
} lp_shim_stats;

typedef struct lp_shim_api {
    uint32_t abi;
    uint32_t size;
    /* Registers hooks (NULL unregisters); bumps the generation so that blocks
     * of an earlier registration are never reported to the new one.
     * Returns 0, or -1 on an ABI mismatch. */
    int (*set_hooks)(const lp_shim_hooks *hooks);
    /* Mean sampling interval in bytes (takes effect at each thread's next draw). */
    void (*set_sample_bytes)(uint64_t mean);
    /* Reentrancy guard of the calling thread: enter() sets it and returns the
     * previous value for leave(). Set around calls into the wrapped PyMem
     * allocator so each byte is counted once. */
    int (*enter)(void);
    void (*leave)(int previous);
    void (*stats)(lp_shim_stats *out);
    /* Visits every live sampled block (the table is locked: fn must not
     * allocate or free). */
    void (*foreach_live)(void (*fn)(const lp_shim_block *block, void *ctx), void *ctx);
    /* Address of the calling thread's guard (the flag enter/leave set), so
     * that a hook on a hot path can set it with two stores, no call. Valid for
     * the life of the thread. */
    int *(*guard_ptr)(void);
} lp_shim_api;

typedef const lp_shim_api *(*lp_shim_api_fn)(void);

#endif
