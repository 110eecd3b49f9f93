/* collect: what the sampler's binding (sampler.c) shares with the other
 * collectors' bindings. Its drain is not here: the binding registers it
 * with aggregate (lp_agg_set_source), which calls it for snapshots and from
 * the code-destruction hook. */
#ifndef LPROF_COLLECT_CPYTHON_SAMPLER_H
#define LPROF_COLLECT_CPYTHON_SAMPLER_H

#include <stdint.h>

#include "common/base.h"
#include "aggregate/splice.h"

/* While sampling runs with --native: how stacks are spliced, and lprof's
 * own code (the extension), whose frames lead every hook's native stack.
 * NULL otherwise. The memory hooks read it per sampled allocation. */
LP_INTERNAL const lp_splice_rules *lp_pysampler_native_rules(uintptr_t *self_lo, uintptr_t *self_hi);

#endif
