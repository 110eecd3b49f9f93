/* binding: PyInit__lprof. Holds no logic: it initialises the clock and asks
 * each component (tracer, sampler, memory, GPU) to add its functions. */
#include "cpython/module.h"

#include "common/clock.h"

static PyObject *py_timer_unit(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyFloat_FromDouble(lp_clock_seconds_per_tick());
}

static PyObject *py_timer_name(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(lp_clock_name());
}

static PyMethodDef module_methods[] = {
    {"timer_unit", py_timer_unit, METH_NOARGS, "Seconds per tick of the tracer's clock."},
    {"timer_name", py_timer_name, METH_NOARGS, "Name of the tracer's clock (tsc or monotonic)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_lprof",
    "lprof's C core: tracer, sampler, memory hooks.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__lprof(void) {
#ifdef Py_GIL_DISABLED
    PyErr_SetString(PyExc_ImportError, "lprof does not support free-threaded CPython builds");
    return NULL;
#endif
    lp_clock_init();
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (lp_pytracer_init(m) < 0 || lp_pysampler_init(m) < 0 || lp_pymemory_init(m) < 0 ||
        lp_pygpu_init(m) < 0 || lp_pyawaits_init(m) < 0 || lp_pystacks_init(m) < 0 ||
        lp_pyexport_init(m) < 0 || lp_pyemergency_init(m) < 0 || lp_pyremote_init(m) < 0 ||
        lp_pyfork_warning_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
