/* binding: fold_rows() for python/lprof/model/stacks.py: folded text
 * and flame-graph rectangles computed in C (export/folded.c). */
#include "cpython/module.h"

#include <math.h>
#include <stdlib.h>

#include "export/folded.h"
#include "aggregate/cpython/resolve.h"

/* Stacks flattened for lp_folded_build: ids[offsets[s]..offsets[s+1]). */
typedef struct {
    uint32_t *ids;
    size_t *offsets;
    int64_t *vals;
    size_t n, total, cap;
} flat_stacks;

static void flat_free(flat_stacks *fs) {
    free(fs->ids);
    free(fs->offsets);
    free(fs->vals);
}

static int flat_init(flat_stacks *fs, Py_ssize_t n) {
    fs->n = fs->total = 0;
    fs->cap = 1024;
    fs->ids = malloc(sizeof(uint32_t) * fs->cap);
    fs->offsets = malloc(sizeof(size_t) * (size_t)(n + 1));
    fs->vals = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (fs->ids && fs->offsets && fs->vals) {
        fs->offsets[0] = 0;
        return 0;
    }
    PyErr_NoMemory();
    return -1;
}

/* Appends one stack (a sequence of frame ids < n_names) with its value. */
static int flat_add(flat_stacks *fs, PyObject *stack, int64_t value, Py_ssize_t n_names) {
    PyObject *st = PySequence_Fast(stack, "each stack must be a sequence");
    if (!st) return -1;
    Py_ssize_t d = PySequence_Fast_GET_SIZE(st);
    if (fs->total + (size_t)d > fs->cap) {
        while (fs->total + (size_t)d > fs->cap) fs->cap *= 2;
        uint32_t *g = realloc(fs->ids, sizeof(uint32_t) * fs->cap);
        if (!g) {
            Py_DECREF(st);
            PyErr_NoMemory();
            return -1;
        }
        fs->ids = g;
    }
    fs->offsets[fs->n] = fs->total;
    for (Py_ssize_t k = 0; k < d; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(st, k));
        if (v < 0 || v >= n_names) {
            Py_DECREF(st);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "frame id out of range");
            return -1;
        }
        fs->ids[fs->total++] = (uint32_t)v;
    }
    Py_DECREF(st);
    fs->vals[fs->n++] = value;
    fs->offsets[fs->n] = fs->total;
    return 0;
}

/* Folds, writes `path` (unless None), and returns (lines, total, rects|None);
 * rectangles narrower than min_fraction of the total are left out (< 0: none). */
static PyObject *fold_and_emit(PyObject *names, flat_stacks *fs, PyObject *path_o, double min_fraction) {
    Py_ssize_t nn = PySequence_Fast_GET_SIZE(names);
    const char **cnames = malloc(sizeof(char *) * (size_t)(nn + 1));
    lp_folded *f = NULL;
    PyObject *result = NULL;
    if (!cnames) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nn; i++)
        if (!(cnames[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(names, i)))) goto done;
    const char *err = NULL;
    Py_BEGIN_ALLOW_THREADS f =
        lp_folded_build(cnames, (size_t)nn, fs->ids, fs->offsets, fs->vals, fs->n, &err);
    Py_END_ALLOW_THREADS if (!f) {
        PyErr_SetString(PyExc_ValueError, err ? err : "fold failed");
        goto done;
    }
    if (path_o != Py_None) {
        PyObject *bytes = NULL;
        if (!PyUnicode_FSConverter(path_o, &bytes)) goto done;
        FILE *out = fopen(PyBytes_AS_STRING(bytes), "w");
        Py_DECREF(bytes);
        if (!out) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_o);
            goto done;
        }
        int rc;
        setvbuf(out, NULL, _IOFBF, 1 << 20);
        Py_BEGIN_ALLOW_THREADS rc = lp_folded_write(f, out);
        rc |= fclose(out);
        Py_END_ALLOW_THREADS if (rc != 0) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_o);
            goto done;
        }
    }
    PyObject *rects = Py_None;
    Py_INCREF(rects);
    if (min_fraction >= 0) {
        size_t nr = 0;
        int64_t min_width = (int64_t)(min_fraction * (double)lp_folded_total(f));
        lp_flame_rect *r = lp_folded_flame(f, min_width, &nr);
        Py_DECREF(rects);
        rects = r ? PyList_New((Py_ssize_t)nr) : PyErr_NoMemory();
        for (size_t i = 0; rects && i < nr; i++)
            PyList_SET_ITEM(
                rects, (Py_ssize_t)i,
                Py_BuildValue("(IILL)", r[i].depth, r[i].name, (long long)r[i].x, (long long)r[i].width));
        free(r);
        if (!rects) goto done;
    }
    result = Py_BuildValue("(nLN)", (Py_ssize_t)lp_folded_count(f), (long long)lp_folded_total(f), rects);
done:
    lp_folded_free(f);
    free(cnames);
    return result;
}

/* fold_rows(names, rows, columns, scale, path, min_fraction)
 * rows: the profile's [[frame ids], thread, {metric: number}] entries; each
 * row's value is round(scale * sum of its `columns`); rows <= 0 are skipped.
 * Does in C what a Python loop over a million rows would take seconds for. */
static PyObject *py_fold_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *names_o, *rows_o, *cols_o, *path_o;
    double scale, min_fraction;
    if (!PyArg_ParseTuple(args, "OOOdOd", &names_o, &rows_o, &cols_o, &scale, &path_o, &min_fraction))
        return NULL;
    PyObject *names = PySequence_Fast(names_o, "names must be a sequence");
    PyObject *rows = names ? PySequence_Fast(rows_o, "rows must be a sequence") : NULL;
    PyObject *cols = rows ? PySequence_Fast(cols_o, "columns must be a sequence") : NULL;
    PyObject *result = NULL;
    flat_stacks fs = {0};
    if (!cols) goto done;
    Py_ssize_t nr = PySequence_Fast_GET_SIZE(rows), nc = PySequence_Fast_GET_SIZE(cols);
    if (flat_init(&fs, nr) < 0) goto done;
    for (Py_ssize_t r = 0; r < nr; r++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, r);
        if (!PyList_Check(row) && !PyTuple_Check(row)) {
            PyErr_SetString(PyExc_ValueError, "bad stack row");
            goto done;
        }
        if (PySequence_Size(row) != 3) {
            PyErr_SetString(PyExc_ValueError, "bad stack row");
            goto done;
        }
        PyObject *ids = PySequence_Fast_GET_ITEM(row, 0), *metrics = PySequence_Fast_GET_ITEM(row, 2);
        if (!PyDict_Check(metrics)) {
            PyErr_SetString(PyExc_ValueError, "bad stack metrics");
            goto done;
        }
        double sum = 0.0;
        for (Py_ssize_t c = 0; c < nc; c++) {
            PyObject *v = PyDict_GetItemWithError(metrics, PySequence_Fast_GET_ITEM(cols, c));
            if (v == NULL) {
                if (PyErr_Occurred()) goto done;
                continue;
            }
            double d = PyFloat_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) goto done;
            sum += d;
        }
        double value = nearbyint(sum * scale);
        if (!(value > 0) || PyObject_Length(ids) <= 0) {
            if (PyErr_Occurred()) goto done;
            continue;
        }
        if (flat_add(&fs, ids, (int64_t)value, PySequence_Fast_GET_SIZE(names)) < 0) goto done;
    }
    result = fold_and_emit(names, &fs, path_o, min_fraction);
done:
    flat_free(&fs);
    Py_XDECREF(names);
    Py_XDECREF(rows);
    Py_XDECREF(cols);
    return result;
}

/* Appends node i's stack (root first), below an optional extra root frame,
 * with its value. */
static int flat_add_node(flat_stacks *fs, const int32_t *par, const int32_t *frm, int32_t i, int32_t root,
                         int64_t value) {
    size_t depth = root >= 0;
    for (int32_t at = i; at >= 0; at = par[at]) depth++;
    if (fs->total + depth > fs->cap) {
        while (fs->total + depth > fs->cap) fs->cap *= 2;
        uint32_t *g = realloc(fs->ids, sizeof(uint32_t) * fs->cap);
        if (!g) {
            PyErr_NoMemory();
            return -1;
        }
        fs->ids = g;
    }
    size_t k = depth;
    for (int32_t at = i; at >= 0; at = par[at]) fs->ids[fs->total + --k] = (uint32_t)frm[at];
    if (root >= 0) fs->ids[fs->total] = (uint32_t)root;
    fs->total += depth;
    fs->vals[fs->n++] = value;
    fs->offsets[fs->n] = fs->total;
    return 0;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* fold_columns(names, parent, frame, row_node, columns, scale, path, min_fraction
 *              [, row_root]):
 * the same output from a stacks section in the file's columnar form (see
 * docs/formats.md): parent/frame/row_node are int32 buffers (a trie whose
 * parents come before their children), columns a list of float64 buffers,
 * one value per row. Values are summed per node, then scaled and rounded, so
 * the work per row is one addition per column, without a Python object.
 * row_root (int32 per row, an index into names or -1) puts one more frame
 * at the root of a row's stack: the SVG's thread frames, so threads sit side
 * by side without the section being turned into rows of Python objects.
 * Rows are summed per root, one group of rows after another. */
static PyObject *py_fold_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *names_o, *cols_o, *path_o, *root_o = Py_None;
    Py_buffer parent = {0}, frame = {0}, row_node = {0}, row_root = {0};
    double scale, min_fraction;
    if (!PyArg_ParseTuple(args, "Oy*y*y*OdOd|O", &names_o, &parent, &frame, &row_node, &cols_o, &scale,
                          &path_o, &min_fraction, &root_o))
        return NULL;
    PyObject *names = PySequence_Fast(names_o, "names must be a sequence");
    PyObject *cols = names ? PySequence_Fast(cols_o, "columns must be a sequence") : NULL;
    PyObject *result = NULL;
    double *node_val = NULL;
    Py_buffer *colbuf = NULL;
    Py_ssize_t ncols = 0, opened = 0;
    int32_t *order = NULL, *touched = NULL;
    size_t *group_start = NULL;
    uint32_t *mark = NULL;
    flat_stacks fs = {0};
    size_t nn = (size_t)parent.len / sizeof(int32_t), nr = (size_t)row_node.len / sizeof(int32_t);
    const int32_t *par = parent.buf, *frm = frame.buf, *rn = row_node.buf, *rr = NULL;
    if (!cols) goto done;
    if ((size_t)frame.len != nn * sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "parent and frame differ in length");
        goto done;
    }
    Py_ssize_t n_names = PySequence_Fast_GET_SIZE(names);
    for (size_t i = 0; i < nn; i++)
        if (par[i] < -1 || par[i] >= (int32_t)i || frm[i] < 0 || frm[i] >= n_names) {
            PyErr_SetString(PyExc_ValueError, "bad stack node");
            goto done;
        }
    for (size_t r = 0; r < nr; r++)
        if (rn[r] < 0 || (size_t)rn[r] >= nn) {
            PyErr_SetString(PyExc_ValueError, "bad stack row or column");
            goto done;
        }
    if (root_o != Py_None) {
        if (PyObject_GetBuffer(root_o, &row_root, PyBUF_SIMPLE) < 0) goto done;
        rr = row_root.buf;
        int ok = (size_t)row_root.len == nr * sizeof(int32_t);
        for (size_t r = 0; ok && r < nr; r++) ok = rr[r] >= -1 && rr[r] < n_names;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "bad row root");
            goto done;
        }
    }
    ncols = PySequence_Fast_GET_SIZE(cols);
    colbuf = calloc((size_t)ncols + 1, sizeof(Py_buffer));
    if (!colbuf) {
        PyErr_NoMemory();
        goto done;
    }
    for (; opened < ncols; opened++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(cols, opened), &colbuf[opened], PyBUF_SIMPLE) < 0)
            goto done;
        if ((size_t)colbuf[opened].len != nr * sizeof(double)) {
            opened++;
            PyErr_SetString(PyExc_ValueError, "bad stack row or column");
            goto done;
        }
    }
    /* rows grouped by root (a counting sort over root + 1), kept in order */
    size_t ngroups = rr ? (size_t)n_names + 1 : 1;
    order = malloc(sizeof(int32_t) * (nr + 1));
    group_start = calloc(ngroups + 1, sizeof(size_t));
    node_val = calloc(nn + 1, sizeof(double));
    mark = calloc(nn + 1, sizeof(uint32_t));
    touched = malloc(sizeof(int32_t) * (nn + 1));
    if (!order || !group_start || !node_val || !mark || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t r = 0; r < nr; r++) group_start[(rr ? (size_t)(rr[r] + 1) : 0) + 1]++;
    for (size_t g = 0; g < ngroups; g++) group_start[g + 1] += group_start[g];
    {
        size_t *fill = calloc(ngroups, sizeof(size_t));
        if (!fill) {
            PyErr_NoMemory();
            goto done;
        }
        for (size_t r = 0; r < nr; r++) {
            size_t g = rr ? (size_t)(rr[r] + 1) : 0;
            order[group_start[g] + fill[g]++] = (int32_t)r;
        }
        free(fill);
    }
    /* one stack per (root, node) that a row names: at most one per row */
    if (flat_init(&fs, (Py_ssize_t)(rr ? nr : nn)) < 0) goto done;
    for (size_t g = 0; g < ngroups; g++) {
        if (group_start[g] == group_start[g + 1]) continue;
        size_t nt = 0;
        for (size_t k = group_start[g]; k < group_start[g + 1]; k++) {
            int32_t r = order[k], node = rn[r];
            if (mark[node] != (uint32_t)g + 1) {
                mark[node] = (uint32_t)g + 1;
                node_val[node] = 0;
                touched[nt++] = node;
            }
            for (Py_ssize_t c = 0; c < ncols; c++) node_val[node] += ((const double *)colbuf[c].buf)[r];
        }
        qsort(touched, nt, sizeof(int32_t), cmp_i32); /* the trie's order, as without roots */
        for (size_t k = 0; k < nt; k++) {
            double value = nearbyint(node_val[touched[k]] * scale);
            if (!(value > 0)) continue;
            if (flat_add_node(&fs, par, frm, touched[k], (int32_t)g - 1, (int64_t)value) < 0) goto done;
        }
    }
    result = fold_and_emit(names, &fs, path_o, min_fraction);
done:
    for (Py_ssize_t c = 0; c < opened; c++) PyBuffer_Release(&colbuf[c]);
    free(colbuf);
    free(order);
    free(group_start);
    free(node_val);
    free(mark);
    free(touched);
    flat_free(&fs);
    Py_XDECREF(names);
    Py_XDECREF(cols);
    PyBuffer_Release(&parent);
    PyBuffer_Release(&frame);
    PyBuffer_Release(&row_node);
    if (rr) PyBuffer_Release(&row_root);
    return result;
}

static PyMethodDef methods[] = {
    {"fold_columns", py_fold_columns, METH_VARARGS,
     "fold_columns(names, parent, frame, row_node, columns, scale, path, min_fraction[, row_root]) -> "
     "(lines, total, rects)"},
    {"fold_rows", py_fold_rows, METH_VARARGS,
     "fold_rows(names, rows, columns, scale, path, min_fraction) -> (lines, total, rects)"},
    {NULL, NULL, 0, NULL},
};

int lp_pyexport_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
