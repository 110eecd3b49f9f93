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
 * generator yielding a value to its consumer is not waiting: not counted.
 *
 * The task view (python/lprof/model/task_stacks.py) needs each asyncio
 * task's name and the task awaiting it; samples cannot say (the signal
 * handler calls no Python), so at an innermost suspension the running task
 * is looked up and handed to lprof.collect.task_names.note, which records
 * it per root coroutine. A cache of weak references (4096 slots, one per
 * task address) makes that one Python call per task, a few more while its
 * awaiting task is not yet known. On 3.14+ each task also gets its serial
 * (collect/cpython/task_register.h), the one the sampler stamps on its
 * samples, as soon as its first coroutine starts (PY_START of coroutine
 * code, where the task already steps; other code gets DISABLE there): its
 * time before its first suspension is told apart too. Its waits are split
 * by it as its samples are (aggregate/task_split.h), and note() records
 * the task under it as well. */
#include "cpython/module.h"

#if PY_VERSION_HEX >= 0x030C0000

#include <string.h>

#include "aggregate/agg.h"
#include "collect/cpython/frames.h"
#include "collect/cpython/task_register.h"
#include "collect/task_ids.h"
#include "collect/suspended.h"
#include "collect/sampler.h"
#include "common/clock.h"

#define COROUTINE_FLAGS (CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR)
#define CHAIN           64 /* outer frames of one suspension recognised as its propagation */

static lp_suspended_table suspended_frames; /* collect/suspended.h: up to 262,144 at once */
static PyObject *disable;                   /* sys.monitoring.DISABLE */
static int active;
static uint64_t suspensions, resumes, charged_ns;

#define TASK_SLOTS 4096        /* power of two */
#define TASK_TRIES 8           /* notes of one task while its awaiting task is unknown */
static PyObject *running_loop; /* asyncio._get_running_loop, once the program imported asyncio */
static PyObject *current_task; /* asyncio.current_task, likewise */
static PyObject *note_task;    /* lprof.collect.task_names.note, or NULL: no task names */
static struct {
    PyObject *ref; /* weak reference to the task, or NULL */
    int tries;     /* notes left; 0: done */
} task_seen[TASK_SLOTS];
static uint64_t task_notes;

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

/* The weak reference's task (a new reference), or NULL when it is gone. */
static PyObject *referent(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj = NULL;
    if (PyWeakref_GetRef(ref, &obj) < 0) PyErr_Clear();
    return obj;
#else
    PyObject *obj = PyWeakref_GetObject(ref);
    return obj == Py_None ? NULL : Py_NewRef(obj);
#endif
}

/* Hands the running asyncio task to note_task, once per task (until it
 * says the task is fully known, at most TASK_TRIES times). Errors are
 * swallowed: the program must not see them. */
static void note_running_task(uint32_t serial) {
    if (note_task == NULL) return;
    if (running_loop == NULL) { /* lprof imports no asyncio: the program's own, once it has one */
        PyObject *asyncio_name = PyUnicode_InternFromString("asyncio");
        PyObject *asyncio = asyncio_name ? PyImport_GetModule(asyncio_name) : NULL;
        Py_XDECREF(asyncio_name);
        if (asyncio == NULL) {
            PyErr_Clear();
            return;
        }
        running_loop = PyObject_GetAttrString(asyncio, "_get_running_loop");
        current_task = PyObject_GetAttrString(asyncio, "current_task");
        Py_DECREF(asyncio);
        if (running_loop == NULL || current_task == NULL) {
            PyErr_Clear();
            Py_CLEAR(running_loop);
            Py_CLEAR(current_task); /* asyncio still importing: again at the next suspension */
            return;
        }
    }
    PyObject *loop = PyObject_CallNoArgs(running_loop);
    if (loop == NULL || loop == Py_None) {
        Py_XDECREF(loop);
        PyErr_Clear();
        return;
    }
    PyObject *task = PyObject_CallOneArg(current_task, loop);
    Py_DECREF(loop);
    if (task == NULL || task == Py_None) {
        Py_XDECREF(task);
        PyErr_Clear();
        return;
    }
    size_t slot = (size_t)(lp_suspended_hash(task) & (TASK_SLOTS - 1));
    PyObject *seen = task_seen[slot].ref ? referent(task_seen[slot].ref) : NULL;
    if (seen != task) {
        PyObject *ref = PyWeakref_NewRef(task, NULL);
        if (ref == NULL) PyErr_Clear();
        Py_XSETREF(task_seen[slot].ref, ref);
        task_seen[slot].tries = TASK_TRIES;
    }
    Py_XDECREF(seen);
    if (task_seen[slot].tries > 0) {
        PyObject *serial_obj = PyLong_FromUnsignedLong(serial);
        PyObject *done = serial_obj ? PyObject_CallFunctionObjArgs(note_task, task, serial_obj, NULL) : NULL;
        Py_XDECREF(serial_obj);
        task_notes++;
        if (done == NULL) PyErr_Clear();
        task_seen[slot].tries = (done == Py_True) ? 0 : task_seen[slot].tries - 1;
        Py_XDECREF(done);
    }
    Py_DECREF(task);
}

static void forget_tasks(void) {
    for (size_t i = 0; i < TASK_SLOTS; i++) {
        Py_CLEAR(task_seen[i].ref);
        task_seen[i].tries = 0;
    }
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
    /* 3.14+: the task stepping now, by the field the sampler reads */
    PyObject *task = (PyObject *)lp_pyframes_running_task(ts, NULL);
    lp_suspended e = {.frame = frame,
                      .code = code,
                      .t = lp_clock_monotonic_ns(),
                      .stack = lp_agg_intern(lp_pyframes_thread_key(ts), frames, (size_t)n, truncated),
                      .task = task ? lp_pytask_register(task, NULL) : 0};
    (void)lp_suspended_put(&suspended_frames, &e); /* a failure is counted there */
    suspensions++;
    note_running_task(e.task);
    chain.active = 1;
    chain.next = 0;
    chain.n = 0;
    for (int i = 1; i < n && chain.n < CHAIN; i++) chain.codes[chain.n++] = frames[i].code;
    Py_RETURN_NONE;
}

/* PY_START(code, offset), 3.14+: a coroutine starts inside the task that
 * runs it; a task met for the first time gets its serial and its note. */
static PyObject *on_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 2 || !active) Py_RETURN_NONE;
    if (!is_coroutine(args[0])) return Py_NewRef(disable);
    PyObject *task = (PyObject *)lp_pyframes_running_task(PyThreadState_Get(), NULL);
    int fresh = 0;
    uint32_t serial = task ? lp_pytask_register(task, &fresh) : 0;
    if (fresh) note_running_task(serial);
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
        lp_agg_add_task(s.stack, s.task, LP_M_WAIT, (int64_t)(now - s.t));
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

/* await_start(DISABLE[, note]): count from now on (the stack table must be
 * set up); with note, also hand each running asyncio task to it (the task
 * view). */
static PyObject *py_start(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *dis, *note = NULL;
    if (!PyArg_ParseTuple(args, "O|O", &dis, &note)) return NULL;
    if (lp_agg_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "lprof: cannot set up the stack table");
        return NULL;
    }
    Py_XSETREF(note_task, note && note != Py_None ? Py_NewRef(note) : NULL);
    Py_XSETREF(disable, Py_NewRef(dis));
    active = 1;
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    active = 0;
    Py_CLEAR(note_task);
    Py_CLEAR(running_loop);
    Py_CLEAR(current_task);
    forget_tasks();
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
    forget_tasks();
    task_notes = 0;
    Py_RETURN_NONE;
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:K,s:K,s:K,s:d,s:K,s:I,s:K}", "suspensions", (unsigned long long)suspensions,
                         "resumes", (unsigned long long)resumes, "evicted",
                         (unsigned long long)suspended_frames.evicted, "charged_s", (double)charged_ns * 1e-9,
                         "task_notes", (unsigned long long)task_notes, "task_serials", lp_task_ids_given(),
                         "task_serials_refused", (unsigned long long)lp_task_ids_refused());
}

/* await_task_serial(task): its serial (collect/task_ids.h), 0 if it has none */
static PyObject *py_task_serial(PyObject *self, PyObject *task) {
    (void)self;
    return PyLong_FromUnsignedLong(lp_task_ids_find((uintptr_t)(void *)task));
}

static PyMethodDef methods[] = {
    {"await_on_yield", (PyCFunction)(void (*)(void))on_yield, METH_FASTCALL,
     "sys.monitoring PY_YIELD callback."},
    {"await_on_start", (PyCFunction)(void (*)(void))on_start, METH_FASTCALL,
     "sys.monitoring PY_START callback (3.14+: serials of asyncio tasks)."},
    {"await_on_resume", (PyCFunction)(void (*)(void))on_resume, METH_FASTCALL,
     "sys.monitoring PY_RESUME callback."},
    {"await_on_throw", (PyCFunction)(void (*)(void))on_throw, METH_FASTCALL,
     "sys.monitoring PY_THROW callback."},
    {"await_start", py_start, METH_VARARGS,
     "await_start(DISABLE[, note]): charge await waits from now on; note(task) gets the running tasks."},
    {"await_stop", py_stop, METH_NOARGS, "Stop charging await waits."},
    {"await_task_serial", py_task_serial, METH_O, "await_task_serial(task): its serial, 0 if none (3.14+)."},
    {"await_reset", py_reset, METH_NOARGS, "Forget suspended coroutines and the counts."},
    {"await_stats", py_stats, METH_NOARGS,
     "{suspensions, resumes, evicted, charged_s, task_notes, task_serials, task_serials_refused}."},
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
