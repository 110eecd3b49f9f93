/* collect: the sample-charging rule (see charge.h). */
#include "collect/charge.h"

lp_metric lp_charge_cpu_metric(const lp_sample *s, lp_charge_at_call_fn leaf_at_call, void *arg) {
    if (s->flags & LP_SF_SYSCALL) return LP_M_CPU_SYSTEM;
    if ((s->flags & (LP_SF_GIL | LP_SF_IN_INTERP)) != (LP_SF_GIL | LP_SF_IN_INTERP)) return LP_M_CPU_NATIVE;
    if (!(s->flags & LP_SF_IN_EVAL) && leaf_at_call && leaf_at_call(s, arg)) return LP_M_CPU_NATIVE;
    return LP_M_CPU_PYTHON;
}

static void put(lp_charge *c, lp_metric m, int64_t v) {
    c->add[c->n].metric = m;
    c->add[c->n].value = v;
    c->n++;
}

void lp_charge_sample(const lp_sample *s, uint64_t period_ns, lp_sampler_mode mode,
                      lp_charge_at_call_fn leaf_at_call, void *arg, lp_charge *out) {
    int64_t w = (int64_t)s->weight * (int64_t)period_ns;
    out->n = 0;
    out->weight_ns = w;
    if (s->flags & LP_SF_SPLIT) {
        /* beside outside reads: what kind of time, never how much (the
         * reads charge that); a snapshot divides by it (aggregate/cpu_split.h) */
        lp_metric m = lp_charge_cpu_metric(s, leaf_at_call, arg);
        out->cpu = LP_M_COUNT;
        out->weight_ns = 0;
        put(out,
            m == LP_M_CPU_SYSTEM   ? LP_M_SPLIT_SYSTEM
            : m == LP_M_CPU_NATIVE ? LP_M_SPLIT_NATIVE
                                   : LP_M_SPLIT_PYTHON,
            (int64_t)s->cpu_ns);
        return;
    }
    if (s->flags & LP_SF_OUTSIDE) {
        /* read from outside as it ran with the GIL: no PC, so Python time
         * unless its leaf stands on a call (inside the C function called) */
        out->cpu = leaf_at_call && leaf_at_call(s, arg) ? LP_M_CPU_NATIVE : LP_M_CPU_PYTHON;
        out->weight_ns = (int64_t)s->cpu_ns;
        put(out, out->cpu, (int64_t)s->cpu_ns);
        if (mode == LP_MODE_WALL) put(out, LP_M_WALL, (int64_t)s->cpu_ns);
        put(out, LP_M_GIL, (int64_t)s->cpu_ns);
    } else if (s->flags & LP_SF_DETACHED && mode == LP_MODE_CPU) {
        /* the CPU sampler thread's read of a thread not running: the CPU
         * time it owed, exact, as native time (no PC to tell more) */
        out->cpu = LP_M_COUNT;
        out->weight_ns = (int64_t)s->cpu_ns;
        put(out, LP_M_CPU_NATIVE, (int64_t)s->cpu_ns);
    } else if (s->flags & LP_SF_DETACHED) {
        out->cpu = LP_M_COUNT;
        put(out, LP_M_WALL, w);
        if (s->cpu_ns) put(out, LP_M_CPU_NATIVE, (int64_t)s->cpu_ns < w ? (int64_t)s->cpu_ns : w);
    } else {
        out->cpu = lp_charge_cpu_metric(s, leaf_at_call, arg);
        put(out, out->cpu, w);
        if (mode == LP_MODE_WALL) put(out, LP_M_WALL, w);
        /* the GIL share per line: what of this time other threads could not run Python */
        if (s->flags & LP_SF_GIL) put(out, LP_M_GIL, w);
    }
    put(out, LP_M_SAMPLES, s->weight);
}

void lp_charge_limit(lp_charge *c, int64_t limit_ns) {
    if (limit_ns < 0) limit_ns = 0;
    if (c->weight_ns <= 0 || limit_ns >= c->weight_ns) return;
    double keep = (double)limit_ns / (double)c->weight_ns;
    for (int i = 0; i < c->n; i++)
        if (c->add[i].metric != LP_M_SAMPLES) c->add[i].value = (int64_t)((double)c->add[i].value * keep);
    c->weight_ns = limit_ns;
}
