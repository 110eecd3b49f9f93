/* binding: os.fork and os.forkpty's stand-ins (python/lprof/common/
 * fork_warning.py), which keep lprof's threads out of CPython's count for
 * its multi-threaded fork warning (3.12+). C, so that no frame of lprof's
 * is on the stack during the fork: a warning the real call gives names the
 * program's line, as without lprof. */
#include "cpython/module.h"

#include "cpython/call_around.h"

/* self: a module object of lprof's holding `real`, `before` and `after`
 * (a module, so that __qualname__ is the bare name, as os.fork's is):
 * lp_call_around(before, after, real). */
static PyObject *fork_call(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *held = PyModule_GetDict(self); /* borrowed, as are its items */
    PyObject *parts[3] = {NULL, NULL, NULL};
    const char *names[3] = {"real", "before", "after"};
    for (int i = 0; i < 3; i++) {
        parts[i] = held ? PyDict_GetItemString(held, names[i]) : NULL;
        if (parts[i] == NULL) {
            PyErr_SetString(PyExc_SystemError, "lprof: os.fork's stand-in lost what it calls");
            return NULL;
        }
    }
    for (int i = 0; i < 3; i++) Py_INCREF(parts[i]);
    PyObject *result = lp_call_around(parts[1], parts[2], parts[0], args, kw);
    for (int i = 0; i < 3; i++) Py_DECREF(parts[i]);
    return result;
}

/* the text signatures os.fork's and os.forkpty's have (inspect.signature) */
static PyMethodDef fork_def = {
    "fork", (PyCFunction)(void (*)(void))fork_call, METH_VARARGS | METH_KEYWORDS,
    "fork($module, /)\n--\n\nos.fork, as lprof runs it (lprof.common.fork_warning)."};
static PyMethodDef forkpty_def = {
    "forkpty", (PyCFunction)(void (*)(void))fork_call, METH_VARARGS | METH_KEYWORDS,
    "forkpty($module, /)\n--\n\nos.forkpty, as lprof runs it (lprof.common.fork_warning)."};

/* fork_stand_in(real, before, after): real's stand-in, named as real is. */
static PyObject *py_fork_stand_in(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *real, *before, *after;
    if (!PyArg_ParseTuple(args, "OOO", &real, &before, &after)) return NULL;
    PyObject *name = PyObject_GetAttrString(real, "__name__");
    if (name == NULL) return NULL;
    int is_pty = PyUnicode_CompareWithASCIIString(name, "forkpty") == 0;
    Py_DECREF(name);
    PyObject *held = PyModule_New("lprof.fork_stand_in");
    if (held == NULL || PyModule_AddObjectRef(held, "real", real) < 0 ||
        PyModule_AddObjectRef(held, "before", before) < 0 ||
        PyModule_AddObjectRef(held, "after", after) < 0) {
        Py_XDECREF(held);
        return NULL;
    }
    PyObject *module = PyObject_GetAttrString(real, "__module__");
    if (module == NULL) PyErr_Clear();
    PyObject *fn = PyCFunction_NewEx(is_pty ? &forkpty_def : &fork_def, held, module);
    Py_XDECREF(module);
    Py_DECREF(held);
    return fn;
}

static PyMethodDef methods[] = {
    {"fork_stand_in", py_fork_stand_in, METH_VARARGS,
     "fork_stand_in(real, before, after): a C function named as real that runs token = before(); "
     "real(...); after(token)."},
    {NULL, NULL, 0, NULL},
};

int lp_pyfork_warning_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
