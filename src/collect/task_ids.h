/* collect: a serial number for each live asyncio task the program ran,
 * found by the task's address from a signal handler (3.14+; the sampler
 * stamps each sample with the running task's serial: the task view draws
 * each task apart, aggregate/task_split.h). Serials start at 1 and are
 * never reused in a process; an address is forgotten when its task dies
 * (collect/cpython/task_register.c removes it from the task's weak
 * reference callback, before the memory can hold another task), so a
 * sample of a live task never takes a dead one's serial.
 *
 * Context: insert and remove under one lock the caller holds (the GIL);
 * find from any thread and from signal handlers, beside them: lock-free,
 * bounded (at most LP_TASK_IDS_PROBES slots read). A fixed table of
 * LP_TASK_IDS_SLOTS slots; a task that finds no free slot within the probe
 * bound gets no serial (counted): its samples are charged as before, to its
 * coroutine's record. */
#ifndef LPROF_COLLECT_TASK_IDS_H
#define LPROF_COLLECT_TASK_IDS_H

#include <stdint.h>

#include "common/base.h"

#define LP_TASK_IDS_SLOTS  (1u << 13) /* twice the serials given (task_register.h): half full */
#define LP_TASK_IDS_PROBES 32

/* The address's serial, inserting it with a new one if absent; 0 when the
 * table has no room for it near its hash. */
LP_INTERNAL uint32_t lp_task_ids_insert(uintptr_t addr);
/* Forgets the address (its task died); nothing if absent. */
LP_INTERNAL void lp_task_ids_remove(uintptr_t addr);
/* The address's serial, 0 if absent or addr is 0. */
LP_INTERNAL uint32_t lp_task_ids_find(uintptr_t addr) LP_SIGNAL_SAFE;
/* Tasks refused a serial for want of room; tasks given one (any thread,
 * signal-safe). */
LP_INTERNAL uint64_t lp_task_ids_refused(void);
LP_INTERNAL uint32_t lp_task_ids_given(void) LP_SIGNAL_SAFE;

#endif
