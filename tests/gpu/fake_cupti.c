/* Test double of libcupti (own code, compiled against the real CUPTI
 * headers), so lprof's real CUPTI collector runs end to end without a GPU:
 * the test program "launches" through fake_cupti_* helpers (called with
 * ctypes from Python lines), which call lprof's subscribed callback on the
 * calling thread exactly as CUPTI does (ENTER, EXIT, correlation ids,
 * params) and queue activity records of the CUDA 13 layouts
 * (CUpti_ActivityKernel10, Memcpy6, Memset4), delivered through lprof's
 * buffer callbacks on flush. FAKE_CUPTI_BUSY=name makes subscribing fail
 * as when another CUPTI client holds it. */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static CUpti_CallbackFunc callback;
static void *callback_data;
static int subscribed;
static unsigned char enabled[8][1024];
static CUpti_BuffersCallbackRequestFunc request;
static CUpti_BuffersCallbackCompleteFunc complete;
static int kinds_enabled[64];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef union {
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemset4 memset;
} record;
static record queued[4096];
static size_t nqueued;
static uint64_t clock_ns = 1000000;
static uint32_t next_corr = 100;

CUptiResult cuptiGetVersion(uint32_t *version) {
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud, CUpti_SubscriberParams *p) {
    const char *busy = getenv("FAKE_CUPTI_BUSY");
    if (busy && *busy) {
        if (p && p->oldSubscriberName && p->oldSubscriberSize) {
            strncpy(p->oldSubscriberName, busy, p->oldSubscriberSize - 1);
            p->oldSubscriberName[p->oldSubscriberSize - 1] = '\0';
        }
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    callback = cb;
    callback_data = ud;
    subscribed = 1;
    *s = (CUpti_SubscriberHandle)&subscribed;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
    return cuptiSubscribe_v2(s, cb, ud, NULL);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
    (void)s;
    subscribed = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d, CUpti_CallbackId id) {
    (void)s;
    if ((unsigned)d >= 8 || id >= 1024) return CUPTI_ERROR_INVALID_PARAMETER;
    enabled[d][id] = (unsigned char)enable;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp) {
    request = rq;
    complete = cp;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
    if ((unsigned)k < 64) kinds_enabled[k] = 1;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
    if ((unsigned)k < 64) kinds_enabled[k] = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushPeriod(uint32_t ms) {
    (void)ms;
    return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    default: return sizeof(CUpti_ActivityMemset4);
    }
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec) {
    size_t at = *rec ? (size_t)((uint8_t *)*rec - buffer) + record_size(*rec) : 0;
    if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)(buffer + at);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped) {
    (void)ctx; (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

/* Delivers the queued records through lprof's buffer callbacks. */
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    pthread_mutex_lock(&lock);
    if (!nqueued || !request || !complete) {
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
    }
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    request(&buf, &size, &max);
    size_t used = 0;
    for (size_t i = 0; i < nqueued && buf; i++) {
        size_t n = record_size((CUpti_Activity *)&queued[i]);
        if (used + n > size) break;
        memcpy(buf + used, &queued[i], n);
        used += n;
    }
    nqueued = 0;
    pthread_mutex_unlock(&lock);
    complete(NULL, 0, buf, size, used);
    return CUPTI_SUCCESS;
}

static void api(CUpti_CallbackDomain d, CUpti_CallbackId id, CUpti_ApiCallbackSite site, uint32_t corr,
                const void *params, void *ret) {
    if (!subscribed || !callback || !enabled[d][id]) return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = site;
    data.functionName = "fake";
    data.functionParams = params;
    data.functionReturnValue = ret;
    data.correlationId = corr;
    callback(callback_data, d, id, &data);
}

static void queue(record r) {
    pthread_mutex_lock(&lock);
    if (nqueued < sizeof queued / sizeof queued[0]) queued[nqueued++] = r;
    pthread_mutex_unlock(&lock);
}

/* A runtime kernel launch (cudaLaunchKernel, with the driver call
 * cuLaunchKernel nested in it, as the runtime does) running dur_ns. */
void fake_cupti_launch_kernel(const char *name, uint64_t dur_ns) {
    static char *names[256];
    static int nnames;
    uint32_t corr = next_corr++, inner = next_corr++;
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, corr, NULL, &status);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, inner, NULL, &status);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, inner, NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, corr, NULL, &status);
    record r;
    memset(&r, 0, sizeof r);
    r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.kernel.start = clock_ns;
    r.kernel.end = clock_ns + dur_ns;
    clock_ns += dur_ns + 10;
    r.kernel.correlationId = corr;
    pthread_mutex_lock(&lock);
    char *kept = NULL; /* CUPTI owns record names: keep them alive */
    for (int i = 0; i < nnames && !kept; i++)
        if (strcmp(names[i], name) == 0) kept = names[i];
    if (!kept && nnames < 256) kept = names[nnames++] = strdup(name);
    pthread_mutex_unlock(&lock);
    r.kernel.name = kept;
    queue(r);
}

/* cudaGraphLaunch of a graph of `n` kernels (each dur_ns): every kernel's
 * record carries the graph launch's correlation id, as CUPTI does. */
void fake_cupti_graph_launch(int n, uint64_t dur_ns) {
    uint32_t corr = next_corr++;
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_ENTER, corr, NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT, corr, NULL, &status);
    for (int i = 0; i < n; i++) {
        record r;
        memset(&r, 0, sizeof r);
        r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.kernel.start = clock_ns;
        r.kernel.end = clock_ns + dur_ns;
        clock_ns += dur_ns + 10;
        r.kernel.correlationId = corr;
        r.kernel.graphId = 1;
        r.kernel.name = "graph_node_kernel";
        queue(r);
    }
}

/* cudaMemcpy of `bytes` in direction `kind` (CUpti_ActivityMemcpyKind). */
void fake_cupti_memcpy(int kind, uint64_t bytes, uint64_t dur_ns) {
    uint32_t corr = next_corr++;
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_ENTER, corr, NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_EXIT, corr, NULL, &status);
    record r;
    memset(&r, 0, sizeof r);
    r.memcpy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.memcpy.copyKind = (uint8_t)kind;
    r.memcpy.bytes = bytes;
    r.memcpy.start = clock_ns;
    r.memcpy.end = clock_ns + dur_ns;
    clock_ns += dur_ns + 10;
    r.memcpy.correlationId = corr;
    queue(r);
}

/* cudaMalloc of `size` bytes, returning device address `ptr`; cudaFree. */
void fake_cupti_malloc(uint64_t ptr, uint64_t size) {
    void *dev = NULL;
    cudaMalloc_v3020_params p = {&dev, (size_t)size};
    int status = 0;
    uint32_t corr = next_corr++;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, corr, &p, &status);
    dev = (void *)(uintptr_t)ptr;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_EXIT, corr, &p, &status);
}

void fake_cupti_free(uint64_t ptr) {
    cudaFree_v3020_params p = {(void *)(uintptr_t)ptr};
    int status = 0;
    uint32_t corr = next_corr++;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_API_ENTER, corr, &p, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_API_EXIT, corr, &p, &status);
}

/* A kernel launched from a thread that has no Python (autograd's device
 * threads do this); waits for it. */
static void *launch_thread(void *arg) {
    fake_cupti_launch_kernel((const char *)arg, 7000);
    return NULL;
}

void fake_cupti_launch_from_native_thread(const char *name) {
    pthread_t t;
    if (pthread_create(&t, NULL, launch_thread, (void *)name) == 0) pthread_join(t, NULL);
}

/* 1 if lprof enabled the callback (domain, cbid). */
int fake_cupti_enabled(int domain, int cbid) { return enabled[domain & 7][cbid & 1023]; }
