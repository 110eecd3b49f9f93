/* Test probe for the frame walker (src/collect/cpython/frames.c, compiled
 * into this file for its per-version internal types): hands it a made-up
 * thread whose chain is torn as a detached read can find it, and counts the
 * reads the walk makes. Built and loaded by tests/python/test_frame_walk.py
 * with the running interpreter's headers. */
#include "../../src/collect/cpython/frames.c"
#include "../../src/collect/code_memo.c" /* the walker's memo for outside reads */

static long probe_reads;

static int counting_read(void *dst, const void *src, size_t n) {
    probe_reads++;
    if (src == NULL) return -1;
    memcpy(dst, src, n);
    return 0;
}

#define PROBE_FRAMES 3

#if PY_VERSION_HEX >= 0x030B0000
typedef _PyInterpreterFrame probe_frame;
#else
typedef PyFrameObject probe_frame;
#endif

static probe_frame frames[PROBE_FRAMES];
static PyThreadState ts;
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
static _PyCFrame cframe;
#endif

/* Frame i runs `code` (NULL: it holds an object that is no code), its
 * caller is frame `caller` (-1: none). */
static void make_frame(int i, PyObject *code, int caller) {
    probe_frame *f = &frames[i];
    memset(f, 0, sizeof *f);
    PyObject *held = code ? code : Py_None;
#if PY_VERSION_HEX >= 0x030B0000
    f->previous = caller >= 0 ? &frames[caller] : NULL;
    f->owner = FRAME_OWNED_BY_THREAD;
    _Py_CODEUNIT *start = (_Py_CODEUNIT *)AT(held, PyCodeObject, co_code_adaptive);
    int first = code ? ((PyCodeObject *)code)->_co_firsttraceable : 0;
#if PY_VERSION_HEX >= 0x030E0000
    f->f_executable.bits = (uintptr_t)held;
    f->instr_ptr = start + first;
#elif PY_VERSION_HEX >= 0x030D0000
    f->f_executable = held;
    f->instr_ptr = start + first;
#else
    f->f_code = (PyCodeObject *)held;
    f->prev_instr = start + first;
#endif
#else
    f->f_back = caller >= 0 ? &frames[caller] : NULL;
    f->f_code = (PyCodeObject *)held;
    f->f_lasti = 0;
#endif
}

static void make_thread(void) {
    memset(&ts, 0, sizeof ts);
#if PY_VERSION_HEX >= 0x030D0000
    ts.current_frame = &frames[0];
#elif PY_VERSION_HEX >= 0x030B0000
    memset(&cframe, 0, sizeof cframe);
    cframe.current_frame = &frames[0];
    ts.cframe = &cframe;
#else
    ts.frame = &frames[0];
#endif
}

/* The walk of the made-up thread: the frames it keeps; *reads: the reads
 * it made. */
static int walk(long *reads) {
    make_thread();
    lp_rawframe out[64];
    int truncated = 0;
    probe_reads = 0;
    int n = lp_pyframes_capture(&ts, out, 64, &truncated, counting_read);
    *reads = probe_reads;
    return n;
}

/* Two Python frames, then a frame holding no code whose caller is itself:
 * stale memory read mid-change. */
__attribute__((visibility("default"))) int probe_torn_chain(PyObject *code, long *reads) {
    make_frame(0, code, 1);
    make_frame(1, code, 2);
    make_frame(2, NULL, 2);
    return walk(reads);
}

/* The same two Python frames over a sound end: the walk keeps both. */
__attribute__((visibility("default"))) int probe_sound_chain(PyObject *code, long *reads) {
    make_frame(0, code, 1);
    make_frame(1, code, -1);
    return walk(reads);
}
