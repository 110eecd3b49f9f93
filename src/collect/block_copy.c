/* collect: block copies for outside reads (see block_copy.h). */
#define _GNU_SOURCE 1
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collect/block_copy.h"

void lp_block_copy_reset(lp_block_copy *c, lp_reader fetch) {
    c->fetch = fetch;
    c->fetches = 0;
    if (c->used) memset(c->key, 0, sizeof c->key);
    c->used = 0;
}

/* Where block `block` is: its slot (*held = 1), or the free slot that
 * would take it (*held = 0); -1 when neither is found. */
static int probe(const lp_block_copy *c, uintptr_t block, int *held) {
    uint32_t i = (uint32_t)(block / LP_BLOCK_SIZE * 2654435761u) % LP_BLOCK_SLOTS;
    for (uint32_t n = 0; n < LP_BLOCK_SLOTS; n++, i = (i + 1) % LP_BLOCK_SLOTS) {
        *held = c->key[i] == block + 1;
        if (*held || c->key[i] == 0) return (int)i;
    }
    return -1;
}

/* The slot holding block `block` (its address), fetched on first use;
 * -1 when no slot is free (the caller reads through the fetch). */
static int slot_of(lp_block_copy *c, uintptr_t block) {
    int held, i = probe(c, block, &held);
    if (i < 0 || held) return i;
    /* keep one slot free so that a probe for a block not held ends */
    if (c->used + 1 >= LP_BLOCK_SLOTS) return -1;
    c->key[i] = block + 1;
    c->used++;
    c->fetches++;
    c->readable[i] = c->fetch(c->data[i], (const void *)block, LP_BLOCK_SIZE) == 0;
    return i;
}

#define PREFETCH_MAX 64 /* blocks a call */

int lp_block_copy_prefetch(lp_block_copy *c, uintptr_t lo, uintptr_t hi) {
    uintptr_t first = lo & ~(uintptr_t)(LP_BLOCK_SIZE - 1);
    struct iovec local[PREFETCH_MAX];
    int slots[PREFETCH_MAX], n = 0;
    uintptr_t start = 0;
    int copied = 0;
    for (uintptr_t b = first; b < hi; b += LP_BLOCK_SIZE) {
        /* a block already held ends the run (its copy stays as it is) */
        int held, i = probe(c, b, &held);
        if (i >= 0 && !held && n < PREFETCH_MAX && c->used + 1 < LP_BLOCK_SLOTS) {
            if (n == 0) start = b;
            c->key[i] = b + 1;
            c->readable[i] = 0;
            c->used++;
            slots[n] = i;
            local[n].iov_base = c->data[i];
            local[n].iov_len = LP_BLOCK_SIZE;
            n++;
            if (b + LP_BLOCK_SIZE < hi) continue;
        }
        if (n > 0) {
            struct iovec remote = {(void *)start, (size_t)n * LP_BLOCK_SIZE};
            c->fetches++;
            ssize_t got = process_vm_readv(getpid(), local, (unsigned long)n, &remote, 1, 0);
            for (int k = 0; k < n; k++) {
                int ok = got > 0 && (size_t)got >= (size_t)(k + 1) * LP_BLOCK_SIZE;
                if (ok) {
                    c->readable[slots[k]] = 1;
                    copied++;
                } else {
                    c->key[slots[k]] = 0; /* not copied: read on demand */
                    c->used--;
                }
            }
            n = 0;
        }
        if (c->used + 1 >= LP_BLOCK_SLOTS) break;
    }
    return copied;
}

int lp_block_copy_read(lp_block_copy *c, void *dst, const void *src, size_t n) {
    uintptr_t at = (uintptr_t)src;
    unsigned char *out = dst;
    while (n > 0) {
        uintptr_t block = at & ~(uintptr_t)(LP_BLOCK_SIZE - 1);
        size_t off = at - block, take = LP_BLOCK_SIZE - off;
        if (take > n) take = n;
        int i = slot_of(c, block);
        if (i < 0) {
            c->fetches++;
            if (c->fetch(out, (const void *)at, take) != 0) return -1;
        } else {
            if (!c->readable[i]) return -1;
            memcpy(out, c->data[i] + off, take);
        }
        at += take;
        out += take;
        n -= take;
    }
    return 0;
}
