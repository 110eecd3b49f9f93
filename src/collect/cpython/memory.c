/* binding: the memory profiler's Python functions (docs/design-memory.md).
 *   memory_start(sample_bytes), memory_stop(), memory_running(),
 *   memory_native_covered(), memory_snapshot() -> the "memory" section's totals (the
 *   per-stack columns are in the stack table), leak_judge() -> the leak rule. */
#include "cpython/module.h"

#include <math.h>

#include "aggregate/agg.h"
#include "aggregate/leak.h"
#include "common/clock.h"
#include "common/own_tids.h"
#include "common/thread_start.h"
#include "collect/cpython/memhooks.h"

static PyObject *py_start(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long sample_bytes = 16384;
    if (!PyArg_ParseTuple(args, "|K", &sample_bytes)) return NULL;
    if (sample_bytes == 0) {
        PyErr_SetString(PyExc_ValueError, "sample_bytes must be positive");
        return NULL;
    }
    if (lp_memhooks_start(sample_bytes) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_memhooks_stop();
    Py_RETURN_NONE;
}

static PyObject *py_running(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(lp_memhooks_running());
}

static PyObject *py_native_covered(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(lp_memhooks_shim() != NULL);
}

/* ---- snapshot ------------------------------------------------------------ */

/* Survivors (sampled blocks still live) go to their stack's columns: the
 * moments of their allocation times are what the leak rule reads. */
typedef struct {
    uint64_t t0_ns;
} survivor_ctx;

static void add_survivor(uint32_t stack_plus1, uint64_t t_ns, double weight, survivor_ctx *c) {
    if (stack_plus1 == 0 || t_ns < c->t0_ns) return;
    uint32_t s = stack_plus1 - 1;
    int64_t ms = (int64_t)((t_ns - c->t0_ns) / 1000000u);
    lp_agg_add(s, LP_M_SURVIVORS, 1);
    lp_agg_add(s, LP_M_SURVIVOR_BYTES, llround(weight));
    lp_agg_add(s, LP_M_SURVIVOR_T, ms);
    lp_agg_add(s, LP_M_SURVIVOR_T2, ms * ms);
}

static void visit_shim(const lp_shim_block *b, void *ctx) { add_survivor(b->stack, b->t_ns, b->weight, ctx); }
static void visit_live(const lp_live_block *b, void *ctx) { add_survivor(b->stack, b->t_ns, b->weight, ctx); }

/* Writes the end-of-run columns (live bytes, survivors) into the stack
 * table; they are recomputed on every snapshot, so a periodic save and the
 * final one agree. */
static void finish_columns(const lp_memacct_totals *tot) {
    lp_stacktab *t = lp_agg_stacks();
    lp_stacktab_set_difference(t, LP_M_LIVE_BYTES, LP_M_ALLOC_BYTES, LP_M_FREED_BYTES);
    static const lp_metric survivor_columns[] = {LP_M_SURVIVORS, LP_M_SURVIVOR_BYTES, LP_M_SURVIVOR_T,
                                                 LP_M_SURVIVOR_T2};
    for (size_t i = 0; i < LP_ARRAY_LEN(survivor_columns); i++)
        lp_stacktab_clear_column(t, survivor_columns[i]);
    survivor_ctx c = {tot->t0_ns};
    const lp_shim_api *shim = lp_memhooks_shim();
    if (shim) shim->foreach_live(visit_shim, &c);
    lp_livemem_foreach(lp_memhooks_live(), visit_live, &c);
}

static int put(PyObject *d, const char *key, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *stats_dict(void) {
    PyObject *stats = PyDict_New();
    if (!stats) return NULL;
    const lp_shim_api *shim = lp_memhooks_shim();
    int bad = 0;
    if (shim) {
        lp_shim_stats s;
        shim->stats(&s);
        bad |= put(stats, "shim_samples", PyLong_FromUnsignedLongLong(s.sampled));
        bad |= put(stats, "shim_startup_bytes", PyFloat_FromDouble(s.startup_bytes));
        bad |= put(stats, "shim_unattributed_freed", PyFloat_FromDouble(s.unattributed_freed));
        bad |= put(stats, "shim_live_blocks", PyLong_FromUnsignedLongLong(s.live_blocks));
        bad |= put(stats, "shim_overflow", PyLong_FromUnsignedLongLong(s.overflow));
        bad |= put(stats, "shim_mmaps", PyLong_FromUnsignedLongLong(s.mmaps_tracked));
    }
    bad |= put(stats, "pymem_overflow", PyLong_FromUnsignedLongLong(lp_memhooks_live()->overflow));
    if (bad) Py_CLEAR(stats);
    return stats;
}

/* memory_snapshot(): finishes the memory columns of the stack table and
 * returns what is not per stack: totals, peak, timeline and counters. The
 * stacks themselves come from stacks_snapshot() (one resolver). */
static PyObject *py_snapshot(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_memacct *a = lp_memhooks_acct();
    if (a == NULL) return PyDict_New();
    /* lprof's own allocations below must not be sampled */
    int prev = lp_memhooks_guard_enter();
    PyObject *out = NULL, *timeline = NULL, *stats = NULL;
    double(*tl)[2] = PyMem_RawMalloc(sizeof(double[2]) * LP_MEMACCT_TIMELINE);
    if (!tl) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t now = lp_clock_monotonic_ns();
    lp_memacct_mark(a, now);
    lp_memacct_totals tot;
    lp_memacct_get_totals(a, &tot);
    finish_columns(&tot);
    uint32_t n = lp_memacct_timeline(a, tl, LP_MEMACCT_TIMELINE);
    if (!(timeline = PyList_New(n))) goto done;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *p = Py_BuildValue("[dd]", tl[i][0], tl[i][1]);
        if (!p) goto done;
        PyList_SET_ITEM(timeline, i, p);
    }
    if (!(stats = stats_dict())) goto done;
    const lp_shim_api *shim = lp_memhooks_shim();
    out = Py_BuildValue(
        "{s:K,s:O,s:d,s:d,s:d,s:d,s:O,s:O}", "sample_bytes", (unsigned long long)lp_memhooks_sample_bytes(),
        "native_covered", shim ? Py_True : Py_False, "peak_bytes", tot.peak, "peak_time_s",
        tot.peak_t_ns > tot.t0_ns ? (double)(tot.peak_t_ns - tot.t0_ns) * 1e-9 : 0.0, "live_bytes", tot.live,
        "duration_s", (double)(now - tot.t0_ns) * 1e-9, "timeline", timeline, "stats", stats);
done:
    Py_XDECREF(timeline);
    Py_XDECREF(stats);
    PyMem_RawFree(tl);
    lp_memhooks_guard_leave(prev);
    return out;
}

/* leak_judge(alloc_samples, free_samples, survivors, survivor_bytes, t_ms,
 * t2_ms2, net_bytes, peak_bytes, duration_s) -> (is_leak, slope, span, score):
 * the leak rule of aggregate/leak.h, for one line's summed columns. */
static PyObject *py_leak_judge(PyObject *self, PyObject *args) {
    (void)self;
    lp_leak_input in;
    double peak, duration;
    if (!PyArg_ParseTuple(args, "ddddddddd", &in.alloc_samples, &in.free_samples, &in.survivors,
                          &in.survivor_bytes, &in.t_ms, &in.t2_ms2, &in.net_bytes, &peak, &duration))
        return NULL;
    lp_leak_verdict v;
    lp_leak_judge(&in, peak, duration, &v);
    return Py_BuildValue("(Oddd)", v.is_leak ? Py_True : Py_False, v.slope, v.span_s, v.score);
}

/* lprof's own threads (drain, periodic writer, fault watcher) are started
 * here, not by _thread: the hook guard is set before the thread's first
 * allocation (its thread state, 3.10's frame for the call), then stays set
 * for its life, so the hooks and the shim pass its allocations through
 * unrecorded. Set from Python inside the thread it came too late: an
 * allocation sampled before it showed as a thread of "[no Python frame]".
 * The thread takes the GIL as a C thread does (PyGILState_Ensure), so it is
 * not counted by _thread._count() either. */
typedef struct {
    PyObject *target;
    int running; /* set by the thread once it holds its thread state */
    int refs;    /* the starter and the thread: the last one out frees */
} own_thread_boot;

static void own_thread_boot_release(own_thread_boot *boot) {
    if (__atomic_sub_fetch(&boot->refs, 1, __ATOMIC_ACQ_REL) == 0) PyMem_RawFree(boot);
}

static void own_thread_main(void *arg) {
    own_thread_boot *boot = arg;
    lp_own_tid_add_self(); /* its CPU time is lprof's (collect/other_threads.h) */
    (void)lp_memhooks_guard_enter();
    PyGILState_STATE gil = PyGILState_Ensure();
    __atomic_store_n(&boot->running, 1, __ATOMIC_RELEASE);
    PyObject *r = PyObject_CallNoArgs(boot->target);
    if (r == NULL) PyErr_Clear(); /* the target catches its own; never print from here */
    Py_XDECREF(r);
    Py_DECREF(boot->target);
    PyGILState_Release(gil);
    own_thread_boot_release(boot);
    lp_own_tid_remove_self();
}

static PyObject *py_own_thread_start(PyObject *self, PyObject *target) {
    (void)self;
    if (!PyCallable_Check(target)) {
        PyErr_SetString(PyExc_TypeError, "own_thread_start(target): target must be callable");
        return NULL;
    }
    own_thread_boot *boot = PyMem_RawMalloc(sizeof *boot);
    if (boot == NULL) return PyErr_NoMemory();
    Py_INCREF(target);
    boot->target = target;
    boot->running = 0;
    boot->refs = 2;
    unsigned long ident = PyThread_start_new_thread(own_thread_main, boot);
    if (ident == PYTHREAD_INVALID_THREAD_ID) {
        Py_DECREF(target);
        PyMem_RawFree(boot);
        PyErr_SetString(PyExc_RuntimeError, "can't start lprof's thread");
        return NULL;
    }
    /* Return once the thread holds its thread state, the last of its
     * start-up allocations (why: common/thread_start.h). */
    Py_BEGIN_ALLOW_THREADS lp_wait_for_flag(&boot->running, LP_THREAD_START_WAIT_NS);
    Py_END_ALLOW_THREADS
        /* a thread ended inside PyGILState_Ensure (finalisation) never lets go of its block: one small
     * block, never touched again */
        own_thread_boot_release(boot);
    return PyLong_FromUnsignedLong(ident);
}

/* The kernel ids of lprof's live threads (common/own_tids.h): whose CPU
 * time is lprof's, not a thread without Python's. */
static PyObject *py_own_thread_tids(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    pid_t tids[LP_OWN_TIDS_MAX];
    int n = lp_own_tids_list(tids, LP_OWN_TIDS_MAX);
    PyObject *out = PyList_New(n);
    for (int i = 0; out != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLong((long)tids[i]);
        if (v == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

static PyMethodDef memory_methods[] = {
    {"own_thread_start", py_own_thread_start, METH_O,
     "own_thread_start(target): start lprof's own thread, its allocations never recorded; its ident."},
    {"own_thread_tids", py_own_thread_tids, METH_NOARGS, "The kernel ids of lprof's live threads."},
    {"memory_start", py_start, METH_VARARGS, "Start memory profiling: memory_start(sample_bytes=16384)."},
    {"memory_stop", py_stop, METH_NOARGS, "Stop memory profiling (idempotent)."},
    {"memory_running", py_running, METH_NOARGS, "Is memory profiling on?"},
    {"memory_native_covered", py_native_covered, METH_NOARGS,
     "True when the allocator shim is preloaded (native allocations are seen)."},
    {"memory_snapshot", py_snapshot, METH_NOARGS,
     "Finish the memory columns of the stack table; totals, peak, timeline, counters."},
    {"leak_judge", py_leak_judge, METH_VARARGS,
     "leak_judge(alloc_samples, free_samples, survivors, survivor_bytes, t_ms, t2_ms2, net, peak, "
     "duration_s) -> (is_leak, slope, span_s, score)"},
    {NULL, NULL, 0, NULL},
};

int lp_pymemory_init(PyObject *module) {
    lp_memhooks_init();
    return PyModule_AddFunctions(module, memory_methods);
}
