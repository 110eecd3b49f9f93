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
    uint64_t appends;       /* launches and copies seen */
    uint64_t records;       /* of them, timed and joined */
    uint64_t pending;       /* waiting for their device times */
    uint64_t lost;          /* not timed: the sum of the next four and reused */
    uint64_t no_event;      /* of them, no event to time them (lprof's pool used up, a list made before
                         * lprof started, the pending table full) */
    uint64_t unfinished;    /* still running at the end, or their event destroyed first */
    uint64_t no_timestamps; /* their event could not give kernel timestamps */
    uint64_t retried;       /* appends that found lprof's event pool full: swept and retried */
    uint64_t reused;        /* of the lost: their event signalled or reset again while running */
    uint64_t untimed_calls; /* appends of device work lprof does not time (image copies, graphs) */
    uint64_t reexecuted;    /* work in regular command lists executed again: timed once, counted after */
    char hooked[1024];      /* the calls past the 1.0 table the loader let lprof hook, comma-separated */
    char loader_version[32];
    int loader_newer;     /* a loader newer than the calls lprof knows (1.32) */
    int list_sync_hooked; /* zeCommandListHostSynchronize is traced (loader has it) */
    int layer_turned_on;  /* the tracing layer was off: lprof turned it on at run time (loader 1.16+) */
    char clock[32];       /* how device ticks were put on CLOCK_MONOTONIC: "zeDeviceGetGlobalTimestamps",
                           * "first append", "" (no work timed) */
} lp_levelzero_info;

LP_INTERNAL void lp_levelzero_get_info(lp_levelzero_info *out);

#endif
