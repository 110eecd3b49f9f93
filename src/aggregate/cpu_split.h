/* aggregate: the CPU split of outside reads. A read from outside
 * (collect/outside_read.h) has no PC, so it cannot tell Python from native
 * from system time; a few signalled samples a second beside the reads (the
 * split samples, LP_SF_SPLIT) can. They charge only the SPLIT_* columns;
 * a snapshot then divides each row's CPU time (python + native + system,
 * from the reads) in the proportions the split samples of its line found:
 * the reads say how much, the split samples what kind. Pooled by line (the
 * row's innermost frame), not by stack: a 500-deep recursion's rows are
 * too many for a few hundred samples a second each to reach most of them.
 * A line with no split sample keeps the reads' own rule. */
#ifndef LPROF_AGGREGATE_CPU_SPLIT_H
#define LPROF_AGGREGATE_CPU_SPLIT_H

#include <stdint.h>

#include "aggregate/metrics.h"

/* What a line's split samples found: ns of Python, native, system. */
typedef struct {
    int64_t ns[3];
} lp_cpu_split;

/* Adds a row's split columns to its line's. */
LP_INTERNAL void lp_cpu_split_gather(lp_cpu_split *line, const int64_t row[LP_M_COUNT]);
/* Divides the row's CPU time as its line's split found (nothing found:
 * unchanged), then clears its split columns: a snapshot's rows hold them
 * spent, so merged profiles never divide twice. The row's CPU total is
 * kept exactly. */
LP_INTERNAL void lp_cpu_split_apply(int64_t row[LP_M_COUNT], const lp_cpu_split *line);

#endif
