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
    (void)host; (void)loader;
    snprintf(why, why_len, "lprof was built without the Level Zero headers (Debian: libze-dev)");
    return -1;
}
void lp_levelzero_flush(void) {}
void lp_levelzero_stop(void) {}
void lp_levelzero_get_info(lp_levelzero_info *out) { memset(out, 0, sizeof *out); }
#else

#include <dlfcn.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_devmem.h"
#include "aggregate/gpu_join.h"
#include "aggregate/gpu_names.h"

#define MAX_PENDING 16384
#define MAX_LISTS 4096
#define MAX_DEVICES 64
#define MAX_POOLS 16
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
    ze_result_t (*pool_create)(ze_context_handle_t, const ze_event_pool_desc_t *, uint32_t, ze_device_handle_t *,
                               ze_event_pool_handle_t *);
    ze_result_t (*event_create)(ze_event_pool_handle_t, const ze_event_desc_t *, ze_event_handle_t *);
    ze_result_t (*query_status)(ze_event_handle_t);
    ze_result_t (*query_timestamp)(ze_event_handle_t, ze_kernel_timestamp_result_t *);
    ze_result_t (*host_reset)(ze_event_handle_t);
    ze_result_t (*kernel_name)(ze_kernel_handle_t, size_t *, char *);
    ze_result_t (*device_properties)(ze_device_handle_t, ze_device_properties_t *);
    ze_result_t (*alloc_properties)(ze_context_handle_t, const void *, ze_memory_allocation_properties_t *,
                                    ze_device_handle_t *);
} fn;

typedef struct {
    ze_event_handle_t event;
    uint32_t correlation;
    lp_gpu_op op;
    lp_gpu_dir dir;
    uint64_t bytes;
    const char *name;
    ze_device_handle_t device;
    int pool, slot; /* lprof's own event: its pool and slot; pool -1: the program's */
    int used;
} pending;

typedef struct {
    ze_command_list_handle_t list;
    ze_context_handle_t context;
    ze_device_handle_t device;
} list_info;

typedef struct {
    ze_device_handle_t device;
    double ns_per_tick;
    uint64_t mask;
} device_info;

typedef struct {
    ze_context_handle_t context;
    ze_event_pool_handle_t pool;
    ze_event_handle_t events[POOL_EVENTS];
    unsigned char busy[POOL_EVENTS];
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
static device_info devices[MAX_DEVICES];
static size_t ndevices;
static own_pool pools[MAX_POOLS];
static size_t npools;
static lp_levelzero_info info;
static __thread int in_lprof; /* a call lprof itself makes: pass through */

static const list_info *find_list(ze_command_list_handle_t l) {
    for (size_t i = 0; i < nlists; i++)
        if (lists[i].list == l) return &lists[i];
    return NULL;
}

static const device_info *find_device(ze_device_handle_t d) {
    for (size_t i = 0; i < ndevices; i++)
        if (devices[i].device == d) return &devices[i];
    if (ndevices == MAX_DEVICES || !d) return NULL;
    device_info di = {d, 1.0, ~0ull};
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
        (void)fn.host_reset(e->event);
        pools[e->pool].busy[e->slot] = 0;
    }
    e->used = 0;
    info.pending--;
}

/* Joins every finished launch; with `final`, the rest are lost. Lock held. */
static void sweep(int final) {
    for (size_t i = 0; i < pend_high && info.pending; i++) {
        pending *e = &pend[i];
        if (!e->used) continue;
        if (fn.query_status(e->event) != ZE_RESULT_SUCCESS) {
            if (final) {
                info.lost++;
                release(e);
            }
            continue;
        }
        ze_kernel_timestamp_result_t ts;
        const device_info *d = find_device(e->device);
        if (fn.query_timestamp(e->event, &ts) == ZE_RESULT_SUCCESS && d) {
            uint64_t ticks = (ts.global.kernelEnd - ts.global.kernelStart) & d->mask;
            lp_gpu_activity a = {e->op, e->correlation, 0, 0, e->bytes, e->dir, e->name, 0};
            a.start_ns = (uint64_t)((double)ts.global.kernelStart * d->ns_per_tick);
            a.end_ns = a.start_ns + (uint64_t)((double)ticks * d->ns_per_tick);
            lp_gpu_join_add(&a);
            info.records++;
        } else {
            info.lost++; /* e.g. the program's event pool had no timestamps */
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
    lp_gpu_join_note_launch(corr, stack);
    if (info.pending > MAX_PENDING / 2) sweep(0);
    event_reused(*signal);
    const list_info *li = find_list(list);
    size_t i = 0;
    while (i < MAX_PENDING && pend[i].used) i++;
    pending e = {*signal, corr, op, dir, bytes, name, li ? li->device : NULL, -1, -1, 1};
    if (!e.event && li && !(e.event = take_event(li->context, &e.pool, &e.slot))) {
        sweep(0); /* lprof's pool is used up: free the events of finished work */
        e.event = take_event(li->context, &e.pool, &e.slot);
        if (e.event) info.retried++;
    }
    if (i == MAX_PENDING || !e.event) {
        info.lost++;
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
    if (e->used) release(e);
    pthread_mutex_unlock(&lock);
}

#define ENTER_CB() do { if (in_lprof || !__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return; in_lprof = 1; } while (0)
#define LEAVE_CB() (in_lprof = 0)

static void on_launch(ze_command_list_append_launch_kernel_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r; (void)user;
    ENTER_CB();
    char buf[1024];
    size_t size = sizeof buf;
    const char *name = NULL;
    if (fn.kernel_name && fn.kernel_name(*p->phKernel, &size, buf) == ZE_RESULT_SUCCESS)
        name = lp_gpu_name(buf, size < sizeof buf ? size : sizeof buf - 1);
    note_append(*p->phCommandList, p->phSignalEvent, LP_GPU_KERNEL, name, 0, LP_GPU_DIR_OTHER, inst);
    LEAVE_CB();
}

static void after_launch(ze_command_list_append_launch_kernel_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)p; (void)user;
    ENTER_CB();
    drop_append(r, inst);
    LEAVE_CB();
}

static int on_device(ze_context_handle_t ctx, const void *ptr) {
    ze_memory_allocation_properties_t props;
    memset(&props, 0, sizeof props);
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    if (!fn.alloc_properties || fn.alloc_properties(ctx, ptr, &props, NULL) != ZE_RESULT_SUCCESS) return 0;
    return props.type == ZE_MEMORY_TYPE_DEVICE || props.type == ZE_MEMORY_TYPE_SHARED;
}

static void on_copy(ze_command_list_append_memory_copy_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r; (void)user;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    const list_info *li = find_list(*p->phCommandList);
    ze_context_handle_t ctx = li ? li->context : NULL;
    pthread_mutex_unlock(&lock);
    int src = on_device(ctx, *p->psrcptr), dst = on_device(ctx, *p->pdstptr);
    lp_gpu_dir dir = src && dst ? LP_GPU_DIR_D2D : dst ? LP_GPU_DIR_H2D : src ? LP_GPU_DIR_D2H : LP_GPU_DIR_OTHER;
    note_append(*p->phCommandList, p->phSignalEvent, LP_GPU_MEMCPY, NULL, (uint64_t)*p->psize, dir, inst);
    LEAVE_CB();
}

static void after_copy(ze_command_list_append_memory_copy_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)p; (void)user;
    ENTER_CB();
    drop_append(r, inst);
    LEAVE_CB();
}

static void remember_list(ze_command_list_handle_t *out, ze_context_handle_t ctx, ze_device_handle_t dev) {
    if (!out || !*out) return;
    pthread_mutex_lock(&lock);
    if (nlists < MAX_LISTS && !find_list(*out)) lists[nlists++] = (list_info){*out, ctx, dev};
    pthread_mutex_unlock(&lock);
}

static void after_list_create(ze_command_list_create_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)user; (void)inst;
    ENTER_CB();
    if (r == ZE_RESULT_SUCCESS) remember_list(*p->pphCommandList, *p->phContext, *p->phDevice);
    LEAVE_CB();
}

static void after_immediate_create(ze_command_list_create_immediate_params_t *p, ze_result_t r, void *user,
                                   void **inst) {
    (void)user; (void)inst;
    ENTER_CB();
    if (r == ZE_RESULT_SUCCESS) remember_list(*p->pphCommandList, *p->phContext, *p->phDevice);
    LEAVE_CB();
}

/* The program's own pools get kernel timestamps too (results unchanged;
 * not for IPC pools, where the flag is not allowed). */
static __thread ze_event_pool_desc_t pool_desc_copy;
static void on_pool_create(ze_event_pool_create_params_t *p, ze_result_t r, void *user, void **inst) {
    (void)r; (void)user; (void)inst;
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
    (void)p; (void)r; (void)u; (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void after_queue_sync(ze_command_queue_synchronize_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p; (void)r; (void)u; (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void after_fence_sync(ze_fence_host_synchronize_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p; (void)r; (void)u; (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
static void on_event_reset(ze_event_host_reset_params_t *p, ze_result_t r, void *u, void **i) {
    (void)p; (void)r; (void)u; (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}
/* zeCommandListAppendEventReset: the device resets the event before later
 * work signals it again. */
static void on_append_event_reset(ze_command_list_append_event_reset_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r; (void)u; (void)i;
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
    (void)p; (void)r; (void)u; (void)i;
    ENTER_CB();
    sweep_now();
    LEAVE_CB();
}

static void on_event_destroy(ze_event_destroy_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r; (void)u; (void)i;
    ENTER_CB();
    pthread_mutex_lock(&lock);
    sweep(0);
    for (size_t k = 0; k < MAX_PENDING; k++) /* still running: its event goes away */
        if (pend[k].used && pend[k].event == *p->phEvent) {
            info.lost++;
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
    (void)u; (void)i;
    ENTER_CB();
    after_alloc(*p->phContext, *p->psize, *p->ppptr, r);
    LEAVE_CB();
}
static void after_alloc_shared(ze_mem_alloc_shared_params_t *p, ze_result_t r, void *u, void **i) {
    (void)u; (void)i;
    ENTER_CB();
    after_alloc(*p->phContext, *p->psize, *p->ppptr, r);
    LEAVE_CB();
}
static void on_free(ze_mem_free_params_t *p, ze_result_t r, void *u, void **i) {
    (void)r; (void)u; (void)i;
    ENTER_CB();
    lp_gpu_devmem_free((uint64_t)(uintptr_t)*p->pptr);
    LEAVE_CB();
}

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
    BIND(pool_create, "zeEventPoolCreate");
    BIND(event_create, "zeEventCreate");
    BIND(query_status, "zeEventQueryStatus");
    BIND(query_timestamp, "zeEventQueryKernelTimestamp");
    BIND(host_reset, "zeEventHostReset");
    BIND(kernel_name, "zeKernelGetName");
    BIND(device_properties, "zeDeviceGetProperties");
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
    /* The loader's rule: the layer is on from the first zeInit when the
     * variable is exactly "1". A user who set it to anything else turned
     * the layer off: lprof says so and leaves it off, with any loader. */
    const char *env = getenv("ZE_ENABLE_TRACING_LAYER");
    int env_on = env && strcmp(env, "1") == 0;
    if (env && !env_on) {
        snprintf(why, why_len, "the loader's tracing layer is off (ZE_ENABLE_TRACING_LAYER=%.40s in the environment; "
                               "unset it or set it to 1)", env);
        return -1;
    }
    zel_tracer_desc_t desc = {ZEL_STRUCTURE_TYPE_TRACER_DESC, NULL, NULL};
    r = fn.tracer_create(&desc, &tracer);
    if (r != ZE_RESULT_SUCCESS) {
        /* before loader 1.16 the tracer functions work only where the layer
         * was loaded, i.e. the variable was set at the first zeInit */
        snprintf(why, why_len, "the loader's tracing layer is off (ZE_ENABLE_TRACING_LAYER=1 must be set before "
                               "the first zeInit; zelTracerCreate: 0x%x)", (unsigned)r);
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
            snprintf(why, why_len, "the loader's tracing layer is off and could not be turned on "
                                   "(zelEnableTracingLayer: 0x%x)", (unsigned)r);
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
    host = *h;
    /* (tracer, ZEL_REGISTER_EPILOGUE = 1, callback); zel_tracer_reg_t is in
     * the register header of newer loaders only (1.10+). Like the prologue
     * and epilogue sets, it is refused once the tracer is enabled. */
    typedef ze_result_t (*reg_fn)(zel_tracer_handle_t, int, void (*)(lp_ze_list_sync_params *, ze_result_t, void *,
                                                                     void **));
    reg_fn reg = NULL;
    void *sym = dlsym(lib, "zelTracerCommandListHostSynchronizeRegisterCallback");
    memcpy(&reg, &sym, sizeof reg);
    int ok = fn.set_prologues(tracer, &pro) == ZE_RESULT_SUCCESS && fn.set_epilogues(tracer, &epi) == ZE_RESULT_SUCCESS;
    int list_sync_hooked = ok && reg && reg(tracer, 1, after_list_sync) == ZE_RESULT_SUCCESS;
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
