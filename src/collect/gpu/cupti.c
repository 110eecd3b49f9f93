/* collect: the CUPTI collector (see cupti.h; the ABI it relies on is in
 * cupti_view.h). Hot path: the API callback, once per enabled CUDA call on
 * the launching thread: one stack capture for the outermost call of a
 * nesting (a runtime call and the driver call under it share it), one
 * atomic store per correlation id, no lock, no malloc after the thread's
 * first call. Activity buffers are malloc'd and parsed on CUPTI's thread.
 *
 * Delivery: CUDA 13 keeps one activity buffer per thread, and CUPTI's own
 * periodic flush returns only full ones; lprof's flush thread calls
 * cuptiActivityFlushAll(0) every FLUSH_PERIOD_MS, which returns every
 * buffer whose records are complete, full or not. Checkpoints (-i) use the
 * same flag 0: a forced flush would hand back kernels still running as
 * incomplete records, which CUPTI never delivers again. Only the final
 * flush is forced. Stop: each CUPTI call that can hang (flush, disable,
 * unsubscribe) runs on a helper thread with a time-out, and unsubscribing
 * is attempted even when the flush timed out (a later torch.profiler needs
 * CUPTI free); records CUPTI hands back after stop are counted, never
 * joined while the profile is being written. */
#define _GNU_SOURCE
#include "collect/gpu/cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_devmem.h"
#include "aggregate/gpu_graph.h"
#include "aggregate/gpu_join.h"
#include "aggregate/gpu_trace.h"
#include "collect/gpu/cupti_view.h"
#include "common/clock.h"
#include "common/own_tids.h"
#include "common/thread_start.h"

/* per thread in CUDA 13: smaller buffers come back sooner and cost less
 * memory per launching thread (2,500+ kernel records each) */
#define BUFFER_BYTES    ((size_t)512 << 10)
#define FLUSH_PERIOD_MS 500
#define CLOSE_WAIT_MS   2000

typedef lp_cupti_result (*fn_u32p)(uint32_t *);
static struct {
    lp_cupti_result (*get_version)(uint32_t *);
    lp_cupti_result (*result_string)(lp_cupti_result, const char **);
    lp_cupti_result (*subscribe)(lp_cupti_subscriber *, lp_cupti_callback, void *);
    lp_cupti_result (*subscribe_v2)(lp_cupti_subscriber *, lp_cupti_callback, void *,
                                    lp_cupti_subscriber_params *);
    lp_cupti_result (*unsubscribe)(lp_cupti_subscriber);
    lp_cupti_result (*enable_callback)(uint32_t, lp_cupti_subscriber, int, uint32_t);
    lp_cupti_result (*register_callbacks)(lp_cupti_buffer_request, lp_cupti_buffer_complete);
    lp_cupti_result (*enable)(int);
    lp_cupti_result (*disable)(int);
    lp_cupti_result (*next_record)(uint8_t *, size_t, uint8_t **);
    lp_cupti_result (*dropped)(void *, uint32_t, size_t *);
    lp_cupti_result (*flush_all)(uint32_t);
    lp_cupti_result (*flush_period)(uint32_t);
    lp_cupti_result (*get_timestamp)(uint64_t *);
    lp_cupti_result (*graph_node_id)(void *, uint64_t *); /* cuptiGetGraphNodeId */
} fn;

/* CUPTI's timestamps to CLOCK_MONOTONIC: add this (mod 2^64), from one
 * (cuptiGetTimestamp, clock_gettime) pair read at the first traced call
 * (not at start: lprof touches nothing of CUDA before the program does);
 * 0 where CUPTI lacks cuptiGetTimestamp (times kept as CUPTI gives them,
 * said in the stats). clock_state: 0 not yet, 1 being read, 2 read. */
static uint64_t to_monotonic;
static int clock_state;

static lp_gpu_host host;
static lp_cupti_subscriber subscriber;
static int active;
static int forked;          /* in a fork child: never call CUPTI */
static unsigned generation; /* bumped per start: stale thread state resets */
static lp_cupti_info info;

enum { ROLE_WORK = 1, ROLE_ALLOC = 2, ROLE_FREE = 3, ROLE_MAP = 4, ROLE_GRAPH = 5, ROLE_REPLAY = 6 };
static unsigned char roles[2][1024]; /* [domain runtime/driver][cbid] */

static __thread struct {
    unsigned generation;
    int depth;
    uint32_t stack;
    uint32_t primary; /* the nesting's first WORK call's correlation id, 0: none yet */
    int replay;       /* that call launches a graph */
} tls;

/* The delivery gate: buffers parsed while `closed` is 0 are joined; stop
 * closes it and waits for parses in flight, so nothing joins while the
 * profile is written (Dekker-style, both sides sequentially consistent). */
static int closed;
static int inflight;

/* lprof's flush thread */
static pthread_t flusher;
static int flusher_running;
static int flusher_stop;
static pthread_mutex_t flusher_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flusher_cv = PTHREAD_COND_INITIALIZER;

static int status_ok(const lp_cupti_callback_data *d) {
    if (!d->return_value) return 1;
    int status;
    memcpy(&status, d->return_value, sizeof status);
    return status == 0;
}

static int role_of(int domain, uint32_t cbid) {
    if (cbid >= LP_ARRAY_LEN(roles[0])) return 0;
    if (domain == LP_CUPTI_DOMAIN_RUNTIME) return roles[0][cbid];
    if (domain == LP_CUPTI_DOMAIN_DRIVER) return roles[1][cbid];
    return 0;
}

/* The offset from CUPTI's clock to CLOCK_MONOTONIC: the pair of readings
 * closest together of a few tries (least scheduling noise). */
static void align_clock(void) {
    if (!fn.get_timestamp) return;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t m0 = lp_clock_monotonic_ns(), c = 0;
        if (fn.get_timestamp(&c) != LP_CUPTI_SUCCESS || !c) return;
        uint64_t m1 = lp_clock_monotonic_ns();
        if (m1 - m0 < best) {
            best = m1 - m0;
            to_monotonic = (m0 + (m1 - m0) / 2) - c;
        }
    }
    __atomic_store_n(&info.clock_aligned, 1, __ATOMIC_RELAXED);
}

/* A graph node made or cloned (resource domain; the graph data is the
 * resource data's descriptor). Made: inside the call that made it, on that
 * call's thread (a launch into a capturing stream, or a node added by
 * hand): the node takes the call's stack, and a captured launch runs
 * nothing, so no record is awaited for it. An instantiate makes each clone
 * (outside any traced call: no stack) and then reports it cloned: the
 * clone takes its original's stack. */
static void on_graph_node(uint32_t cbid, const lp_cupti_resource_data *r) {
    uint64_t node = 0, original = 0;
    if (cbid != LP_CUPTI_CBID_GRAPHNODE_CREATED && cbid != LP_CUPTI_CBID_GRAPHNODE_CLONED) return;
    const lp_cupti_graph_data *g = r->resource_descriptor;
    if (!g || !fn.graph_node_id || !g->node || fn.graph_node_id(g->node, &node) != LP_CUPTI_SUCCESS) return;
    if (cbid == LP_CUPTI_CBID_GRAPHNODE_CREATED) {
        if (tls.generation != __atomic_load_n(&generation, __ATOMIC_RELAXED) || tls.depth == 0) return;
        lp_gpu_graph_node_created(node, tls.stack);
        if (tls.primary && !tls.replay) lp_gpu_join_forget(tls.primary);
    } else if (cbid == LP_CUPTI_CBID_GRAPHNODE_CLONED && g->original_node &&
               fn.graph_node_id(g->original_node, &original) == LP_CUPTI_SUCCESS) {
        lp_gpu_graph_node_cloned(node, original);
    }
}

static void on_api(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || forked || !cbdata) return;
    if (domain == LP_CUPTI_DOMAIN_RESOURCE) {
        on_graph_node(cbid, cbdata);
        return;
    }
    const lp_cupti_callback_data *d = cbdata;
    int role = role_of(domain, cbid);
    if (!role) return;
    unsigned gen = __atomic_load_n(&generation, __ATOMIC_RELAXED);
    if (tls.generation != gen) { /* an ENTER whose EXIT never came must not stick */
        tls.generation = gen;
        tls.depth = 0;
    }
    __atomic_fetch_add(&info.callbacks, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&clock_state, __ATOMIC_ACQUIRE) == 0) {
        int expected = 0; /* one thread reads the pair; records come only after launches */
        if (__atomic_compare_exchange_n(&clock_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            align_clock();
            __atomic_store_n(&clock_state, 2, __ATOMIC_RELEASE);
        }
    }
    if (d->site == LP_CUPTI_API_ENTER) {
        if (tls.depth++ == 0) {
            tls.stack = host.launch_stack();
            tls.primary = 0;
            if (role == ROLE_FREE && d->params) {
                uint64_t ptr;
                memcpy(&ptr, d->params, sizeof ptr);
                lp_gpu_devmem_free(ptr);
            }
        }
        if (role == ROLE_WORK || role == ROLE_REPLAY) {
            /* records carry the id of the outermost launching call (the
             * runtime's, for a runtime launch); a nested driver call's id is
             * noted too, but no record is awaited for it */
            if (!tls.primary) {
                tls.primary = d->correlation_id;
                tls.replay = role == ROLE_REPLAY;
                lp_agg_add(tls.stack, LP_M_GPU_LAUNCHES, 1);
                lp_gpu_join_note_launch(d->correlation_id, tls.stack);
                lp_gpu_trace_note_launch(d->correlation_id, lp_clock_monotonic_ns());
            } else {
                lp_gpu_join_note_nested(d->correlation_id, tls.stack, tls.primary);
            }
        }
        return;
    }
    /* EXIT: a failed launch queued nothing; an allocation of the outermost
     * call, if it succeeded */
    if ((role == ROLE_WORK || role == ROLE_REPLAY) && !status_ok(d)) lp_gpu_join_forget(d->correlation_id);
    if (tls.depth == 1 && (role == ROLE_ALLOC || role == ROLE_MAP) && d->params && status_ok(d)) {
        uint64_t ptr = 0, size;
        memcpy(&size, (const char *)d->params + sizeof(void *), sizeof size);
        if (role == ROLE_MAP) { /* cuMemMap(ptr, size, ...): the address itself */
            memcpy(&ptr, d->params, sizeof ptr);
        } else {
            void *where;
            memcpy(&where, d->params, sizeof where);
            if (where) memcpy(&ptr, where, sizeof ptr);
        }
        if (ptr) lp_gpu_devmem_alloc(ptr, size, tls.stack);
    }
    if (tls.depth > 0) tls.depth--;
}

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static uint64_t u64_at(const uint8_t *rec, size_t off) {
    uint64_t v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

static uint32_t u32_at(const uint8_t *rec, size_t off) {
    uint32_t v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

static lp_gpu_dir copy_dir(unsigned kind) {
    switch (kind) {
        case LP_CUPTI_COPY_HTOD: return LP_GPU_DIR_H2D;
        case LP_CUPTI_COPY_DTOH: return LP_GPU_DIR_D2H;
        case LP_CUPTI_COPY_DTOD:
        case LP_CUPTI_COPY_PTOP: return LP_GPU_DIR_D2D;
        default: return LP_GPU_DIR_OTHER;
    }
}

static void parse_record(const uint8_t *rec) {
    lp_gpu_activity a;
    memset(&a, 0, sizeof a);
    switch (u32_at(rec, LP_CUPTI_REC_KIND)) {
        case LP_CUPTI_KIND_KERNEL:
        case LP_CUPTI_KIND_CONCURRENT_KERNEL: {
            a.op = LP_GPU_KERNEL;
            a.start_ns = u64_at(rec, LP_CUPTI_KERNEL_START);
            a.end_ns = u64_at(rec, LP_CUPTI_KERNEL_END);
            a.correlation = u32_at(rec, LP_CUPTI_KERNEL_CORRELATION);
            a.device = u32_at(rec, LP_CUPTI_KERNEL_DEVICE);
            a.stream = u32_at(rec, LP_CUPTI_KERNEL_STREAM);
            a.graph_node = u64_at(rec, LP_CUPTI_KERNEL_GRAPH_NODE);
            const char *name;
            memcpy(&name, rec + LP_CUPTI_KERNEL_NAME, sizeof name);
            a.name = name;
            break;
        }
        case LP_CUPTI_KIND_MEMCPY:
            a.op = LP_GPU_MEMCPY;
            a.dir = copy_dir(rec[LP_CUPTI_MEMCPY_COPY_KIND]);
            a.bytes = u64_at(rec, LP_CUPTI_MEMCPY_BYTES);
            a.start_ns = u64_at(rec, LP_CUPTI_MEMCPY_START);
            a.end_ns = u64_at(rec, LP_CUPTI_MEMCPY_END);
            a.correlation = u32_at(rec, LP_CUPTI_MEMCPY_CORRELATION);
            a.device = u32_at(rec, LP_CUPTI_MEMCPY_DEVICE);
            a.stream = u32_at(rec, LP_CUPTI_MEMCPY_STREAM);
            a.graph_node = u64_at(rec, LP_CUPTI_MEMCPY_GRAPH_NODE);
            break;
        case LP_CUPTI_KIND_MEMSET:
            a.op = LP_GPU_MEMSET;
            a.bytes = u64_at(rec, LP_CUPTI_MEMSET_BYTES);
            a.start_ns = u64_at(rec, LP_CUPTI_MEMSET_START);
            a.end_ns = u64_at(rec, LP_CUPTI_MEMSET_END);
            a.correlation = u32_at(rec, LP_CUPTI_MEMSET_CORRELATION);
            a.device = u32_at(rec, LP_CUPTI_MEMSET_DEVICE);
            a.stream = u32_at(rec, LP_CUPTI_MEMSET_STREAM);
            a.graph_node = u64_at(rec, LP_CUPTI_MEMSET_GRAPH_NODE);
            break;
        default: return;
    }
    if (a.start_ns && a.end_ns >= a.start_ns && __atomic_load_n(&clock_state, __ATOMIC_ACQUIRE) == 2) {
        a.start_ns += to_monotonic; /* complete: onto the CPU timeline's clock */
        a.end_ns += to_monotonic;
    }
    lp_gpu_join_add(&a);
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    if (!buffer) return;
    __atomic_fetch_add(&inflight, 1, __ATOMIC_SEQ_CST);
    int join = !__atomic_load_n(&closed, __ATOMIC_SEQ_CST);
    if (!forked) {
        uint8_t *rec = NULL;
        uint64_t n = 0;
        while (valid && fn.next_record(buffer, valid, &rec) == LP_CUPTI_SUCCESS && rec) {
            if (join) parse_record(rec);
            n++;
        }
        if (!join) __atomic_fetch_add(&info.after_stop, n, __ATOMIC_RELAXED);
        size_t dropped = 0;
        if (fn.dropped && fn.dropped(ctx, stream, &dropped) == LP_CUPTI_SUCCESS)
            __atomic_fetch_add(&info.dropped, (uint64_t)dropped, __ATOMIC_RELAXED);
        __atomic_fetch_add(&info.records, n, __ATOMIC_RELAXED);
        __atomic_fetch_add(&info.buffers, 1, __ATOMIC_RELAXED);
    }
    free(buffer);
    __atomic_fetch_sub(&inflight, 1, __ATOMIC_SEQ_CST);
}

static const char *result_text(lp_cupti_result r) {
    const char *s = NULL;
    if (fn.result_string && fn.result_string(r, &s) == LP_CUPTI_SUCCESS && s) return s;
    return "unknown CUPTI error";
}

static void *open_cupti(const char *const *candidates, size_t n, const char *const *sonames, size_t ns) {
    for (size_t i = 0; i < ns; i++) { /* the copy torch already loaded */
        void *h = sonames[i] ? dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (h) return h;
    }
    for (size_t i = 0; i < n; i++) {
        void *h = candidates[i] ? dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) return h;
    }
    for (size_t i = 0; i < ns; i++) {
        void *h = sonames[i] ? dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) return h;
    }
    return NULL;
}

#define BIND(field, name) (*(void **)&fn.field = dlsym(lib, name))

static void on_fork_child(void) {
    forked = 1;
    active = 0;
}

static void set_roles(void) {
    memset(roles, 0, sizeof roles);
#define LP_SET_ROLE_(name, domain, id, role) \
    roles[LP_CUPTI_DOMAIN_##domain == LP_CUPTI_DOMAIN_RUNTIME ? 0 : 1][id] = ROLE_##role;
    LP_CUPTI_CBIDS(LP_SET_ROLE_)
#undef LP_SET_ROLE_
}

/* The record layout of a CUPTI API version (LP_CUPTI_LAYOUTS): the newest
 * row not newer than it; none above LP_CUPTI_NEWEST_API. */
static const char *pick_layout(uint32_t version) {
    static const struct {
        uint32_t from;
        const char *what;
    } rows[] = {
#define LP_LAYOUT_ROW_(from, what) {from, what},
        LP_CUPTI_LAYOUTS(LP_LAYOUT_ROW_)
#undef LP_LAYOUT_ROW_
    };
    if (version > LP_CUPTI_NEWEST_API) return NULL;
    const char *found = NULL;
    for (size_t i = 0; i < LP_ARRAY_LEN(rows); i++)
        if (version >= rows[i].from) found = rows[i].what;
    if (found) snprintf(info.layout, sizeof info.layout, "%s", found);
    return found;
}

static const char *newest_layout(void) {
    static const char *const all[] = {
#define LP_LAYOUT_NAME_(from, what) what,
        LP_CUPTI_LAYOUTS(LP_LAYOUT_NAME_)
#undef LP_LAYOUT_NAME_
    };
    return all[LP_ARRAY_LEN(all) - 1];
}

/* lprof's periodic flush (flag 0: complete buffers, full or not). It calls
 * CUPTI only once the program made a CUDA call lprof traces, so starting
 * lprof does not touch the driver before the program does. */
static int flusher_started; /* its first write: start-up over (common/thread_start.h) */

static void *flusher_main(void *arg) {
    (void)arg;
    lp_own_tid_add_self(); /* its CPU time is lprof's (collect/other_threads.h) */
    __atomic_store_n(&flusher_started, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&flusher_mu);
    while (!flusher_stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += (long)FLUSH_PERIOD_MS * 1000000L;
        t.tv_sec += t.tv_nsec / 1000000000L;
        t.tv_nsec %= 1000000000L;
        (void)pthread_cond_timedwait(&flusher_cv, &flusher_mu, &t);
        if (flusher_stop) break;
        pthread_mutex_unlock(&flusher_mu);
        if (__atomic_load_n(&info.callbacks, __ATOMIC_RELAXED)) {
            (void)fn.flush_all(0);
            __atomic_fetch_add(&info.timer_flushes, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_lock(&flusher_mu);
    }
    pthread_mutex_unlock(&flusher_mu);
    lp_own_tid_remove_self();
    return NULL;
}

static void start_flusher(void) {
    flusher_stop = 0;
    __atomic_store_n(&flusher_started, 0, __ATOMIC_RELEASE);
    flusher_running = lp_thread_create_quiet(&flusher, flusher_main, NULL) == 0;
    if (flusher_running) lp_wait_for_flag(&flusher_started, LP_THREAD_START_WAIT_NS);
}

/* Runs fn_(NULL) on a helper thread, waiting at most timeout_ms; 1 when
 * it did not return in time (the thread is left to finish on its own). */
static int run_bounded(void *(*fn_)(void *), unsigned timeout_ms) {
    pthread_t t;
    int made = lp_thread_create_quiet(&t, fn_, NULL) == 0;
    if (!made) {
        fn_(NULL);
        return 0;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(t, NULL, &deadline) != 0) {
        pthread_detach(t);
        return 1;
    }
    return 0;
}

static void *stop_flusher_thread(void *arg) {
    (void)arg;
    pthread_join(flusher, NULL);
    return NULL;
}

static void stop_flusher(unsigned timeout_ms) {
    if (!flusher_running) return;
    pthread_mutex_lock(&flusher_mu);
    flusher_stop = 1;
    pthread_cond_signal(&flusher_cv);
    pthread_mutex_unlock(&flusher_mu);
    /* a flush stuck in CUPTI must not hold the stop up */
    if (run_bounded(stop_flusher_thread, timeout_ms)) info.flush_timed_out = 1;
    flusher_running = 0;
}

int lp_cupti_start(const lp_gpu_host *h, const char *const *candidates, size_t n, const char *const *sonames,
                   size_t nsonames, char *why, size_t why_len) {
    if (active) return 0;
    if (forked) {
        snprintf(why, why_len, "not in a forked child of a process that used CUPTI");
        return -1;
    }
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (inj && *inj && strcmp(inj, "none") != 0) { /* "none" means unset, as Kineto reads it */
        snprintf(why, why_len, "CUPTI belongs to an injection tool (CUDA_INJECTION64_PATH=%s)", inj);
        return -1;
    }
    if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) && !dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
        snprintf(why, why_len, "no NVIDIA driver (libcuda.so.1 not found)");
        return -1;
    }
    void *lib = open_cupti(candidates, n, sonames, nsonames);
    if (!lib) {
        snprintf(why, why_len,
                 "libcupti not found (install the CUDA toolkit or the nvidia-cuda-cupti wheel, "
                 "or set LPROF_CUPTI_PATH)");
        return -1;
    }
    memset(&fn, 0, sizeof fn);
    BIND(get_version, "cuptiGetVersion");
    BIND(result_string, "cuptiGetResultString");
    BIND(subscribe, "cuptiSubscribe");
    BIND(subscribe_v2, "cuptiSubscribe_v2");
    BIND(unsubscribe, "cuptiUnsubscribe");
    BIND(enable_callback, "cuptiEnableCallback");
    BIND(register_callbacks, "cuptiActivityRegisterCallbacks");
    BIND(enable, "cuptiActivityEnable");
    BIND(disable, "cuptiActivityDisable");
    BIND(next_record, "cuptiActivityGetNextRecord");
    BIND(dropped, "cuptiActivityGetNumDroppedRecords");
    BIND(flush_all, "cuptiActivityFlushAll");
    BIND(flush_period, "cuptiActivityFlushPeriod");
    BIND(get_timestamp, "cuptiGetTimestamp");
    BIND(graph_node_id, "cuptiGetGraphNodeId");
    memset(&info, 0, sizeof info);
    Dl_info where;
    if (fn.get_version && dladdr(*(void **)&fn.get_version, &where) && where.dli_fname)
        snprintf(info.library, sizeof info.library, "%s", where.dli_fname);
    if (!fn.get_version || !fn.subscribe || !fn.unsubscribe || !fn.enable_callback ||
        !fn.register_callbacks || !fn.enable || !fn.disable || !fn.next_record || !fn.flush_all) {
        snprintf(why, why_len, "%s lacks the CUPTI functions lprof needs",
                 info.library[0] ? info.library : "libcupti");
        return -1;
    }
    if (fn.get_version(&info.version) != LP_CUPTI_SUCCESS || info.version < LP_CUPTI_OLDEST_API) {
        snprintf(why, why_len,
                 "CUPTI API version %u is older than CUDA 12.0's (19; lprof reads the records of "
                 "CUDA 12 and 13)",
                 info.version);
        return -1;
    }
    if (!pick_layout(info.version)) {
        snprintf(why, why_len,
                 "CUPTI API version %u is newer than the record layouts lprof knows (up to %s); "
                 "a newer lprof is needed to read its records",
                 info.version, newest_layout());
        return -1;
    }
    host = *h;
    set_roles();
    to_monotonic = 0;
    __atomic_store_n(&clock_state, 0, __ATOMIC_RELEASE);
    char old[LP_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    lp_cupti_result r;
    if (fn.subscribe_v2) {
        lp_cupti_subscriber_params p = {sizeof p, "lprof", old, LP_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN};
        r = fn.subscribe_v2(&subscriber, on_api, NULL, &p);
    } else {
        r = fn.subscribe(&subscriber, on_api, NULL);
    }
    if (r == LP_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS || r == LP_CUPTI_ERROR_MAX_LIMIT_REACHED) {
        old[sizeof old - 1] = '\0';
        snprintf(why, why_len, "CUPTI is already in use by %s (one CUPTI client per process)",
                 old[0] ? old : "another tool (torch.profiler, Nsight, compute-sanitizer)");
        return -1;
    }
    if (r != LP_CUPTI_SUCCESS) {
        snprintf(why, why_len, "cuptiSubscribe: %s", result_text(r));
        return -1;
    }
#define LP_ENABLE_CBID_(name, domain, id, role) \
    (void)fn.enable_callback(1, subscriber, LP_CUPTI_DOMAIN_##domain, id);
    LP_CUPTI_CBIDS(LP_ENABLE_CBID_)
#undef LP_ENABLE_CBID_
    if (fn.graph_node_id) { /* graph replays' kernels to their captured lines */
        (void)fn.enable_callback(1, subscriber, LP_CUPTI_DOMAIN_RESOURCE, LP_CUPTI_CBID_GRAPHNODE_CREATED);
        (void)fn.enable_callback(1, subscriber, LP_CUPTI_DOMAIN_RESOURCE, LP_CUPTI_CBID_GRAPHNODE_CLONED);
    }
    r = fn.register_callbacks(buffer_requested, buffer_completed);
    static const int kinds[] = {LP_CUPTI_KIND_CONCURRENT_KERNEL, LP_CUPTI_KIND_MEMCPY, LP_CUPTI_KIND_MEMSET};
    for (size_t i = 0; r == LP_CUPTI_SUCCESS && i < LP_ARRAY_LEN(kinds); i++) r = fn.enable(kinds[i]);
    if (r != LP_CUPTI_SUCCESS) {
        for (size_t i = 0; i < LP_ARRAY_LEN(kinds); i++) (void)fn.disable(kinds[i]);
        (void)fn.unsubscribe(subscriber);
        snprintf(why, why_len, "cuptiActivityEnable: %s", result_text(r));
        return -1;
    }
    if (fn.flush_period) (void)fn.flush_period(FLUSH_PERIOD_MS);
    static int atfork_set;
    if (!atfork_set && pthread_atfork(NULL, NULL, on_fork_child) == 0) atfork_set = 1;
    __atomic_fetch_add(&generation, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&closed, 0, __ATOMIC_SEQ_CST);
    info.active = 1;
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
    start_flusher();
    return 0;
}

/* A checkpoint: complete records only (flag 0); kernels still running
 * come back with a later flush, not as incomplete records now. */
void lp_cupti_flush(void) {
    if (active && !forked) (void)fn.flush_all(0);
}

static void *final_flush(void *arg) {
    (void)arg;
    (void)fn.flush_all(LP_CUPTI_FLUSH_FORCED);
    return NULL;
}

static void *leave_cupti(void *arg) {
    (void)arg;
    static const int kinds[] = {LP_CUPTI_KIND_CONCURRENT_KERNEL, LP_CUPTI_KIND_MEMCPY, LP_CUPTI_KIND_MEMSET};
    for (size_t i = 0; i < LP_ARRAY_LEN(kinds); i++) (void)fn.disable(kinds[i]);
    (void)fn.unsubscribe(subscriber);
    return NULL;
}

void lp_cupti_stop(unsigned timeout_ms) {
    if (!active || forked) return;
    stop_flusher(timeout_ms);
    if (run_bounded(final_flush, timeout_ms)) info.flush_timed_out = 1; /* keep what arrived */
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
    info.active = 0;
    /* close the gate: records CUPTI still hands back (a flush that timed
     * out and returns later) are counted, not joined into the stack table
     * being written; wait for parses already in flight (bounded) */
    __atomic_store_n(&closed, 1, __ATOMIC_SEQ_CST);
    for (unsigned waited = 0; __atomic_load_n(&inflight, __ATOMIC_SEQ_CST) && waited < CLOSE_WAIT_MS;
         waited++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    /* leave CUPTI even after a flush time-out, so another client (a later
     * torch.profiler) can subscribe; disable and unsubscribe can hang too */
    if (run_bounded(leave_cupti, timeout_ms)) info.unsubscribe_timed_out = 1;
}

void lp_cupti_get_info(lp_cupti_info *out) {
    *out = info;
    out->callbacks = __atomic_load_n(&info.callbacks, __ATOMIC_RELAXED);
    out->buffers = __atomic_load_n(&info.buffers, __ATOMIC_RELAXED);
    out->records = __atomic_load_n(&info.records, __ATOMIC_RELAXED);
    out->dropped = __atomic_load_n(&info.dropped, __ATOMIC_RELAXED);
    out->after_stop = __atomic_load_n(&info.after_stop, __ATOMIC_RELAXED);
    out->timer_flushes = __atomic_load_n(&info.timer_flushes, __ATOMIC_RELAXED);
}
