/* aggregate: the launch/activity join (see gpu_join.h). */
#include "aggregate/gpu_join.h"

#include <pthread.h>
#include <string.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_graph.h"
#include "aggregate/gpu_names.h"
#include "aggregate/gpu_trace.h"
#include "common/hash.h"
#include "common/spinlock.h"

/* A ring slot: bit 63 valid, 62 a record joined it (or its pair), 61
 * nested (never counted as aged out), bits 32..45 the correlation id's bits
 * above the slot index, bits 0..31 the stack id. 0 = empty. */
#define SLOT_BITS 18
_Static_assert(LP_GPU_CORR_SLOTS == 1u << SLOT_BITS, "slot index width");
#define F_VALID   (1ull << 63)
#define F_JOINED  (1ull << 62)
#define F_NESTED  (1ull << 61)
#define TAG_MASK  (((1ull << (32 - SLOT_BITS)) - 1) << 32)
#define TAG(corr) ((uint64_t)((corr) >> SLOT_BITS) << 32)

static uint64_t ring[LP_GPU_CORR_SLOTS];
/* the other id of a nesting (runtime call <-> nested driver call) by slot,
 * 0 none; valid while the slot holds the id it was written for */
static uint32_t partner[LP_GPU_CORR_SLOTS];
static lp_gpu_join_stats stats;

/* Launches kept past their ring slot: open addressing (twice the capacity,
 * backward-shift deletion) plus a FIFO of their ids for the age-out. */
#define WAIT_HASH (LP_GPU_WAIT_SLOTS * 2)
typedef struct {
    uint32_t corr; /* 0 = empty */
    uint32_t stack;
    uint32_t joined;
    uint32_t partner; /* its nesting's other id, 0 none */
    uint32_t nested;
} waiter;
static waiter wait_tab[WAIT_HASH];
static uint32_t wait_fifo[LP_GPU_WAIT_SLOTS];
static uint32_t wait_head, wait_count;
static int wait_lock;

#define ADD(field, v) __atomic_fetch_add(&stats.field, (v), __ATOMIC_RELAXED)

/* A fork while another thread holds the kept table's lock must not leave
 * the child's copy locked (a child may launch through Level Zero). */
static void lock_for_fork(void) { lp_spin_lock(&wait_lock); }
static void unlock_after_fork(void) { lp_spin_unlock(&wait_lock); }

void lp_gpu_join_reset(void) {
    static int atfork_set;
    if (!atfork_set && pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork) == 0)
        atfork_set = 1;
    memset(ring, 0, sizeof ring);
    memset(partner, 0, sizeof partner);
    memset(&stats, 0, sizeof stats);
    memset(wait_tab, 0, sizeof wait_tab);
    wait_head = wait_count = 0;
    lp_gpu_graph_reset();
}

static size_t wait_home(uint32_t corr) { return (size_t)(lp_hash_mix64(corr) & (WAIT_HASH - 1)); }

/* Lock held. The entry of corr, or NULL. */
static waiter *wait_find(uint32_t corr) {
    for (size_t i = wait_home(corr);; i = (i + 1) & (WAIT_HASH - 1)) {
        if (wait_tab[i].corr == corr) return &wait_tab[i];
        if (wait_tab[i].corr == 0) return NULL;
    }
}

/* Lock held. Removes e (backward-shift: later probes stay reachable). */
static void wait_remove(waiter *e) {
    size_t hole = (size_t)(e - wait_tab);
    wait_tab[hole].corr = 0;
    for (size_t i = (hole + 1) & (WAIT_HASH - 1); wait_tab[i].corr; i = (i + 1) & (WAIT_HASH - 1)) {
        size_t home = wait_home(wait_tab[i].corr);
        /* the entry at i may move to the hole if its home is not in (hole, i] */
        int between = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (between) continue;
        wait_tab[hole] = wait_tab[i];
        wait_tab[i].corr = 0;
        hole = i;
    }
}

/* Lock held. Keeps a launch whose slot was reused; the oldest kept one
 * ages out when the table is full. */
static void wait_keep(uint32_t corr, uint32_t stack, uint32_t pair, int nested) {
    if (wait_count == LP_GPU_WAIT_SLOTS) {
        waiter *old = wait_find(wait_fifo[wait_head]);
        if (old) {
            if (!old->joined && !old->nested) ADD(aged_out, 1);
            wait_remove(old);
        }
        wait_head = (wait_head + 1) & (LP_GPU_WAIT_SLOTS - 1);
        wait_count--;
    }
    waiter *e = wait_find(corr);
    if (!e) {
        size_t i = wait_home(corr);
        while (wait_tab[i].corr) i = (i + 1) & (WAIT_HASH - 1);
        e = &wait_tab[i];
    }
    *e = (waiter){corr, stack, 0, pair, (uint32_t)nested};
    wait_fifo[(wait_head + wait_count) & (LP_GPU_WAIT_SLOTS - 1)] = corr;
    wait_count++;
    ADD(kept, 1);
}

static int waiting(uint64_t v) { return (v & F_VALID) && !(v & F_JOINED); }

static uint32_t corr_of(uint64_t v, size_t slot) {
    return (uint32_t)((v & TAG_MASK) >> 32) << SLOT_BITS | (uint32_t)slot;
}

static void note(uint32_t corr, uint32_t stack, uint64_t flags) {
    /* correlation id 0 is never issued by CUPTI; keep it as "empty" */
    if (corr == 0) return;
    size_t slot = corr & (LP_GPU_CORR_SLOTS - 1);
    uint64_t v = F_VALID | flags | TAG(corr) | stack;
    if (waiting(__atomic_load_n(&ring[slot], __ATOMIC_ACQUIRE))) {
        /* the rare path: the slot's launch still waits for its records.
         * Exchange under the lock, so a join that misses the ring finds it
         * in the table (joins take the lock on a miss). */
        lp_spin_lock(&wait_lock);
        uint32_t pair = __atomic_load_n(&partner[slot], __ATOMIC_RELAXED);
        __atomic_store_n(&partner[slot], 0, __ATOMIC_RELAXED);
        uint64_t old = __atomic_exchange_n(&ring[slot], v, __ATOMIC_ACQ_REL);
        if (waiting(old)) wait_keep(corr_of(old, slot), (uint32_t)old, pair, (old & F_NESTED) != 0);
        lp_spin_unlock(&wait_lock);
    } else {
        uint32_t pair = __atomic_load_n(&partner[slot], __ATOMIC_RELAXED);
        __atomic_store_n(&partner[slot], 0, __ATOMIC_RELAXED);
        uint64_t old = __atomic_exchange_n(&ring[slot], v, __ATOMIC_ACQ_REL);
        if (waiting(old)) { /* a launch noted between the load and here */
            lp_spin_lock(&wait_lock);
            wait_keep(corr_of(old, slot), (uint32_t)old, pair, (old & F_NESTED) != 0);
            lp_spin_unlock(&wait_lock);
        }
    }
    ADD(launches, 1);
}

static int slot_holds(uint64_t v, uint32_t corr) { return (v & F_VALID) && (v & TAG_MASK) == TAG(corr); }

void lp_gpu_join_note_launch(uint32_t corr, uint32_t stack) { note(corr, stack, 0); }

void lp_gpu_join_note_nested(uint32_t corr, uint32_t stack, uint32_t primary) {
    note(corr, stack, F_NESTED);
    if (corr == 0 || primary == 0) return;
    __atomic_store_n(&partner[corr & (LP_GPU_CORR_SLOTS - 1)], primary, __ATOMIC_RELAXED);
    size_t ps = primary & (LP_GPU_CORR_SLOTS - 1);
    if (slot_holds(__atomic_load_n(&ring[ps], __ATOMIC_ACQUIRE), primary))
        __atomic_store_n(&partner[ps], corr, __ATOMIC_RELAXED);
}

/* The paired id of corr (0 none), from the ring while its slot holds corr. */
static uint32_t pair_in_ring(uint32_t corr) {
    size_t slot = corr & (LP_GPU_CORR_SLOTS - 1);
    uint32_t pair = __atomic_load_n(&partner[slot], __ATOMIC_RELAXED);
    return slot_holds(__atomic_load_n(&ring[slot], __ATOMIC_ACQUIRE), corr) ? pair : 0;
}

static void forget_one(uint32_t corr) {
    uint64_t *p = &ring[corr & (LP_GPU_CORR_SLOTS - 1)];
    uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (slot_holds(v, corr) &&
           !__atomic_compare_exchange_n(p, &v, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
}

void lp_gpu_join_forget(uint32_t corr) {
    if (corr == 0) return;
    uint32_t pair = pair_in_ring(corr);
    forget_one(corr);
    if (pair) forget_one(pair);
}

/* A record joined pair's partner: pair waits no more (ring or table). */
static void mark_joined(uint32_t pair) {
    if (pair == 0) return;
    uint64_t *p = &ring[pair & (LP_GPU_CORR_SLOTS - 1)];
    uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (slot_holds(v, pair)) {
        if ((v & F_JOINED) ||
            __atomic_compare_exchange_n(p, &v, v | F_JOINED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
    lp_spin_lock(&wait_lock);
    waiter *e = wait_find(pair);
    if (e) e->joined = 1;
    lp_spin_unlock(&wait_lock);
}

/* The stack of corr; with `join`, marks it as having received a record. */
static uint32_t find(uint32_t corr, int join, int *late) {
    if (corr == 0) return LP_STACK_NONE;
    uint64_t *p = &ring[corr & (LP_GPU_CORR_SLOTS - 1)];
    uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (slot_holds(v, corr)) {
        if (!join || (v & F_JOINED)) return (uint32_t)v;
        uint32_t pair = pair_in_ring(corr);
        if (__atomic_compare_exchange_n(p, &v, v | F_JOINED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            mark_joined(pair);
            return (uint32_t)v;
        }
        /* the slot changed: reused (then the launch is in the table) or joined by another record */
    }
    lp_spin_lock(&wait_lock);
    waiter *e = wait_find(corr);
    uint32_t s = e ? e->stack : LP_STACK_NONE, pair = 0;
    if (e && join) {
        *late = 1;
        pair = e->joined ? 0 : e->partner;
        e->joined = 1;
    }
    lp_spin_unlock(&wait_lock);
    mark_joined(pair);
    return s;
}

uint32_t lp_gpu_join_lookup(uint32_t corr) { return find(corr, 0, NULL); }

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
        case LP_GPU_MEMSET: return lp_gpu_name("[memset]", 8);
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
    while ((cur == 0 || start < cur) && !__atomic_compare_exchange_n(&stats.first_start_ns, &cur, start, 1,
                                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    cur = __atomic_load_n(&stats.last_end_ns, __ATOMIC_RELAXED);
    while (end > cur && !__atomic_compare_exchange_n(&stats.last_end_ns, &cur, end, 1, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {}
}

static int under_backward(uint32_t stack) {
    lp_stacktab *t = lp_agg_stacks();
    if (!t || stack == LP_STACK_NONE || stack == LP_STACK_OVERFLOW) return 0;
    lp_stacknode n = lp_stacktab_node(t, stack);
    return n.valid && n.offset == LP_OFFSET_GPU_BACKWARD;
}

uint32_t lp_gpu_join_add(const lp_gpu_activity *a) {
    if ((a->start_ns == 0 && a->end_ns == 0) || a->end_ns < a->start_ns) {
        ADD(incomplete, 1);
        return LP_STACK_NONE;
    }
    int late = 0;
    uint32_t launch = find(a->correlation, 1, &late);
    if (late) ADD(late, 1);
    int attributed = launch != LP_STACK_NONE;
    if (!attributed) {
        ADD(unattributed, 1);
        launch = unattributed_stack();
    }
    /* a graph node's work: under the line captured into the graph */
    uint32_t parent = launch, captured = LP_STACK_NONE;
    if (attributed && a->graph_node) {
        uint32_t g = lp_gpu_graph_replay_stack(launch, a->graph_node, &captured);
        if (g != LP_STACK_NONE) parent = g;
        else captured = LP_STACK_NONE;
    }
    const char *name = op_name(a);
    uint32_t leaf = name ? lp_agg_extend(parent, (void *)name, LP_OFFSET_GPU_OP) : LP_STACK_OVERFLOW;
    lp_gpu_trace_add(a, name, leaf, attributed);
    int64_t dur = (int64_t)(a->end_ns - a->start_ns);
    /* launched by backward for a forward line's op (the "[backward]" marker
     * the launch put under that line's stack): its backward part too; a
     * graph replayed in backward, or captured there, alike */
    if (attributed && (under_backward(launch) || under_backward(captured)))
        lp_agg_add(leaf, LP_M_GPU_BACKWARD, dur);
    if (a->op == LP_GPU_KERNEL) {
        lp_agg_add(leaf, LP_M_GPU_KERNEL, dur);
        lp_agg_add(leaf, LP_M_GPU_KERNELS, 1);
        if (lp_gpu_name_is_comm(name)) lp_agg_add(leaf, LP_M_GPU_COMM, dur);
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
    out->kept = __atomic_load_n(&stats.kept, __ATOMIC_RELAXED);
    out->late = __atomic_load_n(&stats.late, __ATOMIC_RELAXED);
    out->aged_out = __atomic_load_n(&stats.aged_out, __ATOMIC_RELAXED);
    out->device_ns = __atomic_load_n(&stats.device_ns, __ATOMIC_RELAXED);
    out->first_start_ns = __atomic_load_n(&stats.first_start_ns, __ATOMIC_RELAXED);
    out->last_end_ns = __atomic_load_n(&stats.last_end_ns, __ATOMIC_RELAXED);
    lp_gpu_graph_stats g;
    lp_gpu_graph_get_stats(&g);
    out->graph_nodes = g.nodes;
    out->graph_full = g.full;
    out->graph_joined = g.joined;
    out->graph_missed = g.missed;
}
