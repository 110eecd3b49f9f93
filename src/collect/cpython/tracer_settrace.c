/* binding: line-tracer events from a C trace function (CPython 3.10, 3.11).
 *
 * The trace function is installed on every existing thread state
 * (_PyEval_SetTrace) and, through threading.settrace() with a tiny C
 * callable, on threads started later. A LINE event in the frame it is
 * timing takes the core's inline path; any other event starts with the
 * registry lookup, and frames of other code get f_trace_lines = 0 so they
 * send no LINE events.
 * A yield and an exception exit both arrive as PyTrace_RETURN; a generator
 * resume arrives as PyTrace_CALL on a frame that already ran.
 *
 * The trace function goes in only once a code object is registered: while
 * none is, it could time nothing, and on 3.11 a thread with a tracer runs
 * every instruction unspecialised, so the program's imports before its
 * first @profile (numpy's: ~35 ms here) would run at traced speed. */
#include "collect/cpython/tracer.h"

#if PY_VERSION_HEX < 0x030C0000

#include <frameobject.h>

#include <pthread.h>
#include <signal.h>

#include "collect/cpython/memhooks.h"
#include "common/clock.h"
#include "common/own_tids.h"
#include "common/thread_start.h"

#define Py_BUILD_CORE 1
#undef _PyGC_FINALIZED               /* the internal headers define it again on 3.11 (-Werror) */
#include "internal/pycore_runtime.h" /* _PyRuntime.interpreters.mutex */
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#define FRAME_CODE(f) ((f)->f_frame->f_code)
#else
#define FRAME_CODE(f) ((f)->f_code)
#endif
#undef Py_BUILD_CORE

static PyObject *installer;         /* C callable given to threading.settrace */
static PyObject *prev_thread_hook;  /* threading._trace_hook before enable */
static PyThreadState *saved_tstate; /* the enabling thread's previous tracer */
static Py_tracefunc saved_func;
static PyObject *saved_obj;
static int armed;     /* between enable and disable */
static int source_on; /* armed and installed (a code is registered) */

/* The resumed line of a generator/coroutine frame, or -1 for a new call. */
static int resume_line(PyFrameObject *frame, PyCodeObject *co) {
    if (!(co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) return -1;
#if PY_VERSION_HEX < 0x030B0000
    if (frame->f_lasti < 0) return -1;
    return PyCode_Addr2Line(co, frame->f_lasti * 2);
#else
    /* 3.11 reports a new call on the def line (co_firstlineno). A one-line
     * generator resuming there loses only its first open interval. */
    int line = PyFrame_GetLineNumber(frame);
    return line == co->co_firstlineno ? -1 : line;
#endif
}

/* At a RETURN event: is the frame suspended (a yield or an await), not
 * finished? The state is set before the event on both versions. */
static int is_suspended(PyFrameObject *frame, PyCodeObject *co) {
    if (!(co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) return 0;
#if PY_VERSION_HEX < 0x030B0000
    return frame->f_state == FRAME_SUSPENDED;
#else
    _PyInterpreterFrame *f = frame->f_frame;
    return f->owner == FRAME_OWNED_BY_GENERATOR &&
           _PyFrame_GetGenerator(f)->gi_frame_state == FRAME_SUSPENDED;
#endif
}

/* Every event but the common LINE one (trace_fn's inline path). */
static __attribute__((noinline)) int trace_event(PyFrameObject *frame, int what, uint64_t t) {
    PyCodeObject *co = FRAME_CODE(frame);
    lp_tc_thread *th;
    lp_tc_code *c;
    switch (what) {
        case PyTrace_LINE:
            th = lp_pyt_thread();
            if (LP_UNLIKELY(th == NULL)) return 0;
            c = lp_tc_top_code(th);
            if (LP_UNLIKELY(c == NULL || c->id != (const void *)co)) {
                c = lp_tc_find(co);
                if (c == NULL) {
                    frame->f_trace_lines = 0;
                    return 0;
                }
            }
            lp_tc_line(th, c, frame->f_lineno, t);
            break;
        case PyTrace_CALL:
            if (LP_UNLIKELY(!source_on)) {
                /* A thread that missed disable (it was starting up): leave. */
                PyEval_SetTrace(NULL, NULL);
                return 0;
            }
            c = lp_tc_find(co);
            if (c == NULL) {
                frame->f_trace_lines = 0; /* not ours: no LINE events for it */
                return 0;
            }
            th = lp_pyt_thread();
            if (LP_UNLIKELY(th == NULL)) return 0;
            int line = resume_line(frame, co);
            /* the frame object of a generator lives as long as it does: its key */
            if (line >= 0) lp_tc_resume(th, c, frame, line, t);
            else lp_tc_enter(th, c, -1, t);
            break;
        case PyTrace_RETURN: /* return, yield, or exception exit (arg NULL) */
            th = lp_pyt_tls;
            if (th == NULL) return 0;
            c = lp_tc_top_code(th);
            if (c == NULL || c->id != (const void *)co) {
                c = lp_tc_find(co);
                if (c == NULL) return 0;
            }
            if (is_suspended(frame, co)) lp_tc_suspend(th, c, frame, t);
            else lp_tc_exit(th, c, t);
            break;
        default: return 0;
    }
    lp_tc_overhead(th, t, lp_clock_now());
    return 0;
}

/* The trace function. A LINE event in the frame on top of the shadow stack
 * is most of what a traced program sends: it is handled here without a
 * call into the tracer core and without a second clock read (tracer_core.h:
 * lp_tc_line_fast). */
static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    uint64_t t = lp_clock_now();
    (void)obj;
    (void)arg;
    if (LP_LIKELY(what == PyTrace_LINE)) {
        lp_tc_thread *th = lp_pyt_tls;
        if (LP_LIKELY(th != NULL && lp_tc_line_fast(th, FRAME_CODE(frame), frame->f_lineno, t))) return 0;
    }
    return trace_event(frame, what, t);
}

/* threading.settrace hook: runs once in each new thread, installs the C
 * trace function there and asks for no further Python-level tracing. */
static PyObject *install_in_thread(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    (void)args;
    (void)nargs;
    PyEval_SetTrace(source_on ? trace_fn : NULL, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef installer_def = {
    "_lprof_install_tracer",
    (PyCFunction)(void (*)(void))install_in_thread,
    METH_FASTCALL,
    NULL,
};

int lp_pyt_source_init(PyObject *module) {
    (void)module;
    if (installer == NULL && (installer = PyCFunction_New(&installer_def, NULL)) == NULL) return -1;
    return 0;
}

/* The thread state after ts (the first one when ts is NULL), read under the
 * runtime's thread-list lock, as CPython 3.12 walks the list to trace every
 * thread. 3.11 links a new thread state into the list before it initialises
 * it, and a native thread entering Python (PyGILState_Ensure) does that
 * without the GIL: walked without the lock, enable met one whose frame
 * pointer was not set yet and crashed in _PyEval_SetTrace. A state read
 * here was complete before the lock was released, and cannot be freed while
 * this thread holds the GIL. Nothing is called with the lock held. */
static PyThreadState *thread_after(PyInterpreterState *interp, PyThreadState *ts) {
    PyThread_acquire_lock(_PyRuntime.interpreters.mutex, WAIT_LOCK);
    PyThreadState *next = ts ? PyThreadState_Next(ts) : PyInterpreterState_ThreadHead(interp);
    PyThread_release_lock(_PyRuntime.interpreters.mutex);
    return next;
}

static int set_thread_hook(PyObject *hook) {
    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL) return -1;
    PyObject *r = PyObject_CallMethod(threading, "settrace", "O", hook);
    Py_DECREF(threading);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int install(void) {
    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL) return -1;
    PyObject *prev = PyObject_GetAttrString(threading, "_trace_hook");
    Py_DECREF(threading);
    if (prev == NULL) PyErr_Clear();
    if (set_thread_hook(installer) < 0) {
        Py_XDECREF(prev);
        return -1;
    }
    Py_XSETREF(prev_thread_hook, prev);

    PyThreadState *me = PyThreadState_Get();
    Py_CLEAR(saved_obj);
    saved_tstate = me;
    saved_func = me->c_tracefunc;
    saved_obj = me->c_traceobj;
    Py_XINCREF(saved_obj);
    PyInterpreterState *interp = PyThreadState_GetInterpreter(me);
    for (PyThreadState *ts = thread_after(interp, NULL); ts != NULL; ts = thread_after(interp, ts)) {
        if (_PyEval_SetTrace(ts, trace_fn, NULL) < 0) {
            /* undo what is in place, keep the first error */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            source_on = 1;
            if (lp_pyt_source_disable() < 0) PyErr_Clear();
            PyErr_Restore(type, value, tb);
            return -1;
        }
    }
    source_on = 1;
    return 0;
}

int lp_pyt_source_enable(void) {
    armed = 1;
    return lp_tc_ncodes() > 0 ? install() : 0;
}

/* The first code registered while armed installs the trace function (it
 * sees every frame from then on). A failure (an audit hook refusing
 * sys.settrace, say) is reported on one line and leaves the program's
 * @profile, which called this, unharmed. */
int lp_pyt_source_watch(PyObject *code) {
    (void)code;
    if (!armed || source_on) return 0;
    if (install() < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        armed = 0;
        PySys_FormatStderr("lprof: line tracing could not start: %S\n", value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    return 0;
}

/* A thread that entered Python after enable without threading's start hook
 * (a native thread: ctypes callback, C extension pool, PyGILState_Ensure)
 * has no trace function; its calls of @profile functions would be lost.
 * It gets one here, unless it runs another tool's tracer. A refusal (an
 * audit hook) leaves the thread untraced: it must not raise into the
 * program's call. */
int lp_pyt_source_join_thread(void) {
    PyThreadState *me = PyThreadState_Get();
    if (!source_on || me->c_tracefunc != NULL) return 0;
    if (_PyEval_SetTrace(me, trace_fn, NULL) < 0) PyErr_Clear();
    return 0;
}

/* Native threads that entered Python after enable, found by a walk over
 * the thread states (the sweeper below calls this when a new thread state
 * appeared): CPython 3.10/3.11 runs no hook when one is made.
 * A thread running another tool's tracer keeps it. Given the tracer while
 * inside a frame, a thread sends that frame's next LINE event, which adopts
 * the frame (tracer_core's lp_tc_line). The walk starts again after each
 * install: _PyEval_SetTrace runs audit hooks, which may let other threads
 * run and end. A refusal (an audit hook) stops the sweep, raising nothing. */
int lp_pyt_source_sweep(void) {
    if (!source_on) return 0;
    PyThreadState *me = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(me);
    int installed = 0;
    for (int found = 1; found && installed < 256;) {
        found = 0;
        for (PyThreadState *ts = thread_after(interp, NULL); ts != NULL; ts = thread_after(interp, ts)) {
            if (ts == me || ts->c_tracefunc != NULL) continue;
            if (_PyEval_SetTrace(ts, trace_fn, NULL) < 0) {
                PyErr_Clear();
                return installed;
            }
            installed++;
            found = 1;
            break;
        }
    }
    return installed;
}

/* The sweeper: a C thread, not one of lprof's Python threads, which took
 * the GIL to start, to run their loop and to end. It never holds the GIL
 * while it waits, and takes it only when a thread state was made since it
 * last looked (new thread states go to the head of the interpreter's list
 * with a larger id, read under the list's lock), so a program without
 * native threads never hands it the GIL. Its sleep is a timed wait on a
 * condition that the stop signals: stopping never waits out a period.
 * Measured cost: docs/design-tracer.md. */
static pthread_mutex_t sweep_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sweep_cv;
static pthread_once_t sweep_cv_once = PTHREAD_ONCE_INIT;
static int sweep_stop;      /* under sweep_mu */
static int sweeper_running; /* the thread exists (GIL held to change) */
static int sweeper_started; /* its first write: its start-up is over */
static pthread_t sweeper;
static long long sweep_period_ns;
static PyInterpreterState *sweep_interp;

static void sweep_cv_make(void) {
    /* a monotonic deadline: a step of the wall clock must not stretch the wait */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sweep_cv, &attr);
    pthread_condattr_destroy(&attr);
}

/* A fork is taken between two looks (never with the lock held, nor the
 * thread list's lock, which a look takes under it); in the child, where the
 * sweeper thread does not exist, a fresh lock and condition, free of that
 * thread's wait (collect/linetrace.py starts a new sweeper there). */
static void sweep_before_fork(void) { pthread_mutex_lock(&sweep_mu); }
static void sweep_after_fork_parent(void) { pthread_mutex_unlock(&sweep_mu); }
static void sweep_after_fork_child(void) {
    pthread_mutex_init(&sweep_mu, NULL);
    sweep_cv_make();
    sweeper_running = 0;
    sweep_stop = 0;
}

static void sweep_cv_init(void) {
    sweep_cv_make();
    pthread_atfork(sweep_before_fork, sweep_after_fork_parent, sweep_after_fork_child);
}

static uint64_t newest_thread_id(PyInterpreterState *interp) {
    PyThread_acquire_lock(_PyRuntime.interpreters.mutex, WAIT_LOCK);
    PyThreadState *head = PyInterpreterState_ThreadHead(interp);
    uint64_t id = head ? PyThreadState_GetID(head) : 0;
    PyThread_release_lock(_PyRuntime.interpreters.mutex);
    return id;
}

static void *sweeper_main(void *arg) {
    uint64_t seen = (uint64_t)(uintptr_t)arg; /* the newest id when the run began */
    (void)lp_memhooks_guard_enter();          /* its thread states are lprof's, not the program's */
    lp_own_tid_add_self();                    /* and its CPU time (collect/other_threads.h) */
    __atomic_store_n(&sweeper_started, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&sweep_mu);
    while (!sweep_stop) {
        uint64_t newest = newest_thread_id(sweep_interp);
        if (newest > seen) {
            pthread_mutex_unlock(&sweep_mu);
            /* the run's end stops the sweeper before the interpreter's
             * (atexit); the finalizing check is a second guard */
            if (_Py_IsFinalizing()) {
                lp_own_tid_remove_self();
                return NULL;
            }
            PyGILState_STATE gil = PyGILState_Ensure();
            /* this thread's own state is the newest now: ids only grow, so
             * looking for ids above it skips it once it is gone */
            seen = newest_thread_id(sweep_interp);
            (void)lp_pyt_source_sweep();
            PyGILState_Release(gil);
            pthread_mutex_lock(&sweep_mu);
            continue;
        }
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        long long ns = (long long)at.tv_nsec + sweep_period_ns;
        at.tv_sec += (time_t)(ns / 1000000000LL);
        at.tv_nsec = (long)(ns % 1000000000LL);
        (void)pthread_cond_timedwait(&sweep_cv, &sweep_mu, &at);
    }
    pthread_mutex_unlock(&sweep_mu);
    lp_own_tid_remove_self();
    return NULL;
}

int lp_pyt_sweep_start(double period_s) {
    if (sweeper_running) return 0;
    pthread_once(&sweep_cv_once, sweep_cv_init);
    sweep_interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    sweep_period_ns = (long long)(period_s * 1e9);
    pthread_mutex_lock(&sweep_mu);
    sweep_stop = 0;
    pthread_mutex_unlock(&sweep_mu);
    uint64_t seen = newest_thread_id(sweep_interp); /* enable gave those their tracer */
    __atomic_store_n(&sweeper_started, 0, __ATOMIC_RELEASE);
    int rc = lp_thread_create_quiet(&sweeper, sweeper_main, (void *)(uintptr_t)seen);
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot start the tracer's thread sweeper");
        return -1;
    }
    /* its start-up allocates: over before the program can fork (common/thread_start.h) */
    Py_BEGIN_ALLOW_THREADS lp_wait_for_flag(&sweeper_started, LP_THREAD_START_WAIT_NS);
    Py_END_ALLOW_THREADS sweeper_running = 1;
    return 0;
}

void lp_pyt_sweep_stop(void) {
    if (!sweeper_running) return;
    sweeper_running = 0;
    pthread_mutex_lock(&sweep_mu);
    sweep_stop = 1;
    pthread_cond_broadcast(&sweep_cv);
    pthread_mutex_unlock(&sweep_mu);
    /* it may be waiting for the GIL to sweep: let it have it, then end */
    Py_BEGIN_ALLOW_THREADS pthread_join(sweeper, NULL);
    Py_END_ALLOW_THREADS
}

int lp_pyt_source_disable(void) {
    int r = 0;
    armed = 0;
    if (!source_on) return 0;
    source_on = 0;
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    for (PyThreadState *ts = thread_after(interp, NULL); ts != NULL; ts = thread_after(interp, ts)) {
        if (ts->c_tracefunc != trace_fn) continue;
        /* Only the enabling thread's previous tracer is restored: other
         * thread states may have been recycled since. */
        int restore = ts == saved_tstate && saved_func != NULL;
        if (_PyEval_SetTrace(ts, restore ? saved_func : NULL, restore ? saved_obj : NULL) < 0) r = -1;
    }
    saved_tstate = NULL;
    saved_func = NULL;
    Py_CLEAR(saved_obj);
    PyObject *hook = prev_thread_hook ? prev_thread_hook : Py_None;
    if (set_thread_hook(hook) < 0) r = -1;
    Py_CLEAR(prev_thread_hook);
    return r;
}

#endif
