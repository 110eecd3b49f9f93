/* tracer: where each suspended generator or coroutine frame stopped (the
 * line of its yield or await, the clocks), kept from the suspension to the
 * resume, so that the time it spent suspended is charged to that line (the
 * Wait column of `lprof -l`). No Python here; called by tracer_core only,
 * under its locking rule (one thread at a time: the GIL).
 *
 * A table of sets of 8 entries, allocated at the first suspension (2048
 * sets, 768 KiB) and doubled when a suspension finds its set full, up to
 * 32768 sets (262,144 frames, 12 MiB). A suspension replaces the entry of
 * the same frame; at the cap, in a full set, it evicts the one suspended
 * longest ago, whose wait is then lost and counted (lp_tw_evicted), never
 * charged to another frame. An entry left by a frame that died
 * suspended without resuming is overwritten when its address suspends
 * again, before that frame can resume. */
#ifndef LPROF_TRACER_WAITS_H
#define LPROF_TRACER_WAITS_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

typedef struct {
    const void *frame;   /* the suspended frame's address; NULL = free slot */
    const void *code;    /* its code record */
    uint64_t t;          /* clock at the suspension */
    uint64_t p;          /* the suspending thread's program clock then */
    uint64_t serial;     /* the suspending thread */
    int32_t line;        /* index of the line it stopped on */
} lp_tw_entry;

/* Records a suspension; 0, or -1 when the table cannot be allocated (counted
 * as evicted). */
LP_INTERNAL int lp_tw_put(const lp_tw_entry *e);
/* Takes the suspension of `frame` out of the table: 1 and *out when there
 * is one for that frame and code, else 0. */
LP_INTERNAL int lp_tw_take(const void *frame, const void *code, lp_tw_entry *out);
/* Suspensions evicted or not recorded since the last reset: each one's wait
 * is lost if its frame resumes (a dead frame's costs nothing). */
LP_INTERNAL uint64_t lp_tw_evicted(void);
/* Forgets every suspension and the count (tests, and clear); keeps the size. */
LP_INTERNAL void lp_tw_reset(void);

#endif
