/* common: the kernel thread ids of lprof's own threads (the sampler's drain,
 * the -i writer, the fault watcher, the wall-clock thread, the other-threads
 * clock, the GPU flusher, the tracer's sweeper, the perf warm-up). Each thread adds itself
 * first thing and removes itself at its end; the sampler's clock of threads
 * it does not sample (collect/other_threads.c) leaves their CPU time out of
 * the program's. Fixed table, lock-free, no allocation: any thread may add,
 * remove or list at any time. After a fork the child has none of them
 * (lp_own_tids_reset from the sampler's at-fork child handler). */
#ifndef LPROF_COMMON_OWN_TIDS_H
#define LPROF_COMMON_OWN_TIDS_H

#include <sys/types.h>

#include "common/base.h"

#define LP_OWN_TIDS_MAX 32

/* The calling thread is lprof's (a no-op when the table is full). */
LP_INTERNAL void lp_own_tid_add_self(void);
/* The calling thread ends. */
LP_INTERNAL void lp_own_tid_remove_self(void);
/* Up to max tids of lprof's threads alive now; how many written. */
LP_INTERNAL int lp_own_tids_list(pid_t *out, int max);
/* Is tid one of lprof's threads? */
LP_INTERNAL int lp_own_tid_is(pid_t tid);
/* The CPU time lprof's threads had when they removed themselves, summed:
 * what a reader of live threads' clocks can no longer see of them. */
LP_INTERNAL unsigned long long lp_own_tids_exited_cpu_ns(void);
/* In a forked child: none of the parent's threads exist. */
LP_INTERNAL void lp_own_tids_reset(void);

#endif
