/* collect: CUDA GPU work per Python stack through CUPTI, loaded at run time.
 * The callback API notes each launch (kernels, graphs, copies, memsets) with
 * the launching thread's stack and correlation id, and device memory
 * allocations and frees; the activity API delivers device times, joined in
 * aggregate/gpu_join.c. No CUDA header or library is needed to build.
 * Design: docs/design-gpu.md. Start/stop: GIL held, one caller. */
#ifndef LPROF_COLLECT_GPU_CUPTI_H
#define LPROF_COLLECT_GPU_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "collect/gpu/gpu_host.h"

/* Loads libcupti (a copy of one of `sonames` already loaded first, then
 * `candidates`, full paths in order, then the sonames), checks the NVIDIA
 * driver, subscribes and enables collection. 0 on success; -1 with a
 * one-line reason in why[] (no driver, no libcupti, CUPTI held by another
 * tool, a CUPTI whose records lprof does not know...). */
LP_INTERNAL int lp_cupti_start(const lp_gpu_host *host, const char *const *candidates, size_t n,
                               const char *const *sonames, size_t nsonames, char *why, size_t why_len);
/* Delivers every complete buffered record (flag 0: a checkpoint). */
LP_INTERNAL void lp_cupti_flush(void);
/* Final forced flush, then disables collection and unsubscribes: each
 * given up after timeout_ms (CUPTI's calls can hang); unsubscribing is
 * tried even when the flush timed out. */
LP_INTERNAL void lp_cupti_stop(unsigned timeout_ms);

typedef struct {
    int active;
    uint32_t version;       /* cuptiGetVersion */
    char library[512];      /* the libcupti file in use */
    uint64_t callbacks;     /* API callbacks taken */
    uint64_t buffers;       /* activity buffers processed */
    uint64_t records;       /* activity records seen (all kinds) */
    uint64_t dropped;       /* records CUPTI dropped */
    uint64_t after_stop;    /* records handed back after stop: counted, not joined */
    uint64_t timer_flushes; /* lprof's periodic cuptiActivityFlushAll(0) calls */
    char layout[96];        /* the record layout read (LP_CUPTI_LAYOUTS) */
    int flush_timed_out;
    int unsubscribe_timed_out;
    int clock_aligned; /* device times put on CLOCK_MONOTONIC by cuptiGetTimestamp */
} lp_cupti_info;

LP_INTERNAL void lp_cupti_get_info(lp_cupti_info *out);

#endif
