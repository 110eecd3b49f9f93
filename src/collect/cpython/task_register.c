/* collect: live asyncio tasks' serials, kept and forgotten (task_register.h). */
#include "collect/cpython/task_register.h"

#include "collect/task_ids.h"

#if PY_VERSION_HEX >= 0x030E0000

/* weak reference -> the task's address (an int): keeps the reference,
 * and so its callback, alive as long as the task. A weak reference hashes
 * as its task, computed here while the task lives and kept, so the dead
 * reference still finds its entry. */
static PyObject *watchers;
/* references whose task died: released at the next registration, outside
 * their own callback */
static PyObject *dead;
static PyObject *forget_callback;

/* The weak references' callback: the task of `ref` is being deallocated. */
static PyObject *forget(PyObject *self, PyObject *ref) {
    (void)self;
    PyObject *addr = watchers ? PyDict_GetItemWithError(watchers, ref) : NULL; /* borrowed */
    if (addr) {
        uintptr_t a = (uintptr_t)PyLong_AsVoidPtr(addr);
        if (!PyErr_Occurred()) lp_task_ids_remove(a);
        if (dead && PyList_Append(dead, ref) < 0) PyErr_Clear();
        if (PyDict_DelItem(watchers, ref) < 0) PyErr_Clear();
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"lprof_forget_task", forget, METH_O, "Forgets a dead task's serial."};

uint32_t lp_pytask_register(PyObject *task, int *fresh) {
    uintptr_t addr = (uintptr_t)(void *)task;
    if (fresh) *fresh = 0;
    uint32_t serial = lp_task_ids_find(addr);
    if (serial || lp_task_ids_given() >= LP_TASK_SERIALS_MAX) return serial;
    if (!watchers) watchers = PyDict_New();
    if (!dead) dead = PyList_New(0);
    if (!forget_callback) forget_callback = PyCFunction_New(&forget_def, NULL);
    if (!watchers || !dead || !forget_callback) goto fail;
    if (PyList_GET_SIZE(dead) && PyList_SetSlice(dead, 0, PyList_GET_SIZE(dead), NULL) < 0) goto fail;
    serial = lp_task_ids_insert(addr);
    if (!serial) return 0;
    PyObject *where = PyLong_FromVoidPtr(task);
    PyObject *ref = where ? PyWeakref_NewRef(task, forget_callback) : NULL;
    int kept = ref && PyDict_SetItem(watchers, ref, where) == 0;
    Py_XDECREF(ref);
    Py_XDECREF(where);
    if (kept) {
        if (fresh) *fresh = 1;
        return serial;
    }
    lp_task_ids_remove(addr); /* nothing would forget it */
fail:
    PyErr_Clear();
    return 0;
}

#else

uint32_t lp_pytask_register(PyObject *task, int *fresh) {
    (void)task;
    if (fresh) *fresh = 0;
    return 0;
}

#endif
