/* aggregate: interned stacks as a lock-free parent-pointer trie with metric
 * rows (see stacktab.h for the contract).
 *
 * Layout (one mmap, pages touched on use): an open-addressing index of
 * uint32 (node id + 1, 0 = empty) at most half full, a dense node array
 * filled in claim order, a dense row array. Insert: claim a node id with
 * fetch_add, write it, mark it ready, then CAS it into an empty index slot;
 * a loser of the race for the same key marks its node dead (wasted, never
 * found). Nothing ever waits, so an allocator hook may intern from any
 * thread. Rows are claimed the same way and linked from the node with CAS. */
#define _GNU_SOURCE
#include "aggregate/stacktab.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/own_map.h"

typedef struct {
    uint64_t hash;
    void *code;
    uint32_t parent;
    int32_t offset;
    uint32_t row;  /* row id + 1, 0 = none; written with CAS */
    uint8_t ready; /* fields above written (release) */
    uint8_t dead;  /* skipped by lookups (retired or wasted) */
    uint8_t pad_[2];
} node;

typedef struct {
    uint32_t stack; /* stack id + 1; 0 = unpublished or wasted */
    uint32_t pad_;
    int64_t v[LP_M_COUNT];
} row;

struct lp_stacktab {
    uint32_t max_nodes, max_rows;
    uint32_t index_mask;
    uint32_t nnodes; /* claimed node ids (may exceed max_nodes) */
    uint32_t nrows;  /* claimed row ids (may exceed max_rows) */
    uint64_t overflows;
    uint32_t *index;
    node *nodes;
    row *rows;
    void *map;
    size_t map_bytes;
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static uint64_t key_hash(uint32_t parent, const void *code, int32_t offset) {
    return lp_hash_mix64(((uint64_t)parent << 32 | (uint32_t)offset) ^ lp_hash_ptr(code));
}

static size_t round_page(size_t n) { return (n + 4095) & ~(size_t)4095; }

static void init_reserved(lp_stacktab *t) {
    /* node 0: the overflow stack, a root of its own; row 0 belongs to it */
    node *n0 = &t->nodes[0];
    n0->parent = LP_STACK_NONE;
    n0->offset = LP_OFFSET_OVERFLOW;
    n0->code = NULL;
    n0->row = 1;
    n0->dead = 1; /* never found by lookups */
    n0->ready = 1;
    t->rows[0].stack = LP_STACK_OVERFLOW + 1;
    t->nnodes = 1;
    t->nrows = 1;
}

lp_stacktab *lp_stacktab_create(uint32_t max_nodes, uint32_t max_rows) {
    if (max_nodes < 2 || max_rows < 2 || max_nodes > (1u << 30)) return NULL;
    uint32_t cap = 1;
    while (cap < 2 * max_nodes) cap <<= 1;
    size_t head = round_page(sizeof(lp_stacktab));
    size_t ib = round_page((size_t)cap * sizeof(uint32_t));
    size_t nb = round_page((size_t)max_nodes * sizeof(node));
    size_t rb = round_page((size_t)max_rows * sizeof(row));
    size_t total = head + ib + nb + rb;
    void *m = lp_own_map(total, MAP_NORESERVE);
    if (m == MAP_FAILED) return NULL;
    lp_stacktab *t = m;
    t->map = m;
    t->map_bytes = total;
    t->max_nodes = max_nodes;
    t->max_rows = max_rows;
    t->index_mask = cap - 1;
    t->index = (uint32_t *)((char *)m + head);
    t->nodes = (node *)((char *)m + head + ib);
    t->rows = (row *)((char *)m + head + ib + nb);
#ifdef MADV_HUGEPAGE
    /* the index is hashed: on 4 KiB pages nearly every insert would fault
     * twice (zero page, then copy on write with a cross-core TLB flush).
     * Not the rest: nodes and rows fill in order, a 4 KiB fault per 128
     * nodes, and a huge page is zeroed whole at its first touch (2 MiB
     * each for the header, node 0 and row 0 cost a short run 5 ms) */
    (void)madvise(t->index, ib, MADV_HUGEPAGE);
#endif
    init_reserved(t);
    return t;
}

uint32_t lp_stacktab_prefault(lp_stacktab *t, uint32_t part) {
    size_t ib = round_page((size_t)(t->index_mask + 1) * sizeof(uint32_t));
    uint32_t parts = (uint32_t)((ib + LP_PREFAULT_PART - 1) / LP_PREFAULT_PART);
    if (part >= parts) return parts;
    char *start = (char *)t->index + (size_t)part * LP_PREFAULT_PART;
    size_t len = ib - (size_t)part * LP_PREFAULT_PART;
    if (len > LP_PREFAULT_PART) len = LP_PREFAULT_PART;
#ifdef MADV_POPULATE_WRITE
    if (madvise(start, len, MADV_POPULATE_WRITE) == 0) return parts;
#endif
    /* before Linux 5.14: a write that changes nothing, one a page */
    for (size_t off = 0; off < len; off += 4096)
        __atomic_fetch_or((uint32_t *)(void *)(start + off), 0u, __ATOMIC_RELAXED);
    return parts;
}

void lp_stacktab_destroy(lp_stacktab *t) {
    if (t) lp_own_unmap(t->map, t->map_bytes);
}

void lp_stacktab_clear(lp_stacktab *t) {
    /* give the touched pages back, then rebuild the reserved entries */
    char *start = (char *)t->index;
    size_t len = t->map_bytes - (size_t)(start - (char *)t->map);
    madvise(start, len, MADV_DONTNEED);
    t->overflows = 0;
    init_reserved(t);
}

static void overflow_event(lp_stacktab *t) { __atomic_fetch_add(&t->overflows, 1, __ATOMIC_RELAXED); }

static uint32_t find_or_add(lp_stacktab *t, uint32_t parent, void *code, int32_t offset) {
    uint64_t h = key_hash(parent, code, offset);
    uint32_t i = (uint32_t)h & t->index_mask;
    uint32_t pending = LP_STACK_NONE;
    for (uint32_t probe = 0; probe <= t->index_mask; probe++, i = (i + 1) & t->index_mask) {
        uint32_t v = LOAD(&t->index[i]);
        if (v == 0) {
            if (pending == LP_STACK_NONE) {
                uint32_t id = __atomic_fetch_add(&t->nnodes, 1, __ATOMIC_RELAXED);
                if (id >= t->max_nodes) return LP_STACK_OVERFLOW;
                node *n = &t->nodes[id];
                n->hash = h;
                n->code = code;
                n->parent = parent;
                n->offset = offset;
                STORE(&n->ready, 1);
                pending = id;
            }
            uint32_t expected = 0;
            if (__atomic_compare_exchange_n(&t->index[i], &expected, pending + 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return pending;
            v = expected;
        }
        const node *n = &t->nodes[v - 1];
        if (n->hash == h && n->parent == parent && n->code == code && n->offset == offset &&
            !LOAD(&n->dead)) {
            if (pending != LP_STACK_NONE) STORE(&t->nodes[pending].dead, 1); /* lost the race */
            return v - 1;
        }
    }
    if (pending != LP_STACK_NONE) STORE(&t->nodes[pending].dead, 1);
    return LP_STACK_OVERFLOW;
}

uint32_t lp_stacktab_intern(lp_stacktab *t, uint64_t thread, const lp_rawframe *frames, size_t n,
                            int truncated) {
    uint32_t at = find_or_add(t, LP_STACK_NONE, (void *)(uintptr_t)thread, LP_OFFSET_THREAD_ROOT);
    if (at != LP_STACK_OVERFLOW && truncated) at = find_or_add(t, at, NULL, LP_OFFSET_TRUNCATED);
    for (size_t k = n; k-- > 0 && at != LP_STACK_OVERFLOW;)
        at = find_or_add(t, at, frames[k].code, frames[k].offset);
    if (at == LP_STACK_OVERFLOW) overflow_event(t);
    return at;
}

uint32_t lp_stacktab_extend(lp_stacktab *t, uint32_t stack, void *code, int32_t offset) {
    if (stack == LP_STACK_OVERFLOW || stack >= t->max_nodes) return LP_STACK_OVERFLOW;
    uint32_t at = find_or_add(t, stack, code, offset);
    if (at == LP_STACK_OVERFLOW) overflow_event(t);
    return at;
}

static row *row_of(lp_stacktab *t, uint32_t stack) {
    if (stack >= t->max_nodes) return &t->rows[0];
    node *n = &t->nodes[stack];
    uint32_t r = LOAD(&n->row);
    if (LP_LIKELY(r != 0)) return &t->rows[r - 1];
    uint32_t id = __atomic_fetch_add(&t->nrows, 1, __ATOMIC_RELAXED);
    if (id >= t->max_rows) {
        overflow_event(t);
        return &t->rows[0];
    }
    uint32_t expected = 0;
    if (__atomic_compare_exchange_n(&n->row, &expected, id + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        STORE(&t->rows[id].stack, stack + 1);
        return &t->rows[id];
    }
    return &t->rows[expected - 1]; /* another thread linked a row first; ours stays unpublished */
}

void lp_stacktab_add(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value) {
    __atomic_fetch_add(&row_of(t, stack)->v[m], value, __ATOMIC_RELAXED);
}

void lp_stacktab_max(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value) {
    int64_t *p = &row_of(t, stack)->v[m];
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < value &&
           !__atomic_compare_exchange_n(p, &cur, value, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

void lp_stacktab_set(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value) {
    __atomic_store_n(&row_of(t, stack)->v[m], value, __ATOMIC_RELAXED);
}

void lp_stacktab_set_difference(lp_stacktab *t, lp_metric dst, lp_metric a, lp_metric b) {
    uint32_t n = lp_stacktab_row_count(t);
    for (uint32_t r = 0; r < n; r++) {
        row *w = &t->rows[r];
        int64_t v = __atomic_load_n(&w->v[a], __ATOMIC_RELAXED) - __atomic_load_n(&w->v[b], __ATOMIC_RELAXED);
        /* skip unchanged values: rows of other collectors stay untouched pages */
        if (__atomic_load_n(&w->v[dst], __ATOMIC_RELAXED) != v)
            __atomic_store_n(&w->v[dst], v, __ATOMIC_RELAXED);
    }
}

void lp_stacktab_clear_column(lp_stacktab *t, lp_metric m) {
    uint32_t n = lp_stacktab_row_count(t);
    for (uint32_t r = 0; r < n; r++)
        if (__atomic_load_n(&t->rows[r].v[m], __ATOMIC_RELAXED))
            __atomic_store_n(&t->rows[r].v[m], 0, __ATOMIC_RELAXED);
}

void lp_stacktab_retire(lp_stacktab *t, uint32_t id) {
    if (id < lp_stacktab_node_count(t)) STORE(&t->nodes[id].dead, 1);
}

uint32_t lp_stacktab_node_count(const lp_stacktab *t) {
    uint32_t n = __atomic_load_n(&t->nnodes, __ATOMIC_ACQUIRE);
    return n < t->max_nodes ? n : t->max_nodes;
}

lp_stacknode lp_stacktab_node(const lp_stacktab *t, uint32_t id) {
    lp_stacknode out = {LP_STACK_NONE, 0, NULL, 0};
    if (id >= lp_stacktab_node_count(t)) return out;
    const node *n = &t->nodes[id];
    if (!LOAD(&n->ready)) return out;
    out.parent = n->parent;
    out.offset = n->offset;
    out.code = n->code;
    out.valid = 1;
    return out;
}

uint32_t lp_stacktab_row_count(const lp_stacktab *t) {
    uint32_t n = __atomic_load_n(&t->nrows, __ATOMIC_ACQUIRE);
    return n < t->max_rows ? n : t->max_rows;
}

uint32_t lp_stacktab_row(const lp_stacktab *t, uint32_t r, int64_t values[LP_M_COUNT]) {
    memset(values, 0, sizeof(int64_t) * LP_M_COUNT);
    if (r >= lp_stacktab_row_count(t)) return LP_STACK_NONE;
    const row *w = &t->rows[r];
    uint32_t s = LOAD(&w->stack);
    if (s == 0) return LP_STACK_NONE;
    for (int m = 0; m < LP_M_COUNT; m++) values[m] = __atomic_load_n(&w->v[m], __ATOMIC_RELAXED);
    return s - 1;
}

void lp_stacktab_get(const lp_stacktab *t, uint32_t stack, int64_t values[LP_M_COUNT]) {
    memset(values, 0, sizeof(int64_t) * LP_M_COUNT);
    if (stack >= lp_stacktab_node_count(t)) return;
    uint32_t r = LOAD(&t->nodes[stack].row);
    if (r != 0) lp_stacktab_row(t, r - 1, values);
}

uint64_t lp_stacktab_thread(const lp_stacktab *t, uint32_t stack) {
    uint32_t count = lp_stacktab_node_count(t);
    for (uint32_t guard = 0; stack < count && guard < count; guard++) {
        const node *n = &t->nodes[stack];
        if (n->offset == LP_OFFSET_THREAD_ROOT && n->parent == LP_STACK_NONE)
            return (uint64_t)(uintptr_t)n->code;
        stack = n->parent;
    }
    return 0;
}

void lp_stacktab_measure(const lp_stacktab *t, lp_stacktab_size *out) {
    out->max_nodes = t->max_nodes;
    out->max_rows = t->max_rows;
    out->reserved_bytes = t->map_bytes;
    out->resident_bytes = 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (t->map_bytes + page - 1) / page;
    unsigned char *in = malloc(pages);
    if (in == NULL) return;
    if (mincore(t->map, t->map_bytes, in) == 0)
        for (size_t i = 0; i < pages; i++) out->resident_bytes += (in[i] & 1) ? page : 0;
    free(in);
}

uint64_t lp_stacktab_overflows(const lp_stacktab *t) {
    return __atomic_load_n(&t->overflows, __ATOMIC_RELAXED);
}
