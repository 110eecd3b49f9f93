/* binding: lprof dump's reader (collect/remote/remote.c) for Python, and
 * this version's own interpreter layout as numbers (offsetof on the headers
 * this extension is compiled with): what a target of the same version,
 * 3.10-3.12, is read with. 3.13 and later publish _Py_DebugOffsets in the
 * target itself, so remote_layout() is None there (and nothing below the
 * version test is compiled against their headers). */
#define _GNU_SOURCE 1
#include <Python.h>
#if PY_VERSION_HEX < 0x030D0000
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif
#define Py_BUILD_CORE 1
#undef _PyGC_FINALIZED /* the internal headers define it again on 3.11 (-Werror) */
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#undef Py_BUILD_CORE
#endif

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "collect/remote/native_merge.h"
#include "collect/remote/remote.h"
#include "collect/remote/remote_native.h"
#include "cpython/module.h"

#if PY_VERSION_HEX < 0x030D0000
static void own_layout(lp_remote_layout *L) {
#define ABSENT LP_REMOTE_ABSENT
    L->version_hex = (uint64_t)PY_VERSION_HEX;
    L->rt_interpreters_head = offsetof(_PyRuntimeState, interpreters.head);
    L->is_next = offsetof(PyInterpreterState, next);
    L->ts_next = offsetof(PyThreadState, next);
    L->ts_thread_id = offsetof(PyThreadState, thread_id);
#if PY_VERSION_HEX < 0x030B0000
    L->frame_model = LP_REMOTE_FRAMES_310;
    L->is_threads_head = offsetof(PyInterpreterState, tstate_head);
    L->ts_native_thread_id = ABSENT;
    L->ts_frame = offsetof(PyThreadState, frame);
    L->cframe_current_frame = ABSENT;
    L->fr_previous = offsetof(PyFrameObject, f_back);
    L->fr_code = offsetof(PyFrameObject, f_code);
    L->fr_instr = offsetof(PyFrameObject, f_lasti);
    L->fr_owner = ABSENT;
    L->co_qualname = ABSENT;
    L->co_code_adaptive = ABSENT;
    L->fr_is_entry = ABSENT;
    L->fr_localsplus = offsetof(PyFrameObject, f_localsplus);
    L->co_localsplusnames = offsetof(PyCodeObject, co_varnames); /* the first co_nlocals slots */
#else
    L->frame_model = LP_REMOTE_FRAMES_311;
    L->is_threads_head = offsetof(PyInterpreterState, threads.head);
    L->ts_native_thread_id = offsetof(PyThreadState, native_thread_id);
    L->ts_frame = offsetof(PyThreadState, cframe);
    L->cframe_current_frame = offsetof(_PyCFrame, current_frame);
    L->fr_previous = offsetof(_PyInterpreterFrame, previous);
    L->fr_code = offsetof(_PyInterpreterFrame, f_code);
    L->fr_instr = offsetof(_PyInterpreterFrame, prev_instr);
    L->fr_owner = offsetof(_PyInterpreterFrame, owner);
#if PY_VERSION_HEX < 0x030C0000
    L->fr_is_entry = offsetof(_PyInterpreterFrame, is_entry);
#else
    L->fr_is_entry = ABSENT; /* entry frames are their own frames (owner 3) */
#endif
    L->co_qualname = offsetof(PyCodeObject, co_qualname);
    L->co_code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
    L->fr_localsplus = offsetof(_PyInterpreterFrame, localsplus);
    L->co_localsplusnames = offsetof(PyCodeObject, co_localsplusnames);
#endif
#if PY_VERSION_HEX >= 0x030C0000
    L->long_size = offsetof(PyLongObject, long_value.lv_tag);
    L->long_digits = offsetof(PyLongObject, long_value.ob_digit);
#else
    L->long_size = offsetof(PyVarObject, ob_size);
    L->long_digits = offsetof(PyLongObject, ob_digit);
#endif
    L->tuple_size = offsetof(PyVarObject, ob_size);
    L->tuple_item = offsetof(PyTupleObject, ob_item);
    L->float_fval = offsetof(PyFloatObject, ob_fval);
    L->co_filename = offsetof(PyCodeObject, co_filename);
    L->co_name = offsetof(PyCodeObject, co_name);
    L->co_linetable = offsetof(PyCodeObject, co_linetable);
    L->co_firstlineno = offsetof(PyCodeObject, co_firstlineno);
    L->ob_type = offsetof(PyObject, ob_type);
    L->tp_name = offsetof(PyTypeObject, tp_name);
    L->bytes_size = offsetof(PyVarObject, ob_size);
    L->bytes_sval = offsetof(PyBytesObject, ob_sval);
    L->u_state = offsetof(PyASCIIObject, state);
    L->u_length = offsetof(PyASCIIObject, length);
    L->u_ascii_size = sizeof(PyASCIIObject);
    L->u_compact_size = sizeof(PyCompactUnicodeObject);
#undef ABSENT
}
#endif

#if PY_VERSION_HEX < 0x030D0000 /* 3.13+ has no table of its own here (remote_layout: None) */
static PyObject *layout_to_dict(const lp_remote_layout *L) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
#define PUT_(n)                                                                                           \
    {                                                                                                     \
        PyObject *v =                                                                                     \
            L->n == LP_REMOTE_ABSENT ? (Py_INCREF(Py_None), Py_None) : PyLong_FromUnsignedLongLong(L->n); \
        if (v == NULL || PyDict_SetItemString(d, #n, v) < 0) {                                            \
            Py_XDECREF(v);                                                                                \
            Py_DECREF(d);                                                                                 \
            return NULL;                                                                                  \
        }                                                                                                 \
        Py_DECREF(v);                                                                                     \
    }
    LP_REMOTE_LAYOUT_FIELDS(PUT_)
#undef PUT_
    return d;
}
#endif

/* each field an int, or None (or missing: a layout from an older build) for
 * LP_REMOTE_ABSENT; the reader refuses a layout that lacks what it needs */
static int layout_from_dict(PyObject *d, lp_remote_layout *L) {
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "layout: a dict");
        return -1;
    }
#define GET_(n)                                    \
    {                                              \
        PyObject *v = PyDict_GetItemString(d, #n); \
        if (v == NULL || v == Py_None) {           \
            L->n = LP_REMOTE_ABSENT;               \
        } else {                                   \
            L->n = PyLong_AsUnsignedLongLong(v);   \
            if (PyErr_Occurred()) return -1;       \
        }                                          \
    }
    LP_REMOTE_LAYOUT_FIELDS(GET_)
#undef GET_
    return 0;
}

static PyObject *py_remote_layout(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#if PY_VERSION_HEX < 0x030D0000
    lp_remote_layout L;
    own_layout(&L);
    return layout_to_dict(&L);
#else
    Py_RETURN_NONE;
#endif
}

typedef struct sink_state {
    PyObject *threads; /* list of [tid, native_tid, frames, status] */
    PyObject *frames;  /* the current thread's frames list (borrowed from threads) */
    PyObject *locals;  /* the current frame's locals list (borrowed), with --locals */
    PyObject *entries; /* the current thread's (entry-frame index, shim) pairs (borrowed), with --native */
    int want_locals;
    int want_entries;
} sink_state;

static int on_thread(void *ctx, uint64_t tid, uint64_t ntid) {
    sink_state *s = ctx;
    s->frames = PyList_New(0);
    if (s->frames == NULL) return 1;
    PyObject *t =
        Py_BuildValue("[KKOi]", (unsigned long long)tid, (unsigned long long)ntid, s->frames, LP_REMOTE_OK);
    Py_DECREF(s->frames); /* the thread's list holds it */
    if (t == NULL) return 1;
    if (s->want_entries) { /* --native: a fifth item, the entry frames */
        s->entries = PyList_New(0);
        int bad = s->entries == NULL || PyList_Append(t, s->entries) < 0;
        Py_XDECREF(s->entries); /* the thread's list holds it */
        if (bad) {
            Py_DECREF(t);
            return 1;
        }
    }
    int rc = PyList_Append(s->threads, t);
    Py_DECREF(t);
    return rc < 0;
}

static int on_frame(void *ctx, const char *file, const char *func, int line) {
    sink_state *s = ctx;
    /* names decoded leniently: a truncated multi-byte tail is replaced, not an error */
    PyObject *pf = PyUnicode_DecodeUTF8(file, (Py_ssize_t)strlen(file), "replace");
    PyObject *pn = PyUnicode_DecodeUTF8(func, (Py_ssize_t)strlen(func), "replace");
    PyObject *t = NULL;
    if (pf && pn && s->want_locals) {
        s->locals = PyList_New(0);
        t = s->locals ? Py_BuildValue("(OOiO)", pf, pn, line, s->locals) : NULL;
        Py_XDECREF(s->locals); /* the frame's tuple holds it */
    } else if (pf && pn) {
        t = Py_BuildValue("(OOi)", pf, pn, line);
    }
    Py_XDECREF(pf);
    Py_XDECREF(pn);
    if (t == NULL) return 1;
    int rc = PyList_Append(s->frames, t);
    Py_DECREF(t);
    return rc < 0;
}

static int on_local(void *ctx, const char *name, const char *value) {
    sink_state *s = ctx;
    PyObject *pn = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");
    PyObject *pv = PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
    PyObject *t = (pn && pv) ? PyTuple_Pack(2, pn, pv) : NULL;
    Py_XDECREF(pn);
    Py_XDECREF(pv);
    if (t == NULL) return 1;
    int rc = PyList_Append(s->locals, t);
    Py_DECREF(t);
    return rc < 0;
}

static int on_entry(void *ctx, uint64_t shim) {
    sink_state *s = ctx;
    PyObject *e = Py_BuildValue("(nK)", PyList_GET_SIZE(s->frames) - 1, (unsigned long long)shim);
    int rc = e == NULL || PyList_Append(s->entries, e) < 0;
    Py_XDECREF(e);
    return rc;
}

static int on_end_thread(void *ctx, int status) {
    sink_state *s = ctx;
    Py_ssize_t n = PyList_GET_SIZE(s->threads);
    PyObject *st = PyLong_FromLong(status);
    if (st == NULL) return 1;
    return PyList_SetItem(PyList_GET_ITEM(s->threads, n - 1), 3, st) < 0;
}

/* remote_dump(pid, runtime_addr, layout or None, locals=False) -> (status,
 * version_hex, threads): layout None reads the target's _Py_DebugOffsets;
 * threads is a list of [thread_id, native_thread_id, [(file, function,
 * line), ...] innermost first, status of that thread's walk]; with locals
 * each frame has a fourth item, [(name, value text), ...]. status: REMOTE_*. */
static PyObject *py_remote_dump(PyObject *self, PyObject *args) {
    (void)self;
    int pid;
    unsigned long long runtime;
    PyObject *layout_obj;
    int want_locals = 0;
    if (!PyArg_ParseTuple(args, "iKO|p:remote_dump", &pid, &runtime, &layout_obj, &want_locals)) return NULL;
    lp_remote_layout L;
    uint64_t version = 0;
    int rc;
    if (layout_obj == Py_None) {
        Py_BEGIN_ALLOW_THREADS rc = lp_remote_layout_from_debug((pid_t)pid, runtime, &L, &version);
        Py_END_ALLOW_THREADS if (rc != LP_REMOTE_OK) return Py_BuildValue("(iK[])", rc,
                                                                          (unsigned long long)version);
    } else {
        if (layout_from_dict(layout_obj, &L) < 0) return NULL;
        version = L.version_hex;
    }
    sink_state s = {.threads = PyList_New(0), .want_locals = want_locals};
    if (s.threads == NULL) return NULL;
    lp_remote_sink sink = {.thread = on_thread,
                           .frame = on_frame,
                           .end_thread = on_end_thread,
                           .local = want_locals ? on_local : NULL,
                           .ctx = &s};
    /* the sink builds Python objects: the walk keeps the GIL */
    rc = lp_remote_walk((pid_t)pid, runtime, &L, &sink);
    if (rc == LP_REMOTE_STOPPED && PyErr_Occurred()) {
        Py_DECREF(s.threads);
        return NULL;
    }
    PyObject *r = Py_BuildValue("(iKO)", rc, (unsigned long long)version, s.threads);
    Py_DECREF(s.threads);
    return r;
}

/* one stopped thread's native frames: (tid, status, tls, truncated, [(ip,
 * symbol or None, offset, sp), ...] innermost first) */
static PyObject *native_thread(lp_rnative_set *set, int i, lp_rnative_frame *buf) {
    int n = 0, truncated = 0;
    uint64_t tls = 0;
    int st = lp_rnative_unwind(set, i, buf, LP_RNATIVE_MAX_DEPTH, &n, &truncated, &tls);
    PyObject *frames = PyList_New(0);
    if (frames == NULL) return NULL;
    for (int k = 0; k < n; k++) {
        PyObject *name = buf[k].name[0]
                             ? PyUnicode_DecodeUTF8(buf[k].name, (Py_ssize_t)strlen(buf[k].name), "replace")
                             : (Py_INCREF(Py_None), Py_None);
        PyObject *f = name ? Py_BuildValue("(KOKK)", (unsigned long long)buf[k].ip, name,
                                           (unsigned long long)buf[k].offset, (unsigned long long)buf[k].sp)
                           : NULL;
        Py_XDECREF(name);
        if (f == NULL || PyList_Append(frames, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(frames);
            return NULL;
        }
        Py_DECREF(f);
    }
    PyObject *r = Py_BuildValue("(iiKiO)", (int)set->tid[i], st, (unsigned long long)tls, truncated, frames);
    Py_DECREF(frames);
    return r;
}

/* the Python walk and every thread's unwinding, all while the threads are
 * stopped; the threads are released on every path before this returns */
static PyObject *dump_stopped(lp_rnative_set *set, pid_t pid, uint64_t runtime, const lp_remote_layout *L,
                              int want_locals, int *walk_rc) {
    lp_rnative_frame *buf = calloc(LP_RNATIVE_MAX_DEPTH, sizeof *buf);
    sink_state s = {.threads = PyList_New(0), .want_locals = want_locals, .want_entries = 1};
    PyObject *natives = PyList_New(0), *r = NULL;
    if (buf == NULL || s.threads == NULL || natives == NULL) {
        if (buf == NULL) PyErr_NoMemory();
        goto out;
    }
    lp_remote_sink sink = {.thread = on_thread,
                           .frame = on_frame,
                           .end_thread = on_end_thread,
                           .local = want_locals ? on_local : NULL,
                           .entry = on_entry,
                           .ctx = &s};
    *walk_rc = lp_remote_walk(pid, runtime, L, &sink);
    if (*walk_rc == LP_REMOTE_STOPPED && PyErr_Occurred()) goto out;
    for (int i = 0; i < set->n; i++) {
        if (set->state[i] != LP_RNATIVE_T_STOPPED) { /* exited, or did not stop: listed so */
            int st = set->state[i] == LP_RNATIVE_T_NOSTOP ? LP_RNATIVE_NOSTOP : LP_RNATIVE_GONE;
            PyObject *t = Py_BuildValue("(iiKi[])", (int)set->tid[i], st, 0ULL, 0);
            int bad = t == NULL || PyList_Append(natives, t) < 0;
            Py_XDECREF(t);
            if (bad) goto out;
            continue;
        }
        PyObject *t = native_thread(set, i, buf);
        int bad = t == NULL || PyList_Append(natives, t) < 0;
        Py_XDECREF(t);
        if (bad) goto out;
    }
    r = PyTuple_Pack(2, s.threads, natives);
out:
    lp_rnative_release_all(set);
    free(buf);
    Py_XDECREF(s.threads);
    Py_XDECREF(natives);
    return r;
}

/* remote_dump_native(pid, runtime_addr, layout or None, locals=False) ->
 * (status, native_status, version_hex, threads, natives, threads_left_out):
 * every thread of pid stopped (ptrace), its Python stacks read as
 * remote_dump reads them (each thread with a fifth item: [(index, shim)]
 * of its entry frames, the outermost of each eval call, shim the address
 * of the interpreter's entry frame after it, 3.12+, else 0) and every
 * thread unwound (natives: (tid, REMOTE_NATIVE_*, thread pointer,
 * truncated, [(ip, symbol or None, offset, sp)])), then released. native_status: REMOTE_NATIVE_* of
 * the stop (UNAVAILABLE without libunwind-ptrace: nothing is stopped). */
static PyObject *py_remote_dump_native(PyObject *self, PyObject *args) {
    (void)self;
    int pid;
    unsigned long long runtime;
    PyObject *layout_obj;
    int want_locals = 0;
    if (!PyArg_ParseTuple(args, "iKO|p:remote_dump_native", &pid, &runtime, &layout_obj, &want_locals))
        return NULL;
    int avail = lp_rnative_available();
    if (avail != 1)
        return Py_BuildValue("(iiK[][]i)", LP_REMOTE_OK,
                             avail == 0 ? LP_RNATIVE_UNAVAILABLE : LP_RNATIVE_NOLIB, 0ULL, 0);
    lp_remote_layout L;
    uint64_t version = 0;
    int rc;
    if (layout_obj == Py_None) {
        rc = lp_remote_layout_from_debug((pid_t)pid, runtime, &L, &version);
        if (rc != LP_REMOTE_OK)
            return Py_BuildValue("(iiK[][]i)", rc, LP_RNATIVE_OK, (unsigned long long)version, 0);
    } else {
        if (layout_from_dict(layout_obj, &L) < 0) return NULL;
        version = L.version_hex;
    }
    lp_rnative_set *set = calloc(1, sizeof *set);
    if (set == NULL) return PyErr_NoMemory();
    /* no Python code runs until dump_stopped has released every thread: a
     * Ctrl-C meanwhile is only a flag, seen after the release */
    int nrc = lp_rnative_stop_all((pid_t)pid, set);
    if (nrc != LP_RNATIVE_OK) {
        free(set);
        return Py_BuildValue("(iiK[][]i)", LP_REMOTE_OK, nrc, (unsigned long long)version, 0);
    }
    int walk_rc = LP_REMOTE_OK;
    PyObject *got = dump_stopped(set, (pid_t)pid, runtime, &L, want_locals, &walk_rc);
    int more = set->more;
    free(set);
    if (got == NULL) return NULL;
    PyObject *r = Py_BuildValue("(iiKOOi)", walk_rc, LP_RNATIVE_OK, (unsigned long long)version,
                                PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1), more);
    Py_DECREF(got);
    return r;
}

/* remote_native_available() -> REMOTE_NATIVE_OK, _UNAVAILABLE (built
 * without libunwind-ptrace) or _NOLIB (its libraries do not load) */
static PyObject *py_remote_native_available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int a = lp_rnative_available();
    return PyLong_FromLong(a == 1 ? LP_RNATIVE_OK : a == 0 ? LP_RNATIVE_UNAVAILABLE : LP_RNATIVE_NOLIB);
}

/* native_merge(frames, truncated, entries, n_python, by_stack) ->
 * ([(kind, index)], mismatch): native_merge.h's rule; frames the native
 * frames as remote_dump_native gives them, innermost first ((ip, symbol or
 * None, offset, sp)), entries its [(index, shim)] of the Python entry
 * frames; by_stack: an eval call is the frame whose stack holds a shim
 * (3.14+), else the one named so (3.10-3.13). kind 0 native, 1 Python */
static PyObject *py_native_merge(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *frames, *entries;
    int truncated, npy, by_stack;
    if (!PyArg_ParseTuple(args, "O!pO!ip:native_merge", &PyList_Type, &frames, &truncated, &PyList_Type,
                          &entries, &npy, &by_stack))
        return NULL;
    Py_ssize_t nn = PyList_GET_SIZE(frames), ne = PyList_GET_SIZE(entries);
    if (nn > LP_RNATIVE_MAX_DEPTH || npy < 0 || npy > LP_REMOTE_MAX_DEPTH || ne > LP_REMOTE_MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "native_merge: too many frames");
        return NULL;
    }
    uint8_t is_eval[LP_RNATIVE_MAX_DEPTH] = {0}, entry[LP_REMOTE_MAX_DEPTH] = {0};
    uint64_t sp[LP_RNATIVE_MAX_DEPTH] = {0}, shims[LP_REMOTE_MAX_DEPTH] = {0};
    for (Py_ssize_t i = 0; i < nn; i++) {
        PyObject *name;
        unsigned long long ip, offset, at;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(frames, i), "KOKK:native frame", &ip, &name, &offset, &at))
            return NULL;
        sp[i] = at;
        if (!by_stack && name != Py_None) {
            const char *u = PyUnicode_AsUTF8(name);
            if (u == NULL) return NULL;
            is_eval[i] = (uint8_t)lp_nmerge_is_eval(u);
        }
    }
    for (Py_ssize_t i = 0; i < ne; i++) {
        long k;
        unsigned long long shim;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(entries, i), "lK:entry", &k, &shim)) return NULL;
        if (k >= 0 && k < npy) entry[k] = 1;
        shims[i] = shim;
    }
    if (by_stack) lp_nmerge_eval_by_stack(sp, (int)nn, shims, (int)ne, is_eval);
    enum { MAX_OUT = LP_RNATIVE_MAX_DEPTH + LP_REMOTE_MAX_DEPTH };
    lp_nmerge_item *out = malloc(MAX_OUT * sizeof *out);
    if (out == NULL) return PyErr_NoMemory();
    int mismatch = 0;
    int n = lp_nmerge(is_eval, (int)nn, truncated, entry, npy, out, MAX_OUT, &mismatch);
    PyObject *items = PyList_New(n);
    for (int i = 0; items != NULL && i < n; i++) {
        PyObject *t = Py_BuildValue("(ii)", out[i].kind, out[i].index);
        if (t == NULL) Py_CLEAR(items);
        else PyList_SET_ITEM(items, i, t);
    }
    free(out);
    if (items == NULL) return NULL;
    PyObject *r = Py_BuildValue("(Oi)", items, mismatch);
    Py_DECREF(items);
    return r;
}

/* remote_read(pid, addr, n) -> (status, bytes or None): n <= 4096 bytes of the
 * target's memory (a version word, a cookie) */
static PyObject *py_remote_read(PyObject *self, PyObject *args) {
    (void)self;
    int pid;
    unsigned long long addr;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "iKn:remote_read", &pid, &addr, &n)) return NULL;
    if (n < 0 || n > 4096) {
        PyErr_SetString(PyExc_ValueError, "remote_read: 0 to 4096 bytes");
        return NULL;
    }
    char buf[4096];
    int rc = lp_remote_read((pid_t)pid, addr, buf, (size_t)n);
    if (rc != LP_REMOTE_OK) return Py_BuildValue("(iO)", rc, Py_None);
    PyObject *data = PyBytes_FromStringAndSize(buf, n);
    if (data == NULL) return NULL;
    PyObject *r = Py_BuildValue("(iO)", rc, data);
    Py_DECREF(data);
    return r;
}

static PyMethodDef remote_methods[] = {
    {"remote_read", py_remote_read, METH_VARARGS,
     "remote_read(pid, addr, n) -> (status, bytes or None): another process's memory."},
    {"remote_layout", py_remote_layout, METH_NOARGS,
     "This interpreter's layout for lprof dump (3.10-3.12), or None (3.13+: debug offsets)."},
    {"remote_dump", py_remote_dump, METH_VARARGS,
     "remote_dump(pid, runtime_addr, layout or None, locals=False) -> (status, version_hex, "
     "threads)."},
    {"remote_dump_native", py_remote_dump_native, METH_VARARGS,
     "remote_dump_native(pid, runtime_addr, layout or None, locals=False) -> (status, native_status, "
     "version_hex, threads, natives, threads_left_out)."},
    {"remote_native_available", py_remote_native_available, METH_NOARGS,
     "remote_native_available() -> REMOTE_NATIVE_OK, _UNAVAILABLE or _NOLIB (lprof dump --native)."},
    {"native_merge", py_native_merge, METH_VARARGS,
     "native_merge(frames, truncated, entries, n_python, by_stack) -> ([(kind, index)], mismatch)."},
    {NULL, NULL, 0, NULL},
};

int lp_pyremote_init(PyObject *module) {
    static const struct {
        const char *name;
        int value;
    } consts[] = {
        {"REMOTE_OK", LP_REMOTE_OK},
        {"REMOTE_NOPROC", LP_REMOTE_NOPROC},
        {"REMOTE_NOPERM", LP_REMOTE_NOPERM},
        {"REMOTE_BADREAD", LP_REMOTE_BADREAD},
        {"REMOTE_NODEBUG", LP_REMOTE_NODEBUG},
        {"REMOTE_VERSION", LP_REMOTE_VERSION},
        {"REMOTE_LAYOUT", LP_REMOTE_LAYOUT},
        {"REMOTE_STOPPED", LP_REMOTE_STOPPED},
        {"REMOTE_FREE_THREADED", LP_REMOTE_FREE_THREADED},
        {"REMOTE_NATIVE_OK", LP_RNATIVE_OK},
        {"REMOTE_NATIVE_NOPROC", LP_RNATIVE_NOPROC},
        {"REMOTE_NATIVE_NOPERM", LP_RNATIVE_NOPERM},
        {"REMOTE_NATIVE_UNAVAILABLE", LP_RNATIVE_UNAVAILABLE},
        {"REMOTE_NATIVE_FAILED", LP_RNATIVE_FAILED},
        {"REMOTE_NATIVE_GONE", LP_RNATIVE_GONE},
        {"REMOTE_NATIVE_NOLIB", LP_RNATIVE_NOLIB},
        {"REMOTE_NATIVE_NOSTOP", LP_RNATIVE_NOSTOP},
    };
    for (size_t i = 0; i < LP_ARRAY_LEN(consts); i++)
        if (PyModule_AddIntConstant(module, consts[i].name, consts[i].value) < 0) return -1;
    return PyModule_AddFunctions(module, remote_methods);
}
