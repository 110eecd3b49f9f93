/* aggregate: Python frames spliced into the native stack (see splice.h). */
#include "aggregate/splice.h"

static int in(uintptr_t a, uintptr_t lo, uintptr_t hi) { return a >= lo && a < hi; }

static int push(lp_rawframe *out, int n, int max, lp_rawframe f) {
    if (n < max) out[n++] = f;
    return n;
}

static lp_rawframe native_frame(uintptr_t addr) {
    lp_rawframe f = {(void *)addr, LP_OFFSET_NATIVE, 0};
    return f;
}

/* The native frames leafward of the first eval call, then every Python
 * frame: what a disagreement still tells truthfully. */
static int fallback(const lp_rawframe *py, int npy, const uintptr_t *ips, int nips, const lp_splice_rules *r,
                    lp_rawframe *out, int max) {
    int n = 0;
    for (int i = 0; i < nips; i++) {
        uintptr_t a = i == 0 ? ips[0] : ips[i] - 1;
        if (lp_ranges_has(&r->eval, a)) break;
        if (!r->show_all && in(a, r->hide_lo, r->hide_hi)) continue;
        n = push(out, n, max, native_frame(a));
    }
    for (int p = 0; p < npy; p++) n = push(out, n, max, py[p]);
    return n;
}

int lp_splice(const lp_rawframe *py, int npy, const uintptr_t *ips, int nips, int ips_truncated,
              const lp_splice_rules *r, lp_rawframe *out, int max, int *mismatch) {
    int n = 0, p = 0;
    *mismatch = 0;
    for (int i = 0; i < nips; i++) {
        uintptr_t a = i == 0 ? ips[0] : ips[i] - 1;
        if (lp_ranges_has(&r->eval, a)) {
            if (p == npy) { /* more eval calls than Python entry frames */
                *mismatch = 1;
                break;
            }
            do n = push(out, n, max, py[p]);
            while (!(py[p++].flags & LP_RAWFRAME_ENTRY) && p < npy);
            continue;
        }
        if (npy > 0 && p == npy && !r->show_all) break; /* start-up frames below Python */
        if (!r->show_all && in(a, r->hide_lo, r->hide_hi)) continue;
        n = push(out, n, max, native_frame(a));
    }
    if (p < npy && ips_truncated && !*mismatch) {
        while (p < npy) n = push(out, n, max, py[p++]);
    }
    if (p < npy) *mismatch = 1;
    return *mismatch ? fallback(py, npy, ips, nips, r, out, max) : n;
}
