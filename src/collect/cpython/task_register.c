/* collect: live asyncio tasks' serials, kept and forgotten (task_register.h). */
#include "collect/cpython/task_register.h"

#include "collect/task_ids.h"

#if PY_VERSION_HEX >= 0x030E0000

/* address (int) -> the weak reference that forgets it: keeps the
 * reference, and so its callback, alive as long as the task */
static PyObject *watchers;
/* references whose task died: released at the next registration, outside
 * their own callback */
static PyObject *dead;

/* The weak reference's callback; self is the task's address as an int. */
static PyObject *forget(PyObject *self, PyObject *ref) {
    uintptr_t addr = (uintptr_t)PyLong_AsVoidPtr(self);
    if (addr == 0 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    lp_task_ids_remove(addr);
    if (dead && PyList_Append(dead, ref) < 0) PyErr_Clear();
    if (watchers && PyDict_DelItem(watchers, self) < 0) PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"lprof_forget_task", forget, METH_O, "Forgets a dead task's serial."};

uint32_t lp_pytask_register(PyObject *task) {
    uintptr_t addr = (uintptr_t)(void *)task;
    uint32_t serial = lp_task_ids_find(addr);
    if (serial) return serial;
    if (!watchers) watchers = PyDict_New();
    if (!dead) dead = PyList_New(0);
    if (!watchers || !dead) goto fail;
    if (PyList_GET_SIZE(dead) && PyList_SetSlice(dead, 0, PyList_GET_SIZE(dead), NULL) < 0) goto fail;
    serial = lp_task_ids_insert(addr);
    if (!serial) return 0;
    PyObject *key = PyLong_FromVoidPtr(task);
    PyObject *cb = key ? PyCFunction_New(&forget_def, key) : NULL;
    PyObject *ref = cb ? PyWeakref_NewRef(task, cb) : NULL;
    int kept = ref && PyDict_SetItem(watchers, key, ref) == 0;
    Py_XDECREF(ref);
    Py_XDECREF(cb);
    Py_XDECREF(key);
    if (kept) return serial;
    lp_task_ids_remove(addr); /* nothing would forget it */
fail:
    PyErr_Clear();
    return 0;
}

#else

uint32_t lp_pytask_register(PyObject *task) {
    (void)task;
    return 0;
}

#endif
