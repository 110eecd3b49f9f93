/* collect: known code objects (see code_memo.h). */
#include <string.h>

#include "collect/code_memo.h"

#define FORGOTTEN ((uintptr_t)1)

void lp_code_memo_clear(lp_code_memo *m) {
    memset(m->code, 0, sizeof m->code);
    m->used = 0;
}

static uint32_t first_slot(const void *code) {
    return (uint32_t)(((uintptr_t)code >> 4) * 2654435761u) % LP_CODE_MEMO_SLOTS;
}

/* The slot holding code, or -1. */
static int find(const lp_code_memo *m, const void *code) {
    uint32_t i = first_slot(code);
    for (uint32_t probe = 0; probe < LP_CODE_MEMO_SLOTS; probe++, i = (i + 1) % LP_CODE_MEMO_SLOTS) {
        if (m->code[i] == (uintptr_t)code) return (int)i;
        if (m->code[i] == 0) return -1;
    }
    return -1;
}

int lp_code_memo_get(const lp_code_memo *m, const void *code, int32_t *first_traceable) {
    if ((uintptr_t)code <= FORGOTTEN) return 0;
    int i = find(m, code);
    if (i < 0) return 0;
    *first_traceable = m->first_traceable[i];
    return 1;
}

void lp_code_memo_put(lp_code_memo *m, const void *code, int32_t first_traceable) {
    if ((uintptr_t)code <= FORGOTTEN || find(m, code) >= 0) return;
    /* forgotten slots count as used until a clear: probes stay short */
    if (m->used >= LP_CODE_MEMO_SLOTS / 4 * 3) lp_code_memo_clear(m); /* starts over */
    uint32_t i = first_slot(code);
    while (m->code[i] != 0) i = (i + 1) % LP_CODE_MEMO_SLOTS;
    m->code[i] = (uintptr_t)code;
    m->first_traceable[i] = first_traceable;
    m->used++;
}

void lp_code_memo_forget(lp_code_memo *m, const void *code) {
    if ((uintptr_t)code <= FORGOTTEN) return;
    int i = find(m, code);
    if (i >= 0) m->code[i] = FORGOTTEN;
}
