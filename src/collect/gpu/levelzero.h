/* collect: Intel GPU work per Python stack through Level Zero, loaded at run
 * time (libze_loader.so.1). The loader's tracing layer (on when
 * ZE_ENABLE_TRACING_LAYER=1 was set before the process's first zeInit: the
 * lprof command sets it; loaders 1.16 and newer can also turn it on at run
 * time, which lprof does where it is off and the user did not set the
 * variable) calls lprof before each kernel launch and copy: the launching
 * stack is noted, an event with kernel timestamps is attached where the
 * program gave none, and the device times are read when the program
 * synchronizes (or at stop), then joined in aggregate/gpu_join.c. Device
 * memory from zeMemAllocDevice/Shared and zeMemFree. Built without Level
 * Zero headers it only says so. Design: docs/design-gpu.md. */
#ifndef LPROF_COLLECT_GPU_LEVELZERO_H
#define LPROF_COLLECT_GPU_LEVELZERO_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "collect/gpu/gpu_host.h"

/* Loads the loader (`loader` path, or the soname when NULL), runs zeInit and
 * installs the tracer. 0, or -1 with a one-line reason in why[]. GIL not
 * needed (zeInit may block). */
LP_INTERNAL int lp_levelzero_start(const lp_gpu_host *host, const char *loader, char *why, size_t why_len);
/* Reads the device times of every finished launch now. */
LP_INTERNAL void lp_levelzero_flush(void);
/* Final read (launches still running are counted as lost), tracer off. */
LP_INTERNAL void lp_levelzero_stop(void);

typedef struct {
    int active;
    char loader[512];
    uint64_t appends;   /* launches and copies seen */
    uint64_t records;   /* of them, timed and joined */
    uint64_t pending;   /* waiting for their device times */
    uint64_t lost;      /* never finished, or no slot to track them */
    uint64_t retried;   /* appends that found lprof's event pool full: swept and retried */
    uint64_t reused;    /* of the lost: their event signalled or reset again while running */
    int list_sync_hooked; /* zeCommandListHostSynchronize is traced (loader has it) */
    int layer_turned_on;  /* the tracing layer was off: lprof turned it on at run time (loader 1.16+) */
} lp_levelzero_info;

LP_INTERNAL void lp_levelzero_get_info(lp_levelzero_info *out);

#endif
