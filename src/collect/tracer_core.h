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
 * the thread (recursion is not double counted), suspended time excluded:
 * it is the wait of the line that suspended (yield, await), kept apart.
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
    uint64_t wait_ticks; /* suspended here (yield, await) until resumed */
} lp_tc_linestat;

typedef struct lp_tc_code {
    const void *id; /* opaque (the PyCodeObject*) */
    void *user;     /* binding's pointer (same object, kept alive there) */
    int firstlineno;
    uint32_t nlines;       /* capacity of lines[] */
    lp_tc_linestat *lines; /* index lineno - firstlineno */
    uint64_t total_ticks;  /* outermost activations only */
    uint64_t owner;        /* serial of the thread whose frames `depth` counts */
    uint32_t depth;        /* counted active frames of this code on `owner` */
} lp_tc_code;

typedef struct {
    lp_tc_code *code;
    int32_t line;    /* index of the open line, -1 if none */
    uint8_t outer;   /* outermost activation on this thread */
    uint8_t counted; /* included in code->depth */
    /* Program clock (timestamp minus the thread's tracer overhead so far)
     * when the line opened and when the frame was entered: a difference of
     * two is program time, with one subtraction per closed interval. */
    uint64_t p_line;
    uint64_t p_enter;
} lp_tc_frame;

typedef struct lp_tc_thread {
    lp_tc_frame *stack;
    uint32_t depth, cap;
    uint32_t uncounted; /* frames on this stack not in code->depth */
    uint64_t serial;
    uint64_t epoch;
    uint64_t ovh;     /* cumulative tracer overhead on this thread */
    uint64_t dropped; /* events lost to allocation failure */
} lp_tc_thread;

extern LP_INTERNAL uint64_t lp_tc_epoch;
/* Ticks of the tracer's own work on one event of lp_tc_line_fast (below),
 * charged to the thread's overhead by that path itself: 0 until
 * lp_tc_calibrate_fast_line sets it. */
extern LP_INTERNAL uint64_t lp_tc_fast_line_cost;

/* Observer of every closed line interval (NULL: none; lprof -l --gpu sets
 * it to aggregate/gpu_idle.c's log): the code id, the line's index, the
 * closing event's timestamp and the interval's program time in ticks.
 * Called on the tracing thread, under the same one-thread rule. */
typedef void (*lp_tc_span_fn)(const void *code_id, int32_t line, uint64_t t, uint64_t elapsed);
extern LP_INTERNAL lp_tc_span_fn lp_tc_span_hook;

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
/* A generator or coroutine frame (`frame`: its address, stable while it
 * lives) suspends: lp_tc_exit, and its open line is remembered. When it
 * resumes (lp_tc_resume: lp_tc_enter with the resumed line), the time in
 * between goes to that line's wait_ticks: the resuming thread's program
 * clock when the same thread suspended it (the tracer's own work on the
 * other frames it ran meanwhile left out), else the raw clock. */
LP_INTERNAL void lp_tc_suspend(lp_tc_thread *th, lp_tc_code *code, const void *frame, uint64_t t);
LP_INTERNAL void lp_tc_resume(lp_tc_thread *th, lp_tc_code *code, const void *frame, int resume_line,
                              uint64_t t);
/* Suspensions whose wait could not be kept (suspended.h). */
LP_INTERNAL uint64_t lp_tc_waits_evicted(void);

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

/* The thread's program clock at timestamp t: t minus its tracer overhead. */
static inline uint64_t lp_tc_program_clock(const lp_tc_thread *th, uint64_t t) { return t - th->ovh; }

/* Program time from program clock p0 to p1; 0 if the clock went back (TSCs
 * of two CPUs a few ticks apart). */
static inline uint64_t lp_tc_program_elapsed(uint64_t p0, uint64_t p1) {
    int64_t d = (int64_t)(p1 - p0);
    return d > 0 ? (uint64_t)d : 0;
}

/* LINE event, common case inline: the innermost live frame runs the code
 * whose id is `id` and the line's slot exists. Returns 0 when it does not
 * apply (no event recorded): the caller then looks the code up and calls
 * lp_tc_line. It is most of a traced program's events, so it takes no
 * second timestamp: its own cost is charged as lp_tc_fast_line_cost, where
 * lp_tc_line's caller measures the event with a second clock read (on a VM
 * a read costs about as much as this whole path). Otherwise the same result
 * as lp_tc_line. */
static inline int lp_tc_line_fast(lp_tc_thread *th, const void *id, int line, uint64_t t) {
    if (LP_UNLIKELY(th->depth == 0 || th->epoch != lp_tc_epoch)) return 0;
    lp_tc_frame *f = &th->stack[th->depth - 1];
    lp_tc_code *c = f->code;
    int64_t idx = (int64_t)line - c->firstlineno;
    if (LP_UNLIKELY(c->id != id || (uint64_t)idx >= c->nlines)) return 0;
    uint64_t p = lp_tc_program_clock(th, t);
    if (f->line >= 0) {
        uint64_t el = lp_tc_program_elapsed(f->p_line, p);
        c->lines[f->line].ticks += el;
        if (LP_UNLIKELY(lp_tc_span_hook != NULL)) lp_tc_span_hook(c->id, f->line, t, el);
    }
    f->line = (int32_t)idx;
    f->p_line = p;
    c->lines[idx].hits++;
    th->ovh += lp_tc_fast_line_cost;
    return 1;
}

/* Measures lp_tc_fast_line_cost with the clock `now` on a private frame:
 * rounds of events timed as a whole, one clock read at each end, so the
 * clock's own cost is left out; the least per-event cost of the rounds, in
 * whole ticks, rounded down. It is a warm-cache cost: in a program, events
 * whose data fell out of the cache cost more, and that part stays charged
 * to the lines. The binding calls it when tracing is first turned on, after
 * the interpreter's start-up has kept the CPU busy; a core that clocked up
 * only later would run the path faster than measured (an over-estimate).
 * Returns the cost set, or leaves it unchanged if allocation fails. */
LP_INTERNAL uint64_t lp_tc_calibrate_fast_line(uint64_t (*now)(void));

#endif
