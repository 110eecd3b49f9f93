/* common: address space kept back for the end of a run (why:
 * python/lprof/common/headroom.py). One mapping with no access, taken by
 * system call (never the allocator shim's mmap, which would count it as
 * the program's), given back once. Called with the GIL held, never from a
 * signal handler. */
#ifndef LPROF_COMMON_HEADROOM_H
#define LPROF_COMMON_HEADROOM_H

#include <stddef.h>

#include "common/base.h"

/* Holds `bytes` of address space (nothing touched, no memory). 0, or -1
 * when the kernel refuses (lprof then runs without it); holding already: 0. */
LP_INTERNAL int lp_headroom_take(size_t bytes);
/* Gives it back; nothing when none is held. A fork inherits the mapping and
 * gives back its own copy the same way. */
LP_INTERNAL void lp_headroom_release(void);
/* The bytes held now (0: none). */
LP_INTERNAL size_t lp_headroom_held(void);

#endif
