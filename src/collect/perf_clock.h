/* collect: per-thread task-clock perf events that signal their own thread
 * every period of its CPU time. The event's timer is a high-resolution one
 * run on the CPU where the thread runs, so samples come at the rate asked
 * (10 kHz and more), not at the kernel tick as POSIX CPU timers do, and the
 * signal is raised there, where the thread runs: no cross-CPU delay that
 * would move a sample off the code that spent the time. Needs
 * perf_event_open for the process's own threads (perf_event_paranoid <= 2,
 * no seccomp filter refusing it); the sampler falls back otherwise.
 *
 * No descriptor is left in the program's table: a one-page read-only
 * mapping of the event (no ring buffer: an overflow only signals) holds it,
 * and its descriptor is closed at once. A program that lists, closes or
 * reuses descriptors meets none of lprof's; /proc/PID/maps shows the page
 * ("anon_inode:[perf_event]"). The page is not inherited by a fork
 * (MADV_DONTFORK) and goes away at exec, with the event. */
#ifndef LPROF_COLLECT_PERF_CLOCK_H
#define LPROF_COLLECT_PERF_CLOCK_H

#include <stdint.h>
#include <sys/types.h>

#include "common/base.h"

/* An enabled event on thread tid that sends signo (si_code POLL_IN) to that
 * thread each period_ns of its CPU time: its handle, or NULL (errno set).
 * signo SIGTRAP: a sigtrap event instead (Linux 5.13+; si_code TRAP_PERF),
 * which the kernel raises on the thread's own way back to user mode, where
 * the fasync path above first queues work for an interrupt to the same CPU
 * (a second exit to the hypervisor on a VM): measured on this project's
 * 2-core VM, 31 us a signal with fasync, 17 with sigtrap, 14 of them the
 * event's timer alone. A standard signal: overflows while one is pending
 * coalesce, so a thread that blocks it cannot fill the signal queue. */
LP_INTERNAL void *lp_perf_clock_open(pid_t tid, uint64_t period_ns, int signo);
/* Frees it; when it returns, the event sends no more signals. */
LP_INTERNAL void lp_perf_clock_close(void *handle);

/* The first task event a process opens waits 5-25 ms in the kernel (seen on
 * a 2-core VM: it turns the scheduler's perf hooks on, a code patch
 * synchronised across CPUs), wall time, not CPU time; the hooks stay on for
 * about a second after the last event closes. lp_perf_clock_warm opens and
 * closes one on a quiet thread of its own, so that wait overlaps lprof's
 * start-up and the program's. 0 when started (or already), -1 when the
 * thread could not start.
 * Any thread's perf_event_open waits for the switch-on meanwhile, so the
 * sampler does not open events before lp_perf_clock_warm_done() (1: over,
 * or never started) and samples with CPU timers until then; on_done runs on
 * the warm-up thread once it is over (async-signal-safe work only: a wake). */
LP_INTERNAL int lp_perf_clock_warm(void);
LP_INTERNAL int lp_perf_clock_warm_done(void);
LP_INTERNAL void lp_perf_clock_warm_on_done(void (*on_done)(void));
/* A forked child has no warm-up thread: its warm-up counts as over. */
LP_INTERNAL void lp_perf_clock_after_fork(void);
/* Tests: hold != 0 makes lp_perf_clock_warm_done() answer 0 (a switch-on
 * still running) until called again with 0, which runs on_done. */
LP_INTERNAL void lp_perf_clock_warm_hold(int hold);

#endif
