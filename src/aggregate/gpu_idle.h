/* aggregate: GPU idle time per traced line (lprof -l --gpu).
 *
 * The line tracer reports every closed line interval through its span hook
 * (tracer_core.h: the code id, the line's index, the closing event's
 * timestamp and the line's program time, in tracer ticks); this module
 * logs them in a bounded table. After the GPU records are in (gpu_trace.h),
 * lp_gpu_idle_compute takes each interval as [end - time, end] and
 * subtracts the part of it covered by GPU work on any stream of any device
 * (the union of the records' [start, end), brought from CLOCK_MONOTONIC
 * onto the tracer's ticks), then sums per (code, line). A line interval's idle time is therefore the wall time
 * of that interval with no device busy, at most the line's own time.
 *
 * Bounded: LP_GPU_IDLE_DEFAULT_CAP intervals (LPROF_GPU_SPANS_MAX in the
 * environment at reset), address space reserved once; past it intervals
 * are counted as dropped (their lines' idle time is then a lower bound,
 * and the listing says so).
 *
 * Context: note from the tracer (one thread at a time: the GIL); reset and
 * compute with the GIL held, the tracer's hook off or on (compute copies). */
#ifndef LPROF_AGGREGATE_GPU_IDLE_H
#define LPROF_AGGREGATE_GPU_IDLE_H

#include <stdint.h>

#include "common/base.h"

#define LP_GPU_IDLE_DEFAULT_CAP (1u << 21)
#define LP_GPU_IDLE_MAX_CAP     (1u << 26)

LP_INTERNAL int lp_gpu_idle_reset(void);
/* One closed line interval: program time `elapsed` ending at `t` (ticks). */
LP_INTERNAL void lp_gpu_idle_note(const void *code, int32_t line, uint64_t t, uint64_t elapsed);
LP_INTERNAL uint64_t lp_gpu_idle_spans(void);   /* intervals logged */
LP_INTERNAL uint64_t lp_gpu_idle_dropped(void); /* intervals past the capacity */

/* Per (code, line) of the logged intervals, in no set order: emit(code,
 * line index, intervals, their time in ticks, of it idle ticks, ud). The
 * GPU records' times become ticks as anchor_tick + (ns - anchor_ns) /
 * ns_per_tick (the intervals stay in the tracer's own ticks: a line idle
 * throughout has exactly its time idle). Returns 0, -1 if memory for the
 * pass is short (nothing emitted), or what emit returned when non-zero
 * (the pass stops there). */
typedef int (*lp_gpu_idle_emit)(const void *code, int32_t line, uint64_t spans, uint64_t span_ticks,
                                uint64_t idle_ticks, void *ud);
LP_INTERNAL int lp_gpu_idle_compute(double ns_per_tick, uint64_t anchor_tick, uint64_t anchor_ns,
                                    lp_gpu_idle_emit emit, void *ud);

/* For tests: the idle ns of [start, end) against the given busy intervals
 * (unsorted, overlapping allowed), the same rule as compute. */
LP_INTERNAL uint64_t lp_gpu_idle_of(uint64_t start, uint64_t end, const uint64_t (*busy)[2], uint32_t n);

#endif
