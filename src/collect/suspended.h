/* collect: where suspended generator and coroutine frames stopped, kept
 * from each suspension to the frame's resume under the frame's address.
 * Two users, each with a table of its own: the line tracer (the Wait column
 * of `lprof -l`: the line and clocks of the yield or await) and the await
 * collector of the sampling modes (collect/cpython/awaits.c: the stack the
 * coroutine waited in). No Python here; each user calls it under its own
 * locking rule (one thread at a time: the GIL).
 *
 * A table of sets of 8 entries, allocated at the first suspension (2048
 * sets, 768 KiB) and doubled when a suspension finds its set full, as often
 * as it takes to make room there, up to 32768 sets (262,144 frames, 12 MiB). A suspension replaces the entry of
 * the same frame; at the cap, in a full set, it evicts the one suspended
 * longest ago, whose wait is then lost and counted, never charged to
 * another frame. An entry left by a frame that died suspended without
 * resuming is overwritten when its address suspends again, before that
 * frame can resume; a take also checks the code. */
#ifndef LPROF_COLLECT_SUSPENDED_H
#define LPROF_COLLECT_SUSPENDED_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

typedef struct {
    const void *frame; /* the suspended frame's address; NULL = free slot */
    const void *code;  /* its code (the user's record of it) */
    uint64_t t;        /* clock at the suspension */
    uint64_t p;        /* tracer: the suspending thread's program clock then */
    uint64_t serial;   /* tracer: the suspending thread */
    int32_t line;      /* tracer: index of the line it stopped on */
    uint32_t stack;    /* await collector: the stack it waited in */
    uint32_t task;     /* await collector: the serial of the task waiting (task_ids.h), 0 none */
} lp_suspended;

/* One user's table; all zero = empty (nothing allocated yet). */
typedef struct {
    lp_suspended *entries; /* sets * 8 */
    size_t sets;
    uint64_t evicted;
} lp_suspended_table;

/* Records a suspension; 0, or -1 when the table cannot be allocated (counted
 * as evicted). */
LP_INTERNAL int lp_suspended_put(lp_suspended_table *tab, const lp_suspended *e);
/* Takes the suspension of `frame` out of the table: 1 and *out when there
 * is one for that frame and code, else 0. */
LP_INTERNAL int lp_suspended_take(lp_suspended_table *tab, const void *frame, const void *code,
                                  lp_suspended *out);
/* The frame's hash: its set is the low bits (as many as the sets need). */
LP_INTERNAL uint64_t lp_suspended_hash(const void *frame);
/* Forgets every suspension and the evicted count; keeps the size. */
LP_INTERNAL void lp_suspended_reset(lp_suspended_table *tab);

#endif
