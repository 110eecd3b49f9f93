/* Test double of libcupti (own code, compiled against the real CUPTI
 * headers), so lprof's real CUPTI collector runs end to end without a GPU:
 * the test program "launches" through fake_cupti_* helpers (called with
 * ctypes from Python lines), which call lprof's subscribed callback on the
 * calling thread exactly as CUPTI does (ENTER, EXIT, correlation ids,
 * params) and write activity records of the CUDA 13 layouts
 * (CUpti_ActivityKernel10, Memcpy6, Memset4) into lprof's buffers.
 *
 * Delivery as CUDA 13 does it (cupti_activity.h):
 * - one activity buffer per thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER
 *   is the default), taken from lprof's request callback on the thread's
 *   first record;
 * - a full buffer is handed back by CUPTI on its own (here: at once, on the
 *   launching thread) once its records are complete; the periodic flush
 *   (cuptiActivityFlushPeriod) returns nothing more;
 * - cuptiActivityFlushAll(0) returns every buffer whose records are all
 *   complete, full or not; with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED every
 *   buffer, records of work still running incomplete (zero timestamps) and
 *   never delivered again;
 * - every API call takes the next correlation id, traced or not (a launch
 *   through the runtime takes two: its own and the nested driver call's;
 *   records carry the outer one).
 * Work is "running" from fake_cupti_launch_kernel_async until
 * fake_cupti_synchronize. By default device time is a counter that only
 * the work advances (each unit starts 10 ns after the last ended);
 * FAKE_CUPTI_REALTIME=1 in the environment makes it CLOCK_MONOTONIC plus FAKE_CUPTI_SKEW_NS,
 * as a device's clock seen through cuptiGetTimestamp, with one in-order
 * queue: work starts when it is launched or when the work before it ends,
 * whichever is later. fake_cupti_set_stream(device, stream) sets the ids
 * later records carry. fake_cupti_launch_kernel_at(name, t, dur) launches a
 * kernel that runs from CLOCK_MONOTONIC t (plus the skew, in the real-time
 * mode) for dur, outside the queue: two processes given the same t see the
 * same device time, as ranks on one host whose collectives start apart by
 * a known amount. FAKE_CUPTI_BUSY=name makes subscribing fail as
 * when another CUPTI client holds it; fake_cupti_hang_flushes(1) makes
 * every later flush block, as a stuck CUPTI flush does.
 *
 * CUDA graphs (fake_cupti_begin_capture ... fake_cupti_graph_replay), as
 * CUPTI 13.0 did on an H200 (2026-11-27): a kernel launched while the
 * calling thread captures makes a graph node instead of running:
 * GRAPHNODE_CREATED (resource domain; CUpti_ResourceData whose
 * resourceDescriptor is the CUpti_GraphData) fires inside the launch, on
 * that thread, and no record is written. Instantiating makes each clone
 * (GRAPHNODE_CREATED inside cudaGraphInstantiate) and reports it cloned
 * (GRAPHNODE_CLONED: node = the clone, originalNode = the captured node).
 * A replay is one cudaGraphLaunch whose kernel records carry its
 * correlation id and a graphNodeId: the clone's, as the device run saw,
 * or the original node's after fake_cupti_graph_ids(1). A node handle is
 * its id cast to CUgraphNode (cuptiGetGraphNodeId reads it back). */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUpti_CallbackFunc callback;
static void *callback_data;
static int subscribed;
static unsigned char enabled[8][1024];
static CUpti_BuffersCallbackRequestFunc request;
static CUpti_BuffersCallbackCompleteFunc complete;
static int kinds_enabled[64];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t clock_ns = 1000000;
static uint32_t next_corr = 100;
static int hang_flushes;
static uint64_t flushes[2]; /* [0]: flag 0, [1]: forced */
static uint64_t forced_incomplete;
static int realtime;
static uint32_t cur_device, cur_stream;
#define FAKE_CUPTI_SKEW_NS 5000000000000ull /* the device clock runs this far ahead */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void read_mode(void) {
    const char *v = getenv("FAKE_CUPTI_REALTIME");
    realtime = v && strcmp(v, "1") == 0;
}
void fake_cupti_set_stream(uint32_t device, uint32_t stream) {
    __atomic_store_n(&cur_device, device, __ATOMIC_RELAXED);
    __atomic_store_n(&cur_stream, stream, __ATOMIC_RELAXED);
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp) {
    *timestamp = __atomic_load_n(&realtime, __ATOMIC_RELAXED) ? mono_ns() + FAKE_CUPTI_SKEW_NS
                                                              : __atomic_load_n(&clock_ns, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

typedef union {
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemset4 memset;
} record;

/* A thread's activity buffer (lprof's memory) and the records in it whose
 * work is still running (their times are written at synchronize). */
#define MAX_BUFFERS 256
#define MAX_RUNNING 256
typedef struct {
    int used_slot;
    int thread; /* the owner's index (fake_thread) */
    int full;   /* no further record fits: the thread has a new one */
    uint8_t *buf;
    size_t size, used;
    int nrunning;
    struct {
        size_t at;
        uint64_t start, end;
    } running[MAX_RUNNING];
} buffer;
static buffer buffers[MAX_BUFFERS];
static int nthreads;
static __thread int thread_index; /* 0: not numbered yet */

CUptiResult cuptiGetVersion(uint32_t *version) {
    const char *v = getenv("FAKE_CUPTI_VERSION"); /* a CUPTI of another release */
    *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
                              CUpti_SubscriberParams *p) {
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
    __atomic_store_n(&subscribed, 1, __ATOMIC_RELEASE);
    *s = (CUpti_SubscriberHandle)&subscribed;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
    return cuptiSubscribe_v2(s, cb, ud, NULL);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
    (void)s;
    __atomic_store_n(&subscribed, 0, __ATOMIC_RELEASE);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                CUpti_CallbackId id) {
    (void)s;
    if ((unsigned)d >= 8 || id >= 1024) return CUPTI_ERROR_INVALID_PARAMETER;
    enabled[d][id] = (unsigned char)enable;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc rq,
                                           CUpti_BuffersCallbackCompleteFunc cp) {
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

/* CUPTI's own periodic flush returns only full buffers: here full buffers
 * are handed back as soon as they are complete anyway. */
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
    (void)ctx;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

/* Lock held: moves the buffers `take` selects into out[] (at most MAX_BUFFERS). */
typedef struct {
    uint8_t *buf;
    size_t size, used;
} handed;

static int take(handed *out, int forced) {
    int n = 0;
    for (int i = 0; i < MAX_BUFFERS; i++) {
        buffer *b = &buffers[i];
        if (!b->used_slot || !b->used) continue;
        if (b->nrunning && !forced) continue; /* flag 0: only buffers whose records are complete */
        if (b->nrunning) forced_incomplete += (uint64_t)b->nrunning; /* gone for good */
        out[n++] = (handed){b->buf, b->size, b->used};
        memset(b, 0, sizeof *b);
    }
    return n;
}

static void hand_back(handed *h, int n) {
    for (int i = 0; i < n; i++) complete(NULL, 0, h[i].buf, h[i].size, h[i].used);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    while (__atomic_load_n(&hang_flushes, __ATOMIC_ACQUIRE)) { /* a stuck flush */
        struct timespec t = {0, 10000000L};
        nanosleep(&t, NULL);
    }
    int forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    static handed h[MAX_BUFFERS];
    static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER; /* one flush at a time */
    pthread_mutex_lock(&flush_lock);
    pthread_mutex_lock(&lock);
    flushes[forced]++;
    int n = complete ? take(h, forced) : 0;
    pthread_mutex_unlock(&lock);
    hand_back(h, n);
    pthread_mutex_unlock(&flush_lock);
    return CUPTI_SUCCESS;
}

static uint32_t take_corr(void) { return __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED); }

/* Graph state (see the top); one lock, graphs are few and small. */
#define MAX_GRAPHS 32
#define MAX_NODES  64
typedef struct {
    int nnodes;
    uint64_t node[MAX_NODES];     /* ids: the graph's own */
    uint64_t original[MAX_NODES]; /* an executable graph's: the node each was cloned from */
    const char *name[MAX_NODES];
    uint64_t dur[MAX_NODES];
} graph;
static graph graphs[MAX_GRAPHS];
static int ngraphs;
static uint64_t next_node = 0x1000;
static int report_original;         /* records carry the original node's id */
static __thread int capturing = -1; /* the graph this thread's launches go to */
static __thread int announce;       /* deliver GRAPHNODE_CREATED for them */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;

CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId) {
    if (!node || !nodeId) return CUPTI_ERROR_INVALID_PARAMETER;
    *nodeId = (uint64_t)(uintptr_t)node;
    return CUPTI_SUCCESS;
}

static void graph_event(CUpti_CallbackIdResource id, uint64_t node, uint64_t original) {
    if (!__atomic_load_n(&subscribed, __ATOMIC_ACQUIRE) || !callback ||
        !enabled[CUPTI_CB_DOMAIN_RESOURCE][id])
        return;
    CUpti_GraphData data;
    memset(&data, 0, sizeof data);
    data.node = (CUgraphNode)(uintptr_t)node;
    data.originalNode = (CUgraphNode)(uintptr_t)original;
    data.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
    CUpti_ResourceData res;
    memset(&res, 0, sizeof res);
    res.resourceDescriptor = &data;
    callback(callback_data, CUPTI_CB_DOMAIN_RESOURCE, id, &res);
}

/* A new node of graph g (a captured launch or a node added by hand);
 * GRAPHNODE_CREATED on the calling thread if `tell`. */
static void add_node(int g, const char *name, uint64_t dur_ns, int tell) {
    pthread_mutex_lock(&graph_lock);
    graph *gr = g >= 0 && g < ngraphs ? &graphs[g] : NULL;
    uint64_t id = 0;
    if (gr && gr->nnodes < MAX_NODES) {
        id = next_node++;
        gr->node[gr->nnodes] = id;
        gr->name[gr->nnodes] = name;
        gr->dur[gr->nnodes] = dur_ns;
        gr->nnodes++;
    }
    pthread_mutex_unlock(&graph_lock);
    if (id && tell) graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, id, 0);
}

static int new_graph(void) {
    pthread_mutex_lock(&graph_lock);
    int g = ngraphs < MAX_GRAPHS ? ngraphs++ : -1;
    if (g >= 0) memset(&graphs[g], 0, sizeof graphs[g]);
    pthread_mutex_unlock(&graph_lock);
    return g;
}

static void api(CUpti_CallbackDomain d, CUpti_CallbackId id, CUpti_ApiCallbackSite site, uint32_t corr,
                const void *params, void *ret) {
    if (!__atomic_load_n(&subscribed, __ATOMIC_ACQUIRE) || !callback || !enabled[d][id]) return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = site;
    data.functionName = "fake";
    data.functionParams = params;
    data.functionReturnValue = ret;
    data.correlationId = corr;
    callback(callback_data, d, id, &data);
}

/* `n` API calls that queue no work (cudaGetDevice, stream queries...):
 * correlation ids advance all the same. */
void fake_cupti_other_calls(int n) {
    for (int i = 0; i < n; i++) {
        uint32_t corr = take_corr();
        int status = 0;
        api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_API_ENTER, corr,
            NULL, &status);
        api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_API_EXIT, corr,
            NULL, &status);
    }
}

static int fake_thread(void) {
    if (!thread_index) thread_index = __atomic_add_fetch(&nthreads, 1, __ATOMIC_RELAXED);
    return thread_index;
}

/* Writes one record into the calling thread's buffer; `running`: its work
 * has not finished (zero timestamps until fake_cupti_synchronize). */
static void emit(record r, int running) {
    if (!__atomic_load_n(&subscribed, __ATOMIC_ACQUIRE) || !request) return;
    size_t n = record_size((CUpti_Activity *)&r);
    int me = fake_thread();
    handed full[1];
    int nfull = 0;
    pthread_mutex_lock(&lock);
    buffer *b = NULL;
    for (int i = 0; i < MAX_BUFFERS && !b; i++)
        if (buffers[i].used_slot && buffers[i].thread == me && !buffers[i].full) b = &buffers[i];
    if (b && b->used + n > b->size) { /* full: handed back once complete */
        b->full = 1;
        if (!b->nrunning) {
            full[nfull++] = (handed){b->buf, b->size, b->used};
            memset(b, 0, sizeof *b);
        }
        b = NULL;
    }
    if (!b) {
        for (int i = 0; i < MAX_BUFFERS && !b; i++)
            if (!buffers[i].used_slot) b = &buffers[i];
        if (b) {
            size_t max = 0;
            memset(b, 0, sizeof *b);
            request(&b->buf, &b->size, &max);
            if (b->buf && b->size >= n) {
                b->used_slot = 1;
                b->thread = me;
            } else {
                b = NULL; /* a dropped record */
            }
        }
    }
    if (b) {
        if (running && b->nrunning < MAX_RUNNING) {
            uint64_t start = r.kernel.start, end = r.kernel.end;
            b->running[b->nrunning].at = b->used;
            b->running[b->nrunning].start = start;
            b->running[b->nrunning].end = end;
            b->nrunning++;
            r.kernel.start = r.kernel.end = 0;
        }
        memcpy(b->buf + b->used, &r, n);
        b->used += n;
    }
    pthread_mutex_unlock(&lock);
    hand_back(full, nfull);
}

/* All queued work finished (cudaDeviceSynchronize): running records get
 * their times; full buffers that waited for them are handed back. */
void fake_cupti_synchronize(void) {
    static handed h[MAX_BUFFERS];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BUFFERS; i++) {
        buffer *b = &buffers[i];
        if (!b->used_slot) continue;
        for (int k = 0; k < b->nrunning; k++) {
            CUpti_ActivityKernel10 *rec = (CUpti_ActivityKernel10 *)(b->buf + b->running[k].at);
            rec->start = b->running[k].start;
            rec->end = b->running[k].end;
        }
        b->nrunning = 0;
        if (b->full) {
            h[n++] = (handed){b->buf, b->size, b->used};
            memset(b, 0, sizeof *b);
        }
    }
    pthread_mutex_unlock(&lock);
    hand_back(h, n);
}

static uint64_t start_at; /* fake_cupti_launch_kernel_at's start, 0 none */

static uint64_t advance(uint64_t dur_ns) {
    uint64_t at = __atomic_exchange_n(&start_at, 0, __ATOMIC_RELAXED);
    if (at) return at + (__atomic_load_n(&realtime, __ATOMIC_RELAXED) ? FAKE_CUPTI_SKEW_NS : 0);
    if (!__atomic_load_n(&realtime, __ATOMIC_RELAXED))
        return __atomic_fetch_add(&clock_ns, dur_ns + 10, __ATOMIC_RELAXED);
    uint64_t now = mono_ns() + FAKE_CUPTI_SKEW_NS, free_at = __atomic_load_n(&clock_ns, __ATOMIC_RELAXED),
             start;
    do {
        start = free_at > now ? free_at : now;
    } while (!__atomic_compare_exchange_n(&clock_ns, &free_at, start + dur_ns, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return start;
}

static const char *keep_name(const char *name) {
    static char *names[256];
    static int nnames;
    pthread_mutex_lock(&lock);
    char *kept = NULL; /* CUPTI owns record names: keep them alive */
    for (int i = 0; i < nnames && !kept; i++)
        if (strcmp(names[i], name) == 0) kept = names[i];
    if (!kept && nnames < 256) kept = names[nnames++] = strdup(name);
    pthread_mutex_unlock(&lock);
    return kept;
}

static void kernel_record(uint32_t corr, const char *name, uint64_t dur_ns, int running) {
    record r;
    memset(&r, 0, sizeof r);
    r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.kernel.start = advance(dur_ns);
    r.kernel.end = r.kernel.start + dur_ns;
    r.kernel.correlationId = corr;
    r.kernel.deviceId = __atomic_load_n(&cur_device, __ATOMIC_RELAXED);
    r.kernel.streamId = __atomic_load_n(&cur_stream, __ATOMIC_RELAXED);
    r.kernel.name = keep_name(name);
    emit(r, running);
}

/* Which id a runtime launch's record carries: the runtime call's, or, with
 * FAKE_CUPTI_RECORD_DRIVER_ID=1, the nested driver call's, as CUDA 13 did
 * for PyTorch's cu130 launches on an H200 (2026-11-27). */
static int record_driver_id(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *v = getenv("FAKE_CUPTI_RECORD_DRIVER_ID");
        cached = v && v[0] == '1';
    }
    return cached;
}

/* A runtime launch `runtime_cbid` with the driver's cuLaunchKernel nested
 * in it, as the runtime does; the record carries one of the two ids. */
static void runtime_launch(CUpti_CallbackId runtime_cbid, const char *name, uint64_t dur_ns, int running) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbid, CUPTI_API_ENTER, corr, NULL, &status);
    uint32_t inner = take_corr();
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, inner, NULL,
        &status);
    if (capturing >= 0) add_node(capturing, keep_name(name), dur_ns, announce); /* captured: runs later */
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, inner, NULL,
        &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbid, CUPTI_API_EXIT, corr, NULL, &status);
    if (capturing < 0) kernel_record(record_driver_id() ? inner : corr, name, dur_ns, running);
}

/* cudaLaunchKernel (CUDA 12's <<<>>> path, and explicit launches). */
void fake_cupti_launch_kernel(const char *name, uint64_t dur_ns) {
    runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, name, dur_ns, 0);
}

/* A kernel that runs from CLOCK_MONOTONIC t_ns for dur_ns (see the top). */
void fake_cupti_launch_kernel_at(const char *name, uint64_t t_ns, uint64_t dur_ns) {
    __atomic_store_n(&start_at, t_ns, __ATOMIC_RELAXED);
    fake_cupti_launch_kernel(name, dur_ns);
}

/* nvcc 13's <<<>>> path: __cudaLaunchKernel (crt/device_functions.h). */
void fake_cupti_launch_kernel13(const char *name, uint64_t dur_ns) {
    runtime_launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, name, dur_ns, 0);
}

/* A kernel still running until fake_cupti_synchronize. */
void fake_cupti_launch_kernel_async(const char *name, uint64_t dur_ns) {
    runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, name, dur_ns, 1);
}

/* n launches in a row (a busy training thread), each with `other` API
 * calls between them that queue nothing. */
void fake_cupti_launch_many(const char *name, int n, int other, uint64_t dur_ns) {
    for (int i = 0; i < n; i++) {
        fake_cupti_launch_kernel(name, dur_ns);
        fake_cupti_other_calls(other);
    }
}

/* A launch that fails (cudaErrorInvalidConfiguration): no record. */
void fake_cupti_failed_launch(void) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, corr,
        NULL, &status);
    status = 9;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, corr,
        NULL, &status);
}

/* cudaGraphLaunch of a graph of `n` kernels (each dur_ns): every kernel's
 * record carries the graph launch's correlation id, as CUPTI does. */
void fake_cupti_graph_launch(int n, uint64_t dur_ns) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_ENTER, corr,
        NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT, corr,
        NULL, &status);
    for (int i = 0; i < n; i++) {
        record r;
        memset(&r, 0, sizeof r);
        r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.kernel.start = advance(dur_ns);
        r.kernel.end = r.kernel.start + dur_ns;
        r.kernel.correlationId = corr;
        r.kernel.graphId = 1;
        r.kernel.name = "graph_node_kernel";
        emit(r, 0);
    }
}

/* cudaStreamBeginCapture on the calling thread's stream: its launches go
 * to a new graph (returned) until fake_cupti_end_capture. announce = 0: no
 * GRAPHNODE_CREATED is delivered, as for a graph captured before lprof
 * subscribed. */
int fake_cupti_begin_capture(int tell) {
    capturing = new_graph();
    announce = tell;
    return capturing;
}

void fake_cupti_end_capture(void) { capturing = -1; }

/* cudaGraphCreate, then cudaGraphAddKernelNode of one kernel to it (the
 * node is made inside the add call, on the calling thread). */
int fake_cupti_graph_create(void) { return new_graph(); }

void fake_cupti_graph_add_kernel_node(int g, const char *name, uint64_t dur_ns) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000, CUPTI_API_ENTER,
        corr, NULL, &status);
    add_node(g, keep_name(name), dur_ns, 1);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000, CUPTI_API_EXIT,
        corr, NULL, &status);
}

/* cudaGraphInstantiate: a new executable graph (returned) whose nodes are
 * clones of g's, each announced with GRAPHNODE_CLONED. */
int fake_cupti_graph_instantiate(int g) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, CUPTI_API_ENTER,
        corr, NULL, &status);
    int e = new_graph();
    uint64_t clone[MAX_NODES], from[MAX_NODES];
    int n = 0;
    pthread_mutex_lock(&graph_lock);
    if (e >= 0 && g >= 0 && g < ngraphs) {
        graph *src = &graphs[g], *dst = &graphs[e];
        for (n = 0; n < src->nnodes; n++) {
            dst->node[n] = clone[n] = next_node++;
            dst->original[n] = from[n] = src->node[n];
            dst->name[n] = src->name[n];
            dst->dur[n] = src->dur[n];
        }
        dst->nnodes = n;
    }
    pthread_mutex_unlock(&graph_lock);
    for (int i = 0; i < n; i++) {
        graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, clone[i], 0);
        graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, clone[i], from[i]);
    }
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, CUPTI_API_EXIT,
        corr, NULL, &status);
    return e;
}

/* Records name the original (captured) node instead of the clone. */
void fake_cupti_graph_ids(int original) { __atomic_store_n(&report_original, original, __ATOMIC_RELAXED); }

/* cudaGraphLaunch of executable graph e: one record per node, with the
 * launch's correlation id and the node's id. */
void fake_cupti_graph_replay(int e) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_ENTER, corr,
        NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT, corr,
        NULL, &status);
    graph gr;
    pthread_mutex_lock(&graph_lock);
    int ok = e >= 0 && e < ngraphs;
    if (ok) gr = graphs[e];
    pthread_mutex_unlock(&graph_lock);
    if (!ok) return;
    int original = __atomic_load_n(&report_original, __ATOMIC_RELAXED);
    for (int i = 0; i < gr.nnodes; i++) {
        record r;
        memset(&r, 0, sizeof r);
        r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.kernel.start = advance(gr.dur[i]);
        r.kernel.end = r.kernel.start + gr.dur[i];
        r.kernel.correlationId = corr;
        r.kernel.graphId = (uint32_t)e + 1;
        r.kernel.graphNodeId = original && gr.original[i] ? gr.original[i] : gr.node[i];
        r.kernel.name = gr.name[i];
        emit(r, 0);
    }
}

static void copy_record(uint32_t corr, int kind, uint64_t bytes, uint64_t dur_ns) {
    record r;
    memset(&r, 0, sizeof r);
    r.memcpy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.memcpy.copyKind = (uint8_t)kind;
    r.memcpy.bytes = bytes;
    r.memcpy.start = advance(dur_ns);
    r.memcpy.end = r.memcpy.start + dur_ns;
    r.memcpy.correlationId = corr;
    r.memcpy.deviceId = __atomic_load_n(&cur_device, __ATOMIC_RELAXED);
    r.memcpy.streamId = __atomic_load_n(&cur_stream, __ATOMIC_RELAXED);
    emit(r, 0);
}

/* cudaMemcpy of `bytes` in direction `kind` (CUpti_ActivityMemcpyKind). */
void fake_cupti_memcpy(int kind, uint64_t bytes, uint64_t dur_ns) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_ENTER, corr, NULL,
        &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_EXIT, corr, NULL,
        &status);
    copy_record(corr, kind, bytes, dur_ns);
}

/* CUDA 13's cudaMemcpyBatchAsync of `count` copies of `bytes` each: one
 * API call, one record per copy, all with its correlation id. */
void fake_cupti_memcpy_batch(int kind, int count, uint64_t bytes, uint64_t dur_ns) {
    uint32_t corr = take_corr();
    int status = 0;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, CUPTI_API_ENTER,
        corr, NULL, &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, CUPTI_API_EXIT,
        corr, NULL, &status);
    for (int i = 0; i < count; i++) copy_record(corr, kind, bytes, dur_ns);
}

/* cudaMalloc of `size` bytes, returning device address `ptr`; cudaFree. */
void fake_cupti_malloc(uint64_t ptr, uint64_t size) {
    void *dev = NULL;
    cudaMalloc_v3020_params p = {&dev, (size_t)size};
    int status = 0;
    uint32_t corr = take_corr();
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, corr, &p,
        &status);
    dev = (void *)(uintptr_t)ptr;
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_EXIT, corr, &p,
        &status);
}

void fake_cupti_free(uint64_t ptr) {
    cudaFree_v3020_params p = {(void *)(uintptr_t)ptr};
    int status = 0;
    uint32_t corr = take_corr();
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_API_ENTER, corr, &p,
        &status);
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_API_EXIT, corr, &p,
        &status);
}

/* PyTorch's expandable segments: cuMemCreate (a physical handle), then
 * cuMemMap of it at `ptr`; cuMemUnmap gives the range back. */
void fake_cupti_mem_map(uint64_t ptr, uint64_t size) {
    CUmemGenericAllocationHandle handle = 0;
    cuMemCreate_params c = {&handle, (size_t)size, NULL, 0};
    int status = 0;
    uint32_t corr = take_corr();
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_API_ENTER, corr, &c, &status);
    handle = 0x42;
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_API_EXIT, corr, &c, &status);
    cuMemMap_params m = {(CUdeviceptr)ptr, (size_t)size, 0, handle, 0};
    corr = take_corr();
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_API_ENTER, corr, &m, &status);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_API_EXIT, corr, &m, &status);
}

void fake_cupti_mem_unmap(uint64_t ptr, uint64_t size) {
    cuMemUnmap_params u = {(CUdeviceptr)ptr, (size_t)size};
    int status = 0;
    uint32_t corr = take_corr();
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, CUPTI_API_ENTER, corr, &u, &status);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, CUPTI_API_EXIT, corr, &u, &status);
}

/* cuMemAllocFromPoolAsync (PyTorch's CUDA_MALLOC_ASYNC backend). */
void fake_cupti_pool_alloc(uint64_t ptr, uint64_t size) {
    CUdeviceptr dev = 0;
    cuMemAllocFromPoolAsync_params p = {&dev, (size_t)size, NULL, NULL};
    int status = 0;
    uint32_t corr = take_corr();
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, CUPTI_API_ENTER, corr,
        &p, &status);
    dev = (CUdeviceptr)ptr;
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, CUPTI_API_EXIT, corr, &p,
        &status);
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

void fake_cupti_hang_flushes(int on) { __atomic_store_n(&hang_flushes, on, __ATOMIC_RELEASE); }

/* 1 if lprof enabled the callback (domain, cbid). */
int fake_cupti_enabled(int domain, int cbid) { return enabled[domain & 7][cbid & 1023]; }
int fake_cupti_subscribed(void) { return __atomic_load_n(&subscribed, __ATOMIC_ACQUIRE); }
/* flushes so far: flag 0 (forced = 0) or forced (forced = 1) */
unsigned long long fake_cupti_flushes(int forced) {
    pthread_mutex_lock(&lock);
    unsigned long long n = flushes[forced != 0];
    pthread_mutex_unlock(&lock);
    return n;
}
unsigned long long fake_cupti_forced_incomplete(void) { return forced_incomplete; }
