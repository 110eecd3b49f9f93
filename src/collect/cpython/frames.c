/* collect: per-version Python frame walking (see frames.h). The ONLY file
 * with PY_VERSION_HEX frame-layout conditions; layouts come from each
 * version's own (internal) headers, table in docs/design-sampler.md.
 * Runs in signal handlers and allocator hooks: no allocation, no Python API,
 * no locks; every pointer is read through rd() so that the wall sampler can
 * read a detached thread with a fault-safe reader. */
#define _GNU_SOURCE 1
#include <Python.h>
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif
#define Py_BUILD_CORE 1
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 moved the frame struct out of pycore_frame.h; pycore_interpframe.h
 * brings it with the _PyStackRef tags (Py_TAG_BITS) of this version */
#pragma GCC diagnostic push /* its inline helpers leave parameters unused */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "internal/pycore_interpframe.h"
#include "internal/pycore_tstate.h" /* _PyThreadStateImpl.asyncio_running_task */
#pragma GCC diagnostic pop
#elif PY_VERSION_HEX >= 0x030B0000
#undef _PyGC_FINALIZED /* pycore headers redefine it on 3.11 (-Werror) */
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX < 0x030C0000
#include "internal/pycore_runtime.h" /* _PyRuntime.gilstate (GIL holder) */
#endif
#undef Py_BUILD_CORE

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collect/cpython/frames.h"
#include "collect/code_memo.h"

#ifdef Py_GIL_DISABLED
#error "lprof: free-threaded CPython is not supported yet (see docs/design.md, free-threading)"
#endif

int lp_pyframes_safe_read(void *dst, const void *src, size_t n) {
    if (src == NULL) return -1;
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)src, n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

static inline int rd(lp_reader r, void *dst, const void *src, size_t n) {
    if (src == NULL) return -1;
    if (r == NULL) {
        memcpy(dst, src, n);
        return 0;
    }
    return r(dst, src, n);
}

#define RD(r, dst, src) rd((r), &(dst), (src), sizeof(dst))

/* The address of a field of a struct that may not be there: a torn or
 * stale pointer from another thread. `&p->field` on such a pointer is
 * undefined (UBSan reports it in the wall sampler's detached reads), so the
 * address is computed as an integer and only ever read through rd(). */
#define AT(ptr, type, field) ((const void *)((uintptr_t)(ptr) + offsetof(type, field)))

/* A signal can land while the interrupted thread is pushing or popping its
 * top frame: on 3.11/3.12, tstate->cframe points to a C-stack struct whose
 * current_frame is still uninitialised for a few instructions (a crash seen
 * under torch), and a freshly linked frame's fields may not all be stored
 * yet. With lp_pyframes_interrupted_read the walk reads fault-safely (one
 * process_vm_readv each) until it has seen TRUSTED_RUN consecutive frames
 * that validate; deeper frames are established and are read directly. A
 * frame that fails validation before that ends the walk: its pointers cannot
 * be trusted. Allocator hooks run at call boundaries and read directly. */
#define TRUSTED_RUN 2

/* A real chain has few frames in a row that give no Python frame: a C entry
 * shim, the frame below it being set up, 3.14's base frame. A longer run is
 * a torn chain read from a thread that moved (a shim's stale C-stack memory
 * pointing at itself): the walk ends there, where the 100000-hop bound alone
 * let the wall thread spend a second of process_vm_readv calls on one read. */
#define MAX_SKIPPED_RUN 8

typedef struct {
    lp_reader caller; /* NULL: direct reads allowed once trusted */
    int valid_run;    /* consecutive validated frames so far */
} walk_reads;

int lp_pyframes_interrupted_read(void *dst, const void *src, size_t n) {
    return lp_pyframes_safe_read(dst, src, n);
}

static inline lp_reader hop_reader(const walk_reads *w) {
    if (w->caller != lp_pyframes_interrupted_read) return w->caller;
    return w->valid_run >= TRUSTED_RUN ? NULL : lp_pyframes_safe_read;
}

int lp_pyframes_is_code(const void *addr, lp_reader reader) {
    PyTypeObject *type = NULL;
    if (RD(reader, type, AT(addr, PyObject, ob_type)) < 0) return 0;
    return type == &PyCode_Type;
}

uint64_t lp_pyframes_thread_key(const void *tstate) {
    return (uint64_t)((const PyThreadState *)tstate)->thread_id;
}

long lp_pyframes_native_tid(const void *tstate) {
#if PY_VERSION_HEX >= 0x030B0000
    return (long)((const PyThreadState *)tstate)->native_thread_id;
#else
    (void)tstate;
    return 0;
#endif
}

int lp_pyframes_holds_gil(const void *tstate, lp_reader reader) {
#if PY_VERSION_HEX >= 0x030E0000
    /* 3.14 moved the flag out of _status into its own int */
    int holds = 0;
    if (RD(reader, holds, AT(tstate, PyThreadState, holds_gil)) < 0) return -1;
    return holds != 0;
#elif PY_VERSION_HEX >= 0x030C0000
    __typeof__(((PyThreadState *)0)->_status) st;
    if (RD(reader, st, &((const PyThreadState *)tstate)->_status) < 0) return -1;
#if PY_VERSION_HEX >= 0x030D0000
    return st.holds_gil;
#else
    return st.active;
#endif
#else
    (void)reader; /* a global of ours: always readable */
    uintptr_t holder = __atomic_load_n(&_PyRuntime.gilstate.tstate_current._value, __ATOMIC_RELAXED);
    return holder == (uintptr_t)tstate;
#endif
}

uintptr_t lp_pyframes_running_task(const void *tstate, lp_reader reader) {
#if PY_VERSION_HEX >= 0x030E0000
    /* 3.14's C asyncio sets it as a task steps (its enter_task) */
    PyObject *task = NULL;
    if (RD(reader, task, AT(tstate, _PyThreadStateImpl, asyncio_running_task)) < 0) return 0;
    return (uintptr_t)task;
#else
    (void)tstate;
    (void)reader;
    return 0;
#endif
}

const void *lp_pyframes_top(const void *tstate, lp_reader reader) {
    const PyThreadState *ts = tstate;
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *f = NULL;
    if (RD(reader, f, &ts->current_frame) < 0) return NULL;
    return f;
#elif PY_VERSION_HEX >= 0x030B0000
    _PyCFrame *cf = NULL;
    _PyInterpreterFrame *f = NULL;
    if (RD(reader, cf, &ts->cframe) < 0 || RD(reader, f, AT(cf, _PyCFrame, current_frame)) < 0) return NULL;
    return f;
#else
    PyFrameObject *f = NULL;
    if (RD(reader, f, &ts->frame) < 0) return NULL;
    return f;
#endif
}

int lp_pyframes_stack_ranges(const void *tstate, lp_reader reader, uintptr_t *lo, uintptr_t *hi, int max) {
#if PY_VERSION_HEX >= 0x030B0000
    const PyThreadState *ts = tstate;
    _PyStackChunk *chunk = NULL;
    PyObject **top = NULL;
    if (RD(reader, chunk, &ts->datastack_chunk) < 0 || RD(reader, top, &ts->datastack_top) < 0) return 0;
    int n = 0;
    while (chunk != NULL && n < max) {
        _PyStackChunk head;
        if (rd(reader, &head, chunk, offsetof(_PyStackChunk, data)) < 0) break;
        uintptr_t end = (uintptr_t)(n == 0 ? (void *)top : (void *)&chunk->data[head.top]);
        if (end <= (uintptr_t)chunk || end > (uintptr_t)chunk + head.size) break; /* torn */
        lo[n] = (uintptr_t)chunk;
        hi[n] = end;
        n++;
        chunk = head.previous;
    }
    return n;
#else
    (void)tstate;
    (void)reader;
    (void)lo;
    (void)hi;
    (void)max;
    return 0;
#endif
}

int lp_pyframes_c_stack_frames(const void *tstate, uintptr_t *out, int max) {
    int n = 0;
#if PY_VERSION_HEX >= 0x030C0000
    const _PyInterpreterFrame *f = lp_pyframes_top(tstate, NULL);
    for (int hops = 0; f != NULL && n < max && hops < 100000; hops++, f = f->previous) {
#if PY_VERSION_HEX >= 0x030E0000
        if (f->owner >= FRAME_OWNED_BY_INTERPRETER) out[n++] = (uintptr_t)f;
#else
        if (f->owner == FRAME_OWNED_BY_CSTACK) out[n++] = (uintptr_t)f;
#endif
    }
#else
    (void)tstate;
    (void)out;
    (void)max;
#endif
    return n;
}

#if PY_VERSION_HEX >= 0x030B0000
/* 3.11+: _PyInterpreterFrame chain. Copy the fixed part of the frame once. */
static int capture(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader,
                   lp_code_memo *memo) {
    const _PyInterpreterFrame *f = lp_pyframes_top(tstate, reader);
    walk_reads w = {reader, 0};
    int n = 0, hops = 0, skipped = 0;
    *truncated = 0;
    /* hops bounds the walk even through a torn (cyclic) chain */
    for (; f != NULL && hops < 100000 && skipped <= MAX_SKIPPED_RUN; hops++) {
        _PyInterpreterFrame fr;
        lp_reader r = hop_reader(&w);
        if (rd(r, &fr, f, offsetof(_PyInterpreterFrame, localsplus)) < 0) break;
#if PY_VERSION_HEX >= 0x030E0000
        /* a tagged _PyStackRef: the low Py_TAG_BITS say how it is owned
         * (deferred, borrowed), the rest is the object's address */
        PyCodeObject *co = (PyCodeObject *)(fr.f_executable.bits & ~(uintptr_t)Py_TAG_BITS);
        _Py_CODEUNIT *instr = fr.instr_ptr;
#elif PY_VERSION_HEX >= 0x030D0000
        PyCodeObject *co = (PyCodeObject *)fr.f_executable;
        _Py_CODEUNIT *instr = fr.instr_ptr;
#else
        PyCodeObject *co = fr.f_code;
        _Py_CODEUNIT *instr = fr.prev_instr;
#endif
        const _PyInterpreterFrame *next = fr.previous;
#if PY_VERSION_HEX >= 0x030E0000
        /* 3.14+: the eval loop's entry frame and the thread's base frame are
         * owned by the interpreter (3.14 also kept FRAME_OWNED_BY_CSTACK,
         * 3.15 dropped it): every owner from there up is a C entry shim */
        if (fr.owner >= FRAME_OWNED_BY_INTERPRETER) {
            if (n > 0) out[n - 1].flags |= LP_RAWFRAME_ENTRY;
            f = next;
            skipped++;
            continue;
        }
        const uint32_t entry = 0;
#elif PY_VERSION_HEX >= 0x030C0000
        if (fr.owner == FRAME_OWNED_BY_CSTACK) { /* C entry shim: the frame below it was entered from C */
            if (n > 0) out[n - 1].flags |= LP_RAWFRAME_ENTRY;
            f = next;
            skipped++;
            continue;
        }
        const uint32_t entry = 0;
#else
        /* read the bool as a byte: a frame copied while being pushed may hold
         * any value there, and loading a bool that is not 0/1 is undefined */
        unsigned char is_entry_byte;
        memcpy(&is_entry_byte, (const char *)&fr + offsetof(_PyInterpreterFrame, is_entry), 1);
        const uint32_t entry = is_entry_byte ? LP_RAWFRAME_ENTRY : 0;
#endif
        int32_t first_traceable = 0;
        if (!(memo && lp_code_memo_get(memo, co, &first_traceable))) {
            if (!lp_pyframes_is_code(co, r)) {
                if (w.valid_run < TRUSTED_RUN) break; /* torn top of stack */
                f = next;
                skipped++;
                continue;
            }
            int ft = 0;
            if (RD(r, ft, AT(co, PyCodeObject, _co_firsttraceable)) < 0) break;
            first_traceable = ft;
            if (memo) lp_code_memo_put(memo, co, first_traceable);
        }
        w.valid_run++;
        _Py_CODEUNIT *code_start = (_Py_CODEUNIT *)AT(co, PyCodeObject, co_code_adaptive);
        if (fr.owner != FRAME_OWNED_BY_GENERATOR && instr < code_start + first_traceable) {
            /* incomplete: being set up, not running its code yet; its entry
             * mark moves to the frame it runs above (the eval call is real) */
            if (entry && n > 0) out[n - 1].flags |= LP_RAWFRAME_ENTRY;
            f = next;
            skipped++;
            continue;
        }
        if (n == max) {
            *truncated = 1;
            break;
        }
        out[n].code = co;
        out[n].offset = (int32_t)((instr - code_start) * (ptrdiff_t)sizeof(_Py_CODEUNIT));
        out[n].flags = entry;
        n++;
        skipped = 0;
        f = next;
    }
    if (n > 0 && !*truncated) out[n - 1].flags |= LP_RAWFRAME_ENTRY; /* the outermost frame */
    return n;
}
#else
/* 3.10: PyFrameObject chain through f_back. */
static int capture(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader,
                   lp_code_memo *memo) {
    const PyFrameObject *f = lp_pyframes_top(tstate, reader);
    walk_reads w = {reader, 0};
    int n = 0, hops = 0, skipped = 0;
    *truncated = 0;
    for (; f != NULL && hops < 100000 && skipped <= MAX_SKIPPED_RUN; hops++) {
        PyFrameObject fr;
        lp_reader r = hop_reader(&w);
        if (rd(r, &fr, f, offsetof(PyFrameObject, f_localsplus)) < 0) break;
        int32_t known = 0;
        int valid = (memo && lp_code_memo_get(memo, fr.f_code, &known)) || lp_pyframes_is_code(fr.f_code, r);
        if (valid && memo) lp_code_memo_put(memo, fr.f_code, 0);
        if (!valid && w.valid_run < TRUSTED_RUN) break; /* torn top of stack */
        if (valid) {
            w.valid_run++;
            if (n == max) {
                *truncated = 1;
                break;
            }
            out[n].code = fr.f_code;
            out[n].flags = LP_RAWFRAME_ENTRY; /* one eval-loop call per frame before 3.11 */
            out[n].offset = fr.f_lasti < 0 ? -1 : fr.f_lasti * 2; /* code units -> bytes */
            n++;
            skipped = 0;
        } else {
            skipped++;
        }
        f = fr.f_back;
    }
    return n;
}
#endif

int lp_pyframes_capture(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader) {
    return capture(tstate, out, max, truncated, reader, NULL);
}

int lp_pyframes_capture_memo(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader,
                             void *memo) {
    return capture(tstate, out, max, truncated, reader, memo);
}
