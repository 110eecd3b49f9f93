/* aggregate: the leak rule, the only one (the listing, the leak report and
 * the JSON export all ask it). Input: one line's sums of the memory columns
 * of its stacks (survivors = sampled blocks still live at the end, with the
 * moments of their allocation times). Pure C. */
#ifndef LPROF_AGGREGATE_LEAK_H
#define LPROF_AGGREGATE_LEAK_H

#include <stdint.h>

#include "common/base.h"

/* A line leaks when the chance that its next allocation is never freed
 * (Laplace's rule over sampled blocks) exceeds LP_LEAK_SCORE, its survivors
 * were allocated over at least max(LP_LEAK_MIN_SPAN_S, LP_LEAK_MIN_SPAN_SHARE
 * of the run) (one burst, such as building a list that is then kept, is not
 * growth over time; a leak confined to one phase of a long run still is),
 * with at least LP_LEAK_MIN_SURVIVORS survivors holding LP_LEAK_MIN_PEAK_SHARE
 * of the process peak. */
#define LP_LEAK_SCORE          0.95
#define LP_LEAK_MIN_SPAN_S     0.05
#define LP_LEAK_MIN_SPAN_SHARE 0.02
#define LP_LEAK_MIN_SURVIVORS  8
#define LP_LEAK_MIN_PEAK_SHARE 0.01

typedef struct {
    double alloc_samples, free_samples; /* sampled allocations, and those freed */
    double survivors;                   /* sampled blocks live at the end */
    double survivor_bytes;              /* bytes they stand for */
    double t_ms, t2_ms2;                /* sums of their allocation times (ms since start) and squares */
    double net_bytes;                   /* allocated - freed */
} lp_leak_input;

typedef struct {
    double slope;  /* bytes/s the survivors grew by (steady rate assumed) */
    double span_s; /* time they were allocated over: sqrt(12) * stddev */
    double score;  /* chance the next allocation is never freed */
    int is_leak;
} lp_leak_verdict;

LP_INTERNAL void lp_leak_judge(const lp_leak_input *in, double peak_bytes, double duration_s,
                               lp_leak_verdict *out);

#endif
