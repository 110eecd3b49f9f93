/* aggregate: the device memory account (see gpu_devmem.h). Live blocks in
 * a linear-probing table (backward-shift deletion, no tombstones); every
 * alloc/free appends (stack, delta) to an event log; the index of the event
 * that set the peak is kept, so finish() replays the log up to it. */
#define _GNU_SOURCE
#include "aggregate/gpu_devmem.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "aggregate/agg.h"
#include "common/hash.h"
#include "common/own_map.h"
#include "common/spinlock.h"

#define BLOCK_SLOTS (1u << 20) /* tracked at most 3/4 full */
#define LOG_EVENTS  (1u << 20)

typedef struct {
    uint64_t ptr; /* 0 = empty */
    uint64_t size;
    uint32_t stack;
    uint32_t pad_;
} block;

typedef struct {
    int64_t delta;
    uint32_t stack;
    uint32_t pad_;
} event;

static struct {
    int lock;
    block *blocks;
    event *log;
    uint32_t nblocks;
    uint32_t nlog;
    uint32_t peak_at; /* events [0, peak_at) make the peak */
    int log_full_before_peak;
    lp_gpu_devmem_stats st;
} D;

static uint32_t slot_of(uint64_t ptr) { return (uint32_t)lp_hash_mix64(ptr) & (BLOCK_SLOTS - 1); }

/* A fork while a runtime's thread holds the lock must not leave the
 * child's copy locked forever. */
static void lock_for_fork(void) { lp_spin_lock(&D.lock); }
static void unlock_after_fork(void) { lp_spin_unlock(&D.lock); }

int lp_gpu_devmem_reset(void) {
    static int handlers;
    if (!handlers && pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork) == 0) handlers = 1;
    size_t bb = (size_t)BLOCK_SLOTS * sizeof(block), lb = (size_t)LOG_EVENTS * sizeof(event);
    if (!D.blocks) {
        void *m = lp_own_map(bb + lb, MAP_NORESERVE);
        if (m == MAP_FAILED) return -1;
        D.blocks = m;
        D.log = (event *)((char *)m + bb);
    } else {
        madvise(D.blocks, bb + lb, MADV_DONTNEED); /* zero pages again */
    }
    D.nblocks = D.nlog = D.peak_at = 0;
    D.log_full_before_peak = 0;
    memset(&D.st, 0, sizeof D.st);
    return 0;
}

static void log_event(uint32_t stack, int64_t delta) {
    if (D.nlog < LOG_EVENTS) {
        D.log[D.nlog].delta = delta;
        D.log[D.nlog].stack = stack;
        D.nlog++;
    }
}

void lp_gpu_devmem_alloc(uint64_t ptr, uint64_t size, uint32_t stack) {
    if (!D.blocks || ptr == 0) return;
    lp_agg_add(stack, LP_M_GPU_ALLOC, (int64_t)size);
    lp_spin_lock(&D.lock);
    D.st.allocs++;
    if (D.nblocks + 1 > BLOCK_SLOTS / 4 * 3) {
        D.st.dropped++;
        lp_spin_unlock(&D.lock);
        return;
    }
    uint32_t i = slot_of(ptr);
    while (D.blocks[i].ptr && D.blocks[i].ptr != ptr) i = (i + 1) & (BLOCK_SLOTS - 1);
    if (D.blocks[i].ptr == ptr) { /* a free we never saw: replace the block */
        D.st.live_bytes -= D.blocks[i].size;
        log_event(D.blocks[i].stack, -(int64_t)D.blocks[i].size);
    } else {
        D.nblocks++;
    }
    D.blocks[i] = (block){ptr, size, stack, 0};
    D.st.live_bytes += size;
    log_event(stack, (int64_t)size);
    if (D.st.live_bytes > D.st.peak_bytes) {
        D.st.peak_bytes = D.st.live_bytes;
        D.peak_at = D.nlog;
        D.log_full_before_peak = D.nlog >= LOG_EVENTS;
    }
    lp_spin_unlock(&D.lock);
}

void lp_gpu_devmem_free(uint64_t ptr) {
    if (!D.blocks || ptr == 0) return;
    lp_spin_lock(&D.lock);
    D.st.frees++;
    uint32_t i = slot_of(ptr);
    while (D.blocks[i].ptr && D.blocks[i].ptr != ptr) i = (i + 1) & (BLOCK_SLOTS - 1);
    if (!D.blocks[i].ptr) {
        D.st.unknown_frees++;
        lp_spin_unlock(&D.lock);
        return;
    }
    D.st.live_bytes -= D.blocks[i].size;
    log_event(D.blocks[i].stack, -(int64_t)D.blocks[i].size);
    /* backward-shift deletion keeps every probe chain unbroken */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & (BLOCK_SLOTS - 1); D.blocks[j].ptr; j = (j + 1) & (BLOCK_SLOTS - 1)) {
        uint32_t home = slot_of(D.blocks[j].ptr);
        /* move j into the hole unless its home lies cyclically in (hole, j] */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            D.blocks[hole] = D.blocks[j];
            hole = j;
        }
    }
    D.blocks[hole].ptr = 0;
    D.nblocks--;
    lp_spin_unlock(&D.lock);
}

void lp_gpu_devmem_finish(void) {
    if (!D.blocks) return;
    lp_spin_lock(&D.lock);
    lp_stacktab *t = lp_agg_stacks();
    if (t) lp_stacktab_clear_column(t, LP_M_GPU_PEAK);
    /* replay: each stack's live bytes after event peak_at - 1; a stack's
     * row is only written by lp_agg_add here, so the column sums deltas */
    for (uint32_t k = 0; k < D.peak_at && k < D.nlog; k++)
        lp_agg_add(D.log[k].stack, LP_M_GPU_PEAK, D.log[k].delta);
    D.st.peak_exact = !D.log_full_before_peak;
    lp_spin_unlock(&D.lock);
}

void lp_gpu_devmem_get_stats(lp_gpu_devmem_stats *out) {
    lp_spin_lock(&D.lock);
    *out = D.st;
    out->peak_exact = !D.log_full_before_peak;
    lp_spin_unlock(&D.lock);
}
