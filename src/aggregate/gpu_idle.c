/* aggregate: GPU idle time per traced line (see gpu_idle.h). */
#include "aggregate/gpu_idle.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate/gpu_trace.h"
#include "common/table_space.h"

typedef struct {
    const void *code;
    int32_t line;
    uint64_t t, elapsed;
} span;

static span *log_;
static size_t log_bytes;
static uint32_t cap, n;
static uint64_t dropped;

int lp_gpu_idle_reset(void) {
    uint32_t want = lp_env_cap("LPROF_GPU_SPANS_MAX", LP_GPU_IDLE_DEFAULT_CAP, LP_GPU_IDLE_MAX_CAP);
    size_t bytes = (size_t)(want ? want : 1) * sizeof(span);
    cap = n = 0;
    dropped = 0;
    void *space = log_;
    int ok = lp_table_reserve(&space, &log_bytes, bytes);
    log_ = space;
    if (ok < 0) return -1;
    cap = want;
    return 0;
}

void lp_gpu_idle_note(const void *code, int32_t line, uint64_t t, uint64_t elapsed) {
    if (n >= cap) {
        dropped++;
        return;
    }
    log_[n++] = (span){code, line, t, elapsed};
}

uint64_t lp_gpu_idle_spans(void) { return n; }
uint64_t lp_gpu_idle_dropped(void) { return dropped; }

typedef struct {
    uint64_t start, end;
} ival;

static int ival_cmp(const void *a, const void *b) {
    const ival *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges iv[0..k) in place into disjoint intervals; their count. */
static uint32_t merge(ival *iv, uint32_t k) {
    if (k == 0) return 0;
    qsort(iv, k, sizeof *iv, ival_cmp);
    uint32_t m = 0;
    for (uint32_t i = 1; i < k; i++) {
        if (iv[i].start <= iv[m].end) {
            if (iv[i].end > iv[m].end) iv[m].end = iv[i].end;
        } else {
            iv[++m] = iv[i];
        }
    }
    return m + 1;
}

/* Busy time of the merged intervals before t; before[i] = busy time of
 * iv[0..i). */
static uint64_t busy_before(const ival *iv, const uint64_t *before, uint32_t k, uint64_t t) {
    uint32_t lo = 0, hi = k; /* first interval starting after t */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (iv[mid].start <= t) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return 0;
    const ival *last = &iv[lo - 1];
    return before[lo - 1] + ((t < last->end ? t : last->end) - last->start);
}

static uint64_t idle_in(const ival *iv, const uint64_t *before, uint32_t k, uint64_t s, uint64_t e) {
    if (e <= s) return 0;
    uint64_t busy = busy_before(iv, before, k, e) - busy_before(iv, before, k, s);
    return busy < e - s ? (e - s) - busy : 0;
}

static uint64_t *prefix(const ival *iv, uint32_t k) {
    uint64_t *before = malloc(sizeof *before * (k ? k : 1));
    if (!before) return NULL;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < k; i++) {
        before[i] = acc;
        acc += iv[i].end - iv[i].start;
    }
    return before;
}

uint64_t lp_gpu_idle_of(uint64_t start, uint64_t end, const uint64_t (*busy)[2], uint32_t k) {
    ival *iv = malloc(sizeof *iv * (k ? k : 1));
    if (!iv) return 0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i++)
        if (busy[i][1] > busy[i][0]) iv[m++] = (ival){busy[i][0], busy[i][1]};
    m = merge(iv, m);
    uint64_t *before = prefix(iv, m);
    uint64_t r = before ? idle_in(iv, before, m, start, end) : 0;
    free(before);
    free(iv);
    return r;
}

typedef struct {
    const void *code;
    int32_t line;
    uint64_t ticks, idle;
} result;

static int result_cmp(const void *a, const void *b) {
    const result *x = a, *y = b;
    if (x->code != y->code) return (uintptr_t)x->code < (uintptr_t)y->code ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

int lp_gpu_idle_compute(double ns_per_tick, uint64_t anchor_tick, uint64_t anchor_ns, lp_gpu_idle_emit emit,
                        void *ud) {
    uint32_t count = n, recs = lp_gpu_trace_count();
    ival *iv = malloc(sizeof *iv * (recs ? recs : 1));
    result *res = malloc(sizeof *res * (count ? count : 1));
    uint64_t *before = NULL;
    int rc = -1;
    if (!iv || !res || !(ns_per_tick > 0)) goto done;
    /* the GPU's intervals onto the tracer's ticks: the lines' intervals stay
     * exact, so a line idle throughout has exactly its time idle */
    uint32_t k = 0;
    for (uint32_t i = 0; i < recs; i++) {
        const lp_gpu_trace_rec *r = lp_gpu_trace_at(i);
        if (!r || r->end_ns <= r->start_ns) continue;
        double s = (double)anchor_tick + ((double)r->start_ns - (double)anchor_ns) / ns_per_tick;
        double e = (double)anchor_tick + ((double)r->end_ns - (double)anchor_ns) / ns_per_tick;
        if (e <= 0 || e <= s) continue;
        iv[k++] = (ival){s > 0 ? (uint64_t)s : 0, e >= 1.8e19 ? UINT64_MAX : (uint64_t)e};
    }
    k = merge(iv, k);
    if (!(before = prefix(iv, k))) goto done;
    for (uint32_t i = 0; i < count; i++) {
        const span *sp = &log_[i];
        uint64_t start = sp->t > sp->elapsed ? sp->t - sp->elapsed : 0;
        res[i] = (result){sp->code, sp->line, sp->elapsed, idle_in(iv, before, k, start, sp->t)};
    }
    qsort(res, count, sizeof *res, result_cmp);
    rc = 0;
    for (uint32_t i = 0; i < count && rc == 0;) {
        uint32_t j = i;
        uint64_t ticks = 0, idle = 0;
        for (; j < count && res[j].code == res[i].code && res[j].line == res[i].line; j++) {
            ticks += res[j].ticks;
            idle += res[j].idle;
        }
        rc = emit(res[i].code, res[i].line, j - i, ticks, idle, ud);
        i = j;
    }
done:
    free(before);
    free(res);
    free(iv);
    return rc;
}
