/* Test double of an Intel GPU driver for Debian's Level Zero loader (own
 * code): loaded through ZE_ENABLE_ALT_DRIVERS, so the loader's real tracing
 * layer and lprof's real Level Zero collector run unchanged without a GPU.
 * One device; kernels "run" at append time and signal their event with
 * kernel timestamps (when its pool asked for them): a launch of
 * groupCountX groups takes groupCountX * 1000 ticks, a copy size / 64
 * ticks; the timer runs at 100 MHz (10 ns per tick). Device memory is host
 * memory tagged as device memory. */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define TICKS_PER_S 100000000ull

typedef struct { int timestamps; } fake_pool;
typedef struct { int signaled, timestamps; uint64_t start, end; } fake_event;
typedef struct { char name[256]; } fake_kernel;

static int device_tag, driver_tag, context_tag, module_tag, list_tag;
static uint64_t now_ticks = 1000;
static void *device_blocks[4096];
static size_t ndevice_blocks;

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
static ze_result_t list_create_immediate(ze_context_handle_t c, ze_device_handle_t d, const ze_command_queue_desc_t *q,
                                         ze_command_list_handle_t *out) {
    (void)c; (void)d; (void)q;
    *out = (ze_command_list_handle_t)&list_tag;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t list_destroy(ze_command_list_handle_t l) { (void)l; return ZE_RESULT_SUCCESS; }
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
static ze_result_t event_destroy(ze_event_handle_t e) { free(e); return ZE_RESULT_SUCCESS; }
static ze_result_t event_sync(ze_event_handle_t e, uint64_t timeout) {
    (void)timeout;
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
static void run(ze_event_handle_t signal, uint64_t ticks) {
    if (signal) {
        fake_event *e = (fake_event *)signal;
        e->start = now_ticks & 0xffffffffu;
        e->end = (now_ticks + ticks) & 0xffffffffu;
        e->signaled = 1;
    }
    now_ticks += ticks + 7;
}
static ze_result_t append_launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *g,
                                 ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)l; (void)k; (void)nwait; (void)wait;
    run(signal, (uint64_t)g->groupCountX * 1000);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t append_copy(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
                               ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    (void)l; (void)nwait; (void)wait;
    memmove(dst, src, size);
    run(signal, size / 64);
    return ZE_RESULT_SUCCESS;
}
#ifdef FAKE_ZE_LIST_SYNC
/* zeCommandListHostSynchronize (spec 1.6: newer loaders' headers only, the
 * test defines FAKE_ZE_LIST_SYNC where they declare it): the work is done */
static ze_result_t list_sync(ze_command_list_handle_t l, uint64_t timeout) {
    (void)l; (void)timeout;
    return ZE_RESULT_SUCCESS;
}
#endif
/* zeCommandListAppendEventReset: "runs" at append time like the rest */
static ze_result_t append_event_reset(ze_command_list_handle_t l, ze_event_handle_t e) {
    (void)l;
    ((fake_event *)e)->signaled = 0;
    return ZE_RESULT_SUCCESS;
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
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t *t) {
    (void)v;
    t->pfnCreate = context_create;
    t->pfnDestroy = context_destroy;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t *t) {
    (void)v;
    t->pfnCreateImmediate = list_create_immediate;
    t->pfnDestroy = list_destroy;
    t->pfnAppendLaunchKernel = append_launch;
    t->pfnAppendMemoryCopy = append_copy;
    t->pfnAppendEventReset = append_event_reset;
#ifdef FAKE_ZE_LIST_SYNC
    t->pfnHostSynchronize = list_sync;
#endif
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

/* the tables this driver leaves empty: the loader asks for each */
#define EMPTY_TABLE(name, type) \
    EXPORT ze_result_t name(ze_api_version_t v, type *t) { (void)v; (void)t; return ZE_RESULT_SUCCESS; }
EMPTY_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
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
