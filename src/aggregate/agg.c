/* aggregate: owns the process-wide stack table and the metric descriptions;
 * the write API of agg.h (locking and drain rules are stated there). */
#include "aggregate/agg.h"

#include <stdlib.h>

const lp_metric_info lp_metric_infos[LP_M_COUNT] = {
#define LP_METRIC_INFO_(id, name, unit, merge, group, audience, desc) \
    {#name, unit, LP_MERGE_##merge, LP_GROUP_##group, LP_GROUP_NAME_##group, LP_INTERNAL_##audience, desc},
#define LP_INTERNAL_SHOWN      false
#define LP_INTERNAL_INTERNAL   true
#define LP_GROUP_NAME_SAMPLING "sampling"
#define LP_GROUP_NAME_MEMORY   "memory"
#define LP_GROUP_NAME_GPU      "gpu"
    LP_METRICS(LP_METRIC_INFO_)
#undef LP_METRIC_INFO_
};

/* Capacity of the global table: 1 Mi nodes (32 MiB + 8 MiB index) and
 * 256 Ki metric rows (22 MiB) of reserved address space; resident memory
 * grows with the distinct stacks actually seen. */
#define AGG_MAX_NODES (1u << 20)
#define AGG_MAX_ROWS  (1u << 18)

/* Written once (under the GIL at module init or start), read by any thread. */
static lp_stacktab *stacks;
/* Created with the stacks; GIL only. 64 Ki pairs, 3/4 of them usable: 4.3
 * MiB of zeroed memory, touched as pairs come. */
static lp_task_split *task_split;
#define AGG_TASK_PAIRS (1u << 16)

/* LPROF_STACK_TABLE=NODES,ROWS: a smaller table, so that tests can reach
 * the overflow path without millions of stacks (never larger than the
 * defaults). */
static void capacities(uint32_t *nodes, uint32_t *rows) {
    *nodes = AGG_MAX_NODES;
    *rows = AGG_MAX_ROWS;
    const char *spec = getenv("LPROF_STACK_TABLE");
    if (spec == NULL) return;
    char *end = NULL;
    unsigned long n = strtoul(spec, &end, 10), r = 0;
    if (end == NULL || *end != ',') return;
    r = strtoul(end + 1, &end, 10);
    if (*end != '\0' || n < 16 || r < 16 || n > AGG_MAX_NODES || r > AGG_MAX_ROWS) return;
    *nodes = (uint32_t)n;
    *rows = (uint32_t)r;
}

int lp_agg_init(void) {
    if (__atomic_load_n(&stacks, __ATOMIC_ACQUIRE)) return 0;
    uint32_t max_nodes, max_rows;
    capacities(&max_nodes, &max_rows);
    lp_stacktab *t = lp_stacktab_create(max_nodes, max_rows);
    if (!t) return -1;
    if (!task_split) task_split = lp_task_split_create(AGG_TASK_PAIRS); /* none: no split, counted nowhere */
    __atomic_store_n(&stacks, t, __ATOMIC_RELEASE);
    return 0;
}

lp_stacktab *lp_agg_stacks(void) { return __atomic_load_n(&stacks, __ATOMIC_ACQUIRE); }

uint32_t lp_agg_prefault(uint32_t part) {
    lp_stacktab *t = lp_agg_stacks();
    return t ? lp_stacktab_prefault(t, part) : 0;
}

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

void lp_agg_add_task(uint32_t stack, uint32_t task, lp_metric m, int64_t value) {
    if (task_split) lp_task_split_add(task_split, stack, task, m, value);
}

const lp_task_split *lp_agg_task_split(void) { return task_split; }

/* Set at module init under the GIL; read under the GIL. */
static lp_agg_source source;

void lp_agg_set_source(const lp_agg_source *src) { source = *src; }

void lp_agg_code_dying(const void *code) {
    if (source.code_dying) source.code_dying(code);
}

uint64_t lp_agg_drain(void) { return source.drain ? source.drain() : 0; }

int lp_agg_has_pending(void) { return source.pending ? source.pending() : 0; }

int lp_agg_source_running(void) { return source.running ? source.running() : 0; }

void lp_agg_reset(void) {
    lp_stacktab *t = lp_agg_stacks();
    if (t) lp_stacktab_clear(t);
    if (task_split) lp_task_split_clear(task_split);
}
