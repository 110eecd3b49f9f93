/* aggregate: the bounded sample timeline (see aggregate/timeline.h). */
#include "aggregate/timeline.h"

#include <string.h>
#include <sys/mman.h>

#include "common/hash.h"
#include "common/own_map.h"

/* Per-thread sample counters for the stride, direct-mapped by thread key: a
 * collision restarts a thread's count (a few extra entries, never more than
 * the capacity). */
#define TL_THREAD_SLOTS 256

typedef struct {
    uint64_t thread;
    uint64_t count; /* the next sample's distance from the thread's last kept one */
    uint64_t seen;  /* thinning: the thread's entries so far */
    int used;
} tl_thread;

struct lp_timeline {
    lp_timeline_entry *e;
    uint32_t cap, n, stride;
    size_t bytes;
    tl_thread threads[TL_THREAD_SLOTS];
};

static tl_thread *thread_slot(lp_timeline *tl, uint64_t thread) {
    tl_thread *s = &tl->threads[lp_hash_fib32(thread) % TL_THREAD_SLOTS];
    if (!s->used || s->thread != thread) {
        s->used = 1;
        s->thread = thread;
        s->count = 0;
        s->seen = 0;
    }
    return s;
}

lp_timeline *lp_timeline_create(uint32_t capacity) {
    if (capacity < 2) capacity = 2;
    size_t bytes = sizeof(lp_timeline) + (size_t)capacity * sizeof(lp_timeline_entry);
    /* address space only: pages are touched as entries arrive */
    void *m = lp_own_map(bytes, MAP_NORESERVE);
    if (m == MAP_FAILED) return NULL;
    lp_timeline *tl = m;
    tl->e = (lp_timeline_entry *)(void *)((char *)m + sizeof(lp_timeline));
    tl->cap = capacity;
    tl->bytes = bytes;
    lp_timeline_clear(tl);
    return tl;
}

void lp_timeline_destroy(lp_timeline *tl) {
    if (tl) lp_own_unmap(tl, tl->bytes);
}

void lp_timeline_clear(lp_timeline *tl) {
    tl->n = 0;
    tl->stride = 1;
    memset(tl->threads, 0, sizeof tl->threads);
}

/* Full: keep every other entry of each thread (its first, third, ...), in
 * place and in order; double the stride. A thread whose last entry was
 * dropped is a stride further from its last kept one. */
static void thin(lp_timeline *tl) {
    for (int i = 0; i < TL_THREAD_SLOTS; i++) tl->threads[i].seen = 0;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < tl->n; i++) {
        tl_thread *s = thread_slot(tl, tl->e[i].thread);
        if (s->seen++ % 2 == 0) tl->e[kept++] = tl->e[i];
    }
    for (int i = 0; i < TL_THREAD_SLOTS; i++) {
        tl_thread *s = &tl->threads[i];
        if (s->used && s->seen && s->seen % 2 == 0) s->count += tl->stride;
    }
    tl->n = kept;
    tl->stride *= 2;
}

/* A thread's first sample is kept, then one per stride of its samples. */
static int skip(tl_thread *s, uint32_t stride) {
    if (s->count != 0 && s->count < stride) {
        s->count++;
        return 1;
    }
    return 0;
}

void lp_timeline_add(lp_timeline *tl, uint64_t t_ns, uint64_t thread, uint32_t stack, uint64_t weight_ns) {
    tl_thread *s = thread_slot(tl, thread);
    if (skip(s, tl->stride)) return;
    if (tl->n == tl->cap) {
        thin(tl); /* the stride doubles: ask again */
        s = thread_slot(tl, thread);
        if (skip(s, tl->stride)) return;
        if (tl->n == tl->cap) return; /* as many threads as entries: nothing to thin */
    }
    s->count = 1;
    lp_timeline_entry *e = &tl->e[tl->n++];
    e->t_ns = t_ns;
    e->thread = thread;
    e->stack = stack;
    e->weight_ns = weight_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)weight_ns;
}

uint32_t lp_timeline_count(const lp_timeline *tl) { return tl->n; }
uint32_t lp_timeline_stride(const lp_timeline *tl) { return tl->stride; }
const lp_timeline_entry *lp_timeline_entries(const lp_timeline *tl) { return tl->e; }

lp_timeline *lp_timeline_global(void) {
    static lp_timeline *global;
    if (!global) global = lp_timeline_create(LP_TIMELINE_CAPACITY);
    return global;
}
