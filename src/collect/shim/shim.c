/* shim: the LD_PRELOAD allocator. Exports the malloc family, forwards to a
 * statically linked, renamed jemalloc (no dlsym bootstrap, jemalloc's own
 * operator new never enters the global scope), samples allocations with the
 * per-thread byte countdown and keeps sampled live blocks in a livemem table.
 * The extension attaches through lprof_shim_api_v1 (include/lprof/shim.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim_int.h"

/* jemalloc's options (its weak malloc_conf, renamed). retain:false: freed
 * extents go back to the system instead of being kept mapped, and address
 * space is not reserved in growing steps ahead of use; with the default,
 * a program under `ulimit -v 2 GB` met MemoryError after 24-27 blocks of
 * 50 MB instead of 38-40 (issue #14 defect 13). */
const char *lpj_malloc_conf = "retain:false";

__thread shim_tls lp_shim_tls __attribute__((tls_model("initial-exec")));
lp_livemem lp_shim_live;

static int table_state; /* 0 none, 1 being made, 2 ready, 3 failed */
static lp_shim_hooks hooks_copy;
static const lp_shim_hooks *hooks; /* atomic; NULL = not registered */
static uint16_t generation = 1;
static uint64_t mean_bytes = LP_MEMSAMPLE_DEFAULT_BYTES;

static uint64_t st_sampled, st_sampled_bytes, st_startup_bytes, st_unattr_freed, st_mmaps;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int table_ready(void) {
    int s = __atomic_load_n(&table_state, __ATOMIC_ACQUIRE);
    if (LP_LIKELY(s == 2)) return 1;
    if (s == 3) return 0;
    int expected = 0;
    if (__atomic_compare_exchange_n(&table_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* 2^18 slots (10 MiB of address space, touched as used): ~196 k live
         * samples, i.e. ~3 GiB of live small objects at T = 16 KiB */
        int ok = lp_livemem_init(&lp_shim_live, 18) == 0;
        __atomic_store_n(&table_state, ok ? 2 : 3, __ATOMIC_RELEASE);
        return ok;
    }
    while ((s = __atomic_load_n(&table_state, __ATOMIC_ACQUIRE)) == 1) sched_yield();
    return s == 2;
}

static void report_free(const lp_live_block *b) {
    const lp_shim_hooks *h = __atomic_load_n(&hooks, __ATOMIC_ACQUIRE);
    if (h && h->on_free && b->gen == __atomic_load_n(&generation, __ATOMIC_RELAXED)) {
        int prev = lp_shim_tls.guard;
        lp_shim_tls.guard = 1;
        h->on_free((const lp_shim_block *)b, now_ns());
        lp_shim_tls.guard = prev;
    } else {
        __atomic_fetch_add(&st_unattr_freed, (uint64_t)b->weight, __ATOMIC_RELAXED);
    }
}

/* A sampled block's stack: the extension's, once it has registered;
 * before, its bytes count as start-up bytes. */
static uint32_t attribute(const lp_live_block *b) {
    uint32_t stack = 0;
    const lp_shim_hooks *h = __atomic_load_n(&hooks, __ATOMIC_ACQUIRE);
    if (h && h->on_alloc) stack = h->on_alloc(b->addr, b->size, b->weight, b->kind, b->t_ns);
    else __atomic_fetch_add(&st_startup_bytes, (uint64_t)b->weight, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st_sampled, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st_sampled_bytes, (uint64_t)b->weight, __ATOMIC_RELAXED);
    if (b->kind == LP_SHIM_KIND_MMAP) __atomic_fetch_add(&st_mmaps, 1, __ATOMIC_RELAXED);
    return stack;
}

/* an address already present means its free went unseen: count it freed */
static void replaced(const lp_live_block *old, uint64_t t_ns) {
    (void)t_ns;
    report_free(old);
}

static const lp_livemem_owner owner = {attribute, replaced};

void lp_shim_sampled(void *p, size_t size, uint32_t kind) {
    shim_tls *t = &lp_shim_tls;
    uint64_t mean = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);
    if (!lp_memsample_take(&t->sampler, mean, size, (uint64_t)(uintptr_t)t)) return;
    t->guard = 1;
    if (p != NULL && table_ready()) {
        lp_live_block b = {.addr = (uintptr_t)p,
                           .size = size,
                           .t_ns = now_ns(),
                           .kind = (uint16_t)kind,
                           .gen = __atomic_load_n(&generation, __ATOMIC_RELAXED)};
        lp_livemem_record(&lp_shim_live, &b, mean, &owner);
    }
    t->guard = 0;
}

void lp_shim_forget(void *p) {
    lp_live_block b;
    if (lp_livemem_remove(&lp_shim_live, (uintptr_t)p, &b)) report_free(&b);
}

/* ---- exported allocation functions ------------------------------------- */

SHIM_EXPORT void *malloc(size_t n) {
    void *p = lpj_malloc(n);
    if (LP_LIKELY(p != NULL)) lp_shim_after_alloc(p, n, LP_SHIM_KIND_NATIVE);
    return p;
}

SHIM_EXPORT void free(void *p) {
    if (p == NULL) return;
    lp_shim_before_free(p); /* before the address can be handed out again */
    lpj_free(p);
}

SHIM_EXPORT void *calloc(size_t n, size_t m) {
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = lpj_calloc(n, m);
    if (LP_LIKELY(p != NULL)) lp_shim_after_alloc(p, total, LP_SHIM_KIND_NATIVE);
    return p;
}

SHIM_EXPORT void *realloc(void *p, size_t n) {
    if (p == NULL) return malloc(n);
    if (n == 0) { /* glibc semantics: free and return NULL */
        free(p);
        return NULL;
    }
    lp_live_block old;
    int had = lp_livemem_maybe(&lp_shim_live, p) && lp_livemem_remove(&lp_shim_live, (uintptr_t)p, &old);
    void *q = lpj_realloc(p, n);
    if (q == NULL) {
        if (had) lp_livemem_insert(&lp_shim_live, &old, NULL); /* p is still alive */
        return NULL;
    }
    if (had) report_free(&old);
    /* the new block is a new allocation of n bytes (growth by realloc counts in full) */
    lp_shim_after_alloc(q, n, LP_SHIM_KIND_NATIVE);
    return q;
}

SHIM_EXPORT void *reallocarray(void *p, size_t n, size_t m) {
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

static int bad_alignment(size_t a) { return a == 0 || (a & (a - 1)) != 0; }

SHIM_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (bad_alignment(align) || align < sizeof(void *)) return EINVAL;
    int rc = lpj_posix_memalign(out, align, n);
    if (rc == 0) lp_shim_after_alloc(*out, n, LP_SHIM_KIND_NATIVE);
    return rc;
}

SHIM_EXPORT void *aligned_alloc(size_t align, size_t n) {
    if (bad_alignment(align)) {
        errno = EINVAL;
        return NULL;
    }
    void *p = lpj_aligned_alloc(align, n);
    if (p) lp_shim_after_alloc(p, n, LP_SHIM_KIND_NATIVE);
    return p;
}

SHIM_EXPORT void *memalign(size_t align, size_t n) {
    if (bad_alignment(align)) {
        errno = EINVAL;
        return NULL;
    }
    void *p = lpj_memalign(align, n);
    if (p) lp_shim_after_alloc(p, n, LP_SHIM_KIND_NATIVE);
    return p;
}

SHIM_EXPORT void *valloc(size_t n) {
    void *p = lpj_valloc(n);
    if (p) lp_shim_after_alloc(p, n, LP_SHIM_KIND_NATIVE);
    return p;
}

SHIM_EXPORT void *pvalloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (n + page - 1) & ~(page - 1);
    if (rounded < n) {
        errno = ENOMEM;
        return NULL;
    }
    return memalign(page, rounded ? rounded : page);
}

SHIM_EXPORT size_t malloc_usable_size(void *p) { return p ? lpj_malloc_usable_size(p) : 0; }

/* ---- the API given to the extension ------------------------------------ */

static int api_set_hooks(const lp_shim_hooks *h) {
    if (h == NULL) {
        __atomic_store_n(&hooks, NULL, __ATOMIC_RELEASE);
        return 0;
    }
    if (h->abi != LP_SHIM_ABI || h->size < sizeof(lp_shim_hooks)) return -1;
    __atomic_store_n(&hooks, NULL, __ATOMIC_RELEASE);
    __atomic_fetch_add(&generation, 1, __ATOMIC_RELAXED);
    memcpy(&hooks_copy, h, sizeof hooks_copy);
    __atomic_store_n(&hooks, &hooks_copy, __ATOMIC_RELEASE);
    return 0;
}

static void api_set_sample_bytes(uint64_t mean) {
    __atomic_store_n(&mean_bytes, mean ? mean : 1, __ATOMIC_RELAXED);
}

static int api_enter(void) {
    int prev = lp_shim_tls.guard;
    lp_shim_tls.guard = 1;
    return prev;
}

static void api_leave(int prev) { lp_shim_tls.guard = prev; }

static int *api_guard_ptr(void) { return &lp_shim_tls.guard; }

static void api_stats(lp_shim_stats *s) {
    memset(s, 0, sizeof *s);
    s->sampled = __atomic_load_n(&st_sampled, __ATOMIC_RELAXED);
    s->sampled_bytes = (double)__atomic_load_n(&st_sampled_bytes, __ATOMIC_RELAXED);
    s->startup_bytes = (double)__atomic_load_n(&st_startup_bytes, __ATOMIC_RELAXED);
    s->unattributed_freed = (double)__atomic_load_n(&st_unattr_freed, __ATOMIC_RELAXED);
    s->live_blocks = __atomic_load_n(&lp_shim_live.count, __ATOMIC_RELAXED);
    s->overflow = __atomic_load_n(&lp_shim_live.overflow, __ATOMIC_RELAXED);
    s->mmaps_tracked = __atomic_load_n(&st_mmaps, __ATOMIC_RELAXED);
    s->sample_bytes = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);
}

typedef struct {
    void (*fn)(const lp_shim_block *, void *);
    void *ctx;
} visit_ctx;

static void visit(const lp_live_block *b, void *ctx) {
    visit_ctx *v = ctx;
    v->fn((const lp_shim_block *)b, v->ctx);
}

static void api_foreach_live(void (*fn)(const lp_shim_block *, void *), void *ctx) {
    visit_ctx v = {fn, ctx};
    int prev = api_enter();
    lp_livemem_foreach(&lp_shim_live, visit, &v);
    api_leave(prev);
}

_Static_assert(sizeof(lp_shim_block) == sizeof(lp_live_block), "block layouts differ");
_Static_assert(offsetof(lp_shim_block, stack) == offsetof(lp_live_block, stack), "layout");
_Static_assert(offsetof(lp_shim_block, gen) == offsetof(lp_live_block, gen), "layout");

static const lp_shim_api api = {
    LP_SHIM_ABI, sizeof(lp_shim_api), api_set_hooks,    api_set_sample_bytes, api_enter,
    api_leave,   api_stats,           api_foreach_live, api_guard_ptr,
};

SHIM_EXPORT const lp_shim_api *lprof_shim_api_v1(void) { return &api; }

/* ---- fork: no thread may hold the table across fork() ------------------ */

static void before_fork(void) { lp_livemem_lock(&lp_shim_live); }
static void after_fork(void) { lp_livemem_unlock(&lp_shim_live); }

__attribute__((constructor)) static void shim_init(void) {
    pthread_atfork(before_fork, after_fork, after_fork);
}
