/* aggregate: the stack model's Python functions (the model itself is built
 * by the snap_*.c files; snap.h says what each holds):
 *   stacks_snapshot() -> (frames, parent, frame, row_node, row_thread, values)
 *     frames: list of (file, function, first line, line) tuples;
 *     parent, frame: int32 arrays (bytes) of a trie of frame ids, one entry
 *       per node, parents before children, -1 for a root;
 *     row_node (int32), row_thread (uint64): one entry per row;
 *     values: int64, row-major, one column per metric (metric_names()).
 *     timeline: None, or the sample timeline (aggregate/timeline.h) in
 *       columns, sorted by time: (t_us int64 deltas from origin_ns, node
 *       int32 into its own trie, thread int32 into threads, weight_us
 *       uint32; trie parent int32, trie frame int32 (output frame ids);
 *       threads uint64; stride). stacks_snapshot(origin_ns=0).
 *     gpu: None, or the GPU timeline (aggregate/gpu_trace.h) in columns,
 *       in store order: (start_ns int64, end_ns int64, launch_ns int64
 *       (INT64_MIN: unknown), all from origin_ns; device uint32, stream
 *       uint32, op uint8, dir uint8, attributed uint8, bytes uint64,
 *       correlation uint32; node int32: the record's leaf node in the
 *       output trie above (its frame the work's, its parent the launch
 *       stack; -1 where the stack has no output node); name int32 into
 *       names; thread uint64 (the launching thread's key); names: list of
 *       str (the interned raw names); capacity; dropped).
 *     tasks: None, or the stacks' sampled time split by asyncio task
 *       (aggregate/task_split.h) in columns: (node int32 into the trie,
 *       thread uint64, task uint32 (its serial), values int64 as the rows',
 *       pairs refused for want of room).
 *   stacks_reset(), metric_names(), metric_groups(), internal_metrics(),
 *   set_launcher_dir(path), set_launcher_roles(caller_files, entries).
 */
#include "aggregate/cpython/snap.h"

#include "aggregate/cpython/resolve.h"
#include "aggregate/gpu_names.h"
#include "aggregate/timeline.h"

static PyObject *py_snapshot(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long origin_ns = 0;
    if (!PyArg_ParseTuple(args, "|K", &origin_ns)) return NULL;
    return snap_take(origin_ns);
}

static PyObject *py_reset(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (lp_agg_source_running()) {
        PyErr_SetString(PyExc_RuntimeError, "stop sampling before reset");
        return NULL;
    }
    lp_agg_drain();
    lp_resolve_reset();
    lp_timeline *tl = lp_timeline_global();
    if (tl) lp_timeline_clear(tl);
    Py_RETURN_NONE;
}

/* How full the stack table is and what it holds in memory: the profile
 * says so, and the listing warns once the table overflowed. */
static PyObject *py_table_info(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_stacktab *t = lp_agg_stacks();
    if (!t) Py_RETURN_NONE;
    lp_stacktab_size size;
    lp_stacktab_measure(t, &size);
    return Py_BuildValue("{sIsIsIsIsKsKsK}", "nodes", lp_stacktab_node_count(t), "node_capacity",
                         size.max_nodes, "rows", lp_stacktab_row_count(t), "row_capacity", size.max_rows,
                         "overflows", (unsigned long long)lp_stacktab_overflows(t), "reserved_bytes",
                         (unsigned long long)size.reserved_bytes, "resident_bytes",
                         (unsigned long long)size.resident_bytes);
}

static PyObject *py_metric_names(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *out = PyList_New(LP_M_COUNT);
    if (!out) return NULL;
    for (int m = 0; m < LP_M_COUNT; m++) {
        PyObject *item = Py_BuildValue("(sss)", lp_metric_infos[m].name, lp_metric_infos[m].unit,
                                       lp_metric_infos[m].merge == LP_MERGE_MAX ? "max" : "sum");
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, m, item);
    }
    return out;
}

/* {group: [name, ...]}: each section's columns in column order (metrics.h) */
static PyObject *py_metric_groups(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *out = PyDict_New();
    for (int m = 0; out && m < LP_M_COUNT; m++) {
        PyObject *names = PyDict_GetItemString(out, lp_metric_infos[m].group_name); /* borrowed */
        if (!names) {
            names = PyList_New(0);
            if (!names || PyDict_SetItemString(out, lp_metric_infos[m].group_name, names) < 0) {
                Py_XDECREF(names);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(names); /* the dict holds it */
        }
        PyObject *name = PyUnicode_FromString(lp_metric_infos[m].name);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(out);
        Py_XDECREF(name);
    }
    return out;
}

/* (name, ...): the columns of audience INTERNAL (metrics.h), never a report's */
static PyObject *py_internal_metrics(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *names = PyList_New(0);
    for (int m = 0; names && m < LP_M_COUNT; m++) {
        if (!lp_metric_infos[m].internal) continue;
        PyObject *name = PyUnicode_FromString(lp_metric_infos[m].name);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    if (!names) return NULL;
    PyObject *out = PyList_AsTuple(names);
    Py_DECREF(names);
    return out;
}

static PyObject *py_set_launcher_dir(PyObject *self, PyObject *arg) {
    (void)self;
    const char *dir = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);
    if (arg != Py_None && !dir) return NULL;
    if (snap_set_launcher_dir(dir) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* set_launcher_roles(callers, entries): see the header comment. */
static PyObject *py_set_launcher_roles(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *c, *e;
    if (!PyArg_ParseTuple(args, "OO", &c, &e)) return NULL;
    PyObject *cs = PyFrozenSet_New(c), *es = cs ? PyFrozenSet_New(e) : NULL;
    if (!es) {
        Py_XDECREF(cs);
        return NULL;
    }
    snap_set_launcher_roles(cs, es);
    Py_RETURN_NONE;
}

/* gpu_is_comm(name) -> bool: the one communication/compute rule
 * (gpu_names.c), for names Python holds (the timeline's, a merge's). */
static PyObject *py_gpu_is_comm(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    return PyBool_FromLong(lp_gpu_name_is_comm(name));
}

static PyObject *py_prefault(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long part = PyLong_AsUnsignedLong(arg);
    if (part == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    uint32_t parts;
    Py_BEGIN_ALLOW_THREADS parts = lp_agg_prefault(part > UINT32_MAX ? UINT32_MAX : (uint32_t)part);
    Py_END_ALLOW_THREADS return PyLong_FromUnsignedLong(parts);
}

static PyMethodDef methods[] = {
    {"stacks_prefault", py_prefault, METH_O,
     "stacks_prefault(part) -> parts: faults that part of the stack table's index in, GIL released "
     "(the sampler's drain thread, first thing)."},
    {"stacks_snapshot", py_snapshot, METH_VARARGS,
     "stacks_snapshot(origin_ns=0) -> (frames, parent, frame, row_node, row_thread, values, timeline, gpu): "
     "the stack model, arrays as bytes; timeline None or its columns, times from origin_ns "
     "(CLOCK_MONOTONIC)."},
    {"stacks_reset", py_reset, METH_NOARGS, "Forget all stacks, frames and code references."},
    {"stacks_rows", snap_rows, METH_VARARGS,
     "stacks_rows(parent, frame, row_node, row_thread, values, names, scales) -> [[ids], thread, {metric: "
     "v}]"},
    {"stacks_table_info", py_table_info, METH_NOARGS,
     "{nodes, node_capacity, rows, row_capacity, overflows, reserved_bytes, resident_bytes} or None."},
    {"gpu_is_comm", py_gpu_is_comm, METH_O,
     "gpu_is_comm(name) -> bool: a collective library's kernel (NCCL, oneCCL), by its name."},
    {"metric_names", py_metric_names, METH_NOARGS, "[(name, unit, merge)] in column order."},
    {"metric_groups", py_metric_groups, METH_NOARGS,
     "{group: [name, ...]}: the columns each section (sampling, memory, gpu) reads, in column order."},
    {"internal_metrics", py_internal_metrics, METH_NOARGS,
     "(name, ...): the columns kept for the memory sampler's statistics, never shown per line."},
    {"set_launcher_dir", py_set_launcher_dir, METH_O,
     "Frames of files under this folder (lprof's own) are cut from every stack."},
    {"set_launcher_roles", py_set_launcher_roles, METH_VARARGS,
     "set_launcher_roles(caller_files, entries): the files that called lprof's command and the "
     "(file, function) of lprof's functions that run the program; below the command, what no "
     "entry called is lprof's own and left out."},
    {NULL, NULL, 0, NULL},
};

int lp_pystacks_init(PyObject *module) {
    if (lp_agg_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "lprof: cannot reserve the stack table");
        return -1;
    }
    if (lp_resolve_install_hook() < 0) return -1;
    return PyModule_AddFunctions(module, methods);
}
