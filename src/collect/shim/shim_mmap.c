/* shim: large anonymous mappings made directly by the program or its
 * libraries (not by jemalloc, whose mmap/munmap are renamed to the raw
 * system calls below, nor by pymalloc under an lprof hook: guard set).
 * Tracked: private, anonymous, writable, not thread stacks, over 1 MiB.
 * pymalloc's arenas are exactly 1 MiB (3.10+; 256 KiB before) and may be
 * mapped under lprof's unguarded fast path for small objects: they stay
 * below the bar, since the objects in them are counted one by one. 
 * munmap always checks the table, guard or not, so that no stale mapping
 * stays live. Partial unmaps of a tracked mapping forget it whole. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_int.h"

#define TRACK_MIN_BYTES (1u << 20)

SHIM_HIDDEN void *lp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
SHIM_HIDDEN int lp_sys_munmap(void *addr, size_t len);

void *lp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int lp_sys_munmap(void *addr, size_t len) { return (int)syscall(SYS_munmap, addr, len); }

SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = lp_sys_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && len > TRACK_MIN_BYTES && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) &&
        !(flags & MAP_STACK) && (prot & PROT_WRITE))
        lp_shim_after_alloc(p, len, LP_SHIM_KIND_MMAP);
    return p;
}

SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

SHIM_EXPORT int munmap(void *addr, size_t len) {
    if (len >= TRACK_MIN_BYTES) lp_shim_before_free(addr);
    return lp_sys_munmap(addr, len);
}
