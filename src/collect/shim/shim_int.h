/* shim internals shared by shim.c (malloc family, state) and shim_mmap.c.
 * Everything here is hidden; only the allocation entry points and
 * lprof_shim_api_v1 are exported from liblprof_shim.so. */
#ifndef LPROF_SHIM_INT_H
#define LPROF_SHIM_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lprof/shim.h"
#include "collect/shim/shared/livemem.h"
#include "collect/shim/shared/memsample.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_HIDDEN __attribute__((visibility("hidden")))

/* jemalloc's entry points, renamed at build time (Makefile: rename.txt). */
void *lpj_malloc(size_t);
void *lpj_calloc(size_t, size_t);
void *lpj_realloc(void *, size_t);
void lpj_free(void *);
int lpj_posix_memalign(void **, size_t, size_t);
void *lpj_aligned_alloc(size_t, size_t);
void *lpj_memalign(size_t, size_t);
void *lpj_valloc(size_t);
size_t lpj_malloc_usable_size(void *);
int lpj_mallctl(const char *, void *, size_t *, void *, size_t);

typedef struct shim_tls {
    lp_memsample sampler;
    int guard; /* inside the shim or an lprof hook: do not sample */
} shim_tls;

extern __thread shim_tls lp_shim_tls __attribute__((tls_model("initial-exec"))) SHIM_HIDDEN;

/* Slow path of a sampled allocation (and lazy per-thread seeding). */
SHIM_HIDDEN void lp_shim_sampled(void *p, size_t size, uint32_t kind);
/* Slow path of a free whose address passed the filter. */
SHIM_HIDDEN void lp_shim_forget(void *p);
SHIM_HIDDEN extern lp_livemem lp_shim_live;

static inline void lp_shim_after_alloc(void *p, size_t size, uint32_t kind) {
    if (LP_UNLIKELY(lp_shim_tls.guard)) return;
    if (LP_LIKELY(!lp_memsample_step(&lp_shim_tls.sampler, size))) return;
    lp_shim_sampled(p, size, kind);
}

static inline void lp_shim_before_free(void *p) {
    if (LP_UNLIKELY(lp_livemem_maybe(&lp_shim_live, p))) lp_shim_forget(p);
}

#endif
