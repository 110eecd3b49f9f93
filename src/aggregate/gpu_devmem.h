/* aggregate: device memory per stack. Allocations and frees of GPU memory
 * (cudaMalloc/cuMemAlloc, zeMemAlloc*) are noted with the launching stack;
 * the account keeps live blocks, the process's device total and its peak,
 * and a bounded log of events from which lp_gpu_devmem_finish computes the
 * bytes each stack held live at the peak (GPU_PEAK, memray's high-water
 * view) after the run, off the hot path.
 *
 * Context: any thread, GIL or not; a short spin lock; no malloc (tables are
 * mapped once, MAP_NORESERVE). Not for signal handlers. */
#ifndef LPROF_AGGREGATE_GPU_DEVMEM_H
#define LPROF_AGGREGATE_GPU_DEVMEM_H

#include <stdint.h>

#include "common/base.h"

/* Forget every block and event (no writer running). 0, or -1 if the tables
 * could not be mapped (then nothing is recorded). */
LP_INTERNAL int lp_gpu_devmem_reset(void);
/* `size` bytes at device address `ptr` were allocated from `stack`. */
LP_INTERNAL void lp_gpu_devmem_alloc(uint64_t ptr, uint64_t size, uint32_t stack);
/* The block at `ptr` was freed (unknown pointers are counted, not failed). */
LP_INTERNAL void lp_gpu_devmem_free(uint64_t ptr);
/* Sets GPU_PEAK of every stack to its live bytes at the peak. */
LP_INTERNAL void lp_gpu_devmem_finish(void);

typedef struct {
    uint64_t live_bytes, peak_bytes;
    uint64_t allocs, frees, unknown_frees;
    uint64_t dropped; /* blocks not tracked: the table was full */
    int peak_exact;   /* 0: the event log overflowed before the peak */
} lp_gpu_devmem_stats;

LP_INTERNAL void lp_gpu_devmem_get_stats(lp_gpu_devmem_stats *out);

#endif
