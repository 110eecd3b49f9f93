/* collect: reads a thread's Python frame chain without the GIL, without
 * allocation and without the Python API, into raw frames (code pointer +
 * instruction byte offset). The only file with per-version frame layouts.
 *
 * Context: signal handlers (own thread), allocator hooks (own thread, GIL or
 * not), and the wall-mode sampler thread reading a DETACHED thread through a
 * fault-safe reader. Never dereferences NULL, validates each code object's
 * type, skips incomplete and C-stack shim frames, bounds depth (keeps the leaf
 * side). Design: docs/design-sampler.md (its table of frame layouts per version). */
#ifndef LPROF_PYFRAMES_H
#define LPROF_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "common/rawframe.h" /* lp_rawframe */
#include "collect/reader.h"  /* lp_reader */

/* process_vm_readv on our own pid: never faults. */
LP_INTERNAL int lp_pyframes_safe_read(void *dst, const void *src, size_t n);
/* For a signal handler walking its own, interrupted thread: reads are
 * fault-safe at the top of the stack (which may be half pushed or popped)
 * and direct below it. Pass it as the reader; it reads like safe_read. */
LP_INTERNAL int lp_pyframes_interrupted_read(void *dst, const void *src, size_t n);

/* Captures the Python stack of `tstate` (a PyThreadState*), LEAF FIRST, into
 * out[0..max). Returns the number of frames written; *truncated is set to 1
 * when frames remained on the root side. On the calling thread's own thread
 * state: from a signal handler pass lp_pyframes_interrupted_read (the top
 * may be half pushed); from an allocator hook, reader NULL:
 *   n = lp_pyframes_capture(tstate, buf, LP_ARRAY_LEN(buf), &trunc, NULL); */
LP_INTERNAL int lp_pyframes_capture(const void *tstate, lp_rawframe *out, int max, int *truncated,
                                    lp_reader reader) LP_SIGNAL_SAFE;

/* lp_pyframes_capture for the outside reader: code objects found in memo
 * (an lp_code_memo, collect/code_memo.h) are not read again, and those
 * read are added to it. The caller forgets each code object as it dies. */
LP_INTERNAL int lp_pyframes_capture_memo(const void *tstate, lp_rawframe *out, int max, int *truncated,
                                         lp_reader reader, void *memo) LP_SIGNAL_SAFE;

/* 1 if tstate currently holds the GIL, 0 if not, -1 if unreadable. */
LP_INTERNAL int lp_pyframes_holds_gil(const void *tstate, lp_reader reader) LP_SIGNAL_SAFE;

/* The address of the thread's current (innermost) frame, for a consistency
 * re-check after a remote read; NULL if none or unreadable. */
LP_INTERNAL const void *lp_pyframes_top(const void *tstate, lp_reader reader) LP_SIGNAL_SAFE;

/* The memory the thread's frames live in (3.11+: its data stack chunks,
 * the current one up to the stack's top first), as address ranges
 * [lo[i], hi[i]), at most max; returns how many. 0 before 3.11 (frames are
 * objects of their own) or when unreadable. For copying a running
 * thread's frames in a few reads (collect/block_copy.h). */
LP_INTERNAL int lp_pyframes_stack_ranges(const void *tstate, lp_reader reader, uintptr_t *lo, uintptr_t *hi,
                                         int max) LP_SIGNAL_SAFE;

/* The asyncio task the thread runs now (3.14+: the thread state's
 * asyncio_running_task, which the C asyncio sets while a task steps), as an
 * address; 0 when none, unreadable, or before 3.14 (no such field). */
LP_INTERNAL uintptr_t lp_pyframes_running_task(const void *tstate, lp_reader reader) LP_SIGNAL_SAFE;

/* The addresses of the frames each running eval loop keeps on its own C
 * stack (3.12+: the entry frame an eval call links in before it runs code),
 * leaf first, at most max; on 3.14+ the thread's base frame comes too (it
 * lives in the thread state and so matches no native frame). Returns how
 * many; 0 before 3.12, where no such frame exists. GIL held, direct reads:
 * for finding the eval loop's native frames once at start. */
LP_INTERNAL int lp_pyframes_c_stack_frames(const void *tstate, uintptr_t *out, int max);

/* Thread key used by the stack table: PyThreadState.thread_id
 * (== threading.get_ident() of that thread). */
LP_INTERNAL uint64_t lp_pyframes_thread_key(const void *tstate) LP_SIGNAL_SAFE;

/* Native thread id stored in the thread state (3.11+), 0 when unknown. */
LP_INTERNAL long lp_pyframes_native_tid(const void *tstate);

/* Is addr a PyCodeObject (reads the type pointer with `reader`)? */
LP_INTERNAL int lp_pyframes_is_code(const void *addr, lp_reader reader) LP_SIGNAL_SAFE;

#endif
