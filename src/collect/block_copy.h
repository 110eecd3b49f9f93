/* collect: the memory one outside read of a running thread's stack touches,
 * copied a block at a time. The sampler thread reads a thread that holds
 * the GIL while it runs (collect/sampler.c, the CPU reader) through a
 * fault-safe reader, one system call a read; a 400-deep stack is some 1,200
 * reads (frame, code type, code field per frame), about a millisecond, and
 * a thread issuing system calls back to back slowed the running program
 * 1.8x here. Frames sit side by side in the thread's data stack and share
 * few code objects, so copying each 4 KiB block once per outside read and
 * serving the walk's reads from the copies makes those 1,200 calls a few
 * dozen. Pure C: the fetch is given (process_vm_readv on our own pid in
 * the sampler; memcpy with holes in tests/c/test_block_copy.c).
 *
 * One owner (the sampler thread), no locks. A block that cannot be read is
 * remembered as such for the read; when every slot is taken, further
 * blocks are read through the fetch directly (correct, only slower). */
#ifndef LPROF_COLLECT_BLOCK_COPY_H
#define LPROF_COLLECT_BLOCK_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "collect/reader.h"

#define LP_BLOCK_SIZE  4096u
#define LP_BLOCK_SLOTS 128u /* 512 KiB of copies: a 2,000-frame stack's worth */

typedef struct {
    lp_reader fetch;               /* reads whole blocks (0 / -1 as lp_reader) */
    uint32_t used;                 /* slots taken in this read */
    uint32_t fetches;              /* fetch calls in this read (tests, statistics) */
    uintptr_t key[LP_BLOCK_SLOTS]; /* block address + 1; 0: free */
    int8_t readable[LP_BLOCK_SLOTS];
    unsigned char data[LP_BLOCK_SLOTS][LP_BLOCK_SIZE];
} lp_block_copy;

/* Forgets every copy: the next read starts fresh. */
LP_INTERNAL void lp_block_copy_reset(lp_block_copy *c, lp_reader fetch);

/* Copies the blocks spanning [lo, hi) that are not held yet, in one
 * process_vm_readv of our own pid (a thread's data stack chunk: its frames
 * side by side); blocks past a fault are left for lp_block_copy_read.
 * Returns the blocks copied. */
LP_INTERNAL int lp_block_copy_prefetch(lp_block_copy *c, uintptr_t lo, uintptr_t hi);

/* Reads n bytes at src as lp_reader does, from the copies (fetching the
 * blocks it spans on first use). */
LP_INTERNAL int lp_block_copy_read(lp_block_copy *c, void *dst, const void *src, size_t n);

#endif
