/* aggregate: code registry and frame resolution (see resolve.h). Runs with
 * the GIL; may allocate. Frames are (file, qualname, first_line, line)
 * tuples; frame ids index `frames`. node_frame[] caches each stack-table
 * node's frame id, so every node is resolved once (PyCode_Addr2Line).
 * Every collector's stacks (sampler, memory hooks) are resolved here. */
#include "aggregate/cpython/resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/agg.h"
#include "aggregate/symbols.h"
#include "common/hash.h"

#define NO_FRAME LP_RESOLVE_NO_FRAME

static struct {
    PyObject **codes; /* open-addressing set of strong references */
    size_t codes_cap, codes_len;
    uint32_t scanned;     /* nodes below this id have a registered code */
    uint32_t *node_frame; /* node id -> frame id, NO_FRAME = unresolved */
    size_t node_frame_cap;
    PyObject *frames;    /* list of frame tuples */
    PyObject *frame_ids; /* dict frame tuple -> int */
    int hook_installed;
    int in_hook;
} R;

static int codes_contains(PyObject *co) {
    if (!R.codes_cap) return 0;
    for (size_t i = (size_t)lp_hash_ptr(co) & (R.codes_cap - 1);; i = (i + 1) & (R.codes_cap - 1)) {
        if (R.codes[i] == co) return 1;
        if (R.codes[i] == NULL) return 0;
    }
}

static int codes_insert(PyObject *co) {
    if ((R.codes_len + 1) * 2 > R.codes_cap) {
        size_t cap = R.codes_cap ? R.codes_cap * 2 : 1024;
        PyObject **n = calloc(cap, sizeof *n);
        if (!n) return -1;
        for (size_t k = 0; k < R.codes_cap; k++) {
            PyObject *o = R.codes[k];
            if (!o) continue;
            size_t i = (size_t)lp_hash_ptr(o) & (cap - 1);
            while (n[i]) i = (i + 1) & (cap - 1);
            n[i] = o;
        }
        free(R.codes);
        R.codes = n;
        R.codes_cap = cap;
    }
    size_t i = (size_t)lp_hash_ptr(co) & (R.codes_cap - 1);
    while (R.codes[i]) i = (i + 1) & (R.codes_cap - 1);
    Py_INCREF(co);
    R.codes[i] = co;
    R.codes_len++;
    return 0;
}

static int ensure_node_frame(uint32_t count) {
    if (count <= R.node_frame_cap) return 0;
    size_t cap = R.node_frame_cap ? R.node_frame_cap : 4096;
    while (cap < count) cap *= 2;
    uint32_t *n = realloc(R.node_frame, cap * sizeof *n);
    if (!n) return -1;
    memset(n + R.node_frame_cap, 0xff, (cap - R.node_frame_cap) * sizeof *n);
    R.node_frame = n;
    R.node_frame_cap = cap;
    return 0;
}

static int ensure_frames(void) {
    if (R.frames) return 0;
    R.frames = PyList_New(0);
    R.frame_ids = PyDict_New();
    return R.frames && R.frame_ids ? 0 : -1;
}

/* frame tuple -> id (new or existing); NO_FRAME on error */
static uint32_t intern_frame(PyObject *file, PyObject *func, int first, int line) {
    if (ensure_frames() < 0) return NO_FRAME;
    PyObject *key = Py_BuildValue("(OOii)", file, func, first, line);
    if (!key) return NO_FRAME;
    PyObject *id = PyDict_GetItemWithError(R.frame_ids, key);
    uint32_t out = NO_FRAME;
    if (id) {
        out = (uint32_t)PyLong_AsUnsignedLong(id);
    } else if (!PyErr_Occurred()) {
        Py_ssize_t n = PyList_GET_SIZE(R.frames);
        PyObject *idx = PyLong_FromSsize_t(n);
        if (idx && PyDict_SetItem(R.frame_ids, key, idx) == 0 && PyList_Append(R.frames, key) == 0)
            out = (uint32_t)n;
        Py_XDECREF(idx);
    }
    Py_DECREF(key);
    return out;
}

static uint32_t marker_frame(const char *name) {
    PyObject *file = PyUnicode_FromString("<lprof>"), *func = PyUnicode_FromString(name);
    uint32_t id = file && func ? intern_frame(file, func, 0, 0) : NO_FRAME;
    Py_XDECREF(file);
    Py_XDECREF(func);
    return id;
}

/* The line of the instruction at offset; for an instruction without one
 * (a loop's closing jump, exception clean-up, compiler-made code), the line
 * of the nearest instruction before it that has one, not the `def` line
 * (an earlier resolver's fallback, reported to give the def line 2-6% of a
 * plain loop). Resolution runs once per stack node: the scan is off the hot
 * path. */
static int offset_line(PyCodeObject *co, int offset) {
    if (offset < 0) return co->co_firstlineno;
    for (int o = offset; o >= 0; o -= 2) { /* a code unit: 2 bytes on 3.10-3.15 */
        int line = PyCode_Addr2Line(co, o);
        if (line >= 0) return line;
    }
    return co->co_firstlineno;
}

static uint32_t code_frame(PyCodeObject *co, int offset) {
    int line = offset_line(co, offset);
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *func = co->co_qualname;
#else
    PyObject *func = co->co_name;
#endif
    return intern_frame(co->co_filename, func, co->co_firstlineno, line);
}

/* A frame without source lines: (file, name, 0, 0); `name` is malloc'd
 * (NULL: out of memory) and freed here. */
static uint32_t text_frame(PyObject *file, char *name) {
    if (!name) {
        Py_XDECREF(file);
        PyErr_NoMemory();
        return NO_FRAME;
    }
    PyObject *func = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");
    free(name);
    uint32_t id = file && func ? intern_frame(file, func, 0, 0) : NO_FRAME;
    Py_XDECREF(file);
    Py_XDECREF(func);
    return id;
}

/* A native frame (lprof --native): (object path, function, 0, 0); the
 * function demangled, or "object+0xoffset" outside any known function. */
static uint32_t native_frame(uintptr_t addr) {
    lp_symbol sym;
    lp_symbols_lookup(addr, &sym);
    char *name = NULL;
    if (sym.name) {
        name = lp_symbols_demangle(sym.name);
    } else {
        const char *base = sym.object ? strrchr(sym.object, '/') : NULL;
        base = base ? base + 1 : (sym.object ? sym.object : "[unknown]");
        size_t len = strlen(base) + 24;
        name = malloc(len);
        if (name)
            snprintf(name, len, "%s+0x%llx", base,
                     (unsigned long long)(sym.object ? sym.object_offset : addr));
    }
    return text_frame(PyUnicode_DecodeFSDefault(sym.object ? sym.object : "[unknown]"), name);
}

/* GPU work (LP_OFFSET_GPU_OP): ("<gpu>", its name demangled, 0, 0). */
static uint32_t gpu_frame(const char *name) {
    return text_frame(PyUnicode_FromString("<gpu>"), lp_symbols_demangle(name ? name : "[unknown]"));
}

/* Resolves one node (not a thread root). NO_FRAME on error. */
static uint32_t resolve_node(uint32_t id, lp_stacknode n) {
    if (R.node_frame[id] != NO_FRAME) return R.node_frame[id];
    uint32_t f;
    if (n.offset == LP_OFFSET_TRUNCATED) f = marker_frame("[truncated]");
    else if (n.offset == LP_OFFSET_OVERFLOW) f = marker_frame("[other]");
    else if (n.offset == LP_OFFSET_NATIVE) f = native_frame((uintptr_t)n.code);
    else if (n.offset == LP_OFFSET_GPU_OP) f = gpu_frame(n.code);
    else if (n.offset == LP_OFFSET_GPU_ORPHAN) f = marker_frame("[GPU work from a thread without Python]");
    else if (n.offset == LP_OFFSET_OTHER_THREADS) f = marker_frame("[threads without Python]");
    else if (n.offset == LP_OFFSET_GPU_BACKWARD) f = marker_frame("[backward]");
    else if (n.offset == LP_OFFSET_GPU_GRAPH) f = marker_frame("[graph replay]");
    else if (n.code && PyCode_Check((PyObject *)n.code)) f = code_frame(n.code, n.offset);
    else f = marker_frame("[unknown]");
    R.node_frame[id] = f;
    return f;
}

int lp_resolve_needs_scan(void) {
    lp_stacktab *t = lp_agg_stacks();
    return t && lp_stacktab_node_count(t) > R.scanned;
}

void lp_resolve_scan(PyObject *dying) {
    lp_stacktab *t = lp_agg_stacks();
    if (!t) return;
    uint32_t count = lp_stacktab_node_count(t);
    if (ensure_node_frame(count) < 0) return;
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    uint32_t id = R.scanned;
    for (; id < count; id++) {
        lp_stacknode n = lp_stacktab_node(t, id);
        if (!n.valid) break; /* being published by another thread: next time */
        /* only Python frames hold a code object */
        if (n.code == NULL || n.offset == LP_OFFSET_THREAD_ROOT || n.offset == LP_OFFSET_NATIVE ||
            n.offset == LP_OFFSET_GPU_OP)
            continue;
        PyObject *co = n.code;
        if (co == dying) {
            resolve_node(id, n); /* resolve now, then nobody may match it again */
            lp_stacktab_retire(t, id);
        } else if (!codes_contains(co) && PyCode_Check(co)) {
            if (codes_insert(co) < 0) break;
        }
    }
    R.scanned = id;
    /* resolve the dying code's nodes that were scanned earlier: none can
     * exist, as a scanned code holds a strong reference */
    PyErr_Clear();
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

static void on_code_death(PyObject *co) {
    lp_agg_code_dying(co); /* a read from outside in progress may name it: wait for it */
    if (R.in_hook) return;
    if (!lp_resolve_needs_scan() && !lp_agg_has_pending()) return;
    R.in_hook = 1;
    lp_agg_drain(); /* the sampler's rings (registered by its binding) */
    lp_resolve_scan(co);
    R.in_hook = 0;
}

#if PY_VERSION_HEX >= 0x030C0000
static int code_watcher(PyCodeEvent event, PyCodeObject *co) {
    if (event == PY_CODE_EVENT_DESTROY) on_code_death((PyObject *)co);
    return 0;
}
#else
static destructor original_code_dealloc;
static void code_dealloc_wrapper(PyObject *co) {
    on_code_death(co);
    original_code_dealloc(co);
}
#endif

int lp_resolve_install_hook(void) {
    if (R.hook_installed) return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyCode_AddWatcher(code_watcher) < 0) return -1;
#else
    original_code_dealloc = PyCode_Type.tp_dealloc;
    PyCode_Type.tp_dealloc = code_dealloc_wrapper;
#endif
    R.hook_installed = 1;
    return 0;
}

uint32_t lp_resolve_node_frame(uint32_t id) {
    lp_stacktab *t = lp_agg_stacks();
    if (!t || ensure_frames() < 0 || ensure_node_frame(id + 1) < 0) return NO_FRAME;
    lp_stacknode n = lp_stacktab_node(t, id);
    if (!n.valid || n.offset == LP_OFFSET_THREAD_ROOT) return NO_FRAME;
    return resolve_node(id, n);
}

uint32_t lp_resolve_marker(const char *name) { return ensure_frames() < 0 ? NO_FRAME : marker_frame(name); }

PyObject *lp_resolve_frames(void) { return ensure_frames() < 0 ? NULL : R.frames; }

void lp_resolve_reset(void) {
    lp_agg_reset();
    for (size_t i = 0; i < R.codes_cap; i++) Py_XDECREF(R.codes[i]);
    free(R.codes);
    R.codes = NULL;
    R.codes_cap = R.codes_len = 0;
    R.scanned = 0;
    free(R.node_frame);
    R.node_frame = NULL;
    R.node_frame_cap = 0;
    Py_CLEAR(R.frames);
    Py_CLEAR(R.frame_ids);
    lp_symbols_reset();
}
