/* livemem: sampled live blocks and the per-stack account (see livemem.h). */
#include "livemem.h"

#include <math.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

static void spin_lock(int *l) {
    unsigned spins = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++spins > 64) { sched_yield(); spins = 0; }
            else {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        }
    }
}

static void spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* Tables indexed by hash or address are touched at random: with 4 KiB
 * pages, each first touch is a read fault (zero page) and then a write fault
 * whose TLB flush interrupts every core the process runs on. Huge pages
 * (where the kernel offers them on request) make that a handful of faults. */
static void *map_zero(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)2 << 20)) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

/* Zeroes a private anonymous mapping by dropping its pages: the next touch
 * maps a zero page, so clearing a large, mostly untouched table costs no
 * page faults (a memset would fault in every page). */
static void zero_mapping(void *p, size_t bytes) {
    if (madvise(p, bytes, MADV_DONTNEED) != 0) memset(p, 0, bytes);
}

static size_t groups_bytes(size_t slots) {
    size_t g = slots >> LP_LIVEMEM_GROUP_BITS;
    return g ? g : 1;
}

int lp_livemem_init(lp_livemem *t, unsigned log2_slots) {
    memset(t, 0, sizeof *t);
    if (log2_slots < 4) log2_slots = 4;
    if (log2_slots > 28) log2_slots = 28;
    size_t n = (size_t)1 << log2_slots;
    t->slots = map_zero(n * sizeof(lp_live_block));
    t->filter = map_zero((size_t)1 << LP_LIVEMEM_FILTER_BITS);
    t->touched = map_zero(groups_bytes(n));
    if (t->slots == NULL || t->filter == NULL || t->touched == NULL) {
        lp_livemem_destroy(t);
        return -1;
    }
    t->mask = (uint32_t)(n - 1);
    t->limit = (uint32_t)(n / 4 * 3);
    return 0;
}

void lp_livemem_destroy(lp_livemem *t) {
    if (t->slots) munmap(t->slots, ((size_t)t->mask + 1) * sizeof(lp_live_block));
    if (t->filter) munmap(t->filter, (size_t)1 << LP_LIVEMEM_FILTER_BITS);
    if (t->touched) munmap(t->touched, groups_bytes((size_t)t->mask + 1));
    memset(t, 0, sizeof *t);
}

void lp_livemem_clear(lp_livemem *t) {
    spin_lock(&t->lock);
    if (t->slots) {
        zero_mapping(t->slots, ((size_t)t->mask + 1) * sizeof(lp_live_block));
        zero_mapping(t->filter, (size_t)1 << LP_LIVEMEM_FILTER_BITS);
        zero_mapping(t->touched, groups_bytes((size_t)t->mask + 1));
    }
    t->count = 0;
    spin_unlock(&t->lock);
}

static void filter_inc(lp_livemem *t, uintptr_t a) {
    uint8_t *c = &t->filter[lp_livemem_filter_index(a)];
    uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    if (v != 255) __atomic_store_n(c, (uint8_t)(v + 1), __ATOMIC_RELAXED);
}

static void filter_dec(lp_livemem *t, uintptr_t a) {
    /* a saturated counter stays set: it can no longer know its true count */
    uint8_t *c = &t->filter[lp_livemem_filter_index(a)];
    uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    if (v != 0 && v != 255) __atomic_store_n(c, (uint8_t)(v - 1), __ATOMIC_RELAXED);
}

int lp_livemem_insert(lp_livemem *t, const lp_live_block *b, lp_live_block *replaced) {
    if (t->slots == NULL || b->addr == 0) return 0;
    int rc = 0;
    spin_lock(&t->lock);
    uint32_t i = lp_livemem_hash(b->addr, 32) & t->mask;
    for (;;) {
        lp_live_block *s = &t->slots[i];
        if (s->addr == b->addr) {
            if (replaced) *replaced = *s;
            *s = *b;
            rc = 2;
            break;
        }
        if (s->addr == 0) {
            if (t->count >= t->limit) { t->overflow++; break; }
            *s = *b;
            t->touched[i >> LP_LIVEMEM_GROUP_BITS] = 1;
            t->count++;
            filter_inc(t, b->addr);
            rc = 1;
            break;
        }
        i = (i + 1) & t->mask;
    }
    spin_unlock(&t->lock);
    return rc;
}

int lp_livemem_remove(lp_livemem *t, uintptr_t addr, lp_live_block *out) {
    if (t->slots == NULL || addr == 0) return 0;
    int found = 0;
    spin_lock(&t->lock);
    uint32_t i = lp_livemem_hash(addr, 32) & t->mask;
    while (t->slots[i].addr != 0) {
        if (t->slots[i].addr == addr) { found = 1; break; }
        i = (i + 1) & t->mask;
    }
    if (found) {
        if (out) *out = t->slots[i];
        filter_dec(t, addr);
        t->count--;
        /* backward-shift deletion keeps probe chains intact without tombstones */
        uint32_t hole = i, j = i;
        for (;;) {
            j = (j + 1) & t->mask;
            if (t->slots[j].addr == 0) break;
            uint32_t home = lp_livemem_hash(t->slots[j].addr, 32) & t->mask;
            /* move j into the hole unless its home lies cyclically in (hole, j] */
            int stays = (hole <= j) ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                t->slots[hole] = t->slots[j];
                hole = j;
            }
        }
        memset(&t->slots[hole], 0, sizeof(lp_live_block));
    }
    spin_unlock(&t->lock);
    return found;
}

void lp_livemem_foreach(lp_livemem *t, void (*fn)(const lp_live_block *, void *), void *ctx) {
    if (t->slots == NULL) return;
    spin_lock(&t->lock);
    /* blocks only ever sit in written groups: an insert writes its slot, a
     * deletion's backward shift moves blocks into slots that held one */
    size_t group = (size_t)1 << LP_LIVEMEM_GROUP_BITS;
    for (size_t g = 0; g * group <= t->mask; g++) {
        if (!t->touched[g]) continue;
        for (size_t i = g * group; i < (g + 1) * group && i <= t->mask; i++)
            if (t->slots[i].addr != 0) fn(&t->slots[i], ctx);
    }
    spin_unlock(&t->lock);
}

void lp_livemem_lock(lp_livemem *t) { spin_lock(&t->lock); }
void lp_livemem_unlock(lp_livemem *t) { spin_unlock(&t->lock); }

/* ---- per-stack account ------------------------------------------------ */

int lp_memacct_init(lp_memacct *a, uint32_t max_stacks, uint64_t t0_ns) {
    memset(a, 0, sizeof *a);
    if (max_stacks < 2) max_stacks = 2;
    a->rows = map_zero((size_t)max_stacks * sizeof(lp_memrow));
    if (a->rows == NULL) return -1;
    a->cap = max_stacks;
    a->used = 1;
    a->t0_ns = t0_ns;
    a->tl_min_dt_ns = 10 * 1000 * 1000;  /* 10 ms, doubled each time the timeline halves */
    return 0;
}

void lp_memacct_destroy(lp_memacct *a) {
    if (a->rows) munmap(a->rows, (size_t)a->cap * sizeof(lp_memrow));
    memset(a, 0, sizeof *a);
}

void lp_memacct_lock(lp_memacct *a) { spin_lock(&a->lock); }
void lp_memacct_unlock(lp_memacct *a) { spin_unlock(&a->lock); }

static void timeline_push(lp_memacct *a, uint64_t t_ns) {
    if (a->tl_len == LP_MEMACCT_TIMELINE) {
        /* keep every other point and halve the rate: bounded, still spans the run */
        for (uint32_t i = 0; i < LP_MEMACCT_TIMELINE / 2; i++) {
            a->tl[i][0] = a->tl[2 * i][0];
            a->tl[i][1] = a->tl[2 * i][1];
        }
        a->tl_len = LP_MEMACCT_TIMELINE / 2;
        a->tl_min_dt_ns *= 2;
    }
    double t = t_ns > a->t0_ns ? (double)(t_ns - a->t0_ns) * 1e-9 : 0.0;
    a->tl[a->tl_len][0] = t;
    a->tl[a->tl_len][1] = a->live > 0 ? a->live : 0;
    a->tl_len++;
    a->tl_last_ns = t_ns;
    a->tl_last_live = a->live;
}

static void maybe_timeline(lp_memacct *a, uint64_t t_ns) {
    double change = fabs(a->live - a->tl_last_live);
    if (a->tl_len == 0 || t_ns - a->tl_last_ns >= a->tl_min_dt_ns ||
        (change > 0.05 * a->peak && t_ns - a->tl_last_ns >= a->tl_min_dt_ns / 16))
        timeline_push(a, t_ns);
}

static void snapshot_peak(lp_memacct *a) {
    for (uint32_t i = 0; i < a->used; i++)
        a->rows[i].live_at_peak = a->rows[i].alloc_bytes - a->rows[i].freed_bytes;
    a->snap_peak = a->live;
}

void lp_memacct_alloc(lp_memacct *a, uint32_t stack, double weight, uint64_t size, int python,
                      uint64_t t_ns) {
    if (a->rows == NULL) return;
    spin_lock(&a->lock);
    if (stack >= a->cap) {
        a->dropped++;
        stack = 0;
    }
    lp_memrow *r = &a->rows[stack];
    r->alloc_bytes += weight;
    r->alloc_count += size ? weight / (double)size : 1.0;
    if (python) r->python_bytes += weight;
    r->sampled_allocs++;
    if (stack >= a->used) a->used = stack + 1;
    a->live += weight;
    if (a->live > a->peak) {
        a->peak = a->live;
        a->peak_t_ns = t_ns;
        /* copying every row on each new peak would be quadratic while memory
         * grows; 1% steps bound the error of the shares to 1% */
        if (a->live >= a->snap_peak * 1.01) snapshot_peak(a);
    }
    maybe_timeline(a, t_ns);
    spin_unlock(&a->lock);
}

void lp_memacct_free(lp_memacct *a, uint32_t stack, double weight, uint64_t t_ns) {
    if (a->rows == NULL) return;
    spin_lock(&a->lock);
    if (stack >= a->cap) stack = 0;
    lp_memrow *r = &a->rows[stack];
    r->freed_bytes += weight;
    r->sampled_frees++;
    a->live -= weight;
    maybe_timeline(a, t_ns);
    spin_unlock(&a->lock);
}

void lp_memacct_mark(lp_memacct *a, uint64_t t_ns) {
    if (a->rows == NULL) return;
    spin_lock(&a->lock);
    if (a->peak > a->snap_peak && a->live >= a->peak) snapshot_peak(a);
    timeline_push(a, t_ns);
    spin_unlock(&a->lock);
}

/* ---- leak statistic ---------------------------------------------------- */

double lp_leak_slope(const lp_leakacc *l, double *span_s) {
    if (span_s) *span_s = 0;
    if (l->n < 2) return 0.0;
    double mean = l->st / l->n;
    double var = l->st2 / l->n - mean * mean;
    if (var <= 0) return 0.0;
    double span = sqrt(12.0 * var);
    if (span_s) *span_s = span;
    return l->w / span;
}

double lp_leak_score(uint64_t sampled_allocs, uint64_t sampled_frees) {
    if (sampled_frees > sampled_allocs) return 0.0;
    return 1.0 - ((double)sampled_frees + 1.0) / ((double)(sampled_allocs - sampled_frees) + 2.0);
}
