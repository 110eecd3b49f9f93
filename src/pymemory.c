/* binding: the memory profiler's Python functions (docs/design-memory.md).
 *   memory_start(sample_bytes), memory_stop(), memory_running(),
 *   memory_native_covered(), memory_snapshot(classify) -> dict of frames and raw rows that
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

/* ---- frames: each distinct (file, function, first line, line) once ------ */

typedef struct {
    void *code;
    int32_t offset;
    uint32_t frame; /* frame id + 1; 0 = empty slot */
} raw_slot;

/* Builds the frame table of a snapshot: stack node -> frame id, with the
 * Python work (line numbers, tuples) done once per distinct raw frame and
 * the owner test once per file name. */
typedef struct {
    const lp_stacktab *tab;
    uint32_t *node_frame; /* node id -> frame id + 1 (0 = not yet known) */
    uint32_t nodes;
    raw_slot *raw;        /* (code, offset) -> frame id + 1 */
    uint32_t raw_mask;
    uint32_t raw_used;
    PyObject *frames;     /* list of (file, function, first line, line) */
    PyObject *by_content; /* frame tuple -> frame id */
    PyObject *classify;   /* callable(file) -> FRAME_*, or None (all FRAME_USER) */
    PyObject *kind_of_file; /* file -> FRAME_* */
    uint8_t *kind;        /* frame id -> FRAME_* */
    Py_ssize_t kind_cap;
} frame_table;

static void frames_free(frame_table *ft) {
    PyMem_RawFree(ft->node_frame);
    PyMem_RawFree(ft->raw);
    PyMem_RawFree(ft->kind);
    Py_XDECREF(ft->frames);
    Py_XDECREF(ft->by_content);
    Py_XDECREF(ft->kind_of_file);
}

static int frames_init(frame_table *ft, const lp_stacktab *tab, PyObject *classify) {
    memset(ft, 0, sizeof *ft);
    ft->tab = tab;
    ft->classify = classify;
    ft->nodes = tab ? lp_stacktab_node_count(tab) : 0;
    uint32_t cap = 64;
    while (cap < 2 * ft->nodes && cap < (1u << 30)) cap <<= 1;
    ft->raw_mask = cap - 1;
    ft->node_frame = PyMem_RawCalloc(ft->nodes + 1, sizeof(uint32_t));
    ft->raw = PyMem_RawCalloc(cap, sizeof(raw_slot));
    ft->frames = PyList_New(0);
    ft->by_content = PyDict_New();
    ft->kind_of_file = PyDict_New();
    if (!ft->node_frame || !ft->raw) {
        PyErr_NoMemory();
        return -1;
    }
    return ft->frames && ft->by_content && ft->kind_of_file ? 0 : -1;
}

static PyObject *new_frame_tuple(void *code, int32_t offset) {
    if (code == NULL) {
        const char *what = offset == LP_OFFSET_TRUNCATED ? "[truncated]" : "[other]";
        return Py_BuildValue("(ssii)", "", what, 0, 0);
    }
    if (!lp_memhooks_code_kept(code)) /* a GIL-less capture whose code object died first */
        return Py_BuildValue("(ssii)", "", "[unknown]", 0, 0);
    PyCodeObject *co = code;
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *name = co->co_qualname;
#else
    PyObject *name = co->co_name;
#endif
    return Py_BuildValue("(OOii)", co->co_filename, name, co->co_firstlineno, PyCode_Addr2Line(co, offset));
}

/* What classify(file) says of a frame's file (asked once per file). */
enum { FRAME_LIBRARY = 0, FRAME_USER = 1, FRAME_LAUNCHER = 2 };

static int file_kind(frame_table *ft, PyObject *file) {
    if (ft->classify == Py_None) return FRAME_USER;
    PyObject *hit = PyDict_GetItemWithError(ft->kind_of_file, file);
    if (hit) return (int)PyLong_AsLong(hit);
    if (PyErr_Occurred()) return -1;
    PyObject *r = PyObject_CallOneArg(ft->classify, file);
    if (!r) return -1;
    long kind = PyLong_AsLong(r);
    if (kind == -1 && PyErr_Occurred()) {
        Py_DECREF(r);
        return -1;
    }
    if (kind < FRAME_LIBRARY || kind > FRAME_LAUNCHER) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_ValueError, "classify(file) must return 0, 1 or 2");
        return -1;
    }
    int rc = PyDict_SetItem(ft->kind_of_file, file, r);
    Py_DECREF(r);
    return rc < 0 ? -1 : (int)kind;
}

/* Frame id of a distinct frame tuple (added on first sight); -1 on error. */
static long frame_id_of(frame_table *ft, PyObject *t) {
    PyObject *hit = PyDict_GetItemWithError(ft->by_content, t);
    if (hit) return PyLong_AsLong(hit);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t id = PyList_GET_SIZE(ft->frames);
    if (id >= ft->kind_cap) {
        Py_ssize_t cap = ft->kind_cap ? 2 * ft->kind_cap : 256;
        uint8_t *u = PyMem_RawRealloc(ft->kind, (size_t)cap);
        if (!u) { PyErr_NoMemory(); return -1; }
        ft->kind = u;
        ft->kind_cap = cap;
    }
    int kind = file_kind(ft, PyTuple_GET_ITEM(t, 0));
    if (kind < 0) return -1;
    PyObject *idobj = PyLong_FromSsize_t(id);
    if (!idobj) return -1;
    int rc = PyDict_SetItem(ft->by_content, t, idobj);
    Py_DECREF(idobj);
    if (rc < 0 || PyList_Append(ft->frames, t) < 0) return -1;
    ft->kind[id] = (uint8_t)kind;
    return (long)id;
}

/* Frame id of stack node `id` (a frame node, not a thread root); -1 on error. */
static long node_frame(frame_table *ft, uint32_t id, const lp_stacknode *n) {
    if (id < ft->nodes && ft->node_frame[id]) return (long)ft->node_frame[id] - 1;
    if (ft->raw_used >= ft->raw_mask / 2) { /* only if nodes were added since init: no cache */
        PyObject *t = new_frame_tuple(n->code, n->offset);
        if (!t) return -1;
        long fid = frame_id_of(ft, t);
        Py_DECREF(t);
        return fid;
    }
    uint32_t h = (uint32_t)((((uintptr_t)n->code >> 4) ^ ((uint64_t)(uint32_t)n->offset << 20)) *
                            0x9E3779B97F4A7C15ull >> 32);
    uint32_t i = h & ft->raw_mask;
    while (ft->raw[i].frame && !(ft->raw[i].code == n->code && ft->raw[i].offset == n->offset))
        i = (i + 1) & ft->raw_mask;
    long fid;
    if (ft->raw[i].frame) {
        fid = (long)ft->raw[i].frame - 1;
    } else {
        PyObject *t = new_frame_tuple(n->code, n->offset);
        if (!t) return -1;
        fid = frame_id_of(ft, t);
        Py_DECREF(t);
        if (fid < 0) return -1;
        /* at most half the slots are ever used (checked above) */
        ft->raw[i].code = n->code;
        ft->raw[i].offset = n->offset;
        ft->raw[i].frame = (uint32_t)fid + 1;
        ft->raw_used++;
    }
    if (id < ft->nodes) ft->node_frame[id] = (uint32_t)fid + 1;
    return fid;
}

/* Stack `sid` as a tuple of frame ids, root first, without the launcher's
 * frames (the innermost one and everything above it: lprof's command line
 * and runpy, not the program); None when that leaves nothing. *owner
 * receives the innermost user frame, else the innermost frame (-1 for a
 * stack without frames). */
static PyObject *stack_ids(frame_table *ft, uint32_t sid, long *owner) {
    long ids[4 * LP_MEM_MAX_DEPTH];
    int n = 0, steps = 0, cut = 0;
    long leaf = -1;
    uint32_t id = sid;
    *owner = -1;
    while (ft->tab && steps++ < 4 * LP_MEM_MAX_DEPTH) {
        lp_stacknode node = lp_stacktab_node(ft->tab, id);
        if (!node.valid || node.offset == LP_OFFSET_THREAD_ROOT) break;
        long fid = node_frame(ft, id, &node);
        if (fid < 0) return NULL;
        if (leaf < 0) leaf = fid;
        if (ft->kind[fid] == FRAME_LAUNCHER) cut = 1;
        if (!cut) ids[n++] = fid;
        if (*owner < 0 && ft->kind[fid] == FRAME_USER) *owner = fid;
        if (node.parent == LP_STACK_NONE) break;
        id = node.parent;
    }
    if (*owner < 0) *owner = leaf;
    if (n == 0 && leaf >= 0) Py_RETURN_NONE; /* only the launcher's frames */
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) {
        PyObject *v = PyLong_FromLong(ids[n - 1 - k]);
        if (!v) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static PyObject *build_snapshot(const lp_memrow *rows, uint32_t used, const lp_memacct *hdr,
                                const double (*tl)[2], uint32_t tl_len, const lp_leakacc *leaks,
                                PyObject *classify) {
    const lp_shim_api *shim = lp_memhooks_shim();
    const lp_stacktab *tab = lp_agg_stacks();
    frame_table ft;
    PyObject *out = NULL, *rowlist = PyList_New(0), *timeline = PyList_New(0);
    if (frames_init(&ft, tab, classify) < 0 || !rowlist || !timeline) goto done;
    for (uint32_t i = 0; i < tl_len; i++) {
        PyObject *p = Py_BuildValue("[dd]", tl[i][0], tl[i][1]);
        if (!p || PyList_Append(timeline, p) < 0) { Py_XDECREF(p); goto done; }
        Py_DECREF(p);
    }
    for (uint32_t r = 1; r < used; r++) {
        const lp_memrow *m = &rows[r];
        if (m->sampled_allocs == 0) continue;
        uint32_t sid = r - 1;
        long owner;
        PyObject *ids = stack_ids(&ft, sid, &owner);
        if (!ids) goto done;
        unsigned long long thread = tab ? (unsigned long long)lp_stacktab_thread(tab, sid) : 0;
        const lp_leakacc *l = &leaks[r];
        PyObject *row = Py_BuildValue("(NlKddddd KK dddd)", ids, owner, thread, m->alloc_bytes,
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
    out = Py_BuildValue("{s:K,s:O,s:d,s:d,s:d,s:d,s:N,s:O,s:N,s:N}",
                        "sample_bytes", (unsigned long long)lp_memhooks_sample_bytes(),
                        "native_covered", shim ? Py_True : Py_False,
                        "peak_bytes", hdr->peak,
                        "peak_time_s", hdr->peak_t_ns > hdr->t0_ns ? (double)(hdr->peak_t_ns - hdr->t0_ns) * 1e-9 : 0.0,
                        "live_bytes", hdr->live,
                        "duration_s", end_s,
                        "timeline", timeline, "frames", ft.frames, "rows", rowlist, "stats", stats);
    timeline = rowlist = NULL;
done:
    frames_free(&ft);
    Py_XDECREF(rowlist);
    Py_XDECREF(timeline);
    return out;
}

/* memory_snapshot(classify=None): classify(file) -> 0 library, 1 user code
 * (a stack's bytes go to its innermost user frame), 2 the launcher (frames
 * from the innermost such frame to the root are left out of the stack). */
static PyObject *py_snapshot(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *classify = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &classify)) return NULL;
    if (classify != Py_None && !PyCallable_Check(classify)) {
        PyErr_SetString(PyExc_TypeError, "classify must be callable or None");
        return NULL;
    }
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
    out = build_snapshot(rows, used, &hdr, (const double (*)[2])tl, tl_len, leaks, classify);
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
    {"memory_snapshot", py_snapshot, METH_VARARGS,
     "memory_snapshot(classify=None): frames, raw rows (frame ids, owner frame, ...), timeline, peak."},
    {NULL, NULL, 0, NULL},
};

int lp_pymemory_init(PyObject *module) {
    return PyModule_AddFunctions(module, memory_methods);
}
