/* collect/remote: native and Python frames merged (see native_merge.h). */
#include "collect/remote/native_merge.h"

#include <string.h>

#define EVAL_NAME "_PyEval_EvalFrameDefault"

int lp_nmerge_is_eval(const char *name) {
    size_t n = sizeof EVAL_NAME - 1;
    return name != NULL && strncmp(name, EVAL_NAME, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

void lp_nmerge_eval_by_stack(const uint64_t *sp, int nn, const uint64_t *shims, int nshims,
                             uint8_t *is_eval) {
    for (int i = 0; i < nn; i++) {
        is_eval[i] = 0;
        if (i + 1 == nn || sp[i] == 0 || sp[i + 1] <= sp[i]) continue;
        for (int k = 0; k < nshims && !is_eval[i]; k++)
            is_eval[i] = shims[k] >= sp[i] && shims[k] < sp[i + 1];
    }
}

static int put(lp_nmerge_item *out, int n, int max, int kind, int index) {
    if (n < max) out[n++] = (lp_nmerge_item){kind, index};
    return n;
}

/* native frames leafward of the first eval call, then every Python frame */
static int fallback(const uint8_t *is_eval, int nn, int npy, lp_nmerge_item *out, int max) {
    int n = 0;
    for (int i = 0; i < nn && !is_eval[i]; i++) n = put(out, n, max, LP_NMERGE_NATIVE, i);
    for (int p = 0; p < npy; p++) n = put(out, n, max, LP_NMERGE_PYTHON, p);
    return n;
}

int lp_nmerge(const uint8_t *is_eval, int nn, int native_truncated, const uint8_t *py_entry, int npy,
              lp_nmerge_item *out, int max, int *mismatch) {
    int n = 0, p = 0;
    *mismatch = 0;
    for (int i = 0; i < nn; i++) {
        if (!is_eval[i]) {
            n = put(out, n, max, LP_NMERGE_NATIVE, i);
            continue;
        }
        if (p == npy) { /* an eval call with no Python frames left for it */
            *mismatch = 1;
            break;
        }
        int entry;
        do {
            entry = py_entry[p];
            n = put(out, n, max, LP_NMERGE_PYTHON, p++);
        } while (!entry && p < npy);
    }
    if (p < npy && native_truncated && !*mismatch)
        while (p < npy) n = put(out, n, max, LP_NMERGE_PYTHON, p++);
    if (p < npy) *mismatch = 1;
    return *mismatch ? fallback(is_eval, nn, npy, out, max) : n;
}
