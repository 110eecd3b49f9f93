/* binding: the memory profiler's Python functions (docs/design-memory.md).
 *   memory_start(sample_bytes), memory_stop(), memory_running(),
 *   memory_native_covered(), memory_snapshot() -> dict of raw rows that
 *   python/lprof/memory.py turns into the "memory" and "stacks" sections. */
#include "pymodule.h"

#include <string.h>
#include <time.h>

#include "agg.h"
#include "pymemhooks.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
    (void)self; (void)unused;
    lp_memhooks_stop();
    Py_RETURN_NONE;
}

static PyObject *py_running(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(lp_memhooks_running());
}

static PyObject *py_native_covered(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(lp_memhooks_shim() != NULL);
}

/* ---- snapshot ------------------------------------------------------------ */

typedef struct {
    lp_leakacc *acc;
    uint32_t n;
    uint64_t t0;
} leak_ctx;

static void add_survivor(uint32_t stack, uint64_t t_ns, double weight, leak_ctx *c) {
    if (stack == 0 || stack >= c->n || t_ns < c->t0) return;
    lp_leakacc_add(&c->acc[stack], (double)(t_ns - c->t0) * 1e-9, weight);
}

static void visit_shim(const lp_shim_block *b, void *ctx) { add_survivor(b->stack, b->t_ns, b->weight, ctx); }
static void visit_live(const lp_live_block *b, void *ctx) { add_survivor(b->stack, b->t_ns, b->weight, ctx); }

static PyObject *frame_tuple(void *code, int32_t offset, PyObject *cache) {
    PyObject *key = Py_BuildValue("(Ki)", (unsigned long long)(uintptr_t)code, (int)offset);
    if (!key) return NULL;
    PyObject *hit = PyDict_GetItemWithError(cache, key);
    if (hit || PyErr_Occurred()) {
        Py_DECREF(key);
        Py_XINCREF(hit);
        return hit;
    }
    PyObject *t;
    if (code == NULL) {
        const char *what = offset == LP_OFFSET_TRUNCATED ? "[truncated]" : "[other]";
        t = Py_BuildValue("(ssii)", "", what, 0, 0);
    } else if (lp_memhooks_code_kept(code)) {
        PyCodeObject *co = code;
#if PY_VERSION_HEX >= 0x030B0000
        PyObject *name = co->co_qualname;
#else
        PyObject *name = co->co_name;
#endif
        t = Py_BuildValue("(OOii)", co->co_filename, name, co->co_firstlineno,
                          PyCode_Addr2Line(co, offset));
    } else {
        /* a GIL-less capture whose code object died before we could hold it */
        t = Py_BuildValue("(ssii)", "", "[unknown]", 0, 0);
    }
    if (t && PyDict_SetItem(cache, key, t) < 0) Py_CLEAR(t);
    Py_DECREF(key);
    return t;
}

/* Frames of stack id `sid`, root first. */
static PyObject *stack_frames(const lp_stacktab *tab, uint32_t sid, PyObject *cache) {
    PyObject *leaf_first = PyList_New(0);
    if (!leaf_first) return NULL;
    uint32_t id = sid;
    for (int guard = 0; tab && guard < 4 * LP_MEM_MAX_DEPTH; guard++) {
        lp_stacknode n = lp_stacktab_node(tab, id);
        if (!n.valid || n.offset == LP_OFFSET_THREAD_ROOT) break;
        PyObject *f = frame_tuple(n.code, n.offset, cache);
        if (!f || PyList_Append(leaf_first, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(leaf_first);
            return NULL;
        }
        Py_DECREF(f);
        if (n.parent == LP_STACK_NONE) break;
        id = n.parent;
    }
    if (PyList_Reverse(leaf_first) < 0) {
        Py_DECREF(leaf_first);
        return NULL;
    }
    return leaf_first;
}

static PyObject *build_snapshot(const lp_memrow *rows, uint32_t used, const lp_memacct *hdr,
                                const double (*tl)[2], uint32_t tl_len, const lp_leakacc *leaks) {
    const lp_shim_api *shim = lp_memhooks_shim();
    const lp_stacktab *tab = lp_agg_stacks();
    PyObject *cache = PyDict_New(), *out = NULL, *rowlist = PyList_New(0), *timeline = PyList_New(0);
    if (!cache || !rowlist || !timeline) goto done;
    for (uint32_t i = 0; i < tl_len; i++) {
        PyObject *p = Py_BuildValue("[dd]", tl[i][0], tl[i][1]);
        if (!p || PyList_Append(timeline, p) < 0) { Py_XDECREF(p); goto done; }
        Py_DECREF(p);
    }
    for (uint32_t r = 1; r < used; r++) {
        const lp_memrow *m = &rows[r];
        if (m->sampled_allocs == 0) continue;
        uint32_t sid = r - 1;
        PyObject *frames = stack_frames(tab, sid, cache);
        if (!frames) goto done;
        unsigned long long thread = tab ? (unsigned long long)lp_stacktab_thread(tab, sid) : 0;
        const lp_leakacc *l = &leaks[r];
        PyObject *row = Py_BuildValue("(NKddddd KK dddd)", frames, thread, m->alloc_bytes,
                                      m->freed_bytes, m->alloc_count, m->python_bytes,
                                      m->live_at_peak, (unsigned long long)m->sampled_allocs,
                                      (unsigned long long)m->sampled_frees, l->n, l->w, l->st, l->st2);
        if (!row || PyList_Append(rowlist, row) < 0) { Py_XDECREF(row); goto done; }
        Py_DECREF(row);
    }
    PyObject *stats = PyDict_New();
    if (!stats) goto done;
    if (shim) {
        lp_shim_stats s;
        shim->stats(&s);
        PyObject *v;
#define PUT(k, expr) do { v = (expr); if (!v || PyDict_SetItemString(stats, k, v) < 0) { Py_XDECREF(v); Py_DECREF(stats); goto done; } Py_DECREF(v); } while (0)
        PUT("shim_samples", PyLong_FromUnsignedLongLong(s.sampled));
        PUT("shim_startup_bytes", PyFloat_FromDouble(s.startup_bytes));
        PUT("shim_unattributed_freed", PyFloat_FromDouble(s.unattributed_freed));
        PUT("shim_live_blocks", PyLong_FromUnsignedLongLong(s.live_blocks));
        PUT("shim_overflow", PyLong_FromUnsignedLongLong(s.overflow));
        PUT("shim_mmaps", PyLong_FromUnsignedLongLong(s.mmaps_tracked));
    }
    PyObject *v;
    PUT("pymem_overflow", PyLong_FromUnsignedLongLong(lp_memhooks_live()->overflow));
    PUT("stacks_dropped", PyLong_FromUnsignedLongLong(hdr->dropped));
#undef PUT
    double end_s = (double)(now_ns() - hdr->t0_ns) * 1e-9;
    out = Py_BuildValue("{s:K,s:O,s:d,s:d,s:d,s:d,s:N,s:N,s:N}",
                        "sample_bytes", (unsigned long long)lp_memhooks_sample_bytes(),
                        "native_covered", shim ? Py_True : Py_False,
                        "peak_bytes", hdr->peak,
                        "peak_time_s", hdr->peak_t_ns > hdr->t0_ns ? (double)(hdr->peak_t_ns - hdr->t0_ns) * 1e-9 : 0.0,
                        "live_bytes", hdr->live,
                        "duration_s", end_s,
                        "timeline", timeline, "rows", rowlist, "stats", stats);
    timeline = rowlist = NULL;
done:
    Py_XDECREF(cache);
    Py_XDECREF(rowlist);
    Py_XDECREF(timeline);
    return out;
}

static PyObject *py_snapshot(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    lp_memacct *a = lp_memhooks_acct();
    if (a->rows == NULL) return PyDict_New();
    lp_memhooks_keep_pending();
    /* lprof's own allocations below must not be sampled */
    int prev = lp_memhooks_guard_enter();
    uint32_t used = __atomic_load_n(&a->used, __ATOMIC_ACQUIRE) + 64; /* room for growth */
    lp_memrow *rows = PyMem_RawCalloc(used, sizeof(lp_memrow));
    lp_leakacc *leaks = PyMem_RawCalloc(used, sizeof(lp_leakacc));
    double (*tl)[2] = PyMem_RawMalloc(sizeof(a->tl));
    lp_memacct hdr;
    PyObject *out = NULL;
    if (!rows || !leaks || !tl) {
        PyErr_NoMemory();
        goto done;
    }
    /* copy under the lock, build Python objects after: building allocates */
    lp_memacct_mark(a, now_ns());
    lp_memacct_lock(a);
    if (a->used < used) used = a->used;
    memcpy(rows, a->rows, used * sizeof(lp_memrow));
    memcpy(tl, a->tl, sizeof(a->tl));
    memcpy(&hdr, a, offsetof(lp_memacct, tl));
    uint32_t tl_len = a->tl_len;
    lp_memacct_unlock(a);
    leak_ctx lc = {leaks, used, hdr.t0_ns};
    const lp_shim_api *shim = lp_memhooks_shim();
    if (shim) shim->foreach_live(visit_shim, &lc);
    lp_livemem_foreach(lp_memhooks_live(), visit_live, &lc);
    out = build_snapshot(rows, used, &hdr, (const double (*)[2])tl, tl_len, leaks);
done:
    PyMem_RawFree(rows);
    PyMem_RawFree(leaks);
    PyMem_RawFree(tl);
    lp_memhooks_guard_leave(prev);
    return out;
}

static PyMethodDef memory_methods[] = {
    {"memory_start", py_start, METH_VARARGS, "Start memory profiling: memory_start(sample_bytes=16384)."},
    {"memory_stop", py_stop, METH_NOARGS, "Stop memory profiling (idempotent)."},
    {"memory_running", py_running, METH_NOARGS, "Is memory profiling on?"},
    {"memory_native_covered", py_native_covered, METH_NOARGS,
     "True when the allocator shim is preloaded (native allocations are seen)."},
    {"memory_snapshot", py_snapshot, METH_NOARGS, "Raw memory rows, timeline and peak (dict)."},
    {NULL, NULL, 0, NULL},
};

int lp_pymemory_init(PyObject *module) {
    return PyModule_AddFunctions(module, memory_methods);
}
