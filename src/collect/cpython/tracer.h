/* binding: what collect/cpython/tracer.c shares with the per-version event sources
 * (tracer_monitoring.c on 3.12+, tracer_settrace.c on 3.10, 3.11).
 * All of it runs with the GIL held (the tracer core's locking rule). */
#ifndef LPROF_PYTRACER_H
#define LPROF_PYTRACER_H

#include "cpython/module.h"
#include "collect/tracer_core.h"

/* This thread's timing state; initial-exec TLS: one load per event. */
extern LP_INTERNAL __thread lp_tc_thread *lp_pyt_tls __attribute__((tls_model("initial-exec")));
/* Creates the state on a thread's first event (NULL if out of memory). */
LP_INTERNAL lp_tc_thread *lp_pyt_thread_slow(void);

static inline lp_tc_thread *lp_pyt_thread(void) {
    lp_tc_thread *th = lp_pyt_tls;
    return LP_LIKELY(th != NULL) ? th : lp_pyt_thread_slow();
}

/* Registered code objects, a list holding strong references. */
LP_INTERNAL PyObject *lp_pyt_codes(void);

/* Event source, one per version range. Each returns 0, or -1 with an
 * exception set. enable/disable are called only on a state change. */
LP_INTERNAL int lp_pyt_source_init(PyObject *module);
LP_INTERNAL int lp_pyt_source_enable(void);
LP_INTERNAL int lp_pyt_source_disable(void);
/* Called by enable while already on: the calling thread gets the tracer if
 * it has none (a native thread that entered Python after enable). */
LP_INTERNAL int lp_pyt_source_join_thread(void);
/* While on: gives the tracer to every other thread that has none (a native
 * thread that entered Python after enable, seen by no hook on 3.10/3.11);
 * returns how many got it. 3.12+ sends every thread's events: returns 0. */
LP_INTERNAL int lp_pyt_source_sweep(void);
/* The sweeper (3.10/3.11): a C thread that looks every period_s for thread
 * states made since it started and sweeps when there are. start: 0, or -1
 * with an exception set; a second start is a no-op. stop: ends it and waits
 * for it (the GIL released meanwhile); a no-op when none runs. Both with the
 * GIL held. 3.12+: both do nothing. */
LP_INTERNAL int lp_pyt_sweep_start(double period_s);
LP_INTERNAL void lp_pyt_sweep_stop(void);
/* A code object registered while tracing is on. */
LP_INTERNAL int lp_pyt_source_watch(PyObject *code);

#endif
