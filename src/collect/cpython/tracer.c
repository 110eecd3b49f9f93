/* binding: the line tracer's Python API (tracer_add_code, tracer_enable,
 * tracer_disable, tracer_is_enabled, tracer_stats, tracer_counts, tracer_counts_add,
 * tracer_clear). Events come from tracer_monitoring.c (3.12+) or tracer_settrace.c (<3.12);
 * the timing itself is tracer_core.c. */
#include "collect/cpython/tracer.h"

#include <pthread.h>
#include <string.h>

#include "aggregate/gpu_idle.h"
#include "common/clock.h"

LP_INTERNAL __thread lp_tc_thread *lp_pyt_tls __attribute__((tls_model("initial-exec")));

static PyObject *codes_list; /* strong refs: records point at these objects */
static int enabled;
static uint64_t clears; /* tracer_clear calls: tracer_counts says which counts it read */
static pthread_key_t thread_key;

/* Thread exit: free the state (touches only its own memory, see core). */
static void thread_state_destroy(void *p) {
    lp_pyt_tls = NULL;
    lp_tc_thread_free(p);
}

lp_tc_thread *lp_pyt_thread_slow(void) {
    lp_tc_thread *th = lp_tc_thread_new();
    if (th == NULL) return NULL;
    if (pthread_setspecific(thread_key, th) != 0) {
        lp_tc_thread_free(th);
        return NULL;
    }
    lp_pyt_tls = th;
    return th;
}

PyObject *lp_pyt_codes(void) { return codes_list; }

/* Comprehensions and generator expressions are not traced as functions of
 * their own: their time is the enclosing line's (its time includes them),
 * and their hits are that line's, as on 3.12+ where list, set and dict
 * comprehensions are inlined. Traced separately, 3.11 listed
 * `f.<locals>.<listcomp>` apart and a generator expression counted a hit per
 * item on some versions and one on others. */
static int is_comprehension(const PyCodeObject *code) {
    static const char *const names[] = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"};
    const char *name = PyUnicode_AsUTF8(code->co_name);
    if (name == NULL) {
        PyErr_Clear();
        return 0;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return 1;
    return 0;
}

/* Registers code and the code objects nested in its constants.
 * Returns 1 if code itself was new, 0 if known, -1 on error. */
static int add_code(PyCodeObject *code, int depth) {
    if (depth > 64) return 0; /* pathological nesting: stop */
    int is_new = 0;
    lp_tc_code *rec = lp_tc_register(code, code->co_firstlineno, code, &is_new);
    if (rec == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (is_new) {
        if (PyList_Append(codes_list, (PyObject *)code) < 0) return -1;
        if (enabled && lp_pyt_source_watch((PyObject *)code) < 0) return -1;
    }
    PyObject *consts = code->co_consts;
    for (Py_ssize_t i = 0; consts != NULL && i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *k = PyTuple_GET_ITEM(consts, i);
        if (PyCode_Check(k) && !is_comprehension((PyCodeObject *)k) &&
            add_code((PyCodeObject *)k, depth + 1) < 0)
            return -1;
    }
    return is_new;
}

static PyObject *py_tracer_add_code(PyObject *self, PyObject *code) {
    (void)self;
    if (!PyCode_Check(code)) {
        PyErr_Format(PyExc_TypeError, "tracer_add_code() expects a code object, got %.100s",
                     Py_TYPE(code)->tp_name);
        return NULL;
    }
    int r = add_code((PyCodeObject *)code, 0);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static uint64_t clock_now(void) { return lp_clock_now(); }

static PyObject *py_tracer_enable(PyObject *self, PyObject *unused) {
    static int calibrated;
    (void)self;
    (void)unused;
    if (!enabled) {
        if (!calibrated) { /* ~20 us, once per process */
            lp_tc_calibrate_fast_line(clock_now);
            calibrated = 1;
        }
        lp_tc_new_epoch();
        if (lp_pyt_source_enable() < 0) return NULL;
        enabled = 1;
    } else if (lp_pyt_source_join_thread() < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_tracer_disable(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (enabled) {
        enabled = 0;
        int r = lp_pyt_source_disable();
        lp_tc_new_epoch(); /* open frames are forgotten, not charged */
        if (r < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_tracer_sweep_threads(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(enabled ? lp_pyt_source_sweep() : 0);
}

static PyObject *py_tracer_sweeper_start(PyObject *self, PyObject *arg) {
    (void)self;
    double period_s = PyFloat_AsDouble(arg);
    if (period_s == -1.0 && PyErr_Occurred()) return NULL;
    if (!(period_s > 0 && period_s < 10)) {
        PyErr_SetString(PyExc_ValueError, "tracer_sweeper_start: period_s must be in (0, 10)");
        return NULL;
    }
    if (lp_pyt_sweep_start(period_s) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_tracer_sweeper_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_pyt_sweep_stop();
    Py_RETURN_NONE;
}

static PyObject *py_tracer_is_enabled(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(enabled);
}

/* One code's line list; re-reads the record after each allocation because
 * a finalizer run by the allocator may trace and grow the line array. */
static PyObject *line_list(size_t k) {
    PyObject *lines = PyList_New(0);
    if (lines == NULL) return NULL;
    for (uint32_t i = 0;; i++) {
        lp_tc_code *c = lp_tc_code_at(k);
        if (i >= c->nlines) break;
        lp_tc_linestat s = c->lines[i];
        if (s.hits == 0 && s.ticks == 0) continue;
        PyObject *t = Py_BuildValue("(iKK)", c->firstlineno + (int)i, (unsigned long long)s.hits,
                                    (unsigned long long)s.ticks);
        if (t == NULL || PyList_Append(lines, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(lines);
            return NULL;
        }
        Py_DECREF(t);
    }
    return lines;
}

static PyObject *py_tracer_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (size_t k = 0; k < lp_tc_ncodes(); k++) {
        PyObject *lines = line_list(k);
        if (lines == NULL) goto fail;
        lp_tc_code *c = lp_tc_code_at(k);
        if (PyList_GET_SIZE(lines) == 0 && c->total_ticks == 0) {
            Py_DECREF(lines);
            continue;
        }
        PyObject *t = Py_BuildValue("(OKN)", (PyObject *)c->user, (unsigned long long)c->total_ticks, lines);
        if (t == NULL || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* Per-code counts packed as native uint64: [tracer_clear calls so far,
 * total_ticks, then hits, ticks, wait_ticks of each line from firstlineno]
 * (b"" when not registered).
 * The record is found again after the allocation (a finalizer run by the
 * allocator may trace and grow the line array: then it is packed anew). */
static PyObject *pack_counts(PyObject *code) {
    for (;;) {
        lp_tc_code *c = lp_tc_find(code);
        if (c == NULL) return PyBytes_FromStringAndSize(NULL, 0);
        uint32_t n = c->nlines;
        PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(2 + 3 * (size_t)n) * 8);
        if (b == NULL) return NULL;
        c = lp_tc_find(code);
        if (c == NULL || c->nlines != n) {
            Py_DECREF(b);
            continue;
        }
        char *out = PyBytes_AS_STRING(b);
        memcpy(out, &clears, 8);
        memcpy(out + 8, &c->total_ticks, 8);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t row[3] = {c->lines[i].hits, c->lines[i].ticks, c->lines[i].wait_ticks};
            memcpy(out + 16 + 24 * (size_t)i, row, 24);
        }
        return b;
    }
}

/* tracer_counts(codes) -> tuple of bytes: each code's counts now, packed
 * (pack_counts), in the order given. A LineProfiler instance reads its own
 * functions' counts at enable and disable with it: a call costs what those
 * functions' lines do, however many other functions are traced. */
static PyObject *py_tracer_counts(PyObject *self, PyObject *codes) {
    (void)self;
    PyObject *seq = PySequence_Fast(codes, "tracer_counts() expects a sequence of code objects");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *code = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyCode_Check(code)) {
            PyErr_Format(PyExc_TypeError, "tracer_counts() expects code objects, got %.100s",
                         Py_TYPE(code)->tp_name);
            goto fail;
        }
        PyObject *b = pack_counts(code);
        if (b == NULL) goto fail;
        PyTuple_SET_ITEM(out, k, b);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

/* Item k of a tuple of bytes whose lengths are multiples of 8; empty when
 * k is past its end. */
static int packed_item(PyObject *tuple, Py_ssize_t k, const char **data, Py_ssize_t *n) {
    *data = NULL;
    *n = 0;
    if (k >= PyTuple_GET_SIZE(tuple)) return 0;
    PyObject *b = PyTuple_GET_ITEM(tuple, k);
    if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "tracer_counts_add(): items must be tracer_counts() bytes");
        return -1;
    }
    *data = PyBytes_AS_STRING(b);
    *n = PyBytes_GET_SIZE(b) / 8;
    return 0;
}

static uint64_t packed_at(const char *data, Py_ssize_t n, Py_ssize_t j) {
    uint64_t v = 0;
    if (j < n) memcpy(&v, data + 8 * j, 8);
    return v;
}

/* tracer_counts_add(sums, now, base) -> sums + (now - base), item by item
 * and value by value (tuples of tracer_counts() bytes; a missing item or
 * value is 0). A base read before a tracer_clear that `now` was read after
 * counts as 0: all of now is new. The result's first value is now's
 * tracer_clear count. */
static PyObject *py_tracer_counts_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *sums, *now, *base;
    if (!PyArg_ParseTuple(args, "O!O!O!:tracer_counts_add", &PyTuple_Type, &sums, &PyTuple_Type, &now,
                          &PyTuple_Type, &base))
        return NULL;
    Py_ssize_t items =
        PyTuple_GET_SIZE(now) > PyTuple_GET_SIZE(sums) ? PyTuple_GET_SIZE(now) : PyTuple_GET_SIZE(sums);
    PyObject *out = PyTuple_New(items);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < items; k++) {
        const char *s, *a, *b;
        Py_ssize_t ns, na, nb;
        if (packed_item(sums, k, &s, &ns) < 0 || packed_item(now, k, &a, &na) < 0 ||
            packed_item(base, k, &b, &nb) < 0)
            goto fail;
        if (nb && packed_at(b, nb, 0) != packed_at(a, na, 0)) nb = 0; /* cleared since */
        Py_ssize_t n = na > ns ? na : ns;
        PyObject *r = PyBytes_FromStringAndSize(NULL, n * 8);
        if (r == NULL) goto fail;
        char *dst = PyBytes_AS_STRING(r);
        for (Py_ssize_t j = 0; j < n; j++) {
            uint64_t x = packed_at(a, na, j), y = packed_at(b, nb, j);
            uint64_t v = j == 0 ? x : packed_at(s, ns, j) + (x >= y ? x - y : 0);
            memcpy(dst + 8 * j, &v, 8);
        }
        PyTuple_SET_ITEM(out, k, r);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* tracer_waits() -> ([(code, lineno, wait_ticks)], evicted): the lines
 * that suspended (yield, await) with the time until their frame resumed,
 * and the suspensions whose wait could not be kept. */
static PyObject *py_tracer_waits(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *rows = PyList_New(0);
    if (rows == NULL) return NULL;
    for (size_t k = 0; k < lp_tc_ncodes(); k++) {
        for (uint32_t i = 0;; i++) {
            lp_tc_code *c = lp_tc_code_at(k); /* re-read: an allocation may run traced code */
            if (i >= c->nlines) break;
            uint64_t wait = c->lines[i].wait_ticks;
            if (wait == 0) continue;
            PyObject *t = Py_BuildValue("(OiK)", (PyObject *)c->user, c->firstlineno + (int)i,
                                        (unsigned long long)wait);
            if (t == NULL || PyList_Append(rows, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(rows);
                return NULL;
            }
            Py_DECREF(t);
        }
    }
    return Py_BuildValue("(NK)", rows, (unsigned long long)lp_tc_waits_evicted());
}

static int idle_row(const void *code, int32_t line, uint64_t spans, uint64_t ticks, uint64_t idle, void *ud) {
    lp_tc_code *c = lp_tc_find(code);
    if (!c) return 0; /* no longer registered: nothing to name it by */
    PyObject *t =
        Py_BuildValue("(OiKKK)", (PyObject *)c->user, c->firstlineno + (int)line, (unsigned long long)spans,
                      (unsigned long long)ticks, (unsigned long long)idle);
    int bad = !t || PyList_Append((PyObject *)ud, t) < 0;
    Py_XDECREF(t);
    return bad ? -2 : 0;
}

/* tracer_gpu_idle() -> [(code, lineno, intervals, ticks, idle ticks)]: per traced
 * line, the wall time of its intervals with no GPU work (aggregate/gpu_idle.h);
 * empty unless lprof --gpu logged the intervals. */
static PyObject *py_tracer_gpu_idle(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *rows = PyList_New(0);
    if (!rows) return NULL;
    double ns_per_tick = lp_clock_seconds_per_tick() * 1e9;
    uint64_t tick = lp_clock_now(), ns = lp_clock_monotonic_ns();
    int rc = lp_gpu_idle_compute(ns_per_tick, tick, ns, idle_row, rows);
    if (rc != 0) {
        Py_DECREF(rows);
        if (rc == -1) PyErr_NoMemory();
        return NULL;
    }
    return rows;
}

static PyObject *py_tracer_clear(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_tc_clear();
    clears++;
    Py_RETURN_NONE;
}

static PyMethodDef tracer_methods[] = {
    {"tracer_add_code", py_tracer_add_code, METH_O,
     "Trace this code object and those nested in its constants; True if newly added."},
    {"tracer_gpu_idle", py_tracer_gpu_idle, METH_NOARGS,
     "[(code, lineno, intervals, ticks, idle_ticks)]: GPU idle wall time of each traced line's intervals "
     "(--gpu)."},
    {"tracer_waits", py_tracer_waits, METH_NOARGS,
     "([(code, lineno, wait_ticks)], evicted): time suspended at each line (yield, await) until resumed."},
    {"tracer_enable", py_tracer_enable, METH_NOARGS,
     "Start line tracing on all threads; when on, the calling thread joins if it has no tracer."},
    {"tracer_disable", py_tracer_disable, METH_NOARGS, "Stop line tracing on all threads."},
    {"tracer_sweep_threads", py_tracer_sweep_threads, METH_NOARGS,
     "While on, gives the tracer to threads that have none (3.10/3.11); how many got it."},
    {"tracer_sweeper_start", py_tracer_sweeper_start, METH_O,
     "tracer_sweeper_start(period_s): a C thread that sweeps when thread states appear "
     "(3.10/3.11; a no-op on 3.12+ or when one runs)."},
    {"tracer_sweeper_stop", py_tracer_sweeper_stop, METH_NOARGS,
     "Stops the sweeper at once and waits for it (the GIL released meanwhile)."},
    {"tracer_is_enabled", py_tracer_is_enabled, METH_NOARGS, "Whether line tracing is on."},
    {"tracer_stats", py_tracer_stats, METH_NOARGS,
     "[(code, total_ticks, [(lineno, hits, ticks), ...]), ...] summed over threads."},
    {"tracer_counts", py_tracer_counts, METH_O,
     "tracer_counts(codes) -> tuple of bytes: each code's counts, native uint64 [tracer_clear "
     "calls so far, total_ticks, then hits, ticks, wait_ticks per line from its first line]; "
     "b'' if not registered."},
    {"tracer_counts_add", py_tracer_counts_add, METH_VARARGS,
     "tracer_counts_add(sums, now, base) -> sums + (now - base) of tracer_counts() tuples "
     "(a base read before a tracer_clear counts as 0)."},
    {"tracer_clear", py_tracer_clear, METH_NOARGS, "Zero all counts (keeps registrations)."},
    {NULL, NULL, 0, NULL},
};

int lp_pytracer_init(PyObject *module) {
    static int key_made;
    if (!key_made) {
        if (pthread_key_create(&thread_key, thread_state_destroy) != 0) {
            PyErr_SetString(PyExc_OSError, "lprof: pthread_key_create failed");
            return -1;
        }
        key_made = 1;
    }
    if (codes_list == NULL && (codes_list = PyList_New(0)) == NULL) return -1;
    if (PyModule_AddFunctions(module, tracer_methods) < 0) return -1;
    return lp_pyt_source_init(module);
}
