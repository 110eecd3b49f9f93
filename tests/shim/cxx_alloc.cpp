// A C++ extension module for the memory tests: allocates with operator new,
// which must reach the shim (libstdc++'s new -> malloc), not a private heap.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>
#include <vector>

static std::vector<char *> blocks;

static PyObject *alloc(PyObject *, PyObject *args) {
    Py_ssize_t count, size;
    if (!PyArg_ParseTuple(args, "nn", &count, &size)) return nullptr;
    for (Py_ssize_t i = 0; i < count; i++) {
        char *p = new char[size];
        std::memset(p, 1, size);
        blocks.push_back(p);
    }
    Py_RETURN_NONE;
}

static PyObject *free_all(PyObject *, PyObject *) {
    for (char *p : blocks) delete[] p;
    blocks.clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"alloc", alloc, METH_VARARGS, "alloc(count, size): new char[size] count times, kept"},
    {"free_all", free_all, METH_NOARGS, "delete[] every block"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "lprof_cxx_alloc", nullptr, -1, methods,
                                    nullptr, nullptr, nullptr, nullptr};

PyMODINIT_FUNC PyInit_lprof_cxx_alloc(void) { return PyModule_Create(&moddef); }
