/* collect/remote: another process's Python stacks, read from outside with
 * process_vm_readv. Nothing runs in the target: no ptrace stop, no injected
 * code, so a process blocked in sleep() or a C call is read as it is.
 *
 * Contract:
 * - Pure C (no Python.h). The target's interpreter layout arrives as numbers,
 *   an lp_remote_layout: from the target's own _Py_DebugOffsets (3.13+, read
 *   by lp_remote_layout_from_debug) or from an lprof extension compiled for
 *   the target's version (offsetof() on its headers, 3.10-3.12:
 *   collect/cpython/remote_py.c). docs/design-remote.md has the table.
 * - Every address read from the target is checked (non-null, aligned, in the
 *   user half) before it is followed; every loop is bounded (interpreters,
 *   threads, frame depth); strings and line tables are capped. A read that
 *   faults (the target changed under us, or a wrong layout) is an error
 *   code, never a crash.
 * - Not signal-safe; allocates (line tables). Called from Python glue only. */
#ifndef LPROF_COLLECT_REMOTE_H
#define LPROF_COLLECT_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/base.h"

#define LP_REMOTE_MAX_INTERPS   64
#define LP_REMOTE_MAX_THREADS   4096
#define LP_REMOTE_MAX_DEPTH     1024
#define LP_REMOTE_MAX_STR       1024       /* bytes of a file or function name, UTF-8 */
#define LP_REMOTE_MAX_LINETABLE (1u << 20) /* bytes of one code object's line table */
#define LP_REMOTE_MAX_LOCALS    256        /* local variables shown per frame */
#define LP_REMOTE_MAX_VALUE     128        /* bytes of one local's shown value */

/* how the thread state reaches its frames */
enum {
    LP_REMOTE_FRAMES_310 = 1, /* tstate->frame: PyFrameObject chain (f_back, f_lasti) */
    LP_REMOTE_FRAMES_311 = 2, /* tstate->cframe->current_frame: _PyInterpreterFrame (prev_instr) */
    LP_REMOTE_FRAMES_313 = 3, /* tstate->current_frame: _PyInterpreterFrame (instr_ptr) */
    LP_REMOTE_FRAMES_314 = 4, /* as 3.13, f_executable and localsplus _PyStackRef-tagged */
};

#define LP_REMOTE_ABSENT UINT64_MAX /* a field this version does not have */

/* X(name): one number each; the Python glue converts by these names */
/* the fields in rows, as the layout dicts list them */
/* clang-format off */
#define LP_REMOTE_LAYOUT_FIELDS(X)                                                          \
    X(version_hex) X(frame_model)                                                           \
    X(rt_interpreters_head) X(is_next) X(is_threads_head)                                   \
    X(ts_next) X(ts_thread_id) X(ts_native_thread_id) X(ts_frame) X(cframe_current_frame)   \
    X(fr_previous) X(fr_code) X(fr_instr) X(fr_owner)                                       \
    X(co_filename) X(co_name) X(co_qualname) X(co_linetable) X(co_firstlineno)              \
    X(co_code_adaptive) X(ob_type) X(tp_name) X(bytes_size) X(bytes_sval)                   \
    X(u_state) X(u_length) X(u_ascii_size) X(u_compact_size)                               \
    X(fr_localsplus) X(co_localsplusnames) X(tuple_size) X(tuple_item) X(float_fval)        \
    X(long_size) X(long_digits) X(fr_is_entry)
/* clang-format on */

typedef struct lp_remote_layout {
#define LP_REMOTE_FIELD_(n) uint64_t n;
    LP_REMOTE_LAYOUT_FIELDS(LP_REMOTE_FIELD_)
#undef LP_REMOTE_FIELD_
} lp_remote_layout;

enum {
    LP_REMOTE_OK = 0,
    LP_REMOTE_NOPROC = 1,        /* no such process (ESRCH) */
    LP_REMOTE_NOPERM = 2,        /* process_vm_readv refused (EPERM): ptrace access mode */
    LP_REMOTE_BADREAD = 3,       /* an address did not read (EFAULT/EIO) or failed a check */
    LP_REMOTE_NODEBUG = 4,       /* no "xdebugpy" cookie at the runtime's address */
    LP_REMOTE_VERSION = 5,       /* debug offsets of a version this reader does not know */
    LP_REMOTE_LAYOUT = 6,        /* the layout given is incomplete or of an unknown model */
    LP_REMOTE_STOPPED = 7,       /* a sink callback asked to stop (its error) */
    LP_REMOTE_FREE_THREADED = 8, /* debug offsets of a free-threaded build (not read) */
};

/* Called per thread, then per frame of that thread, innermost first, and
 * (when `local` is set: --locals) after each frame its bound variables:
 * name and a short text of the value (None, bools, ints up to 60 bits,
 * floats, str excerpts as repr would quote them; other objects as
 * <type object at 0x...>, containers with their length). A frame whose
 * locals do not read shows none.
 * `file`/`func` are NUL-terminated UTF-8 (truncated at LP_REMOTE_MAX_STR),
 * valid during the call only; line is -1 when the table has none.
 * A non-zero return stops the walk (LP_REMOTE_STOPPED). `end_thread` gets
 * the status of that thread's frame walk: a frame that did not read ends
 * the thread early (BADREAD), its frames so far kept. */
typedef struct lp_remote_sink {
    int (*thread)(void *ctx, uint64_t thread_id, uint64_t native_thread_id);
    int (*frame)(void *ctx, const char *file, const char *func, int line);
    int (*end_thread)(void *ctx, int status);
    int (*local)(void *ctx, const char *name, const char *value); /* NULL: no locals */
    /* NULL, or called after a frame when it is the outermost one its C
     * eval-loop call runs (lprof dump --native's merge): 3.10 every frame,
     * 3.11 `is_entry` (fr_is_entry), 3.12+ the frame whose `previous` is a
     * C-stack or interpreter-owned entry frame (owner >= 3). `shim`: that
     * entry frame's address (3.12+; 0 on 3.10, 3.11), a local variable of
     * the eval call, so on that call's C stack */
    int (*entry)(void *ctx, uint64_t shim);
    void *ctx;
} lp_remote_sink;

/* n bytes at the target's addr into dst: LP_REMOTE_OK or an error code. */
LP_INTERNAL int lp_remote_read(pid_t pid, uint64_t addr, void *dst, size_t n);

/* The layout from the _Py_DebugOffsets at the start of _PyRuntime
 * (`runtime_addr`): NODEBUG without the cookie, VERSION for a layout of
 * the table this reader does not know (known: 3.13, 3.14, 3.15; each
 * offset must lie inside its section's struct size), FREE_THREADED for a
 * free-threaded build's. *version_hex gets the version the table says,
 * when the cookie is there. */
LP_INTERNAL int lp_remote_layout_from_debug(pid_t pid, uint64_t runtime_addr, lp_remote_layout *out,
                                            uint64_t *version_hex);

/* Every interpreter's every thread, through the sink. */
LP_INTERNAL int lp_remote_walk(pid_t pid, uint64_t runtime_addr, const lp_remote_layout *layout,
                               const lp_remote_sink *sink);

/* The line of the code unit `unit` (16-bit units from the code's start) in
 * a line table: `model` LP_REMOTE_FRAMES_310 reads 3.10's co_linetable
 * (byte-offset, line-delta pairs), the others the 3.11+ location table.
 * -1 when the table gives no line or is malformed; firstlineno for unit < 0
 * (a frame that has not run its first instruction). Pure: unit-tested. */
LP_INTERNAL int lp_remote_line_of(const uint8_t *table, size_t n, int firstlineno, int model, int64_t unit);

#endif
