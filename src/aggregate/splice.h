/* aggregate: one mixed stack from a sample's Python frames and its native
 * instruction addresses (lprof --native), pure C. Walking the native stack
 * leaf -> root, each call of the interpreter's eval loop is replaced by the
 * Python frames it runs: from the cursor up to and including the next entry
 * frame (LP_RAWFRAME_ENTRY). Native frames elsewhere are kept as frames with
 * offset LP_OFFSET_NATIVE; inside the interpreter's own text they are hidden
 * unless show_all, and rootward of the outermost Python frame (process and
 * thread start-up) too. When the two stacks disagree (a truncated stack, an
 * eval loop split into parts), the result is the native frames leafward of
 * the first eval call followed by every Python frame, and *mismatch is set.
 * Called by the drain, off the hot path. */
#ifndef LPROF_AGGREGATE_SPLICE_H
#define LPROF_AGGREGATE_SPLICE_H

#include <stdint.h>

#include "common/base.h"
#include "aggregate/stacktab.h"
#include "common/ranges.h"

typedef struct {
    lp_ranges eval;             /* _PyEval_EvalFrameDefault, each of its parts */
    uintptr_t hide_lo, hide_hi; /* the interpreter's text (libpython or the executable) */
    int show_all;               /* lprof --native=all: keep every native frame */
} lp_splice_rules;

/* py[0..npy) and ips[0..nips) leaf first (ips[0] the interrupted PC, the
 * rest return addresses: they are stored as address - 1, inside the call).
 * ips_truncated: the native walk stopped at its limit before the stack's
 * root, so Python frames left over belong rootward of it and are appended
 * in order (deep recursion on 3.10 takes ~3 native frames per Python
 * frame). Writes at most max frames to out, leaf first; returns how many. */
LP_INTERNAL int lp_splice(const lp_rawframe *py, int npy, const uintptr_t *ips, int nips, int ips_truncated,
                          const lp_splice_rules *rules, lp_rawframe *out, int max, int *mismatch);

#endif
