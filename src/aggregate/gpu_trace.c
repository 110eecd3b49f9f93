/* aggregate: the bounded GPU timeline (see gpu_trace.h). */
#include "aggregate/gpu_trace.h"

#include <stdlib.h>
#include <string.h>
#include "common/table_space.h"

static lp_gpu_trace_rec *table;
static size_t table_bytes;
static uint32_t cap;  /* records the table takes now (<= the reserved size) */
static uint32_t used; /* slots handed out; may pass cap (those are dropped) */
static uint64_t dropped;

/* Launch times: bit 63 valid, bits 50..62 the correlation id's bits above
 * the slot index (13 of them: ids are compared modulo 2^31, ample for a
 * ring of 2^18), bits 0..49 nanoseconds since `base` plus one (~13 days). */
#define SLOT_BITS    18
#define T_BITS       50
#define T_MASK       ((1ull << T_BITS) - 1)
#define TAG_OF(corr) (((uint64_t)((corr) >> SLOT_BITS) & 0x1fffu) << T_BITS)
#define VALID        (1ull << 63)
_Static_assert(LP_GPU_CORR_SLOTS == 1u << SLOT_BITS, "launch ring matches the join's");
static uint64_t launch_ring[LP_GPU_CORR_SLOTS];
static uint64_t base_ns;

int lp_gpu_trace_reset(void) {
    uint32_t want = lp_env_cap("LPROF_GPU_TRACE_MAX", LP_GPU_TRACE_DEFAULT_CAP, LP_GPU_TRACE_MAX_CAP);
    size_t bytes = (size_t)(want ? want : 1) * sizeof(lp_gpu_trace_rec);
    __atomic_store_n(&cap, 0, __ATOMIC_RELEASE);
    void *space = table;
    int ok = lp_table_reserve(&space, &table_bytes, bytes);
    table = space;
    if (ok < 0) {
        __atomic_store_n(&used, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&dropped, 0, __ATOMIC_RELEASE);
        return -1;
    }
    /* fresh zero pages for what a previous run touched */
    uint32_t was = __atomic_load_n(&used, __ATOMIC_ACQUIRE);
    size_t touched = (size_t)(was < table_bytes / sizeof *table ? was : table_bytes / sizeof *table);
    if (touched) memset(table, 0, touched * sizeof *table);
    memset(launch_ring, 0, sizeof launch_ring);
    base_ns = 0;
    __atomic_store_n(&used, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&dropped, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&cap, want, __ATOMIC_RELEASE);
    return 0;
}

void lp_gpu_trace_note_launch(uint32_t corr, uint64_t t_ns) {
    if (corr == 0 || t_ns == 0) return;
    uint64_t base = __atomic_load_n(&base_ns, __ATOMIC_RELAXED);
    if (base == 0) {
        uint64_t want = t_ns - 1, none = 0;
        /* the first launch sets the base; a racing one keeps the winner's */
        if (!__atomic_compare_exchange_n(&base_ns, &none, want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            want = none;
        base = want;
    }
    if (t_ns <= base || t_ns - base > T_MASK)
        return; /* before the first launch (another thread's race), or too late */
    uint64_t v = VALID | TAG_OF(corr) | (t_ns - base);
    __atomic_store_n(&launch_ring[corr & (LP_GPU_CORR_SLOTS - 1)], v, __ATOMIC_RELEASE);
}

uint64_t lp_gpu_trace_launch_time(uint32_t corr) {
    if (corr == 0) return 0;
    uint64_t v = __atomic_load_n(&launch_ring[corr & (LP_GPU_CORR_SLOTS - 1)], __ATOMIC_ACQUIRE);
    if (!(v & VALID) || (v & ~VALID & ~T_MASK) != TAG_OF(corr)) return 0;
    return __atomic_load_n(&base_ns, __ATOMIC_RELAXED) + (v & T_MASK);
}

int lp_gpu_trace_add(const lp_gpu_activity *a, const char *name, uint32_t leaf, int attributed) {
    uint32_t c = __atomic_load_n(&cap, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&used, __ATOMIC_RELAXED) >= c) { /* full: no slot taken, the count cannot wrap */
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    uint32_t i = __atomic_fetch_add(&used, 1, __ATOMIC_ACQ_REL);
    if (i >= c) {
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    lp_gpu_trace_rec *r = &table[i];
    r->start_ns = a->start_ns;
    r->end_ns = a->end_ns;
    r->launch_ns = lp_gpu_trace_launch_time(a->correlation);
    r->bytes = a->bytes;
    r->name = name;
    r->stack = leaf;
    r->attributed = attributed != 0;
    r->correlation = a->correlation;
    r->device = a->device;
    r->stream = a->stream;
    r->op = (uint8_t)a->op;
    r->dir = (uint8_t)a->dir;
    __atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
    return 1;
}

uint32_t lp_gpu_trace_count(void) {
    uint32_t n = __atomic_load_n(&used, __ATOMIC_ACQUIRE), c = __atomic_load_n(&cap, __ATOMIC_ACQUIRE);
    return n < c ? n : c;
}

const lp_gpu_trace_rec *lp_gpu_trace_at(uint32_t i) {
    if (i >= lp_gpu_trace_count()) return NULL;
    const lp_gpu_trace_rec *r = &table[i];
    return __atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) ? r : NULL;
}

uint32_t lp_gpu_trace_capacity(void) { return __atomic_load_n(&cap, __ATOMIC_ACQUIRE); }
uint64_t lp_gpu_trace_dropped(void) { return __atomic_load_n(&dropped, __ATOMIC_RELAXED); }
