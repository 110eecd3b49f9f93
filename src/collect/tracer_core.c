/* tracer: shadow stacks and per-code line arrays (see tracer_core.h). */
#include "collect/tracer_core.h"

#include "collect/suspended.h"
#include "common/hash.h"
#include "common/own_alloc.h"

#include <stdlib.h>
#include <string.h>

LP_INTERNAL uint64_t lp_tc_epoch = 1;
LP_INTERNAL uint64_t lp_tc_fast_line_cost = 0;
LP_INTERNAL lp_tc_span_fn lp_tc_span_hook = NULL;

/* Registry: records in registration order + open-addressing pointer set. */
static lp_tc_code **codes;
static size_t ncodes, codes_cap;
static lp_tc_code **table; /* power-of-two slots, NULL = empty */
static size_t table_cap;
static uint64_t next_serial = 1;
static lp_suspended_table waits; /* suspended frames' open lines (Wait column) */

static size_t slot_of(const void *id, size_t cap) { return (size_t)lp_hash_ptr(id) & (cap - 1); }

lp_tc_code *lp_tc_find(const void *id) {
    if (table_cap == 0) return NULL;
    for (size_t i = slot_of(id, table_cap);; i = (i + 1) & (table_cap - 1)) {
        lp_tc_code *c = table[i];
        if (c == NULL) return NULL;
        if (c->id == id) return c;
    }
}

static int table_grow(void) {
    size_t cap = table_cap ? table_cap * 2 : 64;
    lp_tc_code **t = calloc(cap, sizeof *t);
    if (t == NULL) return -1;
    for (size_t k = 0; k < ncodes; k++) {
        size_t i = slot_of(codes[k]->id, cap);
        while (t[i] != NULL) i = (i + 1) & (cap - 1);
        t[i] = codes[k];
    }
    free(table);
    table = t;
    table_cap = cap;
    return 0;
}

lp_tc_code *lp_tc_register(const void *id, int firstlineno, void *user, int *is_new) {
    *is_new = 0;
    lp_tc_code *c = lp_tc_find(id);
    if (c != NULL) return c;
    /* Keep the set at most half full so probes stay short. */
    if ((ncodes + 1) * 2 > table_cap && table_grow() < 0) return NULL;
    if (ncodes == codes_cap) {
        size_t cap = codes_cap ? codes_cap * 2 : 32;
        lp_tc_code **v = realloc(codes, cap * sizeof *v);
        if (v == NULL) return NULL;
        codes = v;
        codes_cap = cap;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->id = id;
    c->user = user;
    c->firstlineno = firstlineno;
    codes[ncodes++] = c;
    size_t i = slot_of(id, table_cap);
    while (table[i] != NULL) i = (i + 1) & (table_cap - 1);
    table[i] = c;
    *is_new = 1;
    return c;
}

size_t lp_tc_ncodes(void) { return ncodes; }
lp_tc_code *lp_tc_code_at(size_t i) { return i < ncodes ? codes[i] : NULL; }

void lp_tc_clear(void) {
    for (size_t k = 0; k < ncodes; k++) {
        lp_tc_code *c = codes[k];
        if (c->lines) memset(c->lines, 0, c->nlines * sizeof *c->lines);
        c->total_ticks = 0;
    }
    lp_suspended_reset(&waits);
}

void lp_tc_new_epoch(void) {
    lp_tc_epoch++;
    for (size_t k = 0; k < ncodes; k++) {
        codes[k]->owner = 0;
        codes[k]->depth = 0;
    }
}

void lp_tc_reset_registry(void) {
    for (size_t k = 0; k < ncodes; k++) {
        free(codes[k]->lines);
        free(codes[k]);
    }
    free(codes);
    free(table);
    codes = NULL;
    table = NULL;
    ncodes = codes_cap = table_cap = 0;
    lp_tc_epoch++;
    lp_suspended_reset(&waits);
}

lp_tc_thread *lp_tc_thread_new(void) {
    /* runs on the program's thread, under its frame: lp_own_* hides it
     * from the memory hooks */
    lp_tc_thread *th = lp_own_calloc(1, sizeof *th);
    if (th == NULL) return NULL;
    th->cap = 64;
    th->stack = lp_own_malloc(th->cap * sizeof *th->stack);
    if (th->stack == NULL) {
        free(th);
        return NULL;
    }
    th->serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
    th->epoch = lp_tc_epoch;
    return th;
}

void lp_tc_thread_free(lp_tc_thread *th) {
    if (th == NULL) return;
    free(th->stack);
    free(th);
}

/* Stale stack from before the last on/off switch: forget it without
 * touching code records (their recursion counts were reset). */
static inline void check_epoch(lp_tc_thread *th) {
    if (LP_UNLIKELY(th->epoch != lp_tc_epoch)) {
        th->depth = 0;
        th->uncounted = 0;
        th->epoch = lp_tc_epoch;
    }
}

static int ensure_line(lp_tc_code *c, uint32_t idx) {
    if (LP_LIKELY(idx < c->nlines)) return 0;
    uint32_t n = c->nlines ? c->nlines : 16;
    while (n <= idx) n *= 2;
    lp_tc_linestat *v = lp_own_realloc(c->lines, (size_t)n * sizeof *v);
    if (v == NULL) return -1;
    memset(v + c->nlines, 0, (size_t)(n - c->nlines) * sizeof *v);
    c->lines = v;
    c->nlines = n;
    return 0;
}

/* Opens `line` in frame f at t; counts a hit unless resuming. */
static void open_line(lp_tc_thread *th, lp_tc_frame *f, int line, uint64_t t, int hit) {
    int64_t idx = (int64_t)line - f->code->firstlineno;
    f->line = -1;
    if (idx < 0 || idx > INT32_MAX / 2 || ensure_line(f->code, (uint32_t)idx) < 0) return;
    f->line = (int32_t)idx;
    f->p_line = lp_tc_program_clock(th, t);
    if (hit) f->code->lines[idx].hits++;
}

static inline void close_line(lp_tc_thread *th, lp_tc_frame *f, uint64_t t) {
    if (f->line >= 0) {
        uint64_t el = lp_tc_program_elapsed(f->p_line, lp_tc_program_clock(th, t));
        f->code->lines[f->line].ticks += el;
        if (LP_UNLIKELY(lp_tc_span_hook != NULL)) lp_tc_span_hook(f->code->id, f->line, t, el);
        f->line = -1;
    }
}

static int on_stack(const lp_tc_thread *th, const lp_tc_code *c) {
    for (uint32_t i = th->depth; i-- > 0;)
        if (th->stack[i].code == c) return 1;
    return 0;
}

static lp_tc_frame *push(lp_tc_thread *th, lp_tc_code *c, uint64_t t) {
    if (LP_UNLIKELY(th->depth == th->cap)) {
        uint32_t cap = th->cap * 2;
        lp_tc_frame *s = lp_own_realloc(th->stack, (size_t)cap * sizeof *s);
        if (s == NULL) {
            th->dropped++;
            return NULL;
        }
        th->stack = s;
        th->cap = cap;
    }
    lp_tc_frame *f = &th->stack[th->depth++];
    f->code = c;
    f->line = -1;
    /* Recursion: code->depth counts this code's frames on its owner thread;
     * a thread that cannot use the counter scans its own stack instead. */
    if (LP_LIKELY(th->uncounted == 0 && (c->depth == 0 || c->owner == th->serial))) {
        f->counted = 1;
        f->outer = c->depth == 0;
        c->owner = th->serial;
        c->depth++;
    } else {
        f->counted = 0;
        th->depth--;
        f->outer = !on_stack(th, c);
        th->depth++;
        th->uncounted++;
    }
    f->p_enter = lp_tc_program_clock(th, t);
    return f;
}

static void pop(lp_tc_thread *th, uint64_t t) {
    lp_tc_frame *f = &th->stack[--th->depth];
    lp_tc_code *c = f->code;
    close_line(th, f, t);
    if (f->outer) c->total_ticks += lp_tc_program_elapsed(f->p_enter, lp_tc_program_clock(th, t));
    if (f->counted) {
        if (c->owner == th->serial && c->depth > 0) c->depth--;
    } else if (th->uncounted > 0) {
        th->uncounted--;
    }
}

void lp_tc_enter(lp_tc_thread *th, lp_tc_code *code, int resume_line, uint64_t t) {
    check_epoch(th);
    lp_tc_frame *f = push(th, code, t);
    if (f != NULL && resume_line >= 0) open_line(th, f, resume_line, t, 0);
}

void lp_tc_line(lp_tc_thread *th, lp_tc_code *code, int line, uint64_t t) {
    check_epoch(th);
    lp_tc_frame *f = th->depth ? &th->stack[th->depth - 1] : NULL;
    if (LP_UNLIKELY(f == NULL || f->code != code)) {
        /* A frame that started before tracing was on: adopt it. */
        f = push(th, code, t);
        if (f == NULL) return;
    } else {
        close_line(th, f, t);
    }
    open_line(th, f, line, t, 1);
}

/* The depth+1 of the innermost frame of `code`, 0 if none. */
static uint32_t innermost(const lp_tc_thread *th, const lp_tc_code *code) {
    uint32_t i = th->depth;
    while (i > 0 && th->stack[i - 1].code != code) i--;
    return i;
}

/* The innermost frame of `code` stops (return, unwind, or a suspension of
 * `frame` when it is not NULL, remembered with its open line). */
static void stop(lp_tc_thread *th, lp_tc_code *code, const void *frame, uint64_t t) {
    check_epoch(th);
    uint32_t i = innermost(th, code);
    if (i == 0) return; /* not ours (started before tracing, no line yet) */
    const lp_tc_frame *f = &th->stack[i - 1];
    if (frame != NULL && f->line >= 0) {
        lp_suspended e = {frame, code, t, lp_tc_program_clock(th, t), th->serial, f->line, 0, 0};
        (void)lp_suspended_put(&waits, &e);
    }
    /* Frames above it lost their exit event: close them at t too. */
    while (th->depth >= i) pop(th, t);
}

void lp_tc_exit(lp_tc_thread *th, lp_tc_code *code, uint64_t t) { stop(th, code, NULL, t); }

void lp_tc_suspend(lp_tc_thread *th, lp_tc_code *code, const void *frame, uint64_t t) {
    stop(th, code, frame, t);
}

void lp_tc_resume(lp_tc_thread *th, lp_tc_code *code, const void *frame, int resume_line, uint64_t t) {
    lp_tc_enter(th, code, resume_line, t);
    lp_suspended e;
    if (!lp_suspended_take(&waits, frame, code, &e) || e.line < 0 || (uint32_t)e.line >= code->nlines) return;
    uint64_t wait = e.serial == th->serial ? lp_tc_program_elapsed(e.p, lp_tc_program_clock(th, t))
                                           : (t > e.t ? t - e.t : 0);
    code->lines[e.line].wait_ticks += wait;
}

uint64_t lp_tc_waits_evicted(void) { return waits.evicted; }

#define CALIBRATE_ROUNDS 7
#define CALIBRATE_EVENTS 256

uint64_t lp_tc_calibrate_fast_line(uint64_t (*now)(void)) {
    /* A code record outside the registry and a thread of its own: the
     * path runs as in a program's loop, touching nothing of the program's. */
    lp_tc_linestat lines[4] = {{0, 0, 0}};
    lp_tc_code code = {.id = &code, .firstlineno = 1, .nlines = 4, .lines = lines};
    lp_tc_thread *th = lp_tc_thread_new();
    if (th == NULL) return lp_tc_fast_line_cost;
    lp_tc_enter(th, &code, -1, 0);
    uint64_t saved = lp_tc_fast_line_cost, best = UINT64_MAX;
    lp_tc_fast_line_cost = 0;
    for (int r = 0; r < CALIBRATE_ROUNDS; r++) {
        uint64_t t0 = now();
        for (int i = 0; i < CALIBRATE_EVENTS; i++) {
            /* the barrier keeps the compiler from merging events */
            __asm__ __volatile__("" ::: "memory");
            if (!lp_tc_line_fast(th, &code, 2 + (i & 1), t0 + (uint64_t)i)) break;
        }
        uint64_t t1 = now();
        if (t1 > t0 && (t1 - t0) / CALIBRATE_EVENTS < best) best = (t1 - t0) / CALIBRATE_EVENTS;
    }
    lp_tc_thread_free(th);
    lp_tc_fast_line_cost = best == UINT64_MAX ? saved : best;
    return lp_tc_fast_line_cost;
}
