/* collect: PyMem hooks + shim callbacks -> stack capture -> account.
 * See collect/cpython/memhooks.h. Hot paths (every PyMem call) do: guard, wrapped call,
 * countdown; only sampled events capture a stack (1 per T bytes). */
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "aggregate/agg.h"
#include "aggregate/memacct.h"
#include "aggregate/splice.h"
#include "collect/cpython/sampler.h"
#include "collect/native_unwind.h"
#include "collect/sampler.h"
#include "common/clock.h"
#include "collect/shim/shared/memsample.h"
#include "common/own_alloc.h"
#include "collect/cpython/frames.h"
#include "collect/cpython/memhooks.h"

typedef struct {
    PyMemAllocatorEx orig;
    PyMemAllocatorEx mine;
    PyMemAllocatorDomain domain;
    int python; /* 1: counts as Python-object memory */
    int installed;
} hook_domain;

static hook_domain domains[3];
/* The preloaded shim, found once at import: whether it is in the process
 * never changes, and every thread's guard must be chosen by it, a thread
 * started before memory_start included (see guard_slot). */
static const lp_shim_api *preloaded;
static uintptr_t preloaded_entry;  /* an address in the shim's text */
static const lp_shim_api *shim;    /* preloaded, and attached by memory_start */
static uintptr_t shim_lo, shim_hi; /* the shim's text: its wrapper frames lead native stacks */
static int enabled;                /* atomic: attribute events */
static uint64_t mean_bytes = LP_MEMSAMPLE_DEFAULT_BYTES;
static lp_livemem live;     /* PyMem-domain sampled blocks */
static lp_memacct *account; /* per-stack columns go to the stack table */
static int tables_ready;

/* Initial-exec: these are read on every PyMem call; a general-dynamic access
 * would call __tls_get_addr each time. 40 bytes of static TLS. */
typedef struct {
    lp_memsample sampler;
    int *guard;    /* the shim's guard for this thread, or &own_guard */
    int own_guard; /* used when there is no shim */
} hook_tls;
static __thread hook_tls tls __attribute__((tls_model("initial-exec")));
#define tls_sampler (tls.sampler)

/* With the shim preloaded the guard is the shim's own (its malloc checks
 * it), from the thread's first call on. Chosen by whether the shim was
 * attached yet, a thread that set its guard before memory_start (the
 * sampler's drain thread starts first) kept a private one, and the shim
 * sampled that thread's mallocs (test_own_thread_started_before_memory). */
static inline int *guard_slot(void) {
    if (LP_UNLIKELY(tls.guard == NULL)) tls.guard = preloaded ? preloaded->guard_ptr() : &tls.own_guard;
    return tls.guard;
}

int lp_memhooks_guard_enter(void) {
    int *g = guard_slot();
    int prev = *g;
    *g = 1;
    return prev;
}

void lp_memhooks_guard_leave(int prev) { *guard_slot() = prev; }

/* lprof's own allocations on program threads (own_alloc.h) pass the guard */
static const lp_alloc_guard own_guard = {lp_memhooks_guard_enter, lp_memhooks_guard_leave};

/* ---- attribution -------------------------------------------------------- */

static uint32_t attributed(uint64_t key, const lp_rawframe *frames, int n, int truncated, uint64_t size,
                           double weight, int python, uint64_t t);

/* The hook's native stack (its return addresses: call sites, so no
 * per-instruction nodes) with lprof's own leading frames dropped (this
 * extension's hooks and the shim's wrappers), spliced
 * with the Python frames. Hook-safe: libunwind local unwinding and
 * lp_splice allocate nothing. */
static int with_native(const lp_rawframe *py, int npy, const lp_splice_rules *rules, uintptr_t self_lo,
                       uintptr_t self_hi, lp_rawframe *out, int max) {
    uintptr_t ips[LP_MEM_MAX_NATIVE + 1];
    int nips = lp_native_unwind_here(ips, (int)LP_ARRAY_LEN(ips));
    int skip = 0;
    while (skip < nips && ((ips[skip] - 1 >= self_lo && ips[skip] - 1 < self_hi) ||
                           (ips[skip] - 1 >= shim_lo && ips[skip] - 1 < shim_hi)))
        skip++;
    /* every address is a return address; lp_splice takes its first one as
     * exact and moves the others inside their call: move the first here */
    if (skip < nips) ips[skip] -= 1;
    int mismatch = 0;
    return lp_splice(py, npy, ips + skip, nips - skip, nips >= (int)LP_ARRAY_LEN(ips), rules, out, max,
                     &mismatch);
}

/* Captures the calling thread's stack and charges the sample to it. Returns
 * the stack id + 1 (0 is reserved for "not attributed"). The code objects
 * in the stack are kept alive by the code registry (aggregate/cpython/
 * resolve.c), which scans new nodes before any code object can die. */
static uint32_t attribute(uint64_t size, double weight, int python, uint64_t t) {
    PyThreadState *ts = PyGILState_GetThisThreadState();
    lp_rawframe buf[LP_MEM_MAX_DEPTH];
    int n = 0, truncated = 0;
    uint64_t key = 0;
    if (ts != NULL) {
        n = lp_pyframes_capture(ts, buf, LP_MEM_MAX_DEPTH, &truncated, NULL);
        if (n < 0) n = 0;
        key = lp_pyframes_thread_key(ts);
    }
    uintptr_t self_lo, self_hi;
    const lp_splice_rules *rules = lp_pysampler_native_rules(&self_lo, &self_hi);
    if (rules) { /* lprof --native --memory: the C functions that allocated */
        lp_rawframe mixed[LP_MEM_MAX_DEPTH + LP_MEM_MAX_NATIVE];
        int k = with_native(buf, n, rules, self_lo, self_hi, mixed, (int)LP_ARRAY_LEN(mixed));
        return attributed(key, mixed, k, truncated, size, weight, python, t);
    }
    return attributed(key, buf, n, truncated, size, weight, python, t);
}

static uint32_t attributed(uint64_t key, const lp_rawframe *frames, int n, int truncated, uint64_t size,
                           double weight, int python, uint64_t t) {
    uint32_t id = lp_agg_intern(key, frames, (size_t)n, truncated) + 1;
    lp_memacct_alloc(account, id, weight, size, python, t);
    return id;
}

static uint32_t shim_on_alloc(uint64_t addr, uint64_t size, double weight, uint32_t kind, uint64_t t) {
    (void)addr;
    (void)kind;
    if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) return 0;
    return attribute(size, weight, 0, t);
}

static void shim_on_free(const lp_shim_block *b, uint64_t t) {
    if (b->stack != 0 && __atomic_load_n(&enabled, __ATOMIC_ACQUIRE))
        lp_memacct_free(account, b->stack, b->weight, t);
}

static const lp_shim_hooks shim_hooks = {LP_SHIM_ABI, sizeof(lp_shim_hooks), shim_on_alloc, shim_on_free};

static uint32_t live_attribute(const lp_live_block *b) {
    return attribute(b->size, b->weight, b->kind == LP_MEM_PYTHON, b->t_ns);
}

/* a block whose free went unseen (its address came back): freed now */
static void live_replaced(const lp_live_block *old, uint64_t t_ns) {
    lp_memacct_free(account, old->stack, old->weight, t_ns);
}

static const lp_livemem_owner live_owner = {live_attribute, live_replaced};

static void sampled(void *p, size_t size, int python) {
    uint64_t mean = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);
    if (!lp_memsample_take(&tls_sampler, mean, size, (uint64_t)(uintptr_t)&tls_sampler)) return;
    int prev = lp_memhooks_guard_enter();
    lp_live_block b = {.addr = (uintptr_t)p,
                       .size = size,
                       .t_ns = lp_clock_monotonic_ns(),
                       .kind = python ? LP_MEM_PYTHON : LP_MEM_NATIVE};
    lp_livemem_record(&live, &b, mean, &live_owner);
    lp_memhooks_guard_leave(prev);
}

static inline void after_alloc(void *p, size_t size, int python) {
    if (LP_LIKELY(!lp_memsample_step(&tls_sampler, size))) return;
    if (__atomic_load_n(&enabled, __ATOMIC_RELAXED)) sampled(p, size, python);
}

static void forget(void *p) {
    lp_live_block b;
    if (lp_livemem_remove(&live, (uintptr_t)p, &b))
        lp_memacct_free(account, b.stack, b.weight, lp_clock_monotonic_ns());
}

/* ---- the PyMem wrappers ------------------------------------------------- */

static void *h_malloc(void *ctx, size_t n) {
    hook_domain *d = ctx;
    int prev = lp_memhooks_guard_enter();
    void *p = d->orig.malloc(d->orig.ctx, n);
    lp_memhooks_guard_leave(prev);
    if (p != NULL && !prev) after_alloc(p, n ? n : 1, d->python);
    return p;
}

static void *h_calloc(void *ctx, size_t nelem, size_t elsize) {
    hook_domain *d = ctx;
    int prev = lp_memhooks_guard_enter();
    void *p = d->orig.calloc(d->orig.ctx, nelem, elsize);
    lp_memhooks_guard_leave(prev);
    if (p != NULL && !prev) {
        size_t n = nelem * elsize; /* cannot overflow: the allocation succeeded */
        after_alloc(p, n ? n : 1, d->python);
    }
    return p;
}

static void *h_realloc(void *ctx, void *p, size_t n) {
    hook_domain *d = ctx;
    lp_live_block old;
    int had = p != NULL && lp_livemem_maybe_ready(&live, p) && lp_livemem_remove(&live, (uintptr_t)p, &old);
    int prev = lp_memhooks_guard_enter();
    void *q = d->orig.realloc(d->orig.ctx, p, n);
    lp_memhooks_guard_leave(prev);
    if (q == NULL) {
        if (had) lp_livemem_insert(&live, &old, NULL);
        return NULL;
    }
    if (had) lp_memacct_free(account, old.stack, old.weight, lp_clock_monotonic_ns());
    if (!prev) after_alloc(q, n ? n : 1, d->python);
    return q;
}

/* The fast path for pymalloc's small requests (<= 512 bytes, served from its
 * pools without calling malloc; new 1 MiB arenas are mmapped, which the shim
 * does not track): no guard, and a tail call into pymalloc unless the
 * countdown says sample. Installed only when pymalloc is the allocator
 * (with PYTHONMALLOC=malloc every request would reach the shim as well). */
#define PYMALLOC_SMALL_REQUEST 512u

static __attribute__((noinline)) void *malloc_sampled(hook_domain *d, size_t n) {
    int prev = lp_memhooks_guard_enter();
    void *p = d->orig.malloc(d->orig.ctx, n);
    lp_memhooks_guard_leave(prev);
    if (p != NULL && !prev && __atomic_load_n(&enabled, __ATOMIC_RELAXED)) sampled(p, n, d->python);
    return p;
}

static void *h_malloc_pymalloc(void *ctx, size_t n) {
    hook_domain *d = ctx;
    if (LP_UNLIKELY(n - 1 >= PYMALLOC_SMALL_REQUEST)) return h_malloc(ctx, n); /* 0 or large */
    if (LP_LIKELY(!lp_memsample_step(&tls_sampler, n))) return d->orig.malloc(d->orig.ctx, n);
    return malloc_sampled(d, n);
}

/* No guard here: a free is never counted twice (the outer hook removes the
 * block from its table first; the shim's free only finds blocks it sampled). */
static __attribute__((noinline, cold)) void forget_and_free(hook_domain *d, void *p) {
    if (p != NULL) forget(p); /* free(NULL) reaches here when counter 0 is in use */
    d->orig.free(d->orig.ctx, p);
}

/* Eleven instructions when p was not sampled: one counter load, a tail call. */
static void h_free(void *ctx, void *p) {
    hook_domain *d = ctx;
    if (LP_UNLIKELY(lp_livemem_maybe_ready(&live, p))) forget_and_free(d, p);
    else d->orig.free(d->orig.ctx, p); /* a tail call: no frame on the fast path */
}

static void install(hook_domain *d, PyMemAllocatorDomain dom, int python, int pymalloc) {
    d->domain = dom;
    d->python = python;
    PyMem_GetAllocator(dom, &d->orig);
    d->mine.ctx = d;
    d->mine.malloc = pymalloc ? h_malloc_pymalloc : h_malloc;
    d->mine.calloc = h_calloc;
    d->mine.realloc = h_realloc;
    d->mine.free = h_free;
    PyMem_SetAllocator(dom, &d->mine);
    d->installed = 1;
}

/* 1 when every domain still has CPython's default pymalloc allocators (not
 * PYTHONMALLOC=malloc or debug, not wrapped by another hook). The name
 * query is private API, so it is looked up, not linked. */
static int pymalloc_is_default(void) {
    if (domains[1].installed || domains[2].installed) /* our hooks are in: ask what they wrap */
        return domains[1].mine.malloc == h_malloc_pymalloc;
    typedef const char *(*name_fn)(void);
    name_fn name = (name_fn)dlsym(RTLD_DEFAULT, "_PyMem_GetCurrentAllocatorName");
    const char *n = name ? name() : NULL;
    return n != NULL && strcmp(n, "pymalloc") == 0;
}

static void uninstall(hook_domain *d) {
    if (!d->installed) return;
    PyMemAllocatorEx cur;
    PyMem_GetAllocator(d->domain, &cur);
    /* only when nobody wrapped us since; otherwise stay as a pass-through */
    if (cur.ctx == d && cur.malloc == d->mine.malloc) {
        PyMem_SetAllocator(d->domain, &d->orig);
        d->installed = 0;
    }
}

/* ---- fork: no lock may be held across fork() ---------------------------- */

static void before_fork(void) {
    lp_memacct_lock(account);
    lp_livemem_lock(&live);
}
static void after_fork(void) {
    lp_livemem_unlock(&live);
    lp_memacct_unlock(account);
}

static void at_exit(void) { lp_memhooks_stop(); }

static int ensure_tables(void) {
    if (tables_ready) return 0;
    if (lp_agg_init() < 0 || lp_livemem_init(&live, 18) < 0 ||
        !(account = lp_memacct_create(lp_agg_stacks(), lp_clock_monotonic_ns()))) {
        PyErr_NoMemory();
        return -1;
    }
    if (preloaded) {
        shim = preloaded;
        lp_sampler_text_range(preloaded_entry, &shim_lo, &shim_hi);
    }
    pthread_atfork(before_fork, after_fork, after_fork);
    Py_AtExit(at_exit);
    tables_ready = 1;
    return 0;
}

int lp_memhooks_start(uint64_t sample_bytes) {
    if (ensure_tables() < 0) return -1;
    lp_memhooks_stop();
    __atomic_store_n(&mean_bytes, sample_bytes ? sample_bytes : 1, __ATOMIC_RELAXED);
    /* the account starts from scratch; blocks sampled before stay unknown */
    int prev = lp_memhooks_guard_enter();
    lp_livemem_clear(&live);
    lp_memacct_reset(account, lp_clock_monotonic_ns());
    /* a new memory run starts from zero in the shared table too (the
     * sampler's columns are left alone) */
    for (int m = LP_M_ALLOC_BYTES; m <= LP_M_SURVIVOR_T2; m++)
        lp_stacktab_clear_column(lp_agg_stacks(), (lp_metric)m);
    lp_memhooks_guard_leave(prev);
    tls_sampler.rng = 0;
    int pym = pymalloc_is_default();
    if (!domains[1].installed) install(&domains[1], PYMEM_DOMAIN_MEM, 1, pym);
    if (!domains[2].installed) install(&domains[2], PYMEM_DOMAIN_OBJ, 1, pym);
    /* RAW is plain malloc: the shim sees it; without the shim, hook it */
    if (!shim && !domains[0].installed) install(&domains[0], PYMEM_DOMAIN_RAW, 0, 0);
    if (shim) {
        shim->set_sample_bytes(sample_bytes);
        if (shim->set_hooks(&shim_hooks) != 0) shim = NULL;
    }
    lp_own_alloc_set_guard(&own_guard);
    __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
    return 0;
}

void lp_memhooks_stop(void) {
    if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&enabled, 0, __ATOMIC_RELEASE);
    lp_own_alloc_set_guard(NULL);
    if (shim) shim->set_hooks(NULL);
    for (int i = 0; i < 3; i++) uninstall(&domains[i]);
    lp_memacct_mark(account, lp_clock_monotonic_ns());
}

int lp_memhooks_running(void) { return __atomic_load_n(&enabled, __ATOMIC_ACQUIRE); }

const lp_shim_api *lp_memhooks_shim(void) { return tables_ready ? shim : preloaded; }

void lp_memhooks_init(void) {
    lp_shim_api_fn get = (lp_shim_api_fn)dlsym(RTLD_DEFAULT, LP_SHIM_API_SYMBOL);
    const lp_shim_api *api = get ? get() : NULL;
    if (api && api->abi == LP_SHIM_ABI && api->size >= sizeof(lp_shim_api)) {
        preloaded = api;
        preloaded_entry = (uintptr_t)(void *)get;
    }
}

lp_memacct *lp_memhooks_acct(void) { return account; }
lp_livemem *lp_memhooks_live(void) { return &live; }
uint64_t lp_memhooks_sample_bytes(void) { return __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED); }
