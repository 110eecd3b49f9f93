/* collect: reading a running thread's stack from outside (see outside_read.h). */
#define _GNU_SOURCE 1
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collect/block_copy.h"
#include "collect/code_memo.h"
#include "collect/outside_read.h"

#define MAX_CHUNKS 16 /* data stack chunks copied up front; deeper ones are read on demand */

static lp_block_copy blocks; /* the sampler thread's alone */
static lp_code_memo memo;    /* the sampler thread's alone */
static uint64_t memo_deaths; /* deaths the memo has forgotten */
static int reading;          /* a read is in progress (seq_cst with deaths) */
static uint64_t deaths;      /* code objects that died so far (published after dying[]) */
static uint64_t read_deaths; /* deaths at lp_outside_begin */
/* the latest deaths' code objects: deaths are written by one thread at a
 * time (GIL held), each waits for the read in progress before the next */
#define DYING_KEPT 64
static const void *dying[DYING_KEPT];
static uint64_t total_fetches;

static int block_read(void *dst, const void *src, size_t n) {
    return lp_block_copy_read(&blocks, dst, src, n);
}

void lp_outside_begin(void) {
    __atomic_store_n(&reading, 1, __ATOMIC_SEQ_CST);
    read_deaths = __atomic_load_n(&deaths, __ATOMIC_SEQ_CST);
    /* the code objects that died since the last read leave the memo (as
     * many as are kept, or more: all of it, as the oldest slot may be
     * taken by the death being written now). The others are stable: the
     * next death after that one waits for this read */
    if (read_deaths - memo_deaths >= DYING_KEPT) lp_code_memo_clear(&memo);
    else
        for (uint64_t d = memo_deaths; d < read_deaths; d++)
            lp_code_memo_forget(&memo, __atomic_load_n(&dying[d % DYING_KEPT], __ATOMIC_ACQUIRE));
    memo_deaths = read_deaths;
}

int lp_outside_capture(const lp_sampler_host *host, const void *tstate, lp_rawframe *out, int max,
                       int *truncated, int *moved) {
    *moved = 0;
    lp_block_copy_reset(&blocks, host->safe_read);
    /* the thread state's fields, the chunk heads and the frames all come
     * from block copies: a system call a block, not one a field */
    const void *top = host->top(tstate, block_read);
    if (top == NULL) return -1;
    if (host->stack_ranges) {
        uintptr_t lo[MAX_CHUNKS], hi[MAX_CHUNKS];
        int n = host->stack_ranges(tstate, block_read, lo, hi, MAX_CHUNKS);
        for (int i = 0; i < n; i++) lp_block_copy_prefetch(&blocks, lo[i], hi[i]);
    }
    int n = host->capture_memo ? host->capture_memo(tstate, out, max, truncated, block_read, &memo)
                               : host->capture(tstate, out, max, truncated, block_read);
    __atomic_fetch_add(&total_fetches, blocks.fetches, __ATOMIC_RELAXED);
    if (n <= 0) return -1;
    /* the innermost frame read afresh, not from a copy */
    *moved = host->top(tstate, host->safe_read) != top;
    return n;
}

int lp_outside_unchanged(const lp_rawframe *frames, int n) {
    uint64_t now = __atomic_load_n(&deaths, __ATOMIC_SEQ_CST);
    if (now == read_deaths) return 1;
    /* more deaths than kept: cannot tell which (at most one more, at index
     * now, is being written meanwhile: not among those read) */
    if (now - read_deaths >= DYING_KEPT) return 0;
    for (uint64_t d = read_deaths; d < now; d++) {
        const void *code = __atomic_load_n(&dying[d % DYING_KEPT], __ATOMIC_ACQUIRE);
        for (int i = 0; i < n; i++)
            if (frames[i].code == code) return 0;
    }
    return 1;
}

void lp_outside_end(void) { __atomic_store_n(&reading, 0, __ATOMIC_SEQ_CST); }

void lp_outside_code_dying(const void *code) {
    /* Dekker with lp_outside_begin: either the read sees this death (and
     * drops itself if it names the code), or it is seen here as in progress
     * and waited for (it commits first, then the caller drains it) */
    uint64_t d = __atomic_load_n(&deaths, __ATOMIC_RELAXED);
    __atomic_store_n(&dying[d % DYING_KEPT], code, __ATOMIC_RELEASE);
    __atomic_store_n(&deaths, d + 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&reading, __ATOMIC_SEQ_CST)) sched_yield();
}

uint64_t lp_outside_fetches(void) { return __atomic_load_n(&total_fetches, __ATOMIC_RELAXED); }

void lp_outside_reset_fetches(void) { __atomic_store_n(&total_fetches, 0, __ATOMIC_RELAXED); }

int lp_outside_available(void) {
    uint64_t probe = 0x6c70726f66, got = 0;
    struct iovec local = {&got, sizeof got}, remote = {&probe, sizeof probe};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof got && got == probe;
}
