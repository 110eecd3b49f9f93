/* binding: the emergency save for python/lprof/process/faults.py (export/emergency.c). */
#include "cpython/module.h"

#include <errno.h>

#include "common/headroom.h"
#include "cpython/pending_call.h"
#include "export/emergency.h"

static PyObject *py_arm(PyObject *self, PyObject *args) {
    (void)self;
    int handle_term, quiet;
    unsigned int mode;
    PyObject *path, *tmp;
    if (!PyArg_ParseTuple(args, "ppO&O&I", &handle_term, &quiet, PyUnicode_FSConverter, &path,
                          PyUnicode_FSConverter, &tmp, &mode))
        return NULL;
    unsigned flags = (handle_term ? LP_EMERGENCY_TERM : 0u) | (quiet ? LP_EMERGENCY_QUIET : 0u);
    int rc = lp_emergency_arm(flags, PyBytes_AS_STRING(path), PyBytes_AS_STRING(tmp), mode);
    Py_DECREF(path);
    Py_DECREF(tmp);
    if (rc < 0) return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

static PyObject *py_note(PyObject *self, PyObject *arg) {
    (void)self;
    int rc;
    if (arg == Py_None) {
        rc = lp_emergency_note(NULL);
    } else {
        PyObject *path = PyUnicode_EncodeFSDefault(arg);
        if (!path) return NULL;
        rc = lp_emergency_note(PyBytes_AS_STRING(path));
        Py_DECREF(path);
    }
    if (rc < 0) return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

static PyObject *py_disarm(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_emergency_disarm();
    Py_RETURN_NONE;
}

static PyObject *py_checkpoint(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = lp_emergency_checkpoint(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    return PyBool_FromLong(rc == 0);
}

/* The watcher's SIGTERM callback: set by each emergency_wait (GIL held),
 * dropped by emergency_release; run by the pending call below. */
static PyObject *term_callback;

static int call_on_term(void *signum) {
    PyObject *cb = term_callback;
    if (!cb) return 0;
    Py_INCREF(cb); /* a wait may replace it meanwhile */
    PyObject *r = PyObject_CallFunction(cb, "i", (int)(intptr_t)signum);
    if (!r) PyErr_Clear(); /* never an error into the program */
    Py_XDECREF(r);
    Py_DECREF(cb);
    return 0;
}

/* The relay (lp_emergency_set_relay): no GIL needed to queue a pending call,
 * which the GIL's holder runs at its next instruction (the main thread
 * before 3.12: lp_pending_call_any_thread). */
static int queue_on_term(int sig) { return lp_pending_call_any_thread(call_on_term, (void *)(intptr_t)sig); }

/* emergency_wait(timeout_s, on_term=None). On SIGTERM, on_term(signum) is
 * also queued as a pending call before this thread waits for the GIL, so
 * the save does not wait for a GIL that a program releasing and retaking it
 * thousands of times a second keeps from every other thread for seconds;
 * emergency.c's relay thread queues it too where the watcher is not waiting
 * here (inside a checkpoint, starved of the GIL itself). Once per SIGTERM. */
static PyObject *py_wait(PyObject *self, PyObject *args) {
    (void)self;
    double timeout;
    PyObject *on_term = Py_None;
    if (!PyArg_ParseTuple(args, "d|O", &timeout, &on_term)) return NULL;
    Py_XSETREF(term_callback, on_term != Py_None ? Py_NewRef(on_term) : NULL);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = lp_emergency_wait(timeout);
    if (rc > 0) lp_emergency_relay_term();
    Py_END_ALLOW_THREADS return PyLong_FromLong(rc);
}

static PyObject *py_release(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_emergency_release();
    Py_CLEAR(term_callback);
    Py_RETURN_NONE;
}

static PyObject *py_pending(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(lp_emergency_pending());
}

static PyObject *py_die(PyObject *self, PyObject *arg) {
    (void)self;
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    lp_emergency_die((int)sig);
    Py_RETURN_NONE; /* only where the signal's default action is not to end the process */
}

static PyObject *py_headroom_take(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t bytes = PyLong_AsSsize_t(arg);
    if (bytes == -1 && PyErr_Occurred()) return NULL;
    if (bytes <= 0) {
        PyErr_SetString(PyExc_ValueError, "headroom_take(bytes): bytes must be positive");
        return NULL;
    }
    return PyBool_FromLong(lp_headroom_take((size_t)bytes) == 0);
}

static PyObject *py_headroom_release(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_headroom_release();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"headroom_take", py_headroom_take, METH_O,
     "headroom_take(bytes) -> bool: hold that much address space for the end of the run (once)."},
    {"headroom_release", py_headroom_release, METH_NOARGS, "Give the held address space back (idempotent)."},
    {"emergency_arm", py_arm, METH_VARARGS,
     "emergency_arm(handle_term, quiet, path, tmp_path, mode): handle SIGTERM and fatal signals."},
    {"emergency_wait", py_wait, METH_VARARGS,
     "emergency_wait(timeout_s, on_term=None): the SIGTERM received, 0 on timeout (timeout_s < 0: "
     "none), -1 once released; a SIGTERM also queues on_term(signum) for the main thread."},
    {"emergency_release", py_release, METH_NOARGS, "Wake the watcher for good (the run is ending)."},
    {"emergency_disarm", py_disarm, METH_NOARGS, "Restore the previous signal handlers."},
    {"emergency_note", py_note, METH_O,
     "emergency_note(path or None), before arming: a fatal signal also writes '<signal> <age ms or -1>' "
     "there."},
    {"emergency_checkpoint", py_checkpoint, METH_O,
     "Keep these bytes (an encoded profile) as what a fatal signal writes."},
    {"emergency_pending", py_pending, METH_NOARGS, "The SIGTERM received, or 0."},
    {"emergency_die", py_die, METH_O, "End the process by this signal's default action."},
    {NULL, NULL, 0, NULL},
};

int lp_pyemergency_init(PyObject *module) {
    lp_emergency_set_relay(queue_on_term);
    return PyModule_AddFunctions(module, methods);
}
