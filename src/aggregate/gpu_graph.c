/* aggregate: graph nodes and their captured stacks (see gpu_graph.h). */
#include "aggregate/gpu_graph.h"

#include <string.h>

#include "aggregate/agg.h"
#include "common/hash.h"
#include "common/spinlock.h"

/* Open addressing, twice the capacity so probes stay short; nodes are
 * never removed (a node's id is unique for the process), so no deletion. */
#define SLOTS (LP_GPU_GRAPH_NODES * 2)
typedef struct {
    uint64_t node; /* 0 = empty */
    uint32_t stack;
} entry;
static entry table[SLOTS];
static uint32_t used;
static int lock;

/* Grafted stacks, (replay, captured) -> stack: a replay's kernels repeat
 * the same pairs, and grafting walks and extends a whole stack. Direct
 * mapped; a collision only costs a new graft. */
#define CACHE 4096
typedef struct {
    uint32_t replay, captured, grafted; /* grafted 0 = empty (node 0 is the overflow stack) */
} graft_entry;
static graft_entry cache[CACHE];
static int cache_lock;

static lp_gpu_graph_stats stats;
#define ADD(field, v) __atomic_fetch_add(&stats.field, (v), __ATOMIC_RELAXED)

void lp_gpu_graph_reset(void) {
    lp_spin_lock(&lock);
    memset(table, 0, sizeof table);
    used = 0;
    lp_spin_unlock(&lock);
    lp_spin_lock(&cache_lock);
    memset(cache, 0, sizeof cache);
    lp_spin_unlock(&cache_lock);
    memset(&stats, 0, sizeof stats);
}

/* Lock held. The slot of node, or the empty slot where it goes. */
static entry *slot_of(uint64_t node) {
    for (size_t i = (size_t)(lp_hash_mix64(node) & (SLOTS - 1));; i = (i + 1) & (SLOTS - 1))
        if (table[i].node == node || table[i].node == 0) return &table[i];
}

/* Lock held. Notes node's stack; `replace`: over a stack already noted. */
static void put(uint64_t node, uint32_t stack, int replace) {
    entry *e = slot_of(node);
    if (e->node == node) {
        if (replace) e->stack = stack;
        return;
    }
    if (used == LP_GPU_GRAPH_NODES) {
        ADD(full, 1);
        return;
    }
    used++;
    *e = (entry){node, stack};
    ADD(nodes, 1);
}

void lp_gpu_graph_node_created(uint64_t node, uint32_t stack) {
    if (node == 0 || stack == LP_STACK_NONE) return;
    lp_spin_lock(&lock);
    put(node, stack, 0);
    lp_spin_unlock(&lock);
}

void lp_gpu_graph_node_cloned(uint64_t clone, uint64_t original) {
    if (clone == 0 || original == 0 || clone == original) return;
    lp_spin_lock(&lock);
    entry *o = slot_of(original);
    if (o->node == original) put(clone, o->stack, 1);
    lp_spin_unlock(&lock);
}

uint32_t lp_gpu_graph_node_stack(uint64_t node) {
    if (node == 0) return LP_STACK_NONE;
    lp_spin_lock(&lock);
    entry *e = slot_of(node);
    uint32_t s = e->node == node ? e->stack : LP_STACK_NONE;
    lp_spin_unlock(&lock);
    return s;
}

/* Node ids of `stack` from its leaf up, the thread root left out (at most
 * GRAFT_DEPTH: the innermost; *cut set when deeper). -1: not readable. */
#define GRAFT_DEPTH 512
static int path_of(const lp_stacktab *t, uint32_t stack, uint32_t *path, size_t *n, int *cut) {
    *n = 0;
    *cut = 0;
    for (uint32_t id = stack; id != LP_STACK_NONE;) {
        lp_stacknode nd = lp_stacktab_node(t, id);
        if (!nd.valid) return -1; /* not published yet */
        if (nd.offset == LP_OFFSET_THREAD_ROOT) return 0;
        if (*n == GRAFT_DEPTH) {
            *cut = 1;
            return 0;
        }
        path[(*n)++] = id;
        id = nd.parent;
    }
    return 0;
}

/* replay + the marker + the frames of `captured` below the frames both
 * share from the root (the same thread's program entry, runpy's frames):
 * "...;replay line;[graph replay];captured line's caller;...;captured
 * line" reads as the captured code run from the replay. */
static uint32_t graft(uint32_t replay, uint32_t captured) {
    lp_stacktab *t = lp_agg_stacks();
    if (!t) return LP_STACK_NONE;
    uint32_t path[GRAFT_DEPTH], under[GRAFT_DEPTH];
    size_t n, m;
    int cut, replay_cut;
    if (path_of(t, captured, path, &n, &cut) < 0 || path_of(t, replay, under, &m, &replay_cut) < 0)
        return LP_STACK_NONE;
    if (!cut && !replay_cut)
        while (n > 0 && m > 0 && path[n - 1] == under[m - 1]) n--, m--;
    uint32_t s = lp_agg_extend(replay, NULL, LP_OFFSET_GPU_GRAPH);
    if (cut) s = lp_agg_extend(s, NULL, LP_OFFSET_TRUNCATED);
    while (n-- > 0 && s != LP_STACK_OVERFLOW) {
        lp_stacknode nd = lp_stacktab_node(t, path[n]);
        s = lp_agg_extend(s, nd.code, nd.offset);
    }
    return s;
}

uint32_t lp_gpu_graph_replay_stack(uint32_t replay, uint64_t node, uint32_t *captured_out) {
    uint32_t captured = lp_gpu_graph_node_stack(node);
    *captured_out = captured;
    if (captured == LP_STACK_NONE || captured == LP_STACK_OVERFLOW) {
        ADD(missed, 1);
        return LP_STACK_NONE;
    }
    size_t at = (size_t)(lp_hash_mix64((uint64_t)replay << 32 | captured) & (CACHE - 1));
    lp_spin_lock(&cache_lock);
    graft_entry c = cache[at];
    lp_spin_unlock(&cache_lock);
    uint32_t s =
        c.grafted && c.replay == replay && c.captured == captured ? c.grafted : graft(replay, captured);
    if (s == LP_STACK_NONE) {
        ADD(missed, 1);
        return LP_STACK_NONE;
    }
    if (s != LP_STACK_OVERFLOW && s != c.grafted) {
        lp_spin_lock(&cache_lock);
        cache[at] = (graft_entry){replay, captured, s};
        lp_spin_unlock(&cache_lock);
    }
    ADD(joined, 1);
    return s;
}

void lp_gpu_graph_get_stats(lp_gpu_graph_stats *out) {
    out->nodes = __atomic_load_n(&stats.nodes, __ATOMIC_RELAXED);
    out->full = __atomic_load_n(&stats.full, __ATOMIC_RELAXED);
    out->joined = __atomic_load_n(&stats.joined, __ATOMIC_RELAXED);
    out->missed = __atomic_load_n(&stats.missed, __ATOMIC_RELAXED);
}
