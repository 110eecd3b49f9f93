/* aggregate: the GPU timeline, a bounded store of device work with its
 * device start and end times, for the Chrome trace's device tracks and the
 * per-line GPU idle time (gpu_idle.h).
 *
 * Each record is one unit of device work as the join saw it (kernel, copy,
 * memset), with its times already on CLOCK_MONOTONIC (the backend aligns
 * them: collect/gpu/cupti.c, collect/gpu/levelzero.c), the device and the
 * stream (CUDA) or command list (Level Zero) it ran on, its correlation id,
 * the join's leaf stack (the launch stack extended by the work's frame: its
 * parent is the launch stack, or the "[GPU work without a launch record]"
 * marker) and the CPU time of the launch call (lp_gpu_trace_note_launch).
 *
 * Bounded: a table of capacity records reserved once (address space; pages
 * are touched as records arrive), LP_GPU_TRACE_DEFAULT_CAP unless
 * LPROF_GPU_TRACE_MAX in the environment says otherwise at reset. Records
 * past it are counted (`dropped`), never stored, never silent. Launch times
 * sit in a ring of LP_GPU_CORR_SLOTS 64-bit slots keyed by correlation id
 * (a launch whose slot was reused before its record came has time 0).
 *
 * Context: note_launch and add from any thread, lock-free, no malloc (one
 * atomic exchange or fetch-add each); reset and the readers while no
 * backend delivers (reset: before start; read: after a flush). */
#ifndef LPROF_AGGREGATE_GPU_TRACE_H
#define LPROF_AGGREGATE_GPU_TRACE_H

#include <stdint.h>

#include "aggregate/gpu_join.h"
#include "common/base.h"

typedef struct {
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    uint64_t launch_ns;        /* CLOCK_MONOTONIC of the launch call; 0 unknown */
    uint64_t bytes;
    const char *name; /* interned (gpu_names.h): the join's leaf name */
    uint32_t stack;   /* the join's leaf stack (may be LP_STACK_OVERFLOW) */
    uint32_t correlation;
    uint32_t device, stream;
    uint8_t op, dir;    /* lp_gpu_op, lp_gpu_dir */
    uint8_t attributed; /* 1: the launch was known */
    uint8_t ready;      /* written completely (readers skip 0) */
} lp_gpu_trace_rec;

#define LP_GPU_TRACE_DEFAULT_CAP (1u << 20)
#define LP_GPU_TRACE_MAX_CAP     (1u << 26)

/* Forgets every record and launch time; re-reads LPROF_GPU_TRACE_MAX (a
 * capacity in records, 0 = keep none). Reserves the table on first use;
 * returns 0, or -1 if it cannot be reserved (then every record is dropped). */
LP_INTERNAL int lp_gpu_trace_reset(void);
/* The launch call of `corr` ran at CLOCK_MONOTONIC t_ns. */
LP_INTERNAL void lp_gpu_trace_note_launch(uint32_t corr, uint64_t t_ns);
/* The launch time noted for corr, 0 if unknown. */
LP_INTERNAL uint64_t lp_gpu_trace_launch_time(uint32_t corr);
/* Stores one complete record (the join calls it): `name` the interned leaf
 * name, `leaf` the leaf stack, `attributed` whether the launch was known.
 * Returns 1 if stored, 0 if dropped. */
LP_INTERNAL int lp_gpu_trace_add(const lp_gpu_activity *a, const char *name, uint32_t leaf, int attributed);

/* Records stored (some may not be ready yet while a backend delivers). */
LP_INTERNAL uint32_t lp_gpu_trace_count(void);
LP_INTERNAL const lp_gpu_trace_rec *lp_gpu_trace_at(uint32_t i);
LP_INTERNAL uint32_t lp_gpu_trace_capacity(void);
LP_INTERNAL uint64_t lp_gpu_trace_dropped(void);

#endif
