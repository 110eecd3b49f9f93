/* binding: a call queued from a thread without the GIL (lprof's clock
 * thread, the fault watcher) for the program to run at its next
 * instruction. */
#ifndef LPROF_PENDING_CALL_H
#define LPROF_PENDING_CALL_H

#include "common/base.h"

/* Queues fn(arg) for whichever thread of the main interpreter next checks
 * for pending work (3.12+), the main thread alone before 3.12 (where
 * Py_AddPendingCall is all there is): a program whose GIL-starving thread
 * is not the main one runs it too. Allowed without the GIL; 0 queued, -1
 * the queue is full. fn runs with the GIL, on a thread of the program or
 * one of lprof's own, and must return 0. */
LP_INTERNAL int lp_pending_call_any_thread(int (*fn)(void *), void *arg);

#endif
