/* common: the end-of-run address space reserve (common/headroom.h). */
#include "common/headroom.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/own_map.h"

static void *held;
static size_t held_bytes;

int lp_headroom_take(size_t bytes) {
    if (held) return 0;
    void *m = (void *)syscall(SYS_mmap, (long)0, (long)bytes, (long)PROT_NONE,
                              (long)(MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE), (long)-1, (long)0);
    if (m == MAP_FAILED) return -1;
    held = m;
    held_bytes = bytes;
    return 0;
}

void lp_headroom_release(void) {
    if (!held) return;
    /* untouched and with no access: unmapped at once, so the GIL stays held */
    lp_own_unmap(held, held_bytes);
    held = NULL;
    held_bytes = 0;
}

size_t lp_headroom_held(void) { return held_bytes; }
