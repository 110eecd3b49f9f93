/* shim/shared: sampled live blocks (see livemem.h). */
#include "collect/shim/shared/livemem.h"

#include <string.h>
#include <sys/mman.h>

#include "collect/shim/shared/memsample.h"
#include "common/own_map.h"
#include "common/spinlock.h"

/* Tables indexed by hash or address are touched at random: with 4 KiB
 * pages, each first touch is a read fault (zero page) and then a write fault
 * whose TLB flush interrupts every core the process runs on. Huge pages
 * (where the kernel offers them on request) make that a handful of faults. */
static void *map_zero(size_t bytes) {
    void *p = lp_own_map(bytes, 0);
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
    if (t->slots) lp_own_unmap(t->slots, ((size_t)t->mask + 1) * sizeof(lp_live_block));
    if (t->filter) lp_own_unmap(t->filter, (size_t)1 << LP_LIVEMEM_FILTER_BITS);
    if (t->touched) lp_own_unmap(t->touched, groups_bytes((size_t)t->mask + 1));
    memset(t, 0, sizeof *t);
}

void lp_livemem_clear(lp_livemem *t) {
    lp_spin_lock(&t->lock);
    if (t->slots) {
        zero_mapping(t->slots, ((size_t)t->mask + 1) * sizeof(lp_live_block));
        zero_mapping(t->filter, (size_t)1 << LP_LIVEMEM_FILTER_BITS);
        zero_mapping(t->touched, groups_bytes((size_t)t->mask + 1));
    }
    t->count = 0;
    lp_spin_unlock(&t->lock);
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
    lp_spin_lock(&t->lock);
    uint32_t i = lp_livemem_hash(b->addr) & t->mask;
    for (;;) {
        lp_live_block *s = &t->slots[i];
        if (s->addr == b->addr) {
            if (replaced) *replaced = *s;
            *s = *b;
            rc = 2;
            break;
        }
        if (s->addr == 0) {
            if (t->count >= t->limit) {
                t->overflow++;
                break;
            }
            *s = *b;
            t->touched[i >> LP_LIVEMEM_GROUP_BITS] = 1;
            t->count++;
            filter_inc(t, b->addr);
            rc = 1;
            break;
        }
        i = (i + 1) & t->mask;
    }
    lp_spin_unlock(&t->lock);
    return rc;
}

int lp_livemem_record(lp_livemem *t, lp_live_block *b, uint64_t mean, const lp_livemem_owner *owner) {
    b->weight = lp_memsample_weight(b->size, mean);
    b->stack = owner->attribute(b);
    lp_live_block old;
    int rc = lp_livemem_insert(t, b, &old);
    if (rc == 2) owner->replaced(&old, b->t_ns);
    return rc;
}

int lp_livemem_remove(lp_livemem *t, uintptr_t addr, lp_live_block *out) {
    if (t->slots == NULL || addr == 0) return 0;
    int found = 0;
    lp_spin_lock(&t->lock);
    uint32_t i = lp_livemem_hash(addr) & t->mask;
    while (t->slots[i].addr != 0) {
        if (t->slots[i].addr == addr) {
            found = 1;
            break;
        }
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
            uint32_t home = lp_livemem_hash(t->slots[j].addr) & t->mask;
            /* move j into the hole unless its home lies cyclically in (hole, j] */
            int stays = (hole <= j) ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                t->slots[hole] = t->slots[j];
                hole = j;
            }
        }
        memset(&t->slots[hole], 0, sizeof(lp_live_block));
    }
    lp_spin_unlock(&t->lock);
    return found;
}

void lp_livemem_foreach(lp_livemem *t, void (*fn)(const lp_live_block *, void *), void *ctx) {
    if (t->slots == NULL) return;
    lp_spin_lock(&t->lock);
    /* blocks only ever sit in written groups: an insert writes its slot, a
     * deletion's backward shift moves blocks into slots that held one */
    size_t group = (size_t)1 << LP_LIVEMEM_GROUP_BITS;
    for (size_t g = 0; g * group <= t->mask; g++) {
        if (!t->touched[g]) continue;
        for (size_t i = g * group; i < (g + 1) * group && i <= t->mask; i++)
            if (t->slots[i].addr != 0) fn(&t->slots[i], ctx);
    }
    lp_spin_unlock(&t->lock);
}

void lp_livemem_lock(lp_livemem *t) { lp_spin_lock(&t->lock); }
void lp_livemem_unlock(lp_livemem *t) { lp_spin_unlock(&t->lock); }
