/* collect: the Level Zero collector (see levelzero.h). Everything runs in
 * the loader's tracing callbacks on the program's threads, under one mutex
 * (not a hot path of the CPU side: one lock per launch, copy or sync). Calls
 * lprof itself makes into Level Zero from a callback are traced too; a
 * thread-local flag makes them pass through. */
#define _GNU_SOURCE
#include "collect/gpu/levelzero.h"

#include <stdio.h>
#include <string.h>

#if __has_include(<level_zero/ze_api.h>) && __has_include(<level_zero/layers/zel_tracing_api.h>)
#define LP_HAVE_LEVEL_ZERO 1
#endif

#ifndef LP_HAVE_LEVEL_ZERO
int lp_levelzero_start(const lp_gpu_host *host, const char *loader, char *why, size_t why_len) {
    (void)host;
    (void)loader;
    snprintf(why, why_len, "lprof was built without the Level Zero headers (Debian: libze-dev)");
    return -1;
}
void lp_levelzero_flush(void) {}
void lp_levelzero_stop(void) {}
void lp_levelzero_get_info(lp_levelzero_info *out) { memset(out, 0, sizeof *out); }
#else

#include <dlfcn.h>
/* before the loader's headers: loader 1.32's ze_loader.h uses bool without it */
#include <stdbool.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/loader/ze_loader.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdlib.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_devmem.h"
#include "aggregate/gpu_join.h"
#include "aggregate/gpu_names.h"
#include "aggregate/gpu_trace.h"
#include "common/clock.h"

#define MAX_PENDING 16384
#define MAX_LISTS   4096
#define MAX_DEVICES 64
#define MAX_POOLS   16
#define POOL_EVENTS 1024

static struct {
    ze_result_t (*init)(ze_init_flags_t);
    ze_result_t (*tracer_create)(const zel_tracer_desc_t *, zel_tracer_handle_t *);
    ze_result_t (*set_prologues)(zel_tracer_handle_t, zel_core_callbacks_t *);
    ze_result_t (*set_epilogues)(zel_tracer_handle_t, zel_core_callbacks_t *);
    ze_result_t (*set_enabled)(zel_tracer_handle_t, ze_bool_t);
    ze_result_t (*tracer_destroy)(zel_tracer_handle_t);
    /* the run-time switch of the tracing layer (loader 1.16 and newer), and
     * its state (1.26.2 and newer); NULL in older loaders */
    ze_result_t (*layer_enable)(void);
    ze_result_t (*layer_disable)(void);
    ze_result_t (*layer_state)(bool *);
    ze_result_t (*loader_versions)(size_t *, zel_component_version_t *);
    ze_result_t (*pool_create)(ze_context_handle_t, const ze_event_pool_desc_t *, uint32_t,
                               ze_device_handle_t *, ze_event_pool_handle_t *);
    ze_result_t (*event_create)(ze_event_pool_handle_t, const ze_event_desc_t *, ze_event_handle_t *);
    ze_result_t (*query_status)(ze_event_handle_t);
    ze_result_t (*query_timestamp)(ze_event_handle_t, ze_kernel_timestamp_result_t *);
    ze_result_t (*host_reset)(ze_event_handle_t);
    ze_result_t (*kernel_name)(ze_kernel_handle_t, size_t *, char *);
    ze_result_t (*device_properties)(ze_device_handle_t, ze_device_properties_t *);
    ze_result_t (*global_timestamps)(ze_device_handle_t, uint64_t *, uint64_t *); /* NULL: loader lacks it */
    ze_result_t (*alloc_properties)(ze_context_handle_t, const void *, ze_memory_allocation_properties_t *,
                                    ze_device_handle_t *);
} fn;

typedef struct {
    ze_event_handle_t event;
    ze_command_list_handle_t list; /* a regular list: lprof's event stays with it (see release) */
    uint32_t correlation;
    lp_gpu_op op;
    lp_gpu_dir dir;
    uint64_t bytes;
    const char *name;
    ze_device_handle_t device;
    int pool, slot; /* lprof's own event: its pool and slot; pool -1: the program's */
    int used;
    uint32_t queue;     /* the command list's serial (the trace's stream) */
    uint64_t launch_ns; /* CLOCK_MONOTONIC at the append */
} pending;

typedef struct {
    ze_command_list_handle_t list;
    ze_context_handle_t context;
    ze_device_handle_t device;
    int immediate;
    uint64_t appends;    /* work appended to a regular list since its creation or reset */
    uint64_t executions; /* times a regular list was executed since then */
    uint32_t serial;     /* 1, 2, ... in the order lprof saw the lists made */
} list_info;

/* A device and how its ticks become CLOCK_MONOTONIC ns: one anchor pair
 * (device ticks, CLOCK_MONOTONIC ns) from zeDeviceGetGlobalTimestamps at
 * first sight, else the first timed work's start taken as its append time
 * (anchor "first append"). */
typedef struct {
    ze_device_handle_t device;
    double ns_per_tick;
    uint64_t mask;
    uint32_t index;        /* the trace's device id: 0, 1, ... in order seen */
    int anchored;          /* 0 none yet, 1 global timestamps, 2 first append */
    uint64_t anchor_ticks; /* device ticks (as the device counts them) */
    uint64_t anchor_ns;    /* CLOCK_MONOTONIC at anchor_ticks */
} device_info;

typedef struct {
    ze_context_handle_t context;
    ze_event_pool_handle_t pool;
    ze_event_handle_t events[POOL_EVENTS];
    unsigned char busy[POOL_EVENTS];
    /* the regular list whose recorded work signals the event: every
     * execution signals it again, so it is not handed to other work
     * until that list is reset or destroyed */
    ze_command_list_handle_t owner[POOL_EVENTS];
} own_pool;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static lp_gpu_host host;
static zel_tracer_handle_t tracer;
static int active;
static int layer_turned_on; /* lprof called zelEnableTracingLayer: it turns it off at stop */
static uint32_t next_correlation = 1;
static pending pend[MAX_PENDING];
static size_t pend_high; /* no used entry at or above this index: scans stop there */
static list_info lists[MAX_LISTS];
static size_t nlists;
static uint32_t list_serial;
static device_info devices[MAX_DEVICES];
static size_t ndevices;
static own_pool pools[MAX_POOLS];
static size_t npools;
static lp_levelzero_info info;
static __thread int in_lprof; /* a call lprof itself makes: pass through */

static list_info *find_list(ze_command_list_handle_t l) {
    for (size_t i = 0; i < nlists; i++)
        if (lists[i].list == l) return &lists[i];
    return NULL;
}

static device_info *find_device(ze_device_handle_t d) {
    for (size_t i = 0; i < ndevices; i++)
        if (devices[i].device == d) return &devices[i];
    if (ndevices == MAX_DEVICES || !d) return NULL;
    device_info di = {d, 1.0, ~0ull, (uint32_t)ndevices, 0, 0, 0};
    ze_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2; /* timerResolution in cycles per second */
    if (fn.device_properties(d, &p) == ZE_RESULT_SUCCESS && p.timerResolution) {
        di.ns_per_tick = 1e9 / (double)p.timerResolution;
    } else {
        memset(&p, 0, sizeof p);
        p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES; /* in nanoseconds per tick */
        if (fn.device_properties(d, &p) == ZE_RESULT_SUCCESS && p.timerResolution)
            di.ns_per_tick = (double)p.timerResolution;
    }
    if (p.kernelTimestampValidBits > 0 && p.kernelTimestampValidBits < 64)
        di.mask = (1ull << p.kernelTimestampValidBits) - 1;
    /* host/device pair: the device's global timer against CLOCK_MONOTONIC
     * read around the call (the driver's host value is on a clock of its
     * own choosing, so lprof reads its own) */
    uint64_t host_ts = 0, dev_ts = 0, best = UINT64_MAX;
    for (int i = 0; fn.global_timestamps && i < 3; i++) {
        uint64_t m0 = lp_clock_monotonic_ns();
        if (fn.global_timestamps(d, &host_ts, &dev_ts) != ZE_RESULT_SUCCESS) break;
        uint64_t m1 = lp_clock_monotonic_ns();
        if (m1 - m0 < best) {
            best = m1 - m0;
            di.anchored = 1;
            di.anchor_ticks = dev_ts;
            di.anchor_ns = m0 + (m1 - m0) / 2;
        }
    }
    if (di.anchored && !info.clock[0]) snprintf(info.clock, sizeof info.clock, "zeDeviceGetGlobalTimestamps");
    devices[ndevices] = di;
    return &devices[ndevices++];
}

/* An lprof event (kernel timestamps, host visible) for a launch that gave
 * none; pool index and slot in *pool, *slot. NULL when none is free. */
static ze_event_handle_t take_event(ze_context_handle_t ctx, int *pool, int *slot) {
    size_t p = 0;
    while (p < npools && pools[p].context != ctx) p++;
    if (p == npools) {
        if (npools == MAX_POOLS) return NULL;
        ze_event_pool_desc_t desc = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                                     ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                     POOL_EVENTS};
        if (fn.pool_create(ctx, &desc, 0, NULL, &pools[p].pool) != ZE_RESULT_SUCCESS) return NULL;
        pools[p].context = ctx;
        memset(pools[p].events, 0, sizeof pools[p].events);
        memset(pools[p].busy, 0, sizeof pools[p].busy);
        memset(pools[p].owner, 0, sizeof pools[p].owner);
        npools++;
    }
    for (int s = 0; s < POOL_EVENTS; s++) {
        if (pools[p].busy[s]) continue;
        if (!pools[p].events[s]) {
            ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, (uint32_t)s, ZE_EVENT_SCOPE_FLAG_HOST,
                                  ZE_EVENT_SCOPE_FLAG_HOST};
            if (fn.event_create(pools[p].pool, &ed, &pools[p].events[s]) != ZE_RESULT_SUCCESS) return NULL;
        }
        pools[p].busy[s] = 1;
        *pool = (int)p;
        *slot = s;
        return pools[p].events[s];
    }
    return NULL;
}

static void release(pending *e) {
    if (e->pool >= 0) {
        if (e->list) {
            pools[e->pool].owner[e->slot] = e->list; /* kept until the list is reset or destroyed */
        } else {
            (void)fn.host_reset(e->event);
            pools[e->pool].busy[e->slot] = 0;
        }
    }
    e->used = 0;
    info.pending--;
}

/* A regular list reset or destroyed: its recorded work is gone, and the
 * events lprof gave that work are free again. Lock held. */
static void list_gone(ze_command_list_handle_t l, int destroyed) {
    for (size_t p = 0; p < npools; p++)
        for (int s = 0; s < POOL_EVENTS; s++)
            if (pools[p].owner[s] == l) {
                (void)fn.host_reset(pools[p].events[s]);
                pools[p].owner[s] = NULL;
                pools[p].busy[s] = 0;
            }
    for (size_t i = 0; i < pend_high; i++) /* recorded, never executed */
        if (pend[i].used && pend[i].list == l) {
            info.lost++;
            info.unfinished++;
            pend[i].list = NULL;
            release(&pend[i]);
        }
    list_info *li = find_list(l);
    if (!li) return;
    if (destroyed) {
        *li = lists[--nlists];
    } else {
        li->appends = 0;
        li->executions = 0;
    }
}

/* Device ticks (kernel timestamps, `mask` bits valid) of work appended at
 * CLOCK_MONOTONIC launch_ns to CLOCK_MONOTONIC ns. The ticks wrap; the
 * work began after its append, so the unwrapped value is the first one at
 * or after the device's tick count at the append (less an eighth of the
 * wrap period for the pair's error). A device without an anchor yet takes
 * this work's start as its append time (anchor "first append"). */
static uint64_t device_to_monotonic(device_info *d, uint64_t ticks, uint64_t launch_ns) {
    ticks &= d->mask;
    if (!d->anchored) {
        d->anchored = 2;
        d->anchor_ticks = ticks;
        d->anchor_ns = launch_ns;
        if (!info.clock[0]) snprintf(info.clock, sizeof info.clock, "first append");
    }
    double at = (double)d->anchor_ticks + ((double)launch_ns - (double)d->anchor_ns) / d->ns_per_tick;
    uint64_t margin = d->mask >> 3;
    uint64_t from = at > (double)margin ? (uint64_t)at - margin : 0;
    uint64_t full = from + ((ticks - from) & d->mask);
    double ns = (double)d->anchor_ns + (double)(int64_t)(full - d->anchor_ticks) * d->ns_per_tick;
    return ns > 0 ? (uint64_t)(ns + 0.5) : 0;
}

/* Joins every finished launch; with `final`, the rest are lost. Lock held. */
static void sweep(int final) {
    for (size_t i = 0; i < pend_high && info.pending; i++) {
        pending *e = &pend[i];
        if (!e->used) continue;
        if (fn.query_status(e->event) != ZE_RESULT_SUCCESS) {
            if (final) {
                info.lost++;
                info.unfinished++;
                release(e);
            }
            continue;
        }
        ze_kernel_timestamp_result_t ts;
        device_info *d = find_device(e->device);
        if (fn.query_timestamp(e->event, &ts) == ZE_RESULT_SUCCESS && d) {
            uint64_t ticks = (ts.global.kernelEnd - ts.global.kernelStart) & d->mask;
            lp_gpu_activity a = {.op = e->op,
                                 .correlation = e->correlation,
                                 .bytes = e->bytes,
                                 .dir = e->dir,
                                 .name = e->name,
                                 .device = d->index,
                                 .stream = e->queue};
            a.start_ns = device_to_monotonic(d, ts.global.kernelStart, e->launch_ns);
            a.end_ns = a.start_ns + (uint64_t)((double)ticks * d->ns_per_tick);
            lp_gpu_join_add(&a);
            info.records++;
        } else {
            info.lost++; /* e.g. the program's event pool had no timestamps */
            info.no_timestamps++;
        }
        release(e);
    }
    size_t high = 0;
    for (size_t i = 0; i < pend_high; i++)
        if (pend[i].used) high = i + 1;
    pend_high = high;
}

/* The program signals or resets `ev` again (a runtime reusing its events):
 * a launch still waiting on it would read the later work's times. Read
 * what has finished first; a launch still running on it is counted as
 * reused (lost), never given another launch's time. Lock held. */
static void event_reused(ze_event_handle_t ev) {
    if (!ev || !info.pending) return;
    int waiting = 0;
    for (size_t i = 0; i < pend_high && !waiting; i++) waiting = pend[i].used && pend[i].event == ev;
    if (!waiting) return;
    sweep(0);
    for (size_t i = 0; i < pend_high; i++)
        if (pend[i].used && pend[i].event == ev) {
            info.reused++;
            info.lost++;
            release(&pend[i]);
        }
}

/* Notes a launch or copy about to be appended; its signal event is
 * replaced by an lprof event when the program gave none. When lprof's
 * pool is used up (work appended without syncs that lprof sees, e.g. an
 * immediate list synchronised by zeCommandListHostSynchronize), finished
 * launches are read to free their events, and the append tries again. */
static void note_append(ze_command_list_handle_t list, ze_event_handle_t *signal, lp_gpu_op op,
                        const char *name, uint64_t bytes, lp_gpu_dir dir, void **instance) {
    uint32_t stack = host.launch_stack();
    lp_agg_add(stack, LP_M_GPU_LAUNCHES, 1);
    pthread_mutex_lock(&lock);
    info.appends++;
    uint32_t corr = next_correlation++;
    if (next_correlation == 0) next_correlation = 1;
    uint64_t now = lp_clock_monotonic_ns();
    lp_gpu_join_note_launch(corr, stack);
    lp_gpu_trace_note_launch(corr, now);
    if (info.pending > MAX_PENDING / 2) sweep(0);
    event_reused(*signal);
    list_info *li = find_list(list);
    if (li && !li->immediate) li->appends++;
    size_t i = 0;
    while (i < MAX_PENDING && pend[i].used) i++;
    pending e = {.event = *signal,
                 .list = li && !li->immediate ? list : NULL,
                 .correlation = corr,
                 .op = op,
                 .dir = dir,
                 .bytes = bytes,
                 .name = name,
                 .device = li ? li->device : NULL,
                 .pool = -1,
                 .slot = -1,
                 .used = 1,
                 .queue = li ? li->serial : 0,
                 .launch_ns = now};
    if (!e.event && li && !(e.event = take_event(li->context, &e.pool, &e.slot))) {
        sweep(0); /* lprof's pool is used up: free the events of finished work */
        e.event = take_event(li->context, &e.pool, &e.slot);
        if (e.event) info.retried++;
    }
    if (i == MAX_PENDING || !e.event) {
        info.lost++;
        info.no_event++; /* lprof's events used up, a list lprof did not see made, or its table full */
        lp_gpu_join_forget(corr);
        *instance = NULL;
    } else {
        pend[i] = e;
        if (i + 1 > pend_high) pend_high = i + 1;
        *signal = e.event;
        info.pending++;
        *instance = (void *)(uintptr_t)(i + 1);
    }
    pthread_mutex_unlock(&lock);
}

/* An append that failed queues nothing: forget it. */
static void drop_append(ze_result_t result, void **instance) {
    if (result == ZE_RESULT_SUCCESS || !*instance) return;
    pthread_mutex_lock(&lock);
    pending *e = &pend[(uintptr_t)*instance - 1];
    e->list = NULL; /* nothing recorded: the event is free at once */
    if (e->used) release(e);
    pthread_mutex_unlock(&lock);
}

#define ENTER_CB()                                                           \
    do {                                                                     \
        if (in_lprof || !__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return; \
        in_lprof = 1;                                                        \
    } while (0)
#define LEAVE_CB() (in_lprof = 0)

static const char *kernel_name(ze_kernel_handle_t k) {
    char buf[1024];
    size_t size = sizeof buf;
    if (!k || !fn.kernel_name || fn.kernel_name(k, &size, buf) != ZE_RESULT_SUCCESS) return NULL;
    return lp_gpu_name(buf, size < sizeof buf ? size : sizeof buf - 1);
}

static void launch(ze_command_list_handle_t list, ze_kernel_handle_t k, ze_event_handle_t *signal,
                   void **inst) {
    note_append(list, signal, LP_GPU_KERNEL, kernel_name(k), 0, LP_GPU_DIR_OTHER, inst);
}

/* Every append call's epilogue: an append that failed queued nothing. */
#define AFTER(fname, ptype)                                               \
    static void fname(ptype *p, ze_result_t r, void *user, void **inst) { \
        (void)p;                                                          \
        (void)user;                                                       \
        ENTER_CB();                                                       \
        drop_append(r, inst);                                             \
        LEAVE_CB();                                                       \
    }

static void on_launch(ze_command_list_append_launch_kernel_params_t *p, ze_result_t r, void *user,
                      void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    launch(*p->phCommandList, *p->phKernel, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_launch, ze_command_list_append_launch_kernel_params_t)

static void on_cooperative(ze_command_list_append_launch_cooperative_kernel_params_t *p, ze_result_t r,
                           void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    launch(*p->phCommandList, *p->phKernel, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_cooperative, ze_command_list_append_launch_cooperative_kernel_params_t)

static void on_indirect(ze_command_list_append_launch_kernel_indirect_params_t *p, ze_result_t r, void *user,
                        void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    launch(*p->phCommandList, *p->phKernel, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_indirect, ze_command_list_append_launch_kernel_indirect_params_t)

/* several kernels, one signal event: one unit of work, named by the first
 * kernel (their count lies in device memory, unread) */
static void on_multiple(ze_command_list_append_launch_multiple_kernels_indirect_params_t *p, ze_result_t r,
                        void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    ze_kernel_handle_t k = *p->pnumKernels && *p->pphKernels ? (*p->pphKernels)[0] : NULL;
    launch(*p->phCommandList, k, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_multiple, ze_command_list_append_launch_multiple_kernels_indirect_params_t)

/* Calls newer than the 1.0 callback table, registered one by one where the
 * loader has them (loader versions in docs/design-gpu.md). Their params as
 * the Level Zero spec declares them (1.14: launch with parameters or
 * arguments; 1.16: copy and fill with parameters; 1.9: immediate append of
 * command lists): declared here, since lprof builds against older headers. */
typedef struct {
    ze_command_list_handle_t *phCommandList;
    ze_kernel_handle_t *phKernel;
    const ze_group_count_t *pgroupCounts;
    const void *pgroupSizes;
    void ***ppArguments;
    const void **ppNext;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_launch_with_arguments_params;
typedef struct {
    ze_command_list_handle_t *phCommandList;
    ze_kernel_handle_t *phKernel;
    const ze_group_count_t **ppGroupCounts;
    const void **ppNext;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_launch_with_parameters_params;
typedef struct {
    ze_command_list_handle_t *phCommandList;
    void **pdstptr;
    const void **psrcptr;
    size_t *psize;
    const void **ppNext;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_copy_with_parameters_params;
typedef struct {
    ze_command_list_handle_t *phCommandList;
    void **pptr;
    const void **ppattern;
    size_t *ppattern_size;
    size_t *psize;
    const void **ppNext;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_fill_with_parameters_params;
typedef struct { /* ...ImmediateAppendCommandListsExp; ...WithParameters has ppNext before the event */
    ze_command_list_handle_t *phCommandListImmediate;
    uint32_t *pnumCommandLists;
    ze_command_list_handle_t **pphCommandLists;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_immediate_append_lists_params;
typedef struct {
    ze_command_list_handle_t *phCommandListImmediate;
    uint32_t *pnumCommandLists;
    ze_command_list_handle_t **pphCommandLists;
    const void **ppNext;
    ze_event_handle_t *phSignalEvent;
    uint32_t *pnumWaitEvents;
    ze_event_handle_t **pphWaitEvents;
} lp_ze_immediate_append_lists_with_parameters_params;

static void on_launch_args(lp_ze_launch_with_arguments_params *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    launch(*p->phCommandList, *p->phKernel, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_launch_args, lp_ze_launch_with_arguments_params)

static void on_launch_params(lp_ze_launch_with_parameters_params *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    launch(*p->phCommandList, *p->phKernel, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_launch_params, lp_ze_launch_with_parameters_params)

static int on_device(ze_context_handle_t ctx, const void *ptr) {
    ze_memory_allocation_properties_t props;
    memset(&props, 0, sizeof props);
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    if (!fn.alloc_properties || fn.alloc_properties(ctx, ptr, &props, NULL) != ZE_RESULT_SUCCESS) return 0;
    return props.type == ZE_MEMORY_TYPE_DEVICE || props.type == ZE_MEMORY_TYPE_SHARED;
}

static void copy(ze_command_list_handle_t list, const void *dst, const void *src, uint64_t bytes,
                 ze_event_handle_t *signal, void **inst) {
    pthread_mutex_lock(&lock);
    const list_info *li = find_list(list);
    ze_context_handle_t ctx = li ? li->context : NULL;
    pthread_mutex_unlock(&lock);
    int from = on_device(ctx, src), to = on_device(ctx, dst);
    lp_gpu_dir dir = from && to ? LP_GPU_DIR_D2D
                     : to       ? LP_GPU_DIR_H2D
                     : from     ? LP_GPU_DIR_D2H
                                : LP_GPU_DIR_OTHER;
    note_append(list, signal, LP_GPU_MEMCPY, NULL, bytes, dir, inst);
}

static void on_copy(ze_command_list_append_memory_copy_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    copy(*p->phCommandList, *p->pdstptr, *p->psrcptr, (uint64_t)*p->psize, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_copy, ze_command_list_append_memory_copy_params_t)

static void on_copy_params(lp_ze_copy_with_parameters_params *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    copy(*p->phCommandList, *p->pdstptr, *p->psrcptr, (uint64_t)*p->psize, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_copy_params, lp_ze_copy_with_parameters_params)

/* a rectangular copy: the bytes of its source region (depth 0: 2D) */
static void on_copy_region(ze_command_list_append_memory_copy_region_params_t *p, ze_result_t r, void *user,
                           void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    const ze_copy_region_t *sr = *p->psrcRegion;
    uint64_t bytes = sr ? (uint64_t)sr->width * sr->height * (sr->depth ? sr->depth : 1) : 0;
    copy(*p->phCommandList, *p->pdstptr, *p->psrcptr, bytes, p->phSignalEvent, inst);
    LEAVE_CB();
}
AFTER(after_copy_region, ze_command_list_append_memory_copy_region_params_t)

/* from another context's memory: its direction is not looked up */
static void on_copy_context(ze_command_list_append_memory_copy_from_context_params_t *p, ze_result_t r,
                            void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    note_append(*p->phCommandList, p->phSignalEvent, LP_GPU_MEMCPY, NULL, (uint64_t)*p->psize,
                LP_GPU_DIR_OTHER, inst);
    LEAVE_CB();
}
AFTER(after_copy_context, ze_command_list_append_memory_copy_from_context_params_t)

/* fills go to the memset columns, as CUDA's memsets */
static void on_fill(ze_command_list_append_memory_fill_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    note_append(*p->phCommandList, p->phSignalEvent, LP_GPU_MEMSET, NULL, (uint64_t)*p->psize,
                LP_GPU_DIR_OTHER, inst);
    LEAVE_CB();
}
AFTER(after_fill, ze_command_list_append_memory_fill_params_t)

static void on_fill_params(lp_ze_fill_with_parameters_params *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    ENTER_CB();
    note_append(*p->phCommandList, p->phSignalEvent, LP_GPU_MEMSET, NULL, (uint64_t)*p->psize,
                LP_GPU_DIR_OTHER, inst);
    LEAVE_CB();
}
AFTER(after_fill_params, lp_ze_fill_with_parameters_params)

/* A barrier, a signal or an appended set of lists signals its event again:
 * a launch still waiting on that event is read first, or counted reused. */
static void signalled_again(ze_event_handle_t ev) {
    if (!ev) return;
    pthread_mutex_lock(&lock);
    event_reused(ev);
    pthread_mutex_unlock(&lock);
}
static void on_barrier(ze_command_list_append_barrier_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    signalled_again(*p->phSignalEvent);
    LEAVE_CB();
}
static void on_ranges_barrier(ze_command_list_append_memory_ranges_barrier_params_t *p, ze_result_t r,
                              void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    signalled_again(*p->phSignalEvent);
    LEAVE_CB();
}
static void on_signal_event(ze_command_list_append_signal_event_params_t *p, ze_result_t r, void *u,
                            void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    signalled_again(*p->phEvent);
    LEAVE_CB();
}

/* Regular lists run again: their work was timed at its first execution
 * (lprof's events were attached when it was recorded); every later
 * execution is counted, not timed. Finished work is read first, so the
 * first execution's times are not overwritten. */
static void executed(uint32_t n, ze_command_list_handle_t *ls) {
    pthread_mutex_lock(&lock);
    int again = 0;
    for (uint32_t k = 0; ls && k < n; k++) {
        list_info *li = find_list(ls[k]);
        if (!li || li->immediate) continue;
        if (li->executions++) {
            info.reexecuted += li->appends;
            again = 1;
        }
    }
    if (again) sweep(0);
    pthread_mutex_unlock(&lock);
}
static void on_execute(ze_command_queue_execute_command_lists_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    executed(*p->pnumCommandLists, *p->pphCommandLists);
    LEAVE_CB();
}
static void on_immediate_append(lp_ze_immediate_append_lists_params *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    signalled_again(*p->phSignalEvent);
    executed(*p->pnumCommandLists, *p->pphCommandLists);
    LEAVE_CB();
}
static void on_immediate_append_params(lp_ze_immediate_append_lists_with_parameters_params *p, ze_result_t r,
                                       void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    signalled_again(*p->phSignalEvent);
    executed(*p->pnumCommandLists, *p->pphCommandLists);
    LEAVE_CB();
}
static void on_list_reset(ze_command_list_reset_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    sweep(0);
    list_gone(*p->phCommandList, 0);
    pthread_mutex_unlock(&lock);
    LEAVE_CB();
}
static void on_list_destroy(ze_command_list_destroy_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    sweep(0);
    list_gone(*p->phCommandList, 1);
    pthread_mutex_unlock(&lock);
    LEAVE_CB();
}

/* Device work lprof does not time (image copies, graphs, ray-tracing
 * structure copies): counted, so the listing says it is missing. */
static void on_untimed(void *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    info.untimed_calls++;
    pthread_mutex_unlock(&lock);
    LEAVE_CB();
}

static void remember_list(ze_command_list_handle_t *out, ze_context_handle_t ctx, ze_device_handle_t dev,
                          int immediate) {
    if (!out || !*out) return;
    pthread_mutex_lock(&lock);
    list_info *li = find_list(*out); /* a handle the driver gave again after a destroy lprof missed */
    if (li) *li = (list_info){*out, ctx, dev, immediate, 0, 0, ++list_serial};
    else if (nlists < MAX_LISTS)
        lists[nlists++] = (list_info){*out, ctx, dev, immediate, 0, 0, ++list_serial};
    if (dev) (void)find_device(dev); /* its clock anchor, close to the program's first work */
    pthread_mutex_unlock(&lock);
}

static void after_list_create(ze_command_list_create_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)user;
    (void)inst;
    ENTER_CB();
    if (r == ZE_RESULT_SUCCESS) remember_list(*p->pphCommandList, *p->phContext, *p->phDevice, 0);
    LEAVE_CB();
}

static void after_immediate_create(ze_command_list_create_immediate_params_t *p, ze_result_t r, void *user,
                                   void **inst) {
    (void)user;
    (void)inst;
    ENTER_CB();
    if (r == ZE_RESULT_SUCCESS) remember_list(*p->pphCommandList, *p->phContext, *p->phDevice, 1);
    LEAVE_CB();
}

/* The program's own pools get kernel timestamps too (results unchanged;
 * not for IPC pools, where the flag is not allowed). */
static __thread ze_event_pool_desc_t pool_desc_copy;
static void on_pool_create(ze_event_pool_create_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r;
    (void)user;
    (void)inst;
    ENTER_CB();
    const ze_event_pool_desc_t *d = *p->pdesc;
    if (d && !(d->flags & ZE_EVENT_POOL_FLAG_IPC) && !(d->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP)) {
        pool_desc_copy = *d;
        pool_desc_copy.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
        *p->pdesc = &pool_desc_copy;
    }
    LEAVE_CB();
}

static void sweep_now(void) {
    pthread_mutex_lock(&lock);
    sweep(0);
    pthread_mutex_unlock(&lock);
}

/* Device work is known finished (the program waited) or an event is about
 * to be reset or destroyed: read the times first. */
static void after_event_sync(ze_event_host_synchronize_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void after_queue_sync(ze_command_queue_synchronize_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void after_fence_sync(ze_fence_host_synchronize_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void on_event_reset(ze_event_host_reset_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
/* zeCommandListAppendEventReset: the device resets the event before later
 * work signals it again. */
static void on_append_event_reset(ze_command_list_append_event_reset_params_t *p, ze_result_t r, void *u,
                                  void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    event_reused(*p->phEvent);
    pthread_mutex_unlock(&lock);
    LEAVE_CB();
}

/* zeCommandListHostSynchronize (immediate lists, SYCL's wait): not in the
 * 1.0-era callback table; registered through the per-API function where the
 * loader has it. Its params, as ze_api.h (1.9+) declares them. */
typedef struct {
    ze_command_list_handle_t *phCommandList;
    uint64_t *ptimeout;
} lp_ze_list_sync_params;
static void after_list_sync(lp_ze_list_sync_params *p, ze_result_t r, void *u, void **i) {
    (void)p;
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}

static void on_event_destroy(ze_event_destroy_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    sweep(0);
    for (size_t k = 0; k < MAX_PENDING; k++) /* still running: its event goes away */
        if (pend[k].used && pend[k].event == *p->phEvent) {
            info.lost++;
            info.unfinished++;
            release(&pend[k]);
        }
    pthread_mutex_unlock(&lock);
    LEAVE_CB();
}

static void after_alloc(ze_context_handle_t ctx, size_t size, void **out, ze_result_t r) {
    (void)ctx;
    if (r != ZE_RESULT_SUCCESS || !out || !*out) return;
    lp_gpu_devmem_alloc((uint64_t)(uintptr_t)*out, size, host.launch_stack());
}
static void after_alloc_device(ze_mem_alloc_device_params_t *p, ze_result_t r, void *u, void **i) {
    (void)u;
    (void)i;
    ENTER_CB();
    after_alloc(*p->phContext, *p->psize, *p->ppptr, r);
    LEAVE_CB();
}
static void after_alloc_shared(ze_mem_alloc_shared_params_t *p, ze_result_t r, void *u, void **i) {
    (void)u;
    (void)i;
    ENTER_CB();
    after_alloc(*p->phContext, *p->psize, *p->ppptr, r);
    LEAVE_CB();
}
static void on_free(ze_mem_free_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r;
    (void)u;
    (void)i;
    ENTER_CB();
    lp_gpu_devmem_free((uint64_t)(uintptr_t)*p->pptr);
    LEAVE_CB();
}

/* The per-API registration functions (loader 1.10+): (tracer, 0 prologue
 * or 1 epilogue, callback). zel_tracer_reg_t and the newer callback types
 * are not in Debian 12's headers: declared here as lprof calls them. */
typedef void (*lp_ze_cb)(void *, ze_result_t, void *, void **);
typedef ze_result_t (*lp_ze_register_fn)(zel_tracer_handle_t, int, lp_ze_cb);
typedef struct {
    const char *call;  /* zelTracer<call>RegisterCallback */
    const char *since; /* the first loader that exports it */
    lp_ze_cb pro, epi;
} lp_ze_per_api;
#define CB(f)              ((lp_ze_cb)(void (*)(void))(f))
static const lp_ze_per_api per_api[] = {
    {"CommandListHostSynchronize", "1.10", NULL, CB(after_list_sync)},
    {"CommandListAppendLaunchKernelWithArguments", "1.25", CB(on_launch_args), CB(after_launch_args)},
    {"CommandListAppendLaunchKernelWithParameters", "1.25", CB(on_launch_params), CB(after_launch_params)},
    {"CommandListAppendMemoryCopyWithParameters", "1.29", CB(on_copy_params), CB(after_copy_params)},
    {"CommandListAppendMemoryFillWithParameters", "1.29", CB(on_fill_params), CB(after_fill_params)},
    {"CommandListImmediateAppendCommandListsExp", "1.16", CB(on_immediate_append), NULL},
    {"CommandListImmediateAppendCommandListsWithParameters", "1.29", CB(on_immediate_append_params), NULL},
    {"CommandListAppendImageCopyToMemoryExt", "1.6.2", CB(on_untimed), NULL},
    {"CommandListAppendImageCopyFromMemoryExt", "1.6.2", CB(on_untimed), NULL},
    {"RTASBuilderCommandListAppendCopyExt", "1.22", CB(on_untimed), NULL},
    {"CommandListAppendGraphExt", "1.32", CB(on_untimed), NULL},
};
/* the newest loader whose append calls lprof knows (above and the 1.0 table) */
#define KNOWN_LOADER_MAJOR 1
#define KNOWN_LOADER_MINOR 32

#define BIND(field, name) (*(void **)&fn.field = dlsym(lib, name))

int lp_levelzero_start(const lp_gpu_host *h, const char *loader, char *why, size_t why_len) {
    if (active) return 0;
    void *lib = dlopen(loader ? loader : "libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_len, "no Level Zero loader (libze_loader.so.1 not found)");
        return -1;
    }
    memset(&fn, 0, sizeof fn);
    BIND(init, "zeInit");
    BIND(tracer_create, "zelTracerCreate");
    BIND(set_prologues, "zelTracerSetPrologues");
    BIND(set_epilogues, "zelTracerSetEpilogues");
    BIND(set_enabled, "zelTracerSetEnabled");
    BIND(tracer_destroy, "zelTracerDestroy");
    BIND(layer_enable, "zelEnableTracingLayer");
    BIND(layer_disable, "zelDisableTracingLayer");
    BIND(layer_state, "zelGetTracingLayerState");
    BIND(loader_versions, "zelLoaderGetVersions");
    BIND(pool_create, "zeEventPoolCreate");
    BIND(event_create, "zeEventCreate");
    BIND(query_status, "zeEventQueryStatus");
    BIND(query_timestamp, "zeEventQueryKernelTimestamp");
    BIND(host_reset, "zeEventHostReset");
    BIND(kernel_name, "zeKernelGetName");
    BIND(device_properties, "zeDeviceGetProperties");
    BIND(global_timestamps, "zeDeviceGetGlobalTimestamps");
    BIND(alloc_properties, "zeMemGetAllocProperties");
    if (!fn.init || !fn.tracer_create || !fn.set_prologues || !fn.set_epilogues || !fn.set_enabled ||
        !fn.pool_create || !fn.event_create || !fn.query_status || !fn.query_timestamp || !fn.host_reset ||
        !fn.device_properties) {
        snprintf(why, why_len, "the Level Zero loader lacks the tracing functions lprof needs");
        return -1;
    }
    Dl_info where;
    memset(&info, 0, sizeof info);
    if (dladdr(*(void **)&fn.init, &where) && where.dli_fname)
        snprintf(info.loader, sizeof info.loader, "%s", where.dli_fname);
    ze_result_t r = fn.init(0);
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(why, why_len, "no Level Zero driver (zeInit: 0x%x)", (unsigned)r);
        return -1;
    }
    /* the loader's own version: one newer than lprof knows may have append
     * calls lprof does not hook (said in the listing) */
    zel_component_version_t vers[16];
    size_t nvers = 0;
    if (fn.loader_versions && fn.loader_versions(&nvers, NULL) == ZE_RESULT_SUCCESS && nvers &&
        nvers <= sizeof vers / sizeof vers[0] && fn.loader_versions(&nvers, vers) == ZE_RESULT_SUCCESS) {
        for (size_t k = 0; k < nvers; k++) {
            if (strncmp(vers[k].component_name, "loader", sizeof vers[k].component_name) != 0) continue;
            zel_version_t v = vers[k].component_lib_version;
            snprintf(info.loader_version, sizeof info.loader_version, "%d.%d.%d", v.major, v.minor, v.patch);
            info.loader_newer = v.major > KNOWN_LOADER_MAJOR ||
                                (v.major == KNOWN_LOADER_MAJOR && v.minor > KNOWN_LOADER_MINOR);
        }
    }
    /* The loader's rule: the layer is on from the first zeInit when the
     * variable is exactly "1". A user who set it to anything else turned
     * the layer off: lprof says so and leaves it off, with any loader. */
    const char *env = getenv("ZE_ENABLE_TRACING_LAYER");
    int env_on = env && strcmp(env, "1") == 0;
    if (env && !env_on) {
        snprintf(why, why_len,
                 "the loader's tracing layer is off (ZE_ENABLE_TRACING_LAYER=%.40s in the environment; "
                 "unset it or set it to 1)",
                 env);
        return -1;
    }
    zel_tracer_desc_t desc = {ZEL_STRUCTURE_TYPE_TRACER_DESC, NULL, NULL};
    r = fn.tracer_create(&desc, &tracer);
    if (r != ZE_RESULT_SUCCESS) {
        /* before loader 1.16 the tracer functions work only where the layer
         * was loaded, i.e. the variable was set at the first zeInit */
        snprintf(why, why_len,
                 "the loader's tracing layer is off (ZE_ENABLE_TRACING_LAYER=1 must be set before "
                 "the first zeInit; zelTracerCreate: 0x%x)",
                 (unsigned)r);
        return -1;
    }
    /* From loader 1.16 on the layer's library is always loaded, so the
     * tracer above is made even where the layer is off, and its callbacks
     * would never come. Off here means the process's first zeInit ran
     * before the variable was set: turned on at run time instead (counted
     * by the loader; turned off again at stop). 1.16 to 1.26.1 cannot say
     * the state: the variable's rule above is all there is. */
    bool layer_on = env_on;
    if (fn.layer_state) {
        layer_on = false; /* the loader writes it only where its context exists */
        if (fn.layer_state(&layer_on) != ZE_RESULT_SUCCESS) layer_on = env_on;
    } else if (!fn.layer_enable) {
        layer_on = true; /* before 1.16: the tracer exists only with the layer on */
    }
    layer_turned_on = 0;
    if (!layer_on) {
        r = fn.layer_enable ? fn.layer_enable() : ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        if (r != ZE_RESULT_SUCCESS) {
            if (fn.tracer_destroy) fn.tracer_destroy(tracer);
            snprintf(why, why_len,
                     "the loader's tracing layer is off and could not be turned on "
                     "(zelEnableTracingLayer: 0x%x)",
                     (unsigned)r);
            return -1;
        }
        layer_turned_on = 1;
    }
    static zel_core_callbacks_t pro, epi;
    memset(&pro, 0, sizeof pro);
    memset(&epi, 0, sizeof epi);
    pro.CommandList.pfnAppendLaunchKernelCb = on_launch;
    epi.CommandList.pfnAppendLaunchKernelCb = after_launch;
    pro.CommandList.pfnAppendMemoryCopyCb = on_copy;
    epi.CommandList.pfnAppendMemoryCopyCb = after_copy;
    epi.CommandList.pfnCreateCb = after_list_create;
    epi.CommandList.pfnCreateImmediateCb = after_immediate_create;
    pro.EventPool.pfnCreateCb = on_pool_create;
    epi.Event.pfnHostSynchronizeCb = after_event_sync;
    epi.CommandQueue.pfnSynchronizeCb = after_queue_sync;
    epi.Fence.pfnHostSynchronizeCb = after_fence_sync;
    pro.Event.pfnHostResetCb = on_event_reset;
    pro.Event.pfnDestroyCb = on_event_destroy;
    epi.Mem.pfnAllocDeviceCb = after_alloc_device;
    epi.Mem.pfnAllocSharedCb = after_alloc_shared;
    pro.Mem.pfnFreeCb = on_free;
    pro.CommandList.pfnAppendEventResetCb = on_append_event_reset;
    pro.CommandList.pfnAppendLaunchCooperativeKernelCb = on_cooperative;
    epi.CommandList.pfnAppendLaunchCooperativeKernelCb = after_cooperative;
    pro.CommandList.pfnAppendLaunchKernelIndirectCb = on_indirect;
    epi.CommandList.pfnAppendLaunchKernelIndirectCb = after_indirect;
    pro.CommandList.pfnAppendLaunchMultipleKernelsIndirectCb = on_multiple;
    epi.CommandList.pfnAppendLaunchMultipleKernelsIndirectCb = after_multiple;
    pro.CommandList.pfnAppendMemoryFillCb = on_fill;
    epi.CommandList.pfnAppendMemoryFillCb = after_fill;
    pro.CommandList.pfnAppendMemoryCopyRegionCb = on_copy_region;
    epi.CommandList.pfnAppendMemoryCopyRegionCb = after_copy_region;
    pro.CommandList.pfnAppendMemoryCopyFromContextCb = on_copy_context;
    epi.CommandList.pfnAppendMemoryCopyFromContextCb = after_copy_context;
    pro.CommandList.pfnAppendBarrierCb = on_barrier;
    pro.CommandList.pfnAppendMemoryRangesBarrierCb = on_ranges_barrier;
    pro.CommandList.pfnAppendSignalEventCb = on_signal_event;
    pro.CommandList.pfnResetCb = on_list_reset;
    pro.CommandList.pfnDestroyCb = on_list_destroy;
    pro.CommandQueue.pfnExecuteCommandListsCb = on_execute;
    pro.CommandList.pfnAppendImageCopyCb = (ze_pfnCommandListAppendImageCopyCb_t)(void (*)(void))on_untimed;
    pro.CommandList.pfnAppendImageCopyRegionCb =
        (ze_pfnCommandListAppendImageCopyRegionCb_t)(void (*)(void))on_untimed;
    pro.CommandList.pfnAppendImageCopyToMemoryCb =
        (ze_pfnCommandListAppendImageCopyToMemoryCb_t)(void (*)(void))on_untimed;
    pro.CommandList.pfnAppendImageCopyFromMemoryCb =
        (ze_pfnCommandListAppendImageCopyFromMemoryCb_t)(void (*)(void))on_untimed;
    host = *h;
    int ok = fn.set_prologues(tracer, &pro) == ZE_RESULT_SUCCESS &&
             fn.set_epilogues(tracer, &epi) == ZE_RESULT_SUCCESS;
    int list_sync_hooked = 0;
    /* The calls past the 1.0 table, each through its own registration
     * function where the loader exports it; like the prologue and epilogue
     * sets, refused once the tracer is enabled. */
    for (size_t k = 0; ok && k < sizeof per_api / sizeof per_api[0]; k++) {
        const lp_ze_per_api *c = &per_api[k];
        char name[128];
        snprintf(name, sizeof name, "zelTracer%sRegisterCallback", c->call);
        lp_ze_register_fn reg = NULL;
        void *sym = dlsym(lib, name);
        memcpy(&reg, &sym, sizeof reg);
        if (!reg) continue;
        int done = (!c->pro || reg(tracer, 0, c->pro) == ZE_RESULT_SUCCESS) &&
                   (!c->epi || reg(tracer, 1, c->epi) == ZE_RESULT_SUCCESS);
        if (!done) continue;
        size_t used = strlen(info.hooked);
        snprintf(info.hooked + used, sizeof info.hooked - used, "%s%s", used ? "," : "", c->call);
        if (c->epi == CB(after_list_sync)) list_sync_hooked = 1;
    }
    if (!ok || fn.set_enabled(tracer, 1) != ZE_RESULT_SUCCESS) {
        if (fn.tracer_destroy) fn.tracer_destroy(tracer);
        if (layer_turned_on && fn.layer_disable) (void)fn.layer_disable();
        layer_turned_on = 0;
        snprintf(why, why_len, "could not enable the Level Zero tracer");
        return -1;
    }
    info.list_sync_hooked = list_sync_hooked;
    info.layer_turned_on = layer_turned_on;
    info.active = 1;
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
    return 0;
}

void lp_levelzero_flush(void) {
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return;
    in_lprof = 1;
    sweep_now();
    in_lprof = 0;
}

void lp_levelzero_stop(void) {
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return;
    in_lprof = 1;
    pthread_mutex_lock(&lock);
    sweep(1);
    pthread_mutex_unlock(&lock);
    (void)fn.set_enabled(tracer, 0);
    if (layer_turned_on && fn.layer_disable) (void)fn.layer_disable();
    layer_turned_on = 0;
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
    info.active = 0;
    in_lprof = 0;
}

void lp_levelzero_get_info(lp_levelzero_info *out) {
    pthread_mutex_lock(&lock);
    *out = info;
    pthread_mutex_unlock(&lock);
}
#endif
