/* tracer: exact line timing from a stream of events (no Python here).
 *
 * The binding (collect/cpython/tracer*.c) turns interpreter events into calls of
 * lp_tc_enter / lp_tc_line / lp_tc_exit with a timestamp and an opaque
 * code id; this file keeps one shadow stack per thread and per-code line
 * arrays indexed by `lineno - firstlineno`.
 *
 * Time of a line = from its LINE event to the next event that closes it in
 * the same frame (next LINE, return, yield, unwind), callees included.
 * Function total = enter..exit of the outermost activation of that code on
 * the thread (recursion is not double counted), suspended time excluded.
 * The tracer's own time (between an event's timestamp and the end of its
 * bookkeeping, reported with lp_tc_overhead) is subtracted from both.
 *
 * Locking rule: no locks inside. Every function here must be called by one
 * thread at a time for the whole state (in the extension: with the GIL
 * held). lp_tc_thread_free touches only the thread's own memory, so it may
 * run without the GIL (thread-exit destructor). */
#ifndef LPROF_TRACER_CORE_H
#define LPROF_TRACER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

typedef struct {
    uint64_t hits;
    uint64_t ticks;
} lp_tc_linestat;

typedef struct lp_tc_code {
    const void *id;          /* opaque (the PyCodeObject*) */
    void *user;              /* binding's pointer (same object, kept alive there) */
    int firstlineno;
    uint32_t nlines;         /* capacity of lines[] */
    lp_tc_linestat *lines;   /* index lineno - firstlineno */
    uint64_t total_ticks;    /* outermost activations only */
    uint64_t owner;          /* serial of the thread whose frames `depth` counts */
    uint32_t depth;          /* counted active frames of this code on `owner` */
} lp_tc_code;

typedef struct {
    lp_tc_code *code;
    int32_t line;            /* index of the open line, -1 if none */
    uint8_t outer;           /* outermost activation on this thread */
    uint8_t counted;         /* included in code->depth */
    uint64_t t_line, ovh_line;
    uint64_t t_enter, ovh_enter;
} lp_tc_frame;

typedef struct lp_tc_thread {
    lp_tc_frame *stack;
    uint32_t depth, cap;
    uint32_t uncounted;      /* frames on this stack not in code->depth */
    uint64_t serial;
    uint64_t epoch;
    uint64_t ovh;            /* cumulative tracer overhead on this thread */
    uint64_t dropped;        /* events lost to allocation failure */
} lp_tc_thread;

extern LP_INTERNAL uint64_t lp_tc_epoch;

/* Registry of traced code objects. Returns the record (existing or new),
 * NULL on allocation failure; *is_new tells which. */
LP_INTERNAL lp_tc_code *lp_tc_register(const void *id, int firstlineno, void *user, int *is_new);
LP_INTERNAL lp_tc_code *lp_tc_find(const void *id);
LP_INTERNAL size_t lp_tc_ncodes(void);
LP_INTERNAL lp_tc_code *lp_tc_code_at(size_t i);
/* Zero all counts, keep registrations. */
LP_INTERNAL void lp_tc_clear(void);
/* Forget every open frame on every thread (lazily) and reset recursion
 * bookkeeping: called when tracing is switched on or off. */
LP_INTERNAL void lp_tc_new_epoch(void);
/* Drop all registrations (tests). Threads must not be in use. */
LP_INTERNAL void lp_tc_reset_registry(void);

LP_INTERNAL lp_tc_thread *lp_tc_thread_new(void);
LP_INTERNAL void lp_tc_thread_free(lp_tc_thread *th);

/* Events. resume_line: the line a generator resumes on (opened without a
 * hit), or -1 for a fresh call. lp_tc_exit covers return, yield and unwind;
 * it pops down to the innermost frame of `code` (ignored if none). */
LP_INTERNAL void lp_tc_enter(lp_tc_thread *th, lp_tc_code *code, int resume_line, uint64_t t);
LP_INTERNAL void lp_tc_line(lp_tc_thread *th, lp_tc_code *code, int line, uint64_t t);
LP_INTERNAL void lp_tc_exit(lp_tc_thread *th, lp_tc_code *code, uint64_t t);

/* Innermost frame's code if it is the live stack, else NULL (fast path for
 * LINE events: no registry lookup). */
static inline lp_tc_code *lp_tc_top_code(const lp_tc_thread *th) {
    if (LP_LIKELY(th->depth > 0 && th->epoch == lp_tc_epoch)) return th->stack[th->depth - 1].code;
    return NULL;
}

/* The tracer spent [t_event, t_after) on bookkeeping: not program time. */
static inline void lp_tc_overhead(lp_tc_thread *th, uint64_t t_event, uint64_t t_after) {
    if (LP_LIKELY(t_after > t_event)) th->ovh += t_after - t_event;
}

#endif
