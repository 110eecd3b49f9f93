/* collect: the sampler thread reading a thread's Python stack while that
 * thread runs, without stopping it (CPU mode, lprof's sampler thread with
 * outside reads: lp_sampler_config.outside_reads). A signal costs the
 * running thread 10-45 us on this kind of VM (bench/interrupt_floor.c), so
 * 10 kHz of them cost 1.1-1.5x; a read from another thread costs it well
 * under a microsecond where a core is free.
 *
 * How: the thread's data stack chunks (its frames, side by side) are copied
 * a few 4 KiB blocks a system call (collect/block_copy.h) and the walker
 * reads the copies; the stack counts only if the thread's innermost frame is
 * the same before and after the read.
 *
 * Code objects: a read may meet the code of a frame the thread pops and
 * frees meanwhile. The interpreter's code-destruction hook (aggregate/
 * cpython/resolve.c, through the sampler's binding) calls
 * lp_outside_code_dying before it drains the rings: a read in progress then
 * either sees the death (and is dropped if it names that code) or commits
 * first and is drained before the code object is freed. One reader (the
 * sampler thread). */
#ifndef LPROF_COLLECT_OUTSIDE_READ_H
#define LPROF_COLLECT_OUTSIDE_READ_H

#include <stdint.h>

#include "common/base.h"
#include "collect/sampler.h"

/* Begins a read: from here until lp_outside_end, a code object's death
 * waits for it. */
LP_INTERNAL void lp_outside_begin(void);

/* Captures tstate's stack, leaf first, into out (as host->capture does):
 * the number of frames, -1 when unreadable. *moved is set to 1 when the
 * thread's innermost frame changed during the read (its copies are of
 * slightly different moments: the caller decides whether they still make
 * one stack). */
LP_INTERNAL int lp_outside_capture(const lp_sampler_host *host, const void *tstate, lp_rawframe *out, int max,
                                   int *truncated, int *moved);

/* 1 when no code object the read's n frames name died since
 * lp_outside_begin: the read may be committed, before lp_outside_end (it
 * is then drained before any code object it names is freed); 0: drop it.
 * Deaths of other code objects do not matter (a program that compiles code
 * each loop would lose most reads). */
LP_INTERNAL int lp_outside_unchanged(const lp_rawframe *frames, int n);

/* Ends a read. */
LP_INTERNAL void lp_outside_end(void);

/* Called, GIL held, as code object `code` dies and before the rings are
 * drained for it: waits for a read in progress. Cheap when none is. */
LP_INTERNAL void lp_outside_code_dying(const void *code);

/* 1 when this process may read its own memory with process_vm_readv (a
 * container's seccomp profile may refuse it without CAP_SYS_PTRACE): the
 * sampler signals the running threads instead where it may not. */
LP_INTERNAL int lp_outside_available(void);

/* The fetches (system calls) of the reads so far, for statistics; reset
 * with the sampler's. */
LP_INTERNAL uint64_t lp_outside_fetches(void);
LP_INTERNAL void lp_outside_reset_fetches(void);

#endif
