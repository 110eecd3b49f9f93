/* collect: gives a live asyncio task its serial (collect/task_ids.h) and
 * forgets it when the task dies, through a weak reference whose callback
 * runs in the task's deallocation, before its memory can be reused.
 * GIL held. 3.14+ only (before, samples cannot say which task ran: the
 * serials would serve nothing): 0 there.
 * Only the first LP_TASK_SERIALS_MAX tasks of a process get one, as many as
 * python/lprof/collect/task_names.py keeps records of: a program of many
 * tasks (a server's, one a request) pays for no more, and the task view
 * draws the rest under their coroutines' shared records. */
#ifndef LPROF_COLLECT_CPYTHON_TASK_REGISTER_H
#define LPROF_COLLECT_CPYTHON_TASK_REGISTER_H

#include <Python.h>
#include <stdint.h>

#include "common/base.h"

#define LP_TASK_SERIALS_MAX 4096

/* The task's serial, giving it one at its first call (*fresh = 1 then,
 * when fresh is not NULL); 0 when it gets none (past the first
 * LP_TASK_SERIALS_MAX, the table is full near its address, no weak
 * reference to it can be made, or before 3.14). Never raises. */
LP_INTERNAL uint32_t lp_pytask_register(PyObject *task, int *fresh);

#endif
