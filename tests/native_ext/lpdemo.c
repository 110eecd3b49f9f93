/* A C extension with known native functions, built by tests/python/test_native.py
 * (compiled without sibling-call optimisation so each function keeps its frame):
 * a hot C loop under a Python line, a C function calling back into Python, and
 * a C++ function with a mangled name (lpdemo_cxx.cpp). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

double lpdemo_cxx_burn(long n); /* lpdemo_cxx.cpp */

__attribute__((noinline)) double lpdemo_spin_inner(long n) {
    volatile double acc = 0;
    for (long i = 0; i < n; i++) acc += (double)i * 0.5;
    return acc;
}

/* static: named from the object's .symtab, not its .dynsym */
static __attribute__((noinline)) double lpdemo_hot(long n) {
    double r = lpdemo_spin_inner(n);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static PyObject *lpdemo_spin_method(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(lpdemo_hot(n));
}

static __attribute__((noinline)) PyObject *lpdemo_trampoline(PyObject *fn, long times) {
    for (long i = 0; i < times; i++) {
        PyObject *r = PyObject_CallObject(fn, NULL);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

static PyObject *lpdemo_call_back_method(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn;
    long times;
    if (!PyArg_ParseTuple(args, "Ol", &fn, &times)) return NULL;
    PyObject *r = lpdemo_trampoline(fn, times);
    __asm__ volatile("" ::: "memory");
    return r;
}

static PyObject *lpdemo_cxx_method(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    double r = lpdemo_cxx_burn(n);
    __asm__ volatile("" ::: "memory");
    return PyFloat_FromDouble(r);
}

/* keeps what it allocates: the bytes stay live, charged to this function */
static void *kept[4096];
static int n_kept;

static __attribute__((noinline)) void *lpdemo_allocate_block(size_t n) {
    void *p = malloc(n);
    if (p) memset(p, 1, n);
    __asm__ volatile("" ::: "memory");
    return p;
}

static PyObject *lpdemo_hold_method(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    void *p = lpdemo_allocate_block((size_t)n);
    if (!p) return PyErr_NoMemory();
    if (n_kept < 4096) kept[n_kept++] = p;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hold", lpdemo_hold_method, METH_O, "malloc n bytes in C and keep them"},
    {"spin", lpdemo_spin_method, METH_O, "burn CPU in C"},
    {"call_back", lpdemo_call_back_method, METH_VARARGS, "call fn() n times from C"},
    {"cxx_spin", lpdemo_cxx_method, METH_O, "burn CPU in C++"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "lpdemo", NULL, -1, methods};

PyMODINIT_FUNC PyInit_lpdemo(void) { return PyModule_Create(&module); }
