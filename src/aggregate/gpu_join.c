/* aggregate: the launch/activity join (see gpu_join.h). */
#include "aggregate/gpu_join.h"

#include <string.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_names.h"

static uint64_t ring[LP_GPU_CORR_SLOTS]; /* corr << 32 | stack; 0 = empty */
static lp_gpu_join_stats stats;

#define ADD(field, v) __atomic_fetch_add(&stats.field, (v), __ATOMIC_RELAXED)

void lp_gpu_join_reset(void) {
    memset(ring, 0, sizeof ring);
    memset(&stats, 0, sizeof stats);
}

void lp_gpu_join_note_launch(uint32_t corr, uint32_t stack) {
    /* correlation id 0 is never issued by CUPTI; keep it as "empty" */
    if (corr == 0) return;
    __atomic_store_n(&ring[corr & (LP_GPU_CORR_SLOTS - 1)], (uint64_t)corr << 32 | stack, __ATOMIC_RELEASE);
    ADD(launches, 1);
}

uint32_t lp_gpu_join_lookup(uint32_t corr) {
    if (corr == 0) return LP_STACK_NONE;
    uint64_t v = __atomic_load_n(&ring[corr & (LP_GPU_CORR_SLOTS - 1)], __ATOMIC_ACQUIRE);
    return (uint32_t)(v >> 32) == corr ? (uint32_t)v : LP_STACK_NONE;
}

static const char *op_name(const lp_gpu_activity *a) {
    static const char *const copies[] = {"[memcpy]", "[memcpy HtoD]", "[memcpy DtoH]", "[memcpy DtoD]"};
    switch (a->op) {
    case LP_GPU_KERNEL:
        if (a->name) {
            const char *n = lp_gpu_name(a->name, a->name_len ? a->name_len : strlen(a->name));
            if (n) return n;
        }
        return lp_gpu_name("[kernel]", 8);
    case LP_GPU_MEMCPY: {
        const char *s = copies[(unsigned)a->dir < 4 ? (unsigned)a->dir : 0];
        return lp_gpu_name(s, strlen(s));
    }
    case LP_GPU_MEMSET:
        return lp_gpu_name("[memset]", 8);
    }
    return NULL;
}

/* The stack of work whose launch is unknown: thread 0, one marker frame. */
static uint32_t unattributed_stack(void) {
    static const char text[] = "[GPU work without a launch record]";
    const char *n = lp_gpu_name(text, sizeof text - 1);
    lp_rawframe f = {(void *)n, LP_OFFSET_GPU_OP, 0};
    return n ? lp_agg_intern(0, &f, 1, 0) : LP_STACK_OVERFLOW;
}

static void note_span(uint64_t start, uint64_t end) {
    uint64_t cur = __atomic_load_n(&stats.first_start_ns, __ATOMIC_RELAXED);
    while ((cur == 0 || start < cur) &&
           !__atomic_compare_exchange_n(&stats.first_start_ns, &cur, start, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    cur = __atomic_load_n(&stats.last_end_ns, __ATOMIC_RELAXED);
    while (end > cur &&
           !__atomic_compare_exchange_n(&stats.last_end_ns, &cur, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

uint32_t lp_gpu_join_add(const lp_gpu_activity *a) {
    if ((a->start_ns == 0 && a->end_ns == 0) || a->end_ns < a->start_ns) {
        ADD(incomplete, 1);
        return LP_STACK_NONE;
    }
    uint32_t launch = lp_gpu_join_lookup(a->correlation);
    if (launch == LP_STACK_NONE) {
        ADD(unattributed, 1);
        launch = unattributed_stack();
    }
    const char *name = op_name(a);
    uint32_t leaf = name ? lp_agg_extend(launch, (void *)name, LP_OFFSET_GPU_OP) : LP_STACK_OVERFLOW;
    int64_t dur = (int64_t)(a->end_ns - a->start_ns);
    if (a->op == LP_GPU_KERNEL) {
        lp_agg_add(leaf, LP_M_GPU_KERNEL, dur);
        lp_agg_add(leaf, LP_M_GPU_KERNELS, 1);
    } else {
        lp_agg_add(leaf, LP_M_GPU_COPY, dur);
    }
    if (a->op == LP_GPU_MEMCPY) {
        static const lp_metric by_dir[] = {LP_M_GPU_D2D, LP_M_GPU_H2D, LP_M_GPU_D2H, LP_M_GPU_D2D};
        /* host-to-host and unknown directions count as no transfer over the bus */
        if (a->dir != LP_GPU_DIR_OTHER) lp_agg_add(leaf, by_dir[a->dir], (int64_t)a->bytes);
    }
    ADD(records, 1);
    ADD(device_ns, (uint64_t)dur);
    note_span(a->start_ns, a->end_ns);
    return leaf;
}

void lp_gpu_join_get_stats(lp_gpu_join_stats *out) {
    out->records = __atomic_load_n(&stats.records, __ATOMIC_RELAXED);
    out->unattributed = __atomic_load_n(&stats.unattributed, __ATOMIC_RELAXED);
    out->incomplete = __atomic_load_n(&stats.incomplete, __ATOMIC_RELAXED);
    out->launches = __atomic_load_n(&stats.launches, __ATOMIC_RELAXED);
    out->device_ns = __atomic_load_n(&stats.device_ns, __ATOMIC_RELAXED);
    out->first_start_ns = __atomic_load_n(&stats.first_start_ns, __ATOMIC_RELAXED);
    out->last_end_ns = __atomic_load_n(&stats.last_end_ns, __ATOMIC_RELAXED);
}
