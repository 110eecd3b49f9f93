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

/* Loads libcupti (already loaded copies first, then `candidates`, full
 * paths in order, then the plain sonames), checks the NVIDIA driver,
 * subscribes and enables collection. 0 on success; -1 with a one-line
 * reason in why[] (no driver, no libcupti, CUPTI held by another tool...). */
LP_INTERNAL int lp_cupti_start(const lp_gpu_host *host, const char *const *candidates, size_t n, char *why,
                               size_t why_len);
/* Delivers every buffered record (forced flush). */
LP_INTERNAL void lp_cupti_flush(void);
/* Final flush (given up after timeout_ms: CUPTI's flush can hang), then
 * disables collection and unsubscribes. */
LP_INTERNAL void lp_cupti_stop(unsigned timeout_ms);

typedef struct {
    int active;
    uint32_t version;       /* cuptiGetVersion */
    char library[512];      /* the libcupti file in use */
    uint64_t callbacks;     /* API callbacks taken */
    uint64_t buffers;       /* activity buffers processed */
    uint64_t records;       /* activity records seen (all kinds) */
    uint64_t dropped;       /* records CUPTI dropped */
    int flush_timed_out;
} lp_cupti_info;

LP_INTERNAL void lp_cupti_get_info(lp_cupti_info *out);

#endif
