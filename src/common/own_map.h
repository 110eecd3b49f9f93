/* common: the anonymous mappings that hold lprof's own tables (stack table,
 * sample rings, timeline, live-block tables, GPU tables).
 *
 * They go to the kernel by system call, past any mmap/munmap that the
 * program's symbol lookup reaches first: with lprof's allocator shim
 * preloaded (LD_PRELOAD), `mmap` is the shim's, which samples every large
 * anonymous mapping as the program's memory, so each table lprof mapped
 * showed up as program bytes (shim_mmaps, shim_startup_bytes). Header-only
 * and malloc-free: the shim's own tables use it too. Not for signal
 * handlers (nothing maps there). */
#ifndef LPROF_COMMON_OWN_MAP_H
#define LPROF_COMMON_OWN_MAP_H

#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* `bytes` of private, anonymous, zeroed, read-write memory; `flags` adds
 * to MAP_PRIVATE | MAP_ANONYMOUS (MAP_NORESERVE, or 0). MAP_FAILED and
 * errno on failure, as mmap. */
static inline void *lp_own_map(size_t bytes, int flags) {
    return (void *)syscall(SYS_mmap, (long)0, (long)bytes, (long)(PROT_READ | PROT_WRITE),
                           (long)(MAP_PRIVATE | MAP_ANONYMOUS | flags), (long)-1, (long)0);
}

/* Unmaps what lp_own_map returned; 0, or -1 and errno, as munmap. */
static inline int lp_own_unmap(void *p, size_t bytes) { return (int)syscall(SYS_munmap, p, (long)bytes); }

#endif
