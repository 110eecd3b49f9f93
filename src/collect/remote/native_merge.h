/* collect/remote: one mixed stack for `lprof dump --native` from a thread's
 * native frames (remote_native.c) and its Python frames (remote.c), pure C
 * (no Python, no ptrace): unit-tested with faked inputs (tests/c).
 *
 * The rule, both lists innermost first: walking the native frames, each
 * call of the interpreter's eval loop (3.10-3.13 by its name,
 * lp_nmerge_is_eval; 3.14+ by the entry frame on its stack,
 * lp_nmerge_eval_by_stack) is replaced by the Python frames that call
 * ran: from the Python cursor up to and
 * including the next frame marked `entry` (the outermost frame of one eval
 * call: 3.10 every frame, 3.11 `is_entry`, 3.12+ the frame just inside a
 * C-stack/interpreter-owned entry frame). Every other native frame is kept
 * in place. When the two do not agree (more eval calls than Python groups,
 * Python frames left over while the native walk reached the root), the
 * result is the native frames leafward of the first eval call, then every
 * Python frame, and *mismatch is set: what is known, never a wrong
 * interleaving. Python frames left over when the native walk stopped at
 * its depth limit (native_truncated) are appended: they are rootward. */
#ifndef LPROF_COLLECT_REMOTE_NATIVE_MERGE_H
#define LPROF_COLLECT_REMOTE_NATIVE_MERGE_H

#include <stdint.h>

#include "common/base.h"

enum { LP_NMERGE_NATIVE = 0, LP_NMERGE_PYTHON = 1 };

typedef struct {
    int kind;  /* LP_NMERGE_NATIVE or LP_NMERGE_PYTHON */
    int index; /* into the native or the Python list */
} lp_nmerge_item;

/* 1 when a symbol name is the interpreter's eval loop:
 * _PyEval_EvalFrameDefault, or a compiler clone of it (a `.` suffix): the
 * rule for 3.10-3.13. */
LP_INTERNAL int lp_nmerge_is_eval(const char *name);

/* 3.14+'s rule for the eval calls among the native frames: frame i is one
 * when an entry frame of its thread (shims[0..nshims): the addresses the
 * Python walk gives, each a local variable of the eval call that pushed
 * it) lies on its own part of the stack, [sp[i], sp[i + 1]). Names cannot
 * say it there: GCC moves most of the eval loop into a cold part with no
 * symbol of its own (Debian's stripped python3.14 and 3.15). The
 * outermost frame, whose part has no known end, is never one; an sp of 0
 * (not read) or out of order bounds nothing. Writes is_eval[0..nn). */
LP_INTERNAL void lp_nmerge_eval_by_stack(const uint64_t *sp, int nn, const uint64_t *shims, int nshims,
                                         uint8_t *is_eval);

/* is_eval[0..nn): per native frame; py_entry[0..npy): per Python frame.
 * Writes at most max items to out, innermost first; returns how many. */
LP_INTERNAL int lp_nmerge(const uint8_t *is_eval, int nn, int native_truncated, const uint8_t *py_entry,
                          int npy, lp_nmerge_item *out, int max, int *mismatch);

#endif
