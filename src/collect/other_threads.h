/* collect: the CPU time of the threads the sampler does not sample (BLAS,
 * OpenMP and MKL pools, torch's intra-op threads, a C library's workers:
 * threads that never run Python), measured and handed to the drain.
 *
 * A thread of lprof's own (the clock) wakes every LP_OTHERS_PERIOD_NS while
 * the sampler runs and reads the process's CPU clock, the CPU clock of every
 * registered Python thread and of every lprof thread (common/own_tids.h):
 * what the process spent beyond those is the other threads' time. No thread
 * listing, no file descriptor, no allocation, no signal to any thread; a
 * thread that starts and ends between two ticks is still counted (the
 * process clock keeps the CPU time of ended threads).
 *
 * Each tick's time is charged, as native CPU, to the Python thread(s) in
 * native code at that moment, whose stacks the clock reads as the wall
 * thread reads a detached thread (frozen while the thread does not hold the
 * GIL; re-checked after the read):
 *   1. threads without the GIL whose own CPU clock advanced by
 *      LP_OTHERS_RAN_NS or more in the tick (computing in native code beside
 *      their helpers: numpy's matmul with OpenBLAS). In CPU mode only if its
 *      own latest sample, within two ticks, was outside the interpreter, or
 *      else the drain finds its leaf standing on a call: a thread that ran
 *      bytecode and now waits for the GIL another took (a forced switch) is
 *      not computing for anyone (it took a background thread's CPU for a
 *      pure-Python loop line on a busy machine);
 *   2. else the GIL holder, when it is in native code: its own latest
 *      sample (in wall mode: within two ticks) was taken outside the
 *      interpreter's code
 *      (a C function computing beside its workers, GIL held), or it did not
 *      run in the tick and the drain finds its leaf frame standing on a
 *      call instruction (a C function waiting for its workers, GIL held);
 *      a holder running bytecode is not in native code (its record, if
 *      any, goes on as 4.);
 *   3. else threads without the GIL (waiting in native code: a join), if
 *      the drain finds the leaf frame standing on a call: a thread waiting
 *      for the GIL (held by another, or by one of lprof's threads on a busy
 *      machine) stands where the interpreter let it go, a loop's jump;
 *   4. else nobody: a record without frames, which the drain places on the
 *      stack it last charged by 1.-3. if that was at most
 *      LP_OTHERS_WINDOW_NS before (a pool spinning after the work came back:
 *      OpenBLAS's threads spin some 50 ms), else on no line (thread 0, the
 *      marker alone: stated in the profile as time of threads without
 *      Python that no line took).
 * Records are lp_samples flagged LP_SF_OTHER (cpu_ns = the time) in the
 * clock's own ring, drained with the others (lp_sampler_drain, slot -2). */
#ifndef LPROF_COLLECT_OTHER_THREADS_H
#define LPROF_COLLECT_OTHER_THREADS_H

#include <stdint.h>

#include "common/base.h"

#define LP_OTHERS_PERIOD_NS 10000000ull  /* 100 ticks a CPU-idle second */
#define LP_OTHERS_MIN_NS    1000000ull   /* less is carried to the next tick */
#define LP_OTHERS_RAN_NS    500000ull    /* a thread's CPU in a tick that counts as running */
#define LP_OTHERS_WINDOW_NS 200000000ull /* how far back the drain looks (4.) */

/* Started by lp_sampler_start, stopped (after a last tick) by
 * lp_sampler_stop; 0 or -1 (the thread could not start: nothing counted). */
LP_INTERNAL int lp_others_start(void);
LP_INTERNAL void lp_others_stop(void);
/* In a forked child (the sampler's at-fork handler): the thread is gone. */
LP_INTERNAL void lp_others_after_fork(void);

typedef struct {
    uint64_t measured_ns; /* CPU time of threads the sampler does not sample, handed on */
    uint64_t lost_ns;     /* of it, not handed on: the clock's ring was full */
    uint64_t ticks;
    uint64_t own_ns; /* lprof's own threads' CPU time while it ran (own_tids.h) */
} lp_others_stats;
LP_INTERNAL void lp_others_get_stats(lp_others_stats *out);

#endif
