/* base: allocations lprof makes for itself on the program's threads.
 *
 * The -l tracer allocates (its per-code line arrays, shadow stacks) while the
 * program's frame is on top; the memory hooks would charge those bytes to
 * the program's line. These wrappers set the memory hooks' reentrancy guard
 * around the call, so the bytes are not counted. The memory component
 * installs the guard (lp_own_alloc_set_guard) while it runs; otherwise they
 * are plain malloc/calloc/realloc. Not for signal handlers. */
#ifndef LPROF_OWN_ALLOC_H
#define LPROF_OWN_ALLOC_H

#include <stddef.h>

#include "common/base.h"

typedef struct {
    int (*enter)(void); /* returns the previous guard state */
    void (*leave)(int prev);
} lp_alloc_guard;

/* NULL removes the guard. Call with the GIL held (or before threads run). */
LP_INTERNAL void lp_own_alloc_set_guard(const lp_alloc_guard *guard);
LP_INTERNAL void *lp_own_malloc(size_t n);
LP_INTERNAL void *lp_own_calloc(size_t count, size_t size);
LP_INTERNAL void *lp_own_realloc(void *p, size_t n);

#endif
