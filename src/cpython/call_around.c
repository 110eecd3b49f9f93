/* binding: see call_around.h. */
#include "cpython/call_around.h"

PyObject *lp_call_around(PyObject *before, PyObject *after, PyObject *fn, PyObject *args, PyObject *kw) {
    PyObject *token = PyObject_CallNoArgs(before);
    if (!token) {
        PyErr_Clear();
        token = Py_NewRef(Py_None);
    }
    PyObject *out = PyObject_Call(fn, args, kw);
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *raised = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
#endif
    PyObject *r = PyObject_CallOneArg(after, token);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    Py_DECREF(token);
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(raised);
#else
    PyErr_Restore(type, value, tb);
#endif
    return out;
}
