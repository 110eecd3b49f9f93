/* base: lprof's own allocations, hidden from the memory hooks (own_alloc.h). */
#include "common/own_alloc.h"

#include <stdlib.h>

static const lp_alloc_guard *volatile current_guard;

void lp_own_alloc_set_guard(const lp_alloc_guard *guard) { current_guard = guard; }

void *lp_own_malloc(size_t n) {
    const lp_alloc_guard *g = current_guard;
    int prev = g ? g->enter() : 0;
    void *p = malloc(n);
    if (g) g->leave(prev);
    return p;
}

void *lp_own_calloc(size_t count, size_t size) {
    const lp_alloc_guard *g = current_guard;
    int prev = g ? g->enter() : 0;
    void *p = calloc(count, size);
    if (g) g->leave(prev);
    return p;
}

void *lp_own_realloc(void *p, size_t n) {
    const lp_alloc_guard *g = current_guard;
    int prev = g ? g->enter() : 0;
    void *q = realloc(p, n);
    if (g) g->leave(prev);
    return q;
}
