/* collect: the time coroutines wait at an await, for the sampling modes
 * (CPython 3.12+). python/lprof/collect/awaits.py registers the callbacks
 * below with sys.monitoring for PY_YIELD, PY_RESUME and PY_THROW; they run
 * with the GIL held, which is this file's only lock.
 *
 * A suspension of a coroutine (or async generator) frame at an await takes
 * the thread's Python stack then (the await chain over the event loop) and
 * keeps it, with the clock, under the frame's address; the frame's resume
 * (or a throw into it: a cancellation) adds the time in between to that
 * stack's wait_s column. One suspension propagates up the whole await chain
 * (each awaiting frame yields the same value in turn); only the innermost
 * frame's counts, so a wait is charged once, to the full chain. Code that is
 * no coroutine gets sys.monitoring.DISABLE at its first yield or resume: a
 * plain generator pays one call per location, then nothing. An async
 * generator yielding a value to its consumer is not waiting: not counted. */
#include "cpython/module.h"

#if PY_VERSION_HEX >= 0x030C0000

#include <string.h>

#include "aggregate/agg.h"
#include "collect/cpython/frames.h"
#include "collect/suspended.h"
#include "collect/sampler.h"
#include "common/clock.h"

#define COROUTINE_FLAGS (CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR)
#define CHAIN           64 /* outer frames of one suspension recognised as its propagation */

static lp_suspended_table suspended_frames; /* collect/suspended.h: up to 262,144 at once */
static PyObject *disable;                   /* sys.monitoring.DISABLE */
static int active;
static uint64_t suspensions, resumes, charged_ns;

/* Per thread: the codes of the frames under the last innermost suspension,
 * leaf side first; the next frame of the chain to yield is codes[next]. */
static _Thread_local struct {
    int active, next, n;
    const void *codes[CHAIN];
} chain;

static int is_coroutine(PyObject *code) {
    return PyCode_Check(code) && (((PyCodeObject *)code)->co_flags & COROUTINE_FLAGS);
}

/* A value an async generator yields to its consumer comes wrapped. */
static int is_async_gen_value(PyObject *v) {
    return v && strcmp(Py_TYPE(v)->tp_name, "async_generator_wrapped_value") == 0;
}

/* PY_YIELD(code, offset, value) */
static PyObject *on_yield(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 3 || !active) Py_RETURN_NONE;
    PyObject *code = args[0];
    if (!is_coroutine(code)) return Py_NewRef(disable);
    if (chain.active && chain.next < chain.n && chain.codes[chain.next] == (const void *)code) {
        chain.next++; /* the suspension below, passing up the await chain */
        Py_RETURN_NONE;
    }
    chain.active = 0;
    if (is_async_gen_value(args[2])) Py_RETURN_NONE;
    PyThreadState *ts = PyThreadState_Get();
    const void *frame = lp_pyframes_top(ts, NULL);
    lp_rawframe frames[LP_SAMPLER_MAX_DEPTH];
    int truncated = 0;
    int n = lp_pyframes_capture(ts, frames, (int)LP_ARRAY_LEN(frames), &truncated, NULL);
    if (!frame || n <= 0) Py_RETURN_NONE;
    lp_suspended e = {.frame = frame,
                      .code = code,
                      .t = lp_clock_monotonic_ns(),
                      .stack = lp_agg_intern(lp_pyframes_thread_key(ts), frames, (size_t)n, truncated)};
    (void)lp_suspended_put(&suspended_frames, &e); /* a failure is counted there */
    suspensions++;
    chain.active = 1;
    chain.next = 0;
    chain.n = 0;
    for (int i = 1; i < n && chain.n < CHAIN; i++) chain.codes[chain.n++] = frames[i].code;
    Py_RETURN_NONE;
}

static PyObject *resumed(PyObject *code, int may_disable) {
    chain.active = 0;
    if (!is_coroutine(code)) {
        if (may_disable) return Py_NewRef(disable);
        Py_RETURN_NONE;
    }
    lp_suspended s;
    if (!lp_suspended_take(&suspended_frames, lp_pyframes_top(PyThreadState_Get(), NULL), code, &s))
        Py_RETURN_NONE;
    uint64_t now = lp_clock_monotonic_ns();
    if (now > s.t) {
        lp_agg_add(s.stack, LP_M_WAIT, (int64_t)(now - s.t));
        charged_ns += now - s.t;
    }
    resumes++;
    Py_RETURN_NONE;
}

/* PY_RESUME(code, offset) */
static PyObject *on_resume(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 2 || !active) Py_RETURN_NONE;
    return resumed(args[0], 1);
}

/* PY_THROW(code, offset, exception): a cancellation resumes the frame too;
 * PY_THROW cannot be disabled. */
static PyObject *on_throw(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 3 || !active) Py_RETURN_NONE;
    return resumed(args[0], 0);
}

/* await_start(DISABLE): count from now on (the stack table must be set up). */
static PyObject *py_start(PyObject *self, PyObject *arg) {
    (void)self;
    if (lp_agg_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "lprof: cannot set up the stack table");
        return NULL;
    }
    Py_XSETREF(disable, Py_NewRef(arg));
    active = 1;
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    active = 0;
    Py_RETURN_NONE;
}

/* await_reset(): forget every suspension (the stack table was reset: after
 * a fork, or a new run) and the counts. */
static PyObject *py_reset(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_suspended_reset(&suspended_frames);
    suspensions = resumes = charged_ns = 0;
    chain.active = 0;
    Py_RETURN_NONE;
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:K,s:K,s:K,s:d}", "suspensions", (unsigned long long)suspensions, "resumes",
                         (unsigned long long)resumes, "evicted", (unsigned long long)suspended_frames.evicted,
                         "charged_s", (double)charged_ns * 1e-9);
}

static PyMethodDef methods[] = {
    {"await_on_yield", (PyCFunction)(void (*)(void))on_yield, METH_FASTCALL,
     "sys.monitoring PY_YIELD callback."},
    {"await_on_resume", (PyCFunction)(void (*)(void))on_resume, METH_FASTCALL,
     "sys.monitoring PY_RESUME callback."},
    {"await_on_throw", (PyCFunction)(void (*)(void))on_throw, METH_FASTCALL,
     "sys.monitoring PY_THROW callback."},
    {"await_start", py_start, METH_O, "await_start(sys.monitoring.DISABLE): charge await waits from now on."},
    {"await_stop", py_stop, METH_NOARGS, "Stop charging await waits."},
    {"await_reset", py_reset, METH_NOARGS, "Forget suspended coroutines and the counts."},
    {"await_stats", py_stats, METH_NOARGS, "{suspensions, resumes, evicted, charged_s}."},
    {NULL, NULL, 0, NULL},
};

int lp_pyawaits_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }

#else

/* Before 3.12 there is no sys.monitoring: lprof.collect.awaits says so. */
int lp_pyawaits_init(PyObject *m) {
    (void)m;
    return 0;
}

#endif
