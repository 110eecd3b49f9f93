/* binding: os.fork and os.forkpty without the warning that lprof's own
 * threads would make them give (python/lprof/common/fork_warning.py).
 *
 * From 3.12, CPython warns at a fork when the process has more than one
 * OS thread (DeprecationWarning, "This process (pid=N) is multi-threaded,
 * ..."), counting every thread, lprof's too: a single-threaded program
 * forking in __main__ printed it under lprof only. The stand-in is C so that
 * no frame of lprof's is on the stack during the fork: where the program
 * has threads of its own, the real call runs as it is and its warning names
 * the program's line, as without lprof. */
#include "cpython/module.h"

/* alone() says whether the program, lprof's threads left out, has one
 * thread; then the real call runs inside warnings.catch_warnings() with the
 * one warning matching pattern ignored (the program's one thread is the
 * caller: no other thread of it can see the filters change). Any failure of
 * lprof's part: the real call, plainly. */
static PyObject *call_real(PyObject *real, PyObject *alone_fn, PyObject *pattern, PyObject *args,
                           PyObject *kw) {
    PyObject *r = PyObject_CallNoArgs(alone_fn);
    int alone = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (alone <= 0) {
        PyErr_Clear();
        return PyObject_Call(real, args, kw);
    }
    PyObject *warnings = PyImport_ImportModule("warnings");
    PyObject *catcher = warnings ? PyObject_CallMethod(warnings, "catch_warnings", NULL) : NULL;
    PyObject *entered = catcher ? PyObject_CallMethod(catcher, "__enter__", NULL) : NULL;
    if (entered == NULL) {
        PyErr_Clear();
        Py_XDECREF(catcher);
        Py_XDECREF(warnings);
        return PyObject_Call(real, args, kw);
    }
    Py_DECREF(entered);
    PyObject *added =
        PyObject_CallMethod(warnings, "filterwarnings", "sOO", "ignore", pattern, PyExc_DeprecationWarning);
    if (added == NULL) PyErr_Clear();
    Py_XDECREF(added);
    PyObject *result = PyObject_Call(real, args, kw); /* returns in the parent and the child */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *raised = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
#endif
    PyObject *left = PyObject_CallMethod(catcher, "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (left == NULL) PyErr_Clear();
    Py_XDECREF(left);
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(raised);
#else
    PyErr_Restore(type, value, tb);
#endif
    Py_DECREF(catcher);
    Py_DECREF(warnings);
    return result;
}

/* self: a module object of lprof's holding `real`, `alone` and `pattern`
 * (a module, so that __qualname__ is the bare name, as os.fork's is). */
static PyObject *fork_call(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *held = PyModule_GetDict(self); /* borrowed, as are its items */
    PyObject *real = held ? PyDict_GetItemString(held, "real") : NULL;
    PyObject *alone_fn = held ? PyDict_GetItemString(held, "alone") : NULL;
    PyObject *pattern = held ? PyDict_GetItemString(held, "pattern") : NULL;
    if (real == NULL || alone_fn == NULL || pattern == NULL) {
        PyErr_SetString(PyExc_SystemError, "lprof: os.fork's stand-in lost what it calls");
        return NULL;
    }
    Py_INCREF(real);
    Py_INCREF(alone_fn);
    Py_INCREF(pattern);
    PyObject *result = call_real(real, alone_fn, pattern, args, kw);
    Py_DECREF(pattern);
    Py_DECREF(alone_fn);
    Py_DECREF(real);
    return result;
}

/* the text signatures os.fork's and os.forkpty's have (inspect.signature) */
static PyMethodDef fork_def = {
    "fork", (PyCFunction)(void (*)(void))fork_call, METH_VARARGS | METH_KEYWORDS,
    "fork($module, /)\n--\n\nos.fork, as lprof runs it (lprof.common.fork_warning)."};
static PyMethodDef forkpty_def = {
    "forkpty", (PyCFunction)(void (*)(void))fork_call, METH_VARARGS | METH_KEYWORDS,
    "forkpty($module, /)\n--\n\nos.forkpty, as lprof runs it (lprof.common.fork_warning)."};

/* quiet_fork(real, alone, pattern): real's stand-in, named as real is. */
static PyObject *py_quiet_fork(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *real, *alone, *pattern;
    if (!PyArg_ParseTuple(args, "OOU", &real, &alone, &pattern)) return NULL;
    PyObject *name = PyObject_GetAttrString(real, "__name__");
    if (name == NULL) return NULL;
    int is_pty = PyUnicode_CompareWithASCIIString(name, "forkpty") == 0;
    Py_DECREF(name);
    PyObject *held = PyModule_New("lprof.fork_stand_in");
    if (held == NULL || PyModule_AddObjectRef(held, "real", real) < 0 ||
        PyModule_AddObjectRef(held, "alone", alone) < 0 ||
        PyModule_AddObjectRef(held, "pattern", pattern) < 0) {
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
    {"quiet_fork", py_quiet_fork, METH_VARARGS,
     "quiet_fork(real, alone, pattern): os.fork/os.forkpty that ignores the warning matching pattern "
     "when alone() is true."},
    {NULL, NULL, 0, NULL},
};

int lp_pyfork_warning_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
