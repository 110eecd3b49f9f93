/* binding: fold() for python/lprof/stacks.py: folded text and flame-graph
 * rectangles computed in C (export_folded.c) from a profile's stacks. */
#include "pymodule.h"

#include <stdlib.h>

#include "export_folded.h"
#include "pyresolve.h"

/* fold(names, stacks, values, path, min_width) -> (lines, total, rects|None)
 * names: list[str]; stacks: list[list[int]] (name ids, root first);
 * values: list[int]; path: str or None (write folded text there);
 * min_width: rectangles narrower than this are left out; < 0: no rects. */
static PyObject *py_fold(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *names_o, *stacks_o, *values_o, *path_o;
    long long min_width;
    if (!PyArg_ParseTuple(args, "OOOOL", &names_o, &stacks_o, &values_o, &path_o, &min_width)) return NULL;
    PyObject *names = PySequence_Fast(names_o, "names must be a sequence");
    PyObject *stacks = names ? PySequence_Fast(stacks_o, "stacks must be a sequence") : NULL;
    PyObject *values = stacks ? PySequence_Fast(values_o, "values must be a sequence") : NULL;
    PyObject *result = NULL;
    const char **cnames = NULL;
    uint32_t *ids = NULL;
    size_t *offsets = NULL;
    int64_t *vals = NULL;
    lp_folded *f = NULL;
    if (!values) goto done;
    Py_ssize_t nn = PySequence_Fast_GET_SIZE(names), ns = PySequence_Fast_GET_SIZE(stacks);
    if (PySequence_Fast_GET_SIZE(values) != ns) { PyErr_SetString(PyExc_ValueError, "stacks and values differ in length"); goto done; }
    cnames = malloc(sizeof(char *) * (size_t)(nn + 1));
    offsets = malloc(sizeof(size_t) * (size_t)(ns + 1));
    vals = malloc(sizeof(int64_t) * (size_t)(ns + 1));
    if (!cnames || !offsets || !vals) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nn; i++)
        if (!(cnames[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(names, i)))) goto done;
    size_t total = 0, cap = 1024;
    ids = malloc(sizeof(uint32_t) * cap);
    if (!ids) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t s = 0; s < ns; s++) {
        offsets[s] = total;
        vals[s] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(values, s));
        if (vals[s] == -1 && PyErr_Occurred()) goto done;
        PyObject *st = PySequence_Fast(PySequence_Fast_GET_ITEM(stacks, s), "each stack must be a sequence");
        if (!st) goto done;
        Py_ssize_t d = PySequence_Fast_GET_SIZE(st);
        if (total + (size_t)d > cap) {
            while (total + (size_t)d > cap) cap *= 2;
            uint32_t *g = realloc(ids, sizeof(uint32_t) * cap);
            if (!g) { Py_DECREF(st); PyErr_NoMemory(); goto done; }
            ids = g;
        }
        for (Py_ssize_t k = 0; k < d; k++) {
            long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(st, k));
            if (v < 0 || v >= nn) {
                Py_DECREF(st);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "frame id out of range");
                goto done;
            }
            ids[total++] = (uint32_t)v;
        }
        Py_DECREF(st);
    }
    offsets[ns] = total;
    const char *err = NULL;
    Py_BEGIN_ALLOW_THREADS
    f = lp_folded_build(cnames, (size_t)nn, ids, offsets, vals, (size_t)ns, &err);
    Py_END_ALLOW_THREADS
    if (!f) { PyErr_SetString(PyExc_ValueError, err ? err : "fold failed"); goto done; }
    if (path_o != Py_None) {
        PyObject *bytes = NULL;
        if (!PyUnicode_FSConverter(path_o, &bytes)) goto done;
        FILE *out = fopen(PyBytes_AS_STRING(bytes), "w");
        Py_DECREF(bytes);
        if (!out) { PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_o); goto done; }
        int rc;
        setvbuf(out, NULL, _IOFBF, 1 << 20);
        Py_BEGIN_ALLOW_THREADS
        rc = lp_folded_write(f, out);
        rc |= fclose(out);
        Py_END_ALLOW_THREADS
        if (rc != 0) { PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_o); goto done; }
    }
    PyObject *rects = Py_None;
    Py_INCREF(rects);
    if (min_width >= 0) {
        size_t nr = 0;
        lp_flame_rect *r = lp_folded_flame(f, min_width, &nr);
        Py_DECREF(rects);
        rects = r ? PyList_New((Py_ssize_t)nr) : PyErr_NoMemory();
        for (size_t i = 0; rects && i < nr; i++)
            PyList_SET_ITEM(rects, (Py_ssize_t)i, Py_BuildValue("(IILL)", r[i].depth, r[i].name, (long long)r[i].x, (long long)r[i].width));
        free(r);
        if (!rects) goto done;
    }
    result = Py_BuildValue("(nLN)", (Py_ssize_t)lp_folded_count(f), (long long)lp_folded_total(f), rects);
done:
    lp_folded_free(f);
    free(cnames);
    free(ids);
    free(offsets);
    free(vals);
    Py_XDECREF(names);
    Py_XDECREF(stacks);
    Py_XDECREF(values);
    return result;
}

static PyMethodDef methods[] = {
    {"fold", py_fold, METH_VARARGS, "fold(names, stacks, values, path, min_width) -> (lines, total, rects)"},
    {NULL, NULL, 0, NULL},
};

int lp_pyexport_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
