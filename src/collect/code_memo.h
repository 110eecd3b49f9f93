/* collect: what the outside reader already knows of code objects, so that
 * a read does not fetch each frame's code object again (collect/
 * outside_read.c): a code object's address and its first traceable
 * instruction (the two things the frame walker reads of it), kept across
 * reads until the object dies (the reader forgets each death before its
 * next read). Pure C, one owner, fixed size: a full table takes no more. */
#ifndef LPROF_COLLECT_CODE_MEMO_H
#define LPROF_COLLECT_CODE_MEMO_H

#include <stdint.h>

#include "common/base.h"

#define LP_CODE_MEMO_SLOTS 512 /* at most 3/4 used */

typedef struct lp_code_memo {
    uint32_t used;
    uintptr_t code[LP_CODE_MEMO_SLOTS]; /* 0 free, 1 forgotten (probes go on) */
    int32_t first_traceable[LP_CODE_MEMO_SLOTS];
} lp_code_memo;

LP_INTERNAL void lp_code_memo_clear(lp_code_memo *m);
/* 1 and *first_traceable when code is known, else 0. */
LP_INTERNAL int lp_code_memo_get(const lp_code_memo *m, const void *code, int32_t *first_traceable);
/* Remembers a validated code object (a full table, forgotten slots
 * counted, starts over). */
LP_INTERNAL void lp_code_memo_put(lp_code_memo *m, const void *code, int32_t first_traceable);
/* Forgets a code object (it dies). */
LP_INTERNAL void lp_code_memo_forget(lp_code_memo *m, const void *code);

#endif
