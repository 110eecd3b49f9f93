/* binding: lprof --gpu in lprof._lprof: starts and stops the GPU backends
 * (collect/gpu/cupti.c, collect/gpu/levelzero.c) and gives them the
 * interpreter side they need: the launching thread's Python stack, read
 * without the GIL by the sampler's frame walker (frames.h). Holds no
 * collection logic. Used by python/lprof/collect/gpu.py. */
#include "cpython/module.h"

#include "aggregate/agg.h"
#include "aggregate/gpu_devmem.h"
#include "aggregate/gpu_idle.h"
#include "aggregate/gpu_join.h"
#include "aggregate/gpu_trace.h"
#include "aggregate/cpython/resolve.h"
#include "collect/cpython/frames.h"
#include "collect/cpython/gpu_autograd.h"
#include "collect/gpu/cupti.h"
#include "collect/gpu/levelzero.h"
#include "collect/sampler.h"
#include "collect/tracer_core.h"

/* The thread that started --gpu (the program's main thread) and its key:
 * work from threads without Python frames is charged to its stack. */
static const void *main_tstate;
static uint64_t main_key;

/* lp_gpu_host.launch_stack: GIL held or not, never the Python API. The
 * calling thread's own frames are stable while it sits in the GPU call;
 * the main thread's are read fault-safely (it may be running). Work that
 * autograd's backward launches for a node whose forward line is known goes
 * under that line's stack, below a "[backward]" marker (gpu_autograd.h). */
static uint32_t launch_stack(void) {
    uint32_t origin = lp_gpu_autograd_origin();
    if (origin != LP_STACK_NONE) return lp_agg_extend(origin, NULL, LP_OFFSET_GPU_BACKWARD);
    lp_rawframe frames[LP_SAMPLER_MAX_DEPTH];
    int truncated = 0;
    PyThreadState *ts = PyGILState_GetThisThreadState();
    int n = ts ? lp_pyframes_capture(ts, frames, (int)LP_ARRAY_LEN(frames), &truncated, NULL) : 0;
    if (n > 0) return lp_agg_intern(lp_pyframes_thread_key(ts), frames, (size_t)n, truncated);
    truncated = 0;
    const void *main = __atomic_load_n(&main_tstate, __ATOMIC_ACQUIRE);
    n = main ? lp_pyframes_capture(main, frames, (int)LP_ARRAY_LEN(frames), &truncated, lp_pyframes_safe_read)
             : 0;
    uint32_t s = lp_agg_intern(main_key, frames, (size_t)(n > 0 ? n : 0), truncated);
    return lp_agg_extend(s, NULL, LP_OFFSET_GPU_ORPHAN);
}

static const lp_gpu_host host = {launch_stack};

static int prepare(void) {
    if (lp_agg_init() < 0 || lp_resolve_install_hook() < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lprof: cannot set up the stack table");
        return -1;
    }
    PyThreadState *ts = PyThreadState_Get();
    main_key = lp_pyframes_thread_key(ts);
    __atomic_store_n(&main_tstate, (const void *)ts, __ATOMIC_RELEASE);
    return 0;
}

/* gpu_reset(): forget launches, records and device blocks (GPU columns of
 * the stack table are reset with the table itself). */
static PyObject *py_reset(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_gpu_join_reset();
    if (lp_gpu_devmem_reset() < 0) return PyErr_NoMemory();
    (void)lp_gpu_trace_reset(); /* cannot reserve: every record counted as dropped */
    lp_tc_span_hook = NULL;
    (void)lp_gpu_idle_reset();
    lp_gpu_autograd_reset();
    Py_RETURN_NONE;
}

/* gpu_line_spans(on): the line tracer's closed intervals go to the GPU
 * idle log (aggregate/gpu_idle.h) while on. */
static PyObject *py_line_spans(PyObject *self, PyObject *on) {
    (void)self;
    int v = PyObject_IsTrue(on);
    if (v < 0) return NULL;
    lp_tc_span_hook = v ? lp_gpu_idle_note : NULL;
    Py_RETURN_NONE;
}

/* Copies a list of str into out[] (at most cap; the strings stay owned by
 * the list, kept alive by the caller). -1 with an exception set. */
static int str_list(PyObject *seq, const char **out, size_t cap, size_t *n) {
    *n = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && *n < cap; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (!s) return -1;
        out[(*n)++] = s;
    }
    return 0;
}

/* gpu_cupti_start([library paths], [sonames]) -> None on success, else the
 * reason. The sonames are those looked for in the process first and tried
 * last (lprof.collect.gpu passes the torch's CUDA major only, when it knows it). */
static PyObject *py_cupti_start(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *paths, *names;
    if (!PyArg_ParseTuple(args, "OO", &paths, &names)) return NULL;
    if (prepare() < 0) return NULL;
    PyObject *seq = PySequence_Fast(paths, "expected a list of library paths");
    if (!seq) return NULL;
    PyObject *nseq = PySequence_Fast(names, "expected a list of sonames");
    if (!nseq) {
        Py_DECREF(seq);
        return NULL;
    }
    const char *cands[64], *sonames[8];
    size_t k = 0, ns = 0;
    if (str_list(seq, cands, LP_ARRAY_LEN(cands), &k) < 0 ||
        str_list(nseq, sonames, LP_ARRAY_LEN(sonames), &ns) < 0) {
        Py_DECREF(seq);
        Py_DECREF(nseq);
        return NULL;
    }
    char why[512] = "";
    int rc = lp_cupti_start(&host, cands, k, sonames, ns, why, sizeof why);
    Py_DECREF(seq);
    Py_DECREF(nseq);
    if (rc == 0) Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

/* gpu_levelzero_start(loader path or None) -> None on success, else why. */
static PyObject *py_levelzero_start(PyObject *self, PyObject *arg) {
    (void)self;
    if (prepare() < 0) return NULL;
    const char *path = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);
    if (arg != Py_None && !path) return NULL;
    char why[512] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS /* zeInit may take a while; the drain must not wait */
        rc = lp_levelzero_start(&host, path, why, sizeof why);
    Py_END_ALLOW_THREADS if (rc == 0) Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

/* gpu_stop(timeout_ms): final flushes (without the GIL: CUPTI delivers on
 * its own thread, and a flush can hang), then the device memory peak. */
static PyObject *py_stop(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long timeout = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    Py_BEGIN_ALLOW_THREADS lp_cupti_stop((unsigned)timeout);
    lp_levelzero_stop();
    Py_END_ALLOW_THREADS lp_gpu_devmem_finish();
    __atomic_store_n(&main_tstate, NULL, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

/* gpu_cupti_yield(timeout_ms): hands CUPTI over to another client (the
 * program starts torch.profiler): final flush, then unsubscribe. */
static PyObject *py_cupti_yield(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long timeout = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    Py_BEGIN_ALLOW_THREADS lp_cupti_stop((unsigned)timeout);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *py_flush(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS lp_cupti_flush();
    lp_levelzero_flush();
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_gpu_join_stats j;
    lp_gpu_join_get_stats(&j);
    lp_gpu_devmem_stats m;
    lp_gpu_devmem_get_stats(&m);
    lp_cupti_info c;
    lp_cupti_get_info(&c);
    lp_levelzero_info z;
    lp_levelzero_get_info(&z);
    return Py_BuildValue(
        "{s:{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K},s:{s:K,s:K,s:K,s:K,s:K,s:K,s:i},"
        "s:{s:i,s:I,s:s,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i},"
        "s:{s:i,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:K,s:K,s:K,s:K,s:K,s:s,s:s,s:i}}",
        "join", "records", (unsigned long long)j.records, "unattributed", (unsigned long long)j.unattributed,
        "incomplete", (unsigned long long)j.incomplete, "launches", (unsigned long long)j.launches, "kept",
        (unsigned long long)j.kept, "late", (unsigned long long)j.late, "aged_out",
        (unsigned long long)j.aged_out, "device_ns", (unsigned long long)j.device_ns, "first_start_ns",
        (unsigned long long)j.first_start_ns, "last_end_ns", (unsigned long long)j.last_end_ns, "graph_nodes",
        (unsigned long long)j.graph_nodes, "graph_full", (unsigned long long)j.graph_full, "graph_joined",
        (unsigned long long)j.graph_joined, "graph_missed", (unsigned long long)j.graph_missed, "memory",
        "live_bytes", (unsigned long long)m.live_bytes, "peak_bytes", (unsigned long long)m.peak_bytes,
        "allocs", (unsigned long long)m.allocs, "frees", (unsigned long long)m.frees, "unknown_frees",
        (unsigned long long)m.unknown_frees, "dropped", (unsigned long long)m.dropped, "peak_exact",
        m.peak_exact, "cupti", "active", c.active, "version", c.version, "library", c.library, "layout",
        c.layout, "callbacks", (unsigned long long)c.callbacks, "buffers", (unsigned long long)c.buffers,
        "records", (unsigned long long)c.records, "dropped", (unsigned long long)c.dropped, "after_stop",
        (unsigned long long)c.after_stop, "timer_flushes", (unsigned long long)c.timer_flushes,
        "flush_timed_out", c.flush_timed_out, "unsubscribe_timed_out", c.unsubscribe_timed_out, "levelzero",
        "active", z.active, "loader", z.loader, "appends", (unsigned long long)z.appends, "records",
        (unsigned long long)z.records, "pending", (unsigned long long)z.pending, "lost",
        (unsigned long long)z.lost, "retried", (unsigned long long)z.retried, "reused",
        (unsigned long long)z.reused, "list_sync_hooked", z.list_sync_hooked, "layer_turned_on",
        z.layer_turned_on, "no_event", (unsigned long long)z.no_event, "unfinished",
        (unsigned long long)z.unfinished, "no_timestamps", (unsigned long long)z.no_timestamps,
        "untimed_calls", (unsigned long long)z.untimed_calls, "reexecuted", (unsigned long long)z.reexecuted,
        "hooked", z.hooked, "loader_version", z.loader_version, "loader_newer", z.loader_newer);
}

/* gpu_timeline_stats(): the GPU timeline's store and the line-interval log. */
static PyObject *py_timeline_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_cupti_info c;
    lp_cupti_get_info(&c);
    lp_levelzero_info z;
    lp_levelzero_get_info(&z);
    return Py_BuildValue("{s:I,s:I,s:K,s:K,s:K,s:i,s:s}", "records", lp_gpu_trace_count(), "capacity",
                         lp_gpu_trace_capacity(), "dropped", (unsigned long long)lp_gpu_trace_dropped(),
                         "line_spans", (unsigned long long)lp_gpu_idle_spans(), "line_spans_dropped",
                         (unsigned long long)lp_gpu_idle_dropped(), "cupti_clock_aligned", c.clock_aligned,
                         "levelzero_clock", z.clock);
}

static PyMethodDef methods[] = {
    {"gpu_reset", py_reset, METH_NOARGS, "Forget GPU launches, records and device blocks."},
    {"gpu_cupti_start", py_cupti_start, METH_VARARGS, "Start CUDA collection; None, or why it cannot run."},
    {"gpu_levelzero_start", py_levelzero_start, METH_O, "Start Level Zero collection; None, or why not."},
    {"gpu_stop", py_stop, METH_O, "gpu_stop(timeout_ms): final flush of every backend, device peak."},
    {"gpu_cupti_yield", py_cupti_yield, METH_O, "gpu_cupti_yield(timeout_ms): flush, then leave CUPTI."},
    {"gpu_flush", py_flush, METH_NOARGS, "Deliver buffered GPU records now."},
    {"gpu_stats", py_stats, METH_NOARGS, "Counters of the GPU join, device memory and backends."},
    {"gpu_line_spans", py_line_spans, METH_O,
     "gpu_line_spans(on): log traced line intervals for GPU idle time."},
    {"gpu_timeline_stats", py_timeline_stats, METH_NOARGS, "The GPU timeline store's counters."},
    {NULL, NULL, 0, NULL},
};

int lp_pygpu_init(PyObject *module) {
    if (PyModule_AddFunctions(module, methods) < 0) return -1;
    return lp_pygpu_autograd_init(module);
}
