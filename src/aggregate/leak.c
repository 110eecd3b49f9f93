/* aggregate: the leak rule (see leak.h). */
#include "aggregate/leak.h"

#include <math.h>

void lp_leak_judge(const lp_leak_input *in, double peak_bytes, double duration_s, lp_leak_verdict *out) {
    out->slope = out->span_s = 0.0;
    out->score = in->alloc_samples >= in->free_samples
                     ? 1.0 - (in->free_samples + 1.0) / (in->alloc_samples - in->free_samples + 2.0)
                     : 0.0;
    if (in->survivors >= 2) {
        /* uniform allocation times over a span S have stddev S / sqrt(12) */
        double mean_s = in->t_ms / in->survivors * 1e-3;
        double var = in->t2_ms2 / in->survivors * 1e-6 - mean_s * mean_s;
        if (var > 0) {
            out->span_s = sqrt(12.0 * var);
            out->slope = in->survivor_bytes / out->span_s;
        }
    }
    double min_span = LP_LEAK_MIN_SPAN_SHARE * duration_s;
    if (min_span < LP_LEAK_MIN_SPAN_S) min_span = LP_LEAK_MIN_SPAN_S;
    out->is_leak = out->score > LP_LEAK_SCORE && out->slope > 0 && out->span_s >= min_span &&
                   in->survivors >= LP_LEAK_MIN_SURVIVORS &&
                   in->net_bytes >= LP_LEAK_MIN_PEAK_SHARE * peak_bytes;
}
