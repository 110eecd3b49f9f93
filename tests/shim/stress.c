/* Shim stress test, run under LD_PRELOAD=liblprof_shim.so (ASan cannot run
 * with an interposed allocator). Threads allocate random sizes through every
 * entry point, free at random, realloc and align; the program keeps its own
 * exact count and registers hooks that sum the shim's weights. Checks:
 * - the estimated bytes allocated are within 5% of the exact total;
 * - after everything is freed, estimated live bytes are exactly zero (every
 *   sampled block's free was seen once), and no block is left in the table;
 * - contents survive realloc, alignments hold, a fork child can allocate
 *   while the parent's threads are busy.
 * Prints "stress ok ..." and exits 0 on success. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lprof/shim.h"

#define THREADS 4
#define SLOTS 2048
#define ROUNDS 100000

static double est_alloc, est_freed; /* guarded by lock */
static uint64_t exact_alloc[THREADS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static uint32_t on_alloc(uint64_t addr, uint64_t size, double weight, uint32_t kind, uint64_t t) {
    (void)addr; (void)size; (void)kind; (void)t;
    pthread_mutex_lock(&lock);
    est_alloc += weight;
    pthread_mutex_unlock(&lock);
    return 7;
}

static void on_free(const lp_shim_block *b, uint64_t t) {
    (void)t;
    pthread_mutex_lock(&lock);
    if (b->stack != 7) failures++;
    est_freed += b->weight;
    pthread_mutex_unlock(&lock);
}

static void fail(const char *what) {
    __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "stress: %s\n", what);
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

static size_t pick_size(uint64_t *s) {
    uint64_t r = rnd(s) % 100;
    if (r < 70) return rnd(s) % 512 + 1;
    if (r < 95) return rnd(s) % 65536 + 1;
    return rnd(s) % (2u << 20) + 1;
}

typedef struct { void *p; size_t n; unsigned char tag; } slot;

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t s = 88172645463325252ull + (uint64_t)id * 7919;
    static __thread slot slots[SLOTS];
    for (int round = 0; round < ROUNDS; round++) {
        slot *sl = &slots[rnd(&s) % SLOTS];
        if (sl->p) {
            if (((unsigned char *)sl->p)[0] != sl->tag || ((unsigned char *)sl->p)[sl->n - 1] != sl->tag)
                fail("block content changed");
            if (rnd(&s) % 4 == 0) { /* grow or shrink in place of a free */
                size_t n = pick_size(&s);
                void *q = realloc(sl->p, n);
                if (!q) { fail("realloc"); continue; }
                if (((unsigned char *)q)[0] != sl->tag) fail("realloc lost content");
                exact_alloc[id] += n;
                sl->p = q;
                sl->n = n;
                memset(q, sl->tag, n);
                continue;
            }
            free(sl->p);
            sl->p = NULL;
            continue;
        }
        size_t n = pick_size(&s);
        void *p = NULL;
        switch (rnd(&s) % 6) {
        case 0: p = malloc(n); break;
        case 1: p = calloc(1, n); if (p && ((unsigned char *)p)[n - 1] != 0) fail("calloc not zero"); break;
        case 2: if (posix_memalign(&p, 64, n) != 0) p = NULL; else if ((uintptr_t)p % 64) fail("posix_memalign"); break;
        case 3: p = aligned_alloc(256, n); if (p && (uintptr_t)p % 256) fail("aligned_alloc"); break;
        case 4: p = memalign(4096, n); if (p && (uintptr_t)p % 4096) fail("memalign"); break;
        default: p = realloc(NULL, n); break;
        }
        if (!p) { fail("allocation failed"); continue; }
        if (malloc_usable_size(p) < n) fail("usable size");
        exact_alloc[id] += n;
        sl->p = p;
        sl->n = n;
        sl->tag = (unsigned char)(rnd(&s) | 1);
        memset(p, sl->tag, n);
    }
    for (int i = 0; i < SLOTS; i++) free(slots[i].p);
    return NULL;
}

static void *fork_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) free(malloc((size_t)(i % 5000) + 1));
    return NULL;
}

static int fork_test(void) {
    pthread_t t;
    pthread_create(&t, NULL, fork_worker, NULL);
    int ok = 1;
    for (int i = 0; i < 20 && ok; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int j = 0; j < 10000; j++) free(malloc((size_t)j + 1));
            _exit(0);
        }
        int st = 0;
        alarm(20); /* a deadlocked child would hang here */
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ok = 0;
        alarm(0);
    }
    pthread_join(t, NULL);
    return ok;
}

int main(void) {
    lp_shim_api_fn get = (lp_shim_api_fn)dlsym(RTLD_DEFAULT, LP_SHIM_API_SYMBOL);
    if (!get) { fprintf(stderr, "stress: shim not preloaded\n"); return 2; }
    const lp_shim_api *api = get();
    if (api->abi != LP_SHIM_ABI) { fprintf(stderr, "stress: abi\n"); return 2; }
    api->set_sample_bytes(16384);
    lp_shim_hooks h = {LP_SHIM_ABI, sizeof h, on_alloc, on_free};
    if (api->set_hooks(&h) != 0) { fprintf(stderr, "stress: set_hooks\n"); return 2; }

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);

    /* a large anonymous mapping is seen and forgotten */
    void *m = mmap(NULL, 8u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double freed_before = est_freed;
    munmap(m, 8u << 20);
    /* glibc declares munmap __leaf__: without this the compiler may assume it
     * cannot call back into this file (on_free) and reuse est_freed */
    __asm__ __volatile__("" ::: "memory");
    /* tolerance: the running sums are large doubles */
    if (est_freed - freed_before < 0.999 * (double)(8u << 20)) fail("mmap not sampled or munmap not seen");

    int fork_ok = fork_test();
    api->set_hooks(NULL);

    uint64_t exact = 8u << 20;
    for (int i = 0; i < THREADS; i++) exact += exact_alloc[i];
    lp_shim_stats st;
    api->stats(&st);
    double rel = est_alloc / (double)exact - 1.0;
    double live = est_alloc - est_freed;
    printf("stress exact=%llu est=%.0f rel=%.4f live=%.1f samples=%llu overflow=%llu fork=%d\n",
           (unsigned long long)exact, est_alloc, rel, live, (unsigned long long)st.sampled,
           (unsigned long long)st.overflow, fork_ok);
    if (rel > 0.05 || rel < -0.05) fail("estimate off by more than 5%");
    if (live > 1e-3 * est_alloc || live < -1e-3 * est_alloc) fail("live bytes not back to zero");
    if (!fork_ok) fail("fork child failed");
    if (failures) return 1;
    printf("stress ok\n");
    return 0;
}
