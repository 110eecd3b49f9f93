/* collect/remote: one mixed stack for `lprof dump --native` from a thread's
 * native frames (remote_native.c) and its Python frames (remote.c), pure C
 * (no Python, no ptrace): unit-tested with faked inputs (tests/c).
 *
 * The rule, both lists innermost first: walking the native frames, each
 * call of the interpreter's eval loop (lp_nmerge_is_eval) is replaced by
 * the Python frames that call ran: from the Python cursor up to and
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
 * _PyEval_EvalFrameDefault, or a compiler clone of it (a `.` suffix). */
LP_INTERNAL int lp_nmerge_is_eval(const char *name);

/* is_eval[0..nn): per native frame; py_entry[0..npy): per Python frame.
 * Writes at most max items to out, innermost first; returns how many. */
LP_INTERNAL int lp_nmerge(const uint8_t *is_eval, int nn, int native_truncated, const uint8_t *py_entry,
                          int npy, lp_nmerge_item *out, int max, int *mismatch);

#endif
