/* aggregate: owns the process-wide stack table and the metric descriptions;
 * the write API of agg.h (locking and drain rules are stated there). */
#include "aggregate/agg.h"

const lp_metric_info lp_metric_infos[LP_M_COUNT] = {
#define LP_METRIC_INFO_(id, name, unit, merge, desc) {#name, unit, LP_MERGE_##merge, desc},
    LP_METRICS(LP_METRIC_INFO_)
#undef LP_METRIC_INFO_
};

/* Capacity of the global table: 1 Mi nodes (32 MiB + 8 MiB index) and
 * 256 Ki metric rows (22 MiB) of reserved address space; resident memory
 * grows with the distinct stacks actually seen. */
#define AGG_MAX_NODES (1u << 20)
#define AGG_MAX_ROWS (1u << 18)

/* Written once (under the GIL at module init or start), read by any thread. */
static lp_stacktab *stacks;

int lp_agg_init(void) {
    if (__atomic_load_n(&stacks, __ATOMIC_ACQUIRE)) return 0;
    lp_stacktab *t = lp_stacktab_create(AGG_MAX_NODES, AGG_MAX_ROWS);
    if (!t) return -1;
    __atomic_store_n(&stacks, t, __ATOMIC_RELEASE);
    return 0;
}

lp_stacktab *lp_agg_stacks(void) { return __atomic_load_n(&stacks, __ATOMIC_ACQUIRE); }

uint32_t lp_agg_intern(uint64_t thread, const lp_rawframe *frames, size_t n, int truncated) {
    lp_stacktab *t = lp_agg_stacks();
    if (LP_UNLIKELY(!t)) return LP_STACK_OVERFLOW;
    return lp_stacktab_intern(t, thread, frames, n, truncated);
}

uint32_t lp_agg_extend(uint32_t stack, void *code, int32_t offset) {
    lp_stacktab *t = lp_agg_stacks();
    if (LP_UNLIKELY(!t)) return LP_STACK_OVERFLOW;
    return lp_stacktab_extend(t, stack, code, offset);
}

void lp_agg_add(uint32_t stack, lp_metric m, int64_t value) {
    lp_stacktab *t = lp_agg_stacks();
    if (LP_LIKELY(t != NULL)) lp_stacktab_add(t, stack, m, value);
}

void lp_agg_max(uint32_t stack, lp_metric m, int64_t value) {
    lp_stacktab *t = lp_agg_stacks();
    if (LP_LIKELY(t != NULL)) lp_stacktab_max(t, stack, m, value);
}

void lp_agg_set(uint32_t stack, lp_metric m, int64_t value) {
    lp_stacktab *t = lp_agg_stacks();
    if (LP_LIKELY(t != NULL)) lp_stacktab_set(t, stack, m, value);
}

void lp_agg_reset(void) {
    lp_stacktab *t = lp_agg_stacks();
    if (t) lp_stacktab_clear(t);
}
