/* binding: line-tracer events from sys.monitoring (CPython 3.12+).
 *
 * LOCAL events (PY_START, PY_RESUME, PY_RETURN, PY_YIELD, LINE) are set on
 * the registered code objects only, so other code runs at full speed.
 * PY_THROW and PY_UNWIND cannot be local on 3.12/3.13: they are global and
 * the callback filters by code (they fire only when exceptions unwind or a
 * generator is thrown into). Callbacks are METH_FASTCALL C functions. */
#include "collect/cpython/tracer.h"

#if PY_VERSION_HEX >= 0x030C0000

#include "collect/cpython/frames.h"
#include "common/clock.h"

static int tool_id = -1;
static PyObject *monitoring; /* the sys.monitoring module */
static long ev_start, ev_resume, ev_return, ev_yield, ev_line, ev_throw, ev_unwind;
static PyObject *cb_objs[7]; /* callbacks, same order as cb_events() */

static long local_mask(void) { return ev_start | ev_resume | ev_return | ev_yield | ev_line; }

/* LINE numbers and offsets are small ints: read them without a call. */
static inline long small_int(PyObject *o) {
    if (LP_LIKELY(PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o)))
        return (long)PyUnstable_Long_CompactValue((PyLongObject *)o);
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    return v;
}

/* Record of the event's code: the innermost frame's if it matches. */
static inline lp_tc_code *code_of(lp_tc_thread *th, PyObject *code) {
    lp_tc_code *c = lp_tc_top_code(th);
    if (LP_LIKELY(c != NULL && c->id == (const void *)code)) return c;
    return lp_tc_find(code);
}

static PyObject *cb_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t t = lp_clock_now();
    (void)self;
    if (LP_UNLIKELY(nargs < 2)) Py_RETURN_NONE;
    lp_tc_thread *th = lp_pyt_thread();
    if (LP_UNLIKELY(th == NULL)) Py_RETURN_NONE;
    int line = (int)small_int(args[1]);
    if (LP_LIKELY(lp_tc_line_fast(th, args[0], line, t))) Py_RETURN_NONE;
    lp_tc_code *c = code_of(th, args[0]);
    if (c != NULL) {
        lp_tc_line(th, c, line, t);
        lp_tc_overhead(th, t, lp_clock_now());
    }
    Py_RETURN_NONE;
}

static PyObject *cb_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t t = lp_clock_now();
    (void)self;
    if (LP_UNLIKELY(nargs < 1)) Py_RETURN_NONE;
    lp_tc_code *c = lp_tc_find(args[0]);
    lp_tc_thread *th = c ? lp_pyt_thread() : NULL;
    if (th != NULL) {
        lp_tc_enter(th, c, -1, t);
        lp_tc_overhead(th, t, lp_clock_now());
    }
    Py_RETURN_NONE;
}

/* The running generator's interpreter frame: it lives inside the generator
 * object, so its address names that generator from yield to resume. The
 * callbacks are C functions: no frame of theirs is on top. */
static inline const void *current_frame(void) { return lp_pyframes_top(PyThreadState_Get(), NULL); }

/* PY_RESUME and PY_THROW: a generator or coroutine continues; the line it
 * was suspended on is open again (without a new hit), and the time it was
 * suspended goes to that line's wait. */
static PyObject *cb_resume(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t t = lp_clock_now();
    (void)self;
    if (LP_UNLIKELY(nargs < 2)) Py_RETURN_NONE;
    lp_tc_code *c = lp_tc_find(args[0]);
    lp_tc_thread *th = c ? lp_pyt_thread() : NULL;
    if (th != NULL) {
        int line = PyCode_Addr2Line((PyCodeObject *)args[0], (int)small_int(args[1]));
        lp_tc_resume(th, c, current_frame(), line, t);
        lp_tc_overhead(th, t, lp_clock_now());
    }
    Py_RETURN_NONE;
}

/* The frame stops running: it suspends (PY_YIELD: a yield, or an await
 * that waits) or ends (PY_RETURN, PY_UNWIND). */
static PyObject *frame_stops(PyObject *const *args, Py_ssize_t nargs, int suspends) {
    uint64_t t = lp_clock_now();
    if (LP_UNLIKELY(nargs < 1)) Py_RETURN_NONE;
    lp_tc_thread *th = lp_pyt_tls;
    if (th == NULL) Py_RETURN_NONE; /* nothing was entered on this thread */
    lp_tc_code *c = code_of(th, args[0]);
    if (c != NULL) {
        if (suspends) lp_tc_suspend(th, c, current_frame(), t);
        else lp_tc_exit(th, c, t);
        lp_tc_overhead(th, t, lp_clock_now());
    }
    Py_RETURN_NONE;
}

static PyObject *cb_yield(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return frame_stops(args, nargs, 1);
}

static PyObject *cb_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return frame_stops(args, nargs, 0);
}

static PyMethodDef cb_defs[] = {
    {"_lprof_py_start", (PyCFunction)(void (*)(void))cb_start, METH_FASTCALL, NULL},
    {"_lprof_py_resume", (PyCFunction)(void (*)(void))cb_resume, METH_FASTCALL, NULL},
    {"_lprof_py_throw", (PyCFunction)(void (*)(void))cb_resume, METH_FASTCALL, NULL},
    {"_lprof_py_return", (PyCFunction)(void (*)(void))cb_exit, METH_FASTCALL, NULL},
    {"_lprof_py_yield", (PyCFunction)(void (*)(void))cb_yield, METH_FASTCALL, NULL},
    {"_lprof_py_unwind", (PyCFunction)(void (*)(void))cb_exit, METH_FASTCALL, NULL},
    {"_lprof_line", (PyCFunction)(void (*)(void))cb_line, METH_FASTCALL, NULL},
};

static void cb_events(long ev[7]) {
    ev[0] = ev_start;
    ev[1] = ev_resume;
    ev[2] = ev_throw;
    ev[3] = ev_return;
    ev[4] = ev_yield;
    ev[5] = ev_unwind;
    ev[6] = ev_line;
}

static int get_event(PyObject *events, const char *name, long *out) {
    PyObject *v = PyObject_GetAttrString(events, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

int lp_pyt_source_init(PyObject *module) {
    (void)module;
    if (monitoring != NULL) return 0;
    PyObject *sys = PyImport_ImportModule("sys");
    if (sys == NULL) return -1;
    monitoring = PyObject_GetAttrString(sys, "monitoring");
    Py_DECREF(sys);
    if (monitoring == NULL) return -1;
    PyObject *events = PyObject_GetAttrString(monitoring, "events");
    if (events == NULL) return -1;
    int r = get_event(events, "PY_START", &ev_start) | get_event(events, "PY_RESUME", &ev_resume) |
            get_event(events, "PY_RETURN", &ev_return) | get_event(events, "PY_YIELD", &ev_yield) |
            get_event(events, "LINE", &ev_line) | get_event(events, "PY_THROW", &ev_throw) |
            get_event(events, "PY_UNWIND", &ev_unwind);
    Py_DECREF(events);
    if (r != 0) return -1;
    for (size_t i = 0; i < LP_ARRAY_LEN(cb_defs); i++)
        if ((cb_objs[i] = PyCFunction_New(&cb_defs[i], NULL)) == NULL) return -1;
    return 0;
}

static int call_ok(PyObject *r) {
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* Takes the first free tool id among 2 (PROFILER_ID), 3, 4, 5. */
static int claim_tool_id(void) {
    PyObject *holders = PyList_New(0);
    if (holders == NULL) return -1;
    for (int id = 2; id <= 5; id++) {
        PyObject *who = PyObject_CallMethod(monitoring, "get_tool", "i", id);
        if (who == NULL) goto fail;
        if (who == Py_None) {
            Py_DECREF(who);
            PyObject *r = PyObject_CallMethod(monitoring, "use_tool_id", "is", id, "lprof");
            if (r != NULL) {
                Py_DECREF(r);
                Py_DECREF(holders);
                return id;
            }
            if (!PyErr_ExceptionMatches(PyExc_ValueError)) goto fail;
            PyErr_Clear();
            continue;
        }
        PyObject *desc = PyUnicode_FromFormat("%d=%S", id, who);
        Py_DECREF(who);
        if (desc == NULL || PyList_Append(holders, desc) < 0) {
            Py_XDECREF(desc);
            goto fail;
        }
        Py_DECREF(desc);
    }
    PyErr_Format(PyExc_RuntimeError,
                 "lprof: no free sys.monitoring tool id among 2-5 (held: %S); "
                 "stop another profiler or debugger first",
                 holders);
fail:
    Py_DECREF(holders);
    return -1;
}

static int set_local(PyObject *code, long mask) {
    return call_ok(PyObject_CallMethod(monitoring, "set_local_events", "iOl", tool_id, code, mask));
}

int lp_pyt_source_watch(PyObject *code) { return tool_id < 0 ? 0 : set_local(code, local_mask()); }

int lp_pyt_source_disable(void);

/* sys.monitoring sends every thread's events: nothing for a thread to join. */
int lp_pyt_source_join_thread(void) { return 0; }
int lp_pyt_source_sweep(void) { return 0; }
int lp_pyt_sweep_start(double period_s) {
    (void)period_s;
    return 0;
}
void lp_pyt_sweep_stop(void) {}

int lp_pyt_source_enable(void) {
    if ((tool_id = claim_tool_id()) < 0) return -1;
    long ev[7];
    cb_events(ev);
    for (int i = 0; i < 7; i++) {
        if (call_ok(PyObject_CallMethod(monitoring, "register_callback", "ilO", tool_id, ev[i], cb_objs[i])) <
            0)
            goto fail;
    }
    PyObject *codes = lp_pyt_codes();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(codes); i++)
        if (set_local(PyList_GET_ITEM(codes, i), local_mask()) < 0) goto fail;
    if (call_ok(PyObject_CallMethod(monitoring, "set_events", "il", tool_id, ev_throw | ev_unwind)) < 0)
        goto fail;
    return 0;
fail : {
    PyObject *exc = PyErr_GetRaisedException();
    if (lp_pyt_source_disable() < 0) PyErr_Clear();
    PyErr_SetRaisedException(exc);
    return -1;
}
}

/* Undoes everything enable did; keeps going after errors, reports the
 * first one. */
int lp_pyt_source_disable(void) {
    if (tool_id < 0) return 0;
    PyObject *first = NULL;
#define KEEP_FIRST(expr)                                           \
    do {                                                           \
        if ((expr) < 0) {                                          \
            if (first == NULL) first = PyErr_GetRaisedException(); \
            else PyErr_Clear();                                    \
        }                                                          \
    } while (0)
    PyObject *codes = lp_pyt_codes();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(codes); i++)
        KEEP_FIRST(set_local(PyList_GET_ITEM(codes, i), 0));
    KEEP_FIRST(call_ok(PyObject_CallMethod(monitoring, "set_events", "ii", tool_id, 0)));
    long ev[7];
    cb_events(ev);
    for (int i = 0; i < 7; i++)
        KEEP_FIRST(
            call_ok(PyObject_CallMethod(monitoring, "register_callback", "ilO", tool_id, ev[i], Py_None)));
    KEEP_FIRST(call_ok(PyObject_CallMethod(monitoring, "free_tool_id", "i", tool_id)));
#undef KEEP_FIRST
    tool_id = -1;
    if (first != NULL) {
        PyErr_SetRaisedException(first);
        return -1;
    }
    return 0;
}

#endif
