/* memsample: exponential countdown and weights (see memsample.h). */
#include "collect/shim/shared/memsample.h"

#include <math.h>

#include "common/clock.h"
#include "common/hash.h"

static uint64_t next_u64(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

void lp_memsample_init(lp_memsample *s, uint64_t mean_bytes, uint64_t seed) {
    /* splitmix the seed so that nearby seeds (thread addresses) diverge */
    uint64_t z = lp_hash_mix64(seed + 0x9E3779B97F4A7C15ull);
    s->rng = z ? z : 0x1234567ull;
    s->mean = mean_bytes ? mean_bytes : 1;
    lp_memsample_redraw(s);
}

void lp_memsample_redraw(lp_memsample *s) {
    /* U in (0, 1]: never log(0) */
    double u = (double)((next_u64(&s->rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double gap = ceil(-log(u) * (double)s->mean);
    if (gap < 1.0) gap = 1.0;
    if (gap > 4e18) gap = 4e18;
    s->until = (int64_t)gap;
}

double lp_memsample_weight(uint64_t size, uint64_t mean) {
    if (size == 0) return 0.0;
    double x = (double)size / (double)(mean ? mean : 1);
    /* -expm1(-x) = 1 - exp(-x) without cancellation for small x */
    double p = -expm1(-x);
    return (double)size / p;
}

int lp_memsample_take(lp_memsample *s, uint64_t mean, size_t size, uint64_t seed) {
    if (LP_UNLIKELY(s->rng == 0)) {
        /* the thread's first allocation: seed, then test this one again */
        lp_memsample_init(s, mean, seed ^ lp_clock_monotonic_ns());
        if (!lp_memsample_step(s, size)) return 0;
    }
    s->mean = mean;
    lp_memsample_redraw(s);
    return 1;
}
