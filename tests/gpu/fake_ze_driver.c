/* Test double of an Intel GPU driver for Debian's Level Zero loader (own
 * code): loaded through ZE_ENABLE_ALT_DRIVERS, so the loader's real tracing
 * layer and lprof's real Level Zero collector run unchanged without a GPU.
 * One device, one in-order engine; work signals its event with kernel
 * timestamps (when its pool asked for them): a launch of groupCountX
 * groups takes groupCountX * 1000 ticks, a copy, fill or region copy
 * bytes / 64 ticks; the timer runs at 100 MHz (10 ns per tick). Work
 * finishes at append time, or later where a test program asks for work in
 * flight (fake_ze_set_inflight). Regular command lists record their work
 * and run it when executed (by a queue or appended to an immediate list).
 * The calls newer than the headers it is built with (launch with
 * arguments or parameters, copy and fill with parameters, immediate
 * append of command lists, list host sync) are filled in by their place
 * in the loader's table. Device memory is host memory tagged as device
 * memory. The device's clock is a counter only work advances, and
 * zeDeviceGetGlobalTimestamps is unsupported, unless FAKE_ZE_REALTIME=1 is in
 * the environment: then the clock is CLOCK_MONOTONIC in ticks (10 ns)
 * plus FAKE_ZE_SKEW_TICKS, work starts at its submission or when the work
 * before it ends, and zeDeviceGetGlobalTimestamps answers.
 * fake_ze_start_next_at(t) makes the next submitted work start at
 * CLOCK_MONOTONIC t (ns, a multiple of 10; real-time mode only): two
 * processes given the same t see the same device time, as ranks on one
 * host whose collectives start apart by a known amount. */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define TICKS_PER_S 100000000ull

typedef struct { int timestamps; } fake_pool;
typedef struct { int signaled, timestamps; uint64_t start, end; } fake_event;
typedef struct { char name[256]; } fake_kernel;

/* Device work: an event to signal (or reset) and how many ticks it takes.
 * Work on a regular command list is recorded and runs when the list is
 * executed; on an immediate list it is submitted at append time. */
typedef struct { fake_event *event; int reset; uint64_t ticks; } fake_work;
#define LIST_WORK 1024
typedef struct { int immediate; size_t n; fake_work work[LIST_WORK]; } fake_list;

static int device_tag, driver_tag, context_tag, module_tag, queue_tag;
static uint64_t now_ticks = 1000;
static int realtime;
#define FAKE_ZE_SKEW_TICKS 123456789ull

static uint64_t real_ticks(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) / (1000000000ull / TICKS_PER_S) +
           FAKE_ZE_SKEW_TICKS;
}
static void *device_blocks[4096];
static size_t ndevice_blocks;

/* In-flight work. With depth 0 (the default) work finishes at append
 * time; with depth N (fake_ze_set_inflight, called by a test program
 * through ctypes on this library) the device keeps the last N submissions
 * running: one finishes when a later one is submitted past the depth, and
 * every host synchronization (event, list, queue, fence) finishes all.
 * Times are fixed at submission (one in-order engine); an event reads as
 * signalled, with its timestamps, only once its work finished, so an
 * event signalled again before that still shows the earlier work. */
#define INFLIGHT_MAX 4096
typedef struct { fake_event *event; int reset; uint64_t start, end; } fake_running;
static fake_running inflight[INFLIGHT_MAX];
static size_t ninflight;
static size_t depth;

static void finish_oldest(void) {
    fake_running w = inflight[0];
    memmove(inflight, inflight + 1, (ninflight - 1) * sizeof *inflight);
    ninflight--;
    if (!w.event) return;
    if (w.reset) {
        w.event->signaled = 0;
    } else {
        w.event->start = w.start;
        w.event->end = w.end;
        w.event->signaled = 1;
    }
}
static void finish_to(size_t keep) {
    while (ninflight > keep) finish_oldest();
}
EXPORT void fake_ze_set_inflight(int n) {
    depth = n > 0 ? (size_t)n : 0;
    if (depth >= INFLIGHT_MAX) depth = INFLIGHT_MAX - 1;
    finish_to(depth);
}
/* how many submissions are still running (a test program's check) */
EXPORT int fake_ze_running(void) { return (int)ninflight; }

__attribute__((constructor)) static void read_mode(void) {
    const char *v = getenv("FAKE_ZE_REALTIME");
    realtime = v && strcmp(v, "1") == 0;
}

static ze_result_t global_timestamps(ze_device_handle_t d, uint64_t *host, uint64_t *device) {
    (void)d;
    if (!realtime) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* a host clock of the driver's own */
    *host = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    *device = real_ticks();
    return ZE_RESULT_SUCCESS;
}

static uint64_t start_next; /* ticks of fake_ze_start_next_at, 0 none */
EXPORT void fake_ze_start_next_at(uint64_t mono_ns) {
    start_next = mono_ns / (1000000000ull / TICKS_PER_S) + FAKE_ZE_SKEW_TICKS;
}

static void submit(fake_work w) {
    if (ninflight == INFLIGHT_MAX) finish_oldest();
    if (realtime && !w.reset && start_next) {
        now_ticks = start_next;
        start_next = 0;
    } else if (realtime && !w.reset) {
        uint64_t now = real_ticks();
        if (now > now_ticks) now_ticks = now;
    }
    fake_running r = {w.event, w.reset, now_ticks & 0xffffffffu, (now_ticks + w.ticks) & 0xffffffffu};
    inflight[ninflight++] = r;
    if (!w.reset) now_ticks += w.ticks + 7;
    finish_to(depth);
}
static ze_result_t run_on(ze_command_list_handle_t l, ze_event_handle_t signal, int reset, uint64_t ticks) {
    fake_list *fl = (fake_list *)l;
    fake_work w = {(fake_event *)signal, reset, ticks};
    if (fl && !fl->immediate) {
        if (fl->n == LIST_WORK) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        fl->work[fl->n++] = w;
    } else {
        submit(w);
    }
    return ZE_RESULT_SUCCESS;
}
static void execute(fake_list *fl) {
    for (size_t i = 0; fl && i < fl->n; i++) submit(fl->work[i]);
}

static ze_result_t init(ze_init_flags_t flags) { (void)flags; return ZE_RESULT_SUCCESS; }

static ze_result_t driver_get(uint32_t *count, ze_driver_handle_t *out) {
    if (out && *count) out[0] = (ze_driver_handle_t)&driver_tag;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t driver_api_version(ze_driver_handle_t d, ze_api_version_t *v) {
    (void)d;
    *v = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t driver_properties(ze_driver_handle_t d, ze_driver_properties_t *p) {
    (void)d;
    p->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t device_get(ze_driver_handle_t d, uint32_t *count, ze_device_handle_t *out) {
    (void)d;
    if (out && *count) out[0] = (ze_device_handle_t)&device_tag;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t device_properties(ze_device_handle_t d, ze_device_properties_t *p) {
    (void)d;
    p->type = ZE_DEVICE_TYPE_GPU;
    strcpy(p->name, "lprof test GPU");
    p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? TICKS_PER_S : 10;
    p->kernelTimestampValidBits = 32;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t context_create(ze_driver_handle_t d, const ze_context_desc_t *desc, ze_context_handle_t *out) {
    (void)d; (void)desc;
    *out = (ze_context_handle_t)&context_tag;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t context_destroy(ze_context_handle_t c) { (void)c; return ZE_RESULT_SUCCESS; }
static ze_result_t new_list(int immediate, ze_command_list_handle_t *out) {
    fake_list *l = calloc(1, sizeof *l);
    if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->immediate = immediate;
    *out = (ze_command_list_handle_t)l;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t list_create_immediate(ze_context_handle_t c, ze_device_handle_t d, const ze_command_queue_desc_t *q,
                                         ze_command_list_handle_t *out) {
    (void)c; (void)d; (void)q;
    return new_list(1, out);
}
static ze_result_t list_create(ze_context_handle_t c, ze_device_handle_t d, const ze_command_list_desc_t *desc,
                               ze_command_list_handle_t *out) {
    (void)c; (void)d; (void)desc;
    return new_list(0, out);
}
static ze_result_t list_destroy(ze_command_list_handle_t l) { free(l); return ZE_RESULT_SUCCESS; }
static ze_result_t list_close(ze_command_list_handle_t l) { (void)l; return ZE_RESULT_SUCCESS; }
static ze_result_t list_reset(ze_command_list_handle_t l) { ((fake_list *)l)->n = 0; return ZE_RESULT_SUCCESS; }
static ze_result_t queue_create(ze_context_handle_t c, ze_device_handle_t d, const ze_command_queue_desc_t *q,
                                ze_command_queue_handle_t *out) {
    (void)c; (void)d; (void)q;
    *out = (ze_command_queue_handle_t)&queue_tag;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t queue_destroy(ze_command_queue_handle_t q) { (void)q; return ZE_RESULT_SUCCESS; }
static ze_result_t queue_execute(ze_command_queue_handle_t q, uint32_t n, ze_command_list_handle_t *lists,
                                 ze_fence_handle_t f) {
    (void)q; (void)f;
    for (uint32_t i = 0; i < n; i++) execute((fake_list *)lists[i]);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t queue_sync(ze_command_queue_handle_t q, uint64_t timeout) {
    (void)q; (void)timeout;
    finish_to(0);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t module_create(ze_context_handle_t c, ze_device_handle_t d, const ze_module_desc_t *desc,
                                 ze_module_handle_t *out, ze_module_build_log_handle_t *log) {
    (void)c; (void)d; (void)desc;
    if (log) *log = NULL;
    *out = (ze_module_handle_t)&module_tag;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t module_destroy(ze_module_handle_t m) { (void)m; return ZE_RESULT_SUCCESS; }
static ze_result_t kernel_create(ze_module_handle_t m, const ze_kernel_desc_t *desc, ze_kernel_handle_t *out) {
    (void)m;
    fake_kernel *k = calloc(1, sizeof *k);
    if (!k) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    strncpy(k->name, desc && desc->pKernelName ? desc->pKernelName : "kernel", sizeof k->name - 1);
    *out = (ze_kernel_handle_t)k;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t kernel_destroy(ze_kernel_handle_t k) { free(k); return ZE_RESULT_SUCCESS; }
static ze_result_t kernel_name(ze_kernel_handle_t k, size_t *size, char *out) {
    const char *name = ((fake_kernel *)k)->name;
    size_t need = strlen(name) + 1;
    if (out && *size >= need) memcpy(out, name, need);
    *size = need;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t pool_create(ze_context_handle_t c, const ze_event_pool_desc_t *desc, uint32_t n,
                               ze_device_handle_t *devs, ze_event_pool_handle_t *out) {
    (void)c; (void)n; (void)devs;
    fake_pool *p = calloc(1, sizeof *p);
    if (!p) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    p->timestamps = (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0;
    *out = (ze_event_pool_handle_t)p;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t pool_destroy(ze_event_pool_handle_t p) { free(p); return ZE_RESULT_SUCCESS; }
static ze_result_t event_create(ze_event_pool_handle_t p, const ze_event_desc_t *desc, ze_event_handle_t *out) {
    (void)desc;
    fake_event *e = calloc(1, sizeof *e);
    if (!e) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    e->timestamps = ((fake_pool *)p)->timestamps;
    *out = (ze_event_handle_t)e;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t event_destroy(ze_event_handle_t e) {
    for (size_t i = 0; i < ninflight; i++) /* the device forgets it */
        if (inflight[i].event == (fake_event *)e) inflight[i].event = NULL;
    free(e);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t event_sync(ze_event_handle_t e, uint64_t timeout) {
    (void)timeout;
    finish_to(0);
    return ((fake_event *)e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}
static ze_result_t event_status(ze_event_handle_t e) {
    return ((fake_event *)e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}
static ze_result_t event_reset(ze_event_handle_t e) {
    ((fake_event *)e)->signaled = 0;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t event_timestamp(ze_event_handle_t h, ze_kernel_timestamp_result_t *out) {
    fake_event *e = (fake_event *)h;
    if (!e->signaled || !e->timestamps) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    out->global.kernelStart = out->context.kernelStart = e->start;
    out->global.kernelEnd = out->context.kernelEnd = e->end;
    return ZE_RESULT_SUCCESS;
}
/* a launch of groupCountX groups takes groupCountX * 1000 ticks */
static ze_result_t append_launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *g,
                                 ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)k; (void)nwait; (void)wait;
    return run_on(l, signal, 0, (uint64_t)g->groupCountX * 1000);
}
/* zeCommandListAppendLaunchKernelIndirect: the group count lies in device
 * memory (host memory here) */
static ze_result_t append_launch_indirect(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *g,
                                          ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    return append_launch(l, k, g, signal, nwait, wait);
}
static ze_result_t append_launch_multiple(ze_command_list_handle_t l, uint32_t n, ze_kernel_handle_t *k,
                                          const uint32_t *count, const ze_group_count_t *g, ze_event_handle_t signal,
                                          uint32_t nwait, ze_event_handle_t *wait) {
    (void)k; (void)nwait; (void)wait;
    uint64_t ticks = 0;
    for (uint32_t i = 0; i < n && i < *count; i++) ticks += (uint64_t)g[i].groupCountX * 1000;
    return run_on(l, signal, 0, ticks);
}
static ze_result_t append_copy(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
                               ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)nwait; (void)wait;
    memmove(dst, src, size);
    return run_on(l, signal, 0, size / 64);
}
/* a fill or a region copy of n bytes takes n / 64 ticks, as a copy */
static ze_result_t append_fill(ze_command_list_handle_t l, void *ptr, const void *pattern, size_t pattern_size,
                               size_t size, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)nwait; (void)wait;
    for (size_t i = 0; pattern_size && i < size; i++) ((char *)ptr)[i] = ((const char *)pattern)[i % pattern_size];
    return run_on(l, signal, 0, size / 64);
}
static ze_result_t append_copy_region(ze_command_list_handle_t l, void *dst, const ze_copy_region_t *dr, uint32_t dp,
                                      uint32_t dsp, const void *src, const ze_copy_region_t *sr, uint32_t sp,
                                      uint32_t ssp, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)dst; (void)dr; (void)dp; (void)dsp; (void)src; (void)sp; (void)ssp; (void)nwait; (void)wait;
    uint64_t bytes = (uint64_t)sr->width * sr->height * (sr->depth ? sr->depth : 1);
    return run_on(l, signal, 0, bytes / 64);
}
/* a barrier or a signal: no device time, the event signalled in order */
static ze_result_t append_barrier(ze_command_list_handle_t l, ze_event_handle_t signal, uint32_t nwait,
                                  ze_event_handle_t *wait) {
    (void)nwait; (void)wait;
    return signal ? run_on(l, signal, 0, 0) : ZE_RESULT_SUCCESS;
}
static ze_result_t append_signal(ze_command_list_handle_t l, ze_event_handle_t e) { return run_on(l, e, 0, 0); }
/* zeCommandListHostSynchronize (spec 1.6): all work finishes */
static ze_result_t list_sync(ze_command_list_handle_t l, uint64_t timeout) {
    (void)l; (void)timeout;
    finish_to(0);
    return ZE_RESULT_SUCCESS;
}
/* zeCommandListAppendEventReset: in order, like the rest */
static ze_result_t append_event_reset(ze_command_list_handle_t l, ze_event_handle_t e) { return run_on(l, e, 1, 0); }

/* Calls newer than Debian 12's headers (1.8: spec 1.4), with their
 * prototypes as the Level Zero spec gives them; the loader hands this
 * driver its own (newer) table, and the driver fills the entries the
 * version it asks for has. */
typedef struct { uint32_t groupSizeX, groupSizeY, groupSizeZ; } fake_group_size;
static ze_result_t append_launch_with_arguments(ze_command_list_handle_t l, ze_kernel_handle_t k,
                                                const ze_group_count_t g, const fake_group_size s, void **args,
                                                const void *next, ze_event_handle_t signal, uint32_t nwait,
                                                ze_event_handle_t *wait) {
    (void)s; (void)args; (void)next;
    return append_launch(l, k, &g, signal, nwait, wait);
}
static ze_result_t append_launch_with_parameters(ze_command_list_handle_t l, ze_kernel_handle_t k,
                                                 const ze_group_count_t *g, const void *next, ze_event_handle_t signal,
                                                 uint32_t nwait, ze_event_handle_t *wait) {
    (void)next;
    return append_launch(l, k, g, signal, nwait, wait);
}
static ze_result_t append_copy_with_parameters(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
                                               const void *next, ze_event_handle_t signal, uint32_t nwait,
                                               ze_event_handle_t *wait) {
    (void)next;
    return append_copy(l, dst, src, size, signal, nwait, wait);
}
static ze_result_t append_fill_with_parameters(ze_command_list_handle_t l, void *ptr, const void *pattern,
                                               size_t pattern_size, size_t size, const void *next,
                                               ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)next;
    return append_fill(l, ptr, pattern, pattern_size, size, signal, nwait, wait);
}
/* zeCommandListImmediateAppendCommandListsExp: the regular lists run on
 * the immediate one, then the signal event */
static ze_result_t immediate_append_lists(ze_command_list_handle_t imm, uint32_t n, ze_command_list_handle_t *lists,
                                          ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)nwait; (void)wait;
    if (!((fake_list *)imm)->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < n; i++) execute((fake_list *)lists[i]);
    return signal ? run_on(imm, signal, 0, 0) : ZE_RESULT_SUCCESS;
}

static ze_result_t alloc_device(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *desc, size_t size,
                                size_t align, ze_device_handle_t d, void **out) {
    (void)c; (void)desc; (void)align; (void)d;
    *out = malloc(size ? size : 1);
    if (!*out) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    if (ndevice_blocks < 4096) device_blocks[ndevice_blocks++] = *out;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t mem_free(ze_context_handle_t c, void *p) {
    (void)c;
    for (size_t i = 0; i < ndevice_blocks; i++)
        if (device_blocks[i] == p) device_blocks[i] = NULL;
    free(p);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t alloc_properties(ze_context_handle_t c, const void *p, ze_memory_allocation_properties_t *props,
                                    ze_device_handle_t *d) {
    (void)c;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    for (size_t i = 0; i < ndevice_blocks; i++)
        if (p && device_blocks[i] == p) props->type = ZE_MEMORY_TYPE_DEVICE;
    if (d) *d = (ze_device_handle_t)&device_tag;
    return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t *t) {
    (void)v;
    t->pfnInit = init;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t *t) {
    (void)v;
    t->pfnGet = driver_get;
    t->pfnGetApiVersion = driver_api_version;
    t->pfnGetProperties = driver_properties;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t *t) {
    (void)v;
    t->pfnGet = device_get;
    t->pfnGetProperties = device_properties;
    t->pfnGetGlobalTimestamps = global_timestamps;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t *t) {
    (void)v;
    t->pfnCreate = context_create;
    t->pfnDestroy = context_destroy;
    return ZE_RESULT_SUCCESS;
}
/* Entries of the command list table past Debian 12's headers, by their
 * place in the Level Zero spec's table (append-only across versions; the
 * version that added each, as the loader's tracing layer checks it). */
#define VERSION(major, minor) ((uint32_t)(major) << 16 | (uint32_t)(minor))
#define LIST_HOST_SYNCHRONIZE 28                 /* spec 1.6 */
#define LIST_LAUNCH_KERNEL_WITH_PARAMETERS 36    /* spec 1.14 */
#define LIST_LAUNCH_KERNEL_WITH_ARGUMENTS 37     /* spec 1.14 */
#define LIST_MEMORY_COPY_WITH_PARAMETERS 38      /* spec 1.16 */
#define LIST_MEMORY_FILL_WITH_PARAMETERS 39      /* spec 1.16 */
#define LIST_EXP_IMMEDIATE_APPEND_LISTS 1        /* spec 1.9, in the experimental list table */
#ifdef FAKE_ZE_NEW_HEADERS /* headers that declare them (the test defines it where they do): check the places */
#include <stddef.h>
_Static_assert(offsetof(ze_command_list_dditable_t, pfnHostSynchronize) == LIST_HOST_SYNCHRONIZE * sizeof(void *), "");
_Static_assert(offsetof(ze_command_list_dditable_t, pfnAppendLaunchKernelWithParameters) ==
               LIST_LAUNCH_KERNEL_WITH_PARAMETERS * sizeof(void *), "");
_Static_assert(offsetof(ze_command_list_dditable_t, pfnAppendLaunchKernelWithArguments) ==
               LIST_LAUNCH_KERNEL_WITH_ARGUMENTS * sizeof(void *), "");
_Static_assert(offsetof(ze_command_list_dditable_t, pfnAppendMemoryCopyWithParameters) ==
               LIST_MEMORY_COPY_WITH_PARAMETERS * sizeof(void *), "");
_Static_assert(offsetof(ze_command_list_dditable_t, pfnAppendMemoryFillWithParameters) ==
               LIST_MEMORY_FILL_WITH_PARAMETERS * sizeof(void *), "");
_Static_assert(offsetof(ze_command_list_exp_dditable_t, pfnImmediateAppendCommandListsExp) ==
               LIST_EXP_IMMEDIATE_APPEND_LISTS * sizeof(void *), "");
#endif
#define SET_ENTRY(table, index, f) do { void *f_ = (void *)(f); memcpy((void **)(void *)(table) + (index), &f_, sizeof f_); } while (0)

EXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t *t) {
    t->pfnCreate = list_create;
    t->pfnCreateImmediate = list_create_immediate;
    t->pfnDestroy = list_destroy;
    t->pfnClose = list_close;
    t->pfnReset = list_reset;
    t->pfnAppendLaunchKernel = append_launch;
    t->pfnAppendLaunchCooperativeKernel = append_launch;
    t->pfnAppendLaunchKernelIndirect = append_launch_indirect;
    t->pfnAppendLaunchMultipleKernelsIndirect = append_launch_multiple;
    t->pfnAppendMemoryCopy = append_copy;
    t->pfnAppendMemoryFill = append_fill;
    t->pfnAppendMemoryCopyRegion = append_copy_region;
    t->pfnAppendBarrier = append_barrier;
    t->pfnAppendSignalEvent = append_signal;
    t->pfnAppendEventReset = append_event_reset;
    /* a loader built for an older spec hands a shorter table */
    if ((uint32_t)v >= VERSION(1, 6)) SET_ENTRY(t, LIST_HOST_SYNCHRONIZE, list_sync);
    if ((uint32_t)v >= VERSION(1, 14)) {
        SET_ENTRY(t, LIST_LAUNCH_KERNEL_WITH_PARAMETERS, append_launch_with_parameters);
        SET_ENTRY(t, LIST_LAUNCH_KERNEL_WITH_ARGUMENTS, append_launch_with_arguments);
    }
    if ((uint32_t)v >= VERSION(1, 16)) {
        SET_ENTRY(t, LIST_MEMORY_COPY_WITH_PARAMETERS, append_copy_with_parameters);
        SET_ENTRY(t, LIST_MEMORY_FILL_WITH_PARAMETERS, append_fill_with_parameters);
    }
    return ZE_RESULT_SUCCESS;
}
/* asked for by loaders whose spec has it (1.9 and newer) */
#ifdef FAKE_ZE_NEW_HEADERS
EXPORT ze_result_t zeGetCommandListExpProcAddrTable(ze_api_version_t v, ze_command_list_exp_dditable_t *t) {
#else
EXPORT ze_result_t zeGetCommandListExpProcAddrTable(ze_api_version_t v, void *t) {
#endif
    if ((uint32_t)v >= VERSION(1, 9)) SET_ENTRY(t, LIST_EXP_IMMEDIATE_APPEND_LISTS, immediate_append_lists);
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetCommandQueueProcAddrTable(ze_api_version_t v, ze_command_queue_dditable_t *t) {
    (void)v;
    t->pfnCreate = queue_create;
    t->pfnDestroy = queue_destroy;
    t->pfnExecuteCommandLists = queue_execute;
    t->pfnSynchronize = queue_sync;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetModuleProcAddrTable(ze_api_version_t v, ze_module_dditable_t *t) {
    (void)v;
    t->pfnCreate = module_create;
    t->pfnDestroy = module_destroy;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetKernelProcAddrTable(ze_api_version_t v, ze_kernel_dditable_t *t) {
    (void)v;
    t->pfnCreate = kernel_create;
    t->pfnDestroy = kernel_destroy;
    t->pfnGetName = kernel_name;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetEventPoolProcAddrTable(ze_api_version_t v, ze_event_pool_dditable_t *t) {
    (void)v;
    t->pfnCreate = pool_create;
    t->pfnDestroy = pool_destroy;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetEventProcAddrTable(ze_api_version_t v, ze_event_dditable_t *t) {
    (void)v;
    t->pfnCreate = event_create;
    t->pfnDestroy = event_destroy;
    t->pfnHostSynchronize = event_sync;
    t->pfnQueryStatus = event_status;
    t->pfnHostReset = event_reset;
    t->pfnQueryKernelTimestamp = event_timestamp;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t *t) {
    (void)v;
    t->pfnAllocDevice = alloc_device;
    t->pfnFree = mem_free;
    t->pfnGetAllocProperties = alloc_properties;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_sync(ze_fence_handle_t f, uint64_t timeout) {
    (void)f; (void)timeout;
    finish_to(0);
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetFenceProcAddrTable(ze_api_version_t v, ze_fence_dditable_t *t) {
    (void)v;
    t->pfnHostSynchronize = fence_sync;
    return ZE_RESULT_SUCCESS;
}

/* the tables this driver leaves empty: the loader asks for each */
#define EMPTY_TABLE(name, type) \
    EXPORT ze_result_t name(ze_api_version_t v, type *t) { (void)v; (void)t; return ZE_RESULT_SUCCESS; }
EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
