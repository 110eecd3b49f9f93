/* aggregate: GPU work joined to the Python stack that launched it.
 *
 * A launch (an API call that queues GPU work) is noted with its correlation
 * id and the stack id of the launching thread; the device's activity records
 * arrive later, on another thread, carrying the same correlation id. The
 * join hangs each record under its launch stack as a leaf frame named after
 * the work (a kernel's name, "[memcpy HtoD]", ...) and adds its device time
 * and bytes to that leaf's row. Vendor-neutral: CUPTI (collect/gpu/cupti.c)
 * and Level Zero (collect/gpu/levelzero.c) both feed it.
 *
 * Context: note/lookup from any thread, lock-free, no malloc (a fixed ring
 * of 64-bit slots: the correlation id's high bits, flags and the stack id,
 * one atomic exchange each). join: any thread (the runtimes' buffer
 * threads), no malloc.
 *
 * Late records: CUDA 13 keeps one activity buffer per thread, so a thread
 * that launches little may hand its records back long after 2^18 later
 * launches reused its slots. A launch whose slot is reused before any of
 * its records arrived is therefore kept in a second, fixed table (a hash of
 * LP_GPU_WAIT_SLOTS launches under a spin lock, touched only on that rare
 * path and on ring misses) until its records come. That table ages out its
 * oldest launch when full: counted ("aged_out"), never silent. Nested calls
 * (the driver call under a runtime call: its records carry the outer id)
 * and failed calls are not kept: no record is expected for them. */
#ifndef LPROF_AGGREGATE_GPU_JOIN_H
#define LPROF_AGGREGATE_GPU_JOIN_H

#include <stdint.h>

#include "common/base.h"

typedef enum { LP_GPU_KERNEL = 0, LP_GPU_MEMCPY = 1, LP_GPU_MEMSET = 2 } lp_gpu_op;
typedef enum { LP_GPU_DIR_OTHER = 0, LP_GPU_DIR_H2D, LP_GPU_DIR_D2H, LP_GPU_DIR_D2D } lp_gpu_dir;

/* One unit of device work, as a backend's activity record says it. */
typedef struct {
    lp_gpu_op op;
    uint32_t correlation;
    uint64_t start_ns, end_ns; /* device timestamps; end < start or both 0: incomplete */
    uint64_t bytes;            /* copies and memsets */
    lp_gpu_dir dir;            /* copies */
    const char *name;          /* kernel name (mangled is fine); may be NULL */
    uint32_t name_len;         /* 0: NUL-terminated */
    uint32_t device;           /* the backend's device index (gpu_trace.h) */
    uint32_t stream;           /* CUDA stream id, Level Zero command list index */
    uint64_t graph_node;       /* the CUDA graph node it ran from (gpu_graph.h), 0 none */
} lp_gpu_activity;

/* Slots in the correlation ring (a power of two). */
#define LP_GPU_CORR_SLOTS (1u << 18)

/* Forget every launch, graph node and counter (no join running). */
LP_INTERNAL void lp_gpu_join_reset(void);
/* Launches kept past their ring slot until a record arrives (power of two). */
#define LP_GPU_WAIT_SLOTS (1u << 16)

/* Records that GPU work of correlation id `corr` was launched from `stack`;
 * its records are expected (kept until one arrives, within bounds). */
LP_INTERNAL void lp_gpu_join_note_launch(uint32_t corr, uint32_t stack);
/* The same for a call nested in the noted launch `primary` (a driver call
 * under a runtime call). Records carry one of the two ids: CUDA 13 with
 * PyTorch's cu130 build gives the driver call's (an H200 run, 2026-11-27),
 * the stand-ins the runtime call's. The two are paired: a record of either
 * counts for both, so neither is left waiting; a nested call is never
 * counted as aged out. */
LP_INTERNAL void lp_gpu_join_note_nested(uint32_t corr, uint32_t stack, uint32_t primary);
/* The call of `corr` failed, or queued nothing (a captured launch): expect
 * no records for it or its pair. */
LP_INTERNAL void lp_gpu_join_forget(uint32_t corr);
/* The launch stack of `corr`, LP_STACK_NONE if unknown or aged out. */
LP_INTERNAL uint32_t lp_gpu_join_lookup(uint32_t corr);
/* Charges one record and stores it in the GPU timeline (gpu_trace.h,
 * with its launch stack; start/end must be CLOCK_MONOTONIC there); returns the leaf stack it was added to, or
 * LP_STACK_NONE for an incomplete record (counted, not added). A record
 * whose launch is unknown goes under the "[GPU work without a launch
 * record]" stack of thread 0, so no device time is dropped. Work of a
 * graph node with a captured stack goes under the graph launch's stack,
 * "[graph replay]" and that captured stack (gpu_graph.h). */
LP_INTERNAL uint32_t lp_gpu_join_add(const lp_gpu_activity *a);

typedef struct {
    uint64_t records;      /* complete records charged */
    uint64_t unattributed; /* of them, without a launch stack */
    uint64_t incomplete;   /* records with no valid time span */
    uint64_t launches;     /* launches noted */
    uint64_t kept;         /* launches kept waiting past their ring slot */
    uint64_t late;         /* records joined to such a kept launch */
    uint64_t aged_out;     /* kept launches dropped, no record arrived */
    uint64_t device_ns;    /* device time of all complete records */
    uint64_t graph_nodes;  /* CUDA graph nodes noted with a captured stack */
    uint64_t graph_full;   /* graph nodes not kept: the node table was full */
    uint64_t graph_joined; /* records charged to a node's captured stack */
    uint64_t graph_missed; /* graph records whose node had none: on the replay line */
    uint64_t first_start_ns, last_end_ns;
} lp_gpu_join_stats;

LP_INTERNAL void lp_gpu_join_get_stats(lp_gpu_join_stats *out);

#endif
