/* collect: the sampler's drain (sampler.c), for the code registry's
 * destruction hook, which must move pending samples into the stack table
 * before a code object they name can die. GIL held. */
#ifndef LPROF_COLLECT_CPYTHON_SAMPLER_H
#define LPROF_COLLECT_CPYTHON_SAMPLER_H

#include <stdint.h>

#include "common/base.h"
#include "aggregate/splice.h"

/* Drains every thread's ring into the stack table; returns samples moved. */
LP_INTERNAL uint64_t lp_pysampler_drain_rings(void);
/* 1 when some ring holds samples not yet drained. */
LP_INTERNAL int lp_pysampler_has_pending_rings(void);

/* While sampling runs with --native: how stacks are spliced, and lprof's
 * own code (the extension), whose frames lead every hook's native stack.
 * NULL otherwise. The memory hooks read it per sampled allocation. */
LP_INTERNAL const lp_splice_rules *lp_pysampler_native_rules(uintptr_t *self_lo, uintptr_t *self_hi);

#endif
