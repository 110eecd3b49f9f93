/* aggregate: the row form of a snapshot, built in C (snap.h). */
#include "aggregate/cpython/snap.h"

#include <stdlib.h>
#include <string.h>

/* stacks_rows(parent, frame, row_node, row_thread, values, names, scales):
 * the row form [[frame ids root first], thread, {metric: value}] of a
 * snapshot, built here rather than in Python (a long --memory run has 10^5
 * rows of 10-30 frames and 27 columns): no per-node tuple cache, one int
 * object per frame id shared by every list, and only non-zero metrics,
 * each multiplied by its column's scale (None: kept an int). */
typedef struct {
    Py_buffer parent, frame, node, thread, values;
    int held;
} row_columns;

static void release_columns(row_columns *c) {
    Py_buffer *all[] = {&c->parent, &c->frame, &c->node, &c->thread, &c->values};
    for (int i = 0; i < c->held; i++) PyBuffer_Release(all[i]);
}

static PyObject *row_path(const int32_t *parent, const int32_t *frame, Py_ssize_t nodes, int32_t n,
                          int32_t *chain, PyObject **ids, int32_t max_frame) {
    Py_ssize_t depth = 0;
    /* a well-formed trie's parents come first; the bound stops a cycle */
    for (; n >= 0 && n < nodes && depth <= nodes; n = parent[n]) chain[depth++] = n;
    PyObject *path = PyList_New(depth);
    if (!path) return NULL;
    for (Py_ssize_t k = 0; k < depth; k++) {
        int32_t f = frame[chain[depth - 1 - k]];
        if (f < 0 || f > max_frame) f = max_frame + 1; /* never made by snapshot */
        if (!ids[f] && !(ids[f] = PyLong_FromLong(f))) {
            Py_DECREF(path);
            return NULL;
        }
        Py_INCREF(ids[f]);
        PyList_SET_ITEM(path, k, ids[f]);
    }
    return path;
}

static PyObject *row_metrics(const int64_t *v, Py_ssize_t width, PyObject *names, const double *scale) {
    PyObject *m = PyDict_New();
    for (Py_ssize_t i = 0; m && i < width; i++) {
        if (!v[i]) continue;
        PyObject *x =
            scale[i] != 0.0 ? PyFloat_FromDouble((double)v[i] * scale[i]) : PyLong_FromLongLong(v[i]);
        if (!x || PyDict_SetItem(m, PyList_GET_ITEM(names, i), x) < 0) Py_CLEAR(m);
        Py_XDECREF(x);
    }
    return m;
}

PyObject *snap_rows(PyObject *self, PyObject *args) {
    (void)self;
    row_columns c;
    memset(&c, 0, sizeof c);
    PyObject *names, *scales, *out = NULL, **ids = NULL;
    int32_t *chain = NULL;
    double *scale = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!O!", &c.parent, &c.frame, &c.node, &c.thread, &c.values,
                          &PyList_Type, &names, &PyList_Type, &scales))
        return NULL;
    c.held = 5;
    Py_ssize_t width = PyList_GET_SIZE(names), nodes = c.parent.len / (Py_ssize_t)sizeof(int32_t),
               rows = c.node.len / (Py_ssize_t)sizeof(int32_t);
    if (c.frame.len != c.parent.len || c.parent.len % (Py_ssize_t)sizeof(int32_t) ||
        c.node.len % (Py_ssize_t)sizeof(int32_t) || c.thread.len != rows * (Py_ssize_t)sizeof(uint64_t) ||
        PyList_GET_SIZE(scales) != width || c.values.len != rows * width * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "stacks_rows: column lengths differ");
        goto done;
    }
    const int32_t *parent = c.parent.buf, *frame = c.frame.buf, *row_node = c.node.buf;
    const uint64_t *thread = c.thread.buf;
    const int64_t *values = c.values.buf;
    int32_t max_frame = -1;
    for (Py_ssize_t i = 0; i < nodes; i++) max_frame = frame[i] > max_frame ? frame[i] : max_frame;
    ids = calloc((size_t)max_frame + 2, sizeof *ids);
    chain = malloc(sizeof *chain * ((size_t)nodes + 1));
    scale = malloc(sizeof *scale * ((size_t)width + 1));
    if (!ids || !chain || !scale) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < width; i++) {
        PyObject *s = PyList_GET_ITEM(scales, i);
        scale[i] = s == Py_None ? 0.0 : PyFloat_AsDouble(s);
        if (scale[i] == -1.0 && PyErr_Occurred()) goto done;
    }
    out = PyList_New(rows);
    for (Py_ssize_t r = 0; out && r < rows; r++) {
        PyObject *path = row_path(parent, frame, nodes, row_node[r], chain, ids, max_frame);
        PyObject *key = path ? PyLong_FromUnsignedLongLong(thread[r]) : NULL;
        PyObject *m = key ? row_metrics(values + r * width, width, names, scale) : NULL;
        PyObject *row = m ? PyList_New(3) : NULL;
        if (!row) {
            Py_XDECREF(path);
            Py_XDECREF(key);
            Py_XDECREF(m);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(row, 0, path);
        PyList_SET_ITEM(row, 1, key);
        PyList_SET_ITEM(row, 2, m);
        PyList_SET_ITEM(out, r, row);
    }
done:
    if (ids) {
        for (int32_t f = 0; f <= max_frame + 1; f++) Py_XDECREF(ids[f]);
        free(ids);
    }
    free(chain);
    free(scale);
    release_columns(&c);
    return out;
}
