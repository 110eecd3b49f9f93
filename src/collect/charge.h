/* collect: the rule that charges a timer sample to its metric columns, pure
 * C (no interpreter, no tables): which CPU column a sample's time goes to
 * (Python, native or system), and what a wall-mode sample of a detached
 * thread adds. The sampler's drain (collect/cpython/sampler.c) applies the
 * result to the stack table; tests/c/test_charge.c checks the rule.
 *
 * A sample that holds the GIL with its PC in the interpreter's text is
 * Python time; in a system call it is system time; anything else is native
 * time. One exception: a Python sample taken outside the eval loop itself
 * while the leaf frame stands on a call instruction is inside the called C
 * function, so native time of that line (Scalene's rule). Whether the leaf
 * stands on a call is asked only then, through leaf_at_call (it reads the
 * code object: the caller's business). A sample read from outside as the
 * thread ran (LP_SF_OUTSIDE) has no PC: Python time, or native where its
 * leaf stands on a call. A split sample beside such reads (LP_SF_SPLIT)
 * charges no CPU time, only its split column (SPLIT_PYTHON, _NATIVE or
 * _SYSTEM, by the rule above) its split period, and no sample count. */
#ifndef LPROF_COLLECT_CHARGE_H
#define LPROF_COLLECT_CHARGE_H

#include <stdint.h>

#include "common/base.h"
#include "aggregate/metrics.h"
#include "collect/sampler.h"

#define LP_CHARGE_MAX 4

typedef struct {
    int n; /* entries used in add[] */
    struct {
        lp_metric metric;
        int64_t value;
    } add[LP_CHARGE_MAX]; /* values to add to the sample's stack, in order */
    lp_metric cpu;        /* the CPU column charged; LP_M_COUNT: none (detached) */
    int64_t weight_ns;    /* the sample's weight times the period */
} lp_charge;

/* 1 when the sample's leaf frame stands on a call instruction. */
typedef int (*lp_charge_at_call_fn)(const lp_sample *s, void *arg);

/* Which CPU column a sample taken on its own thread (not detached, not a
 * tail) goes to. leaf_at_call may be NULL (never at a call). */
LP_INTERNAL lp_metric lp_charge_cpu_metric(const lp_sample *s, lp_charge_at_call_fn leaf_at_call, void *arg);

/* Everything an ordinary sample (not LP_SF_TAIL) adds to its stack, given
 * the sampling period and mode: its CPU column (or, detached, wall time and
 * the native CPU time the thread spent, at most its weight; in CPU mode,
 * read by the CPU sampler thread: the CPU time it owed, as native time),
 * wall time in wall mode, the same time again as GIL time when the thread
 * held the GIL (never for a detached read: no GIL state was read), and its
 * sample count. */
LP_INTERNAL void lp_charge_sample(const lp_sample *s, uint64_t period_ns, lp_sampler_mode mode,
                                  lp_charge_at_call_fn leaf_at_call, void *arg, lp_charge *out);

/* Lowers a charge's time values (all but the sample count) in proportion,
 * so that its weight is limit_ns: the CPU time lp_sampler_take_cpu let it
 * charge. A limit below 0 counts as 0; one at or above the weight changes
 * nothing. */
LP_INTERNAL void lp_charge_limit(lp_charge *c, int64_t limit_ns);

#endif
