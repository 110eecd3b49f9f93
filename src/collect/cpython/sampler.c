/* binding: the sampler's Python functions in lprof._lprof, the interpreter
 * side it is started with (frame walker, text ranges, GIL release), plus the
 * drain (rings -> stack table, GIL held), which it registers with aggregate
 * (lp_agg_set_source). Holds no sampling logic: see collect/sampler.c
 * (sampling), collect/charge.c (which column a sample is charged to),
 * agg.c/stacktab.c (aggregate), aggregate/cpython/resolve.c (code registry,
 * frames). Used by python/lprof/collect/sampling.py. */
#define _GNU_SOURCE 1
#include "cpython/module.h"

#include <opcode.h>

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aggregate/agg.h"
#include "aggregate/splice.h"
#include "aggregate/symbols.h"
#include "aggregate/timeline.h"
#include "collect/charge.h"
#include "collect/outside_read.h"
#include "collect/cpython/sampler.h"
#include "collect/cpython/frames.h"
#include "aggregate/cpython/resolve.h"
#include "collect/eh_frames.h"
#include "collect/native_unwind.h"
#include "collect/other_threads.h"
#include "collect/perf_clock.h"
#include "collect/sampler.h"
#include "collect/task_ids.h"
#include "cpython/pending_call.h"

static lp_sampler_config config;
static uint64_t threads_unsampled; /* started while sampling, never registered */
/* The opcodes that call a function, from the headers of the interpreter
 * this was built for: not from the opcode module, which a process attached
 * while it imports opcode (a spawned worker starting) has only partly
 * initialised (lprof left that worker out). co_code holds base opcodes;
 * the specialised CALL_* forms never appear there. */
static const int call_opcode_list[] = {
#ifdef CALL
    CALL,
#endif
#ifdef CALL_FUNCTION
    CALL_FUNCTION,
#endif
#ifdef CALL_FUNCTION_KW
    CALL_FUNCTION_KW,
#endif
#ifdef CALL_FUNCTION_EX
    CALL_FUNCTION_EX,
#endif
#ifdef CALL_METHOD
    CALL_METHOD,
#endif
#ifdef PRECALL
    PRECALL,
#endif
#ifdef CALL_KW
    CALL_KW,
#endif
#ifdef CALL_INTRINSIC_1
    CALL_INTRINSIC_1,
#endif
#ifdef CALL_INTRINSIC_2
    CALL_INTRINSIC_2,
#endif
#ifdef INSTRUMENTED_CALL
    INSTRUMENTED_CALL,
#endif
#ifdef INSTRUMENTED_CALL_KW
    INSTRUMENTED_CALL_KW,
#endif
#ifdef INSTRUMENTED_CALL_FUNCTION_EX
    INSTRUMENTED_CALL_FUNCTION_EX,
#endif
};
static unsigned char call_opcodes[256]; /* 1 for each of call_opcode_list */

static void set_call_opcodes(void) {
    for (size_t i = 0; i < LP_ARRAY_LEN(call_opcode_list); i++)
        if (call_opcode_list[i] >= 0 && call_opcode_list[i] < 256) call_opcodes[call_opcode_list[i]] = 1;
}

/* lprof --native: how the drain splices (aggregate/splice.h); 0 = off */
static int native_mode; /* 0 off, 1 on, 2 all frames */
static lp_splice_rules splice_rules;
static uint64_t native_mismatch;                 /* samples whose stacks disagreed (splice.h) */
static uintptr_t native_self_lo, native_self_hi; /* this extension's text */

/* The stack a sample is interned as: its Python frames, or with --native
 * the mixed stack, each native frame's address moved to its function's
 * start (one node per function, not per instruction). Drain only (GIL). */
static const lp_rawframe *sample_stack(const lp_sample *s, uint32_t *depth) {
    static lp_rawframe mixed[LP_SAMPLER_MAX_DEPTH + LP_NATIVE_MAX_DEPTH];
    *depth = s->depth;
    if (s->native_depth == 0) return s->frames;
    int mismatch = 0;
    int n = lp_splice(s->frames, (int)s->depth, lp_sample_native(s), (int)s->native_depth,
                      s->native_depth >= LP_NATIVE_MAX_DEPTH, &splice_rules, mixed, (int)LP_ARRAY_LEN(mixed),
                      &mismatch);
    native_mismatch += (uint64_t)mismatch;
    for (int i = 0; i < n; i++) {
        if (mixed[i].offset != LP_OFFSET_NATIVE) continue;
        lp_symbol sym;
        lp_symbols_lookup((uintptr_t)mixed[i].code, &sym);
        mixed[i].code = (void *)sym.start;
    }
    *depth = (uint32_t)n;
    return mixed;
}

/* Is the leaf frame stopped at a call instruction? Then a sample outside
 * the eval loop is inside the called C function: native time of this line
 * (collect/charge.h, Scalene's rule). co_code is the deoptimized bytecode
 * (cached by CPython on 3.11+). */
static int leaf_at_call(const lp_sample *s, void *arg) {
    (void)arg;
    if (s->depth == 0 || s->frames[0].offset < 0 || !lp_pyframes_is_code(s->frames[0].code, NULL)) return 0;
    PyObject *bytes = PyObject_GetAttrString((PyObject *)s->frames[0].code, "co_code");
    if (!bytes) {
        PyErr_Clear();
        return 0;
    }
    int hit = PyBytes_Check(bytes) && s->frames[0].offset < PyBytes_GET_SIZE(bytes) &&
              call_opcodes[(unsigned char)PyBytes_AS_STRING(bytes)[s->frames[0].offset]];
    Py_DECREF(bytes);
    return hit;
}

/* Per slot: the stack and CPU metric of the registration's latest sample,
 * for the CPU time at its thread's end (LP_SF_TAIL). A slot's samples are
 * drained in order and a slot is recycled only once drained, so a tail
 * without frames always follows a sample of its own registration. */
static struct {
    uint32_t stack;
    lp_metric metric;
    int set;
} slot_last[LP_SAMPLER_MAX_THREADS];

static void add_tail(const lp_sample *s, int slot) {
    int own = slot >= 0 && slot < LP_SAMPLER_MAX_THREADS;
    uint32_t id;
    lp_metric m;
    if (s->depth == 0) {
        if (!own || !slot_last[slot].set) return;
        id = slot_last[slot].stack;
        m = slot_last[slot].metric;
    } else { /* never sampled: charged where the thread ended */
        uint32_t depth;
        const lp_rawframe *stack = sample_stack(s, &depth);
        id = lp_agg_intern(s->thread_key, stack, depth, (s->flags & LP_SF_TRUNCATED) != 0);
        m = LP_M_CPU_PYTHON;
    }
    lp_agg_add(id, m, (int64_t)s->cpu_ns);
    if (own) slot_last[slot].set = 0; /* the registration is over */
}

/* The CPU time of threads the sampler does not sample (LP_SF_OTHER, from
 * collect/other_threads.c; the rule is stated there): native CPU under a
 * "[threads without Python]" marker, below the stack of the Python thread
 * read in native code, or, without one, below the stack charged so last
 * if that was within the window, else under thread 0 alone: on no line. */
static struct {
    uint32_t stack;
    uint64_t t_ns;
    int set;
} last_other;
static uint64_t other_charged_ns, other_uncharged_ns;

static void add_other(const lp_sample *s) {
    uint32_t base;
    int placed = 1;
    /* a GIL holder read by the clock counts only when it stands in a call */
    if (s->depth > 0 && (!(s->flags & LP_SF_GIL) || leaf_at_call(s, NULL))) {
        base = lp_agg_intern(s->thread_key, s->frames, s->depth, (s->flags & LP_SF_TRUNCATED) != 0);
        last_other.stack = base;
        last_other.t_ns = s->t_ns;
        last_other.set = 1;
    } else if (last_other.set && s->t_ns >= last_other.t_ns &&
               s->t_ns - last_other.t_ns <= LP_OTHERS_WINDOW_NS) {
        base = last_other.stack;
    } else {
        base = lp_agg_intern(0, NULL, 0, 0);
        placed = 0;
    }
    uint32_t id = lp_agg_extend(base, NULL, LP_OFFSET_OTHER_THREADS);
    lp_agg_add(id, LP_M_CPU_NATIVE, (int64_t)s->cpu_ns);
    if (placed) other_charged_ns += s->cpu_ns;
    else other_uncharged_ns += s->cpu_ns;
}

static void add_sample(const lp_sample *s, int slot, void *arg) {
    (void)arg;
    if (s->flags & LP_SF_TAIL) {
        add_tail(s, slot);
        return;
    }
    if (s->flags & LP_SF_OTHER) {
        add_other(s);
        return;
    }
    uint32_t depth;
    const lp_rawframe *stack = sample_stack(s, &depth);
    uint32_t id = lp_agg_intern(s->thread_key, stack, depth, (s->flags & LP_SF_TRUNCATED) != 0);
    lp_charge c; /* the rule: collect/charge.c */
    lp_charge_sample(s, config.period_ns, config.mode, leaf_at_call, NULL, &c);
    if (config.mode == LP_MODE_CPU && c.cpu != LP_M_COUNT && c.weight_ns > 0) /* never past its CPU clock */
        lp_charge_limit(&c, (int64_t)lp_sampler_take_cpu(slot, (uint64_t)c.weight_ns));
    for (int i = 0; i < c.n; i++) lp_agg_add(id, c.add[i].metric, c.add[i].value);
    if (s->flags & LP_SF_SPLIT) return; /* a kind of time, not time: no task, no timeline */
    if (s->task)                        /* the part the running asyncio task took (aggregate/task_split.h) */
        for (int i = 0; i < c.n; i++) lp_agg_add_task(id, s->task, c.add[i].metric, c.add[i].value);
    if (c.cpu != LP_M_COUNT && slot >= 0 && slot < LP_SAMPLER_MAX_THREADS) {
        slot_last[slot].stack = id;
        slot_last[slot].metric = c.cpu;
        slot_last[slot].set = 1;
    }
    int64_t w = c.weight_ns;
    lp_timeline *tl = lp_timeline_global();
    if (tl && s->t_ns) lp_timeline_add(tl, s->t_ns, s->thread_key, id, (uint64_t)w);
}

const lp_splice_rules *lp_pysampler_native_rules(uintptr_t *self_lo, uintptr_t *self_hi) {
    if (!__atomic_load_n(&native_mode, __ATOMIC_ACQUIRE)) return NULL;
    *self_lo = native_self_lo;
    *self_hi = native_self_hi;
    return &splice_rules;
}

/* The drain (rings -> stack table, GIL held); aggregate calls it through
 * the source registered at init (lp_agg_set_source), never this file. */
static uint64_t drain_rings(void) { return lp_sampler_drain(add_sample, NULL); }

/* Unregisters threads whose thread state left the interpreter. */
static void prune_dead_threads(void) {
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        uint64_t key;
        const void *ts = lp_sampler_slot_tstate(i, &key);
        if (!ts) continue;
        int alive = 0;
        for (PyThreadState *p = PyInterpreterState_ThreadHead(interp); p && !alive; p = PyThreadState_Next(p))
            alive = (const void *)p == ts;
        if (!alive) lp_sampler_unregister(key);
    }
}

static int draining; /* GIL held: a drain under way on some thread */

static PyObject *py_drain(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    draining++;
    if (lp_sampler_running()) {
        prune_dead_threads();
        lp_sampler_check_sigtrap(); /* once a drain period: a sigaction no wrapper saw */
    }
    uint64_t n = drain_rings();
    lp_resolve_scan(NULL);
    draining--;
    return PyLong_FromUnsignedLongLong(n);
}

/* A pending call (drain_behind): the drain on whichever thread runs pending
 * calls when it next runs Python, which the GIL's holder does at once (any
 * thread on 3.12+, the main one before). Never an error into the program. */
static int drain_pending(void *unused) {
    (void)unused;
    /* a pending call runs at any instruction: never inside a drain (a
     * finalizer run by one), whose ring reads it would cut into */
    if (draining) return 0;
    PyObject *r = py_drain(NULL, NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    return 0;
}

/* the host's drain_behind: lprof's clock thread, no GIL (allowed for a
 * pending call); a full queue of pending calls (-1) leaves it to the drain
 * thread */
static void ask_drain_behind(void) { (void)lp_pending_call_any_thread(drain_pending, NULL); }

static void *save_thread(void) { return PyEval_SaveThread(); }
static void restore_thread(void *ts) { PyEval_RestoreThread(ts); }

/* The eval loop's parts: the exported symbol's range, and every function
 * whose native frame holds an entry frame of the running eval calls. Each
 * eval call keeps that frame in its own C stack frame, so the function
 * around it is the eval loop whatever the build did to it: GCC's hot/cold
 * partitioning under PGO (Debian's 3.14) moves the body, where the calls
 * happen, out of the exported _PyEval_EvalFrameDefault into an unnamed
 * part. Called from Python (the stack holds an eval call) before sampling
 * starts. The walk reads the unwind tables through the C runtime
 * (eh_frames.h), not libunwind, whose first use opens a pipe the program
 * would see among its descriptors. */
static void find_eval_loop(lp_ranges *eval) {
    uintptr_t lo = 0, hi = 0;
    if (lp_sampler_symbol_range("_PyEval_EvalFrameDefault", &lo, &hi) == 0) lp_ranges_add(eval, lo, hi);
    uintptr_t entries[64];
    int ne = lp_pyframes_c_stack_frames(PyThreadState_Get(), entries, (int)LP_ARRAY_LEN(entries));
    static lp_eh_frame frames[LP_NATIVE_MAX_DEPTH];
    int nf = lp_eh_frames_here(frames, LP_NATIVE_MAX_DEPTH);
    /* frame i spans [sp_i, sp_{i+1}): its locals sit above its own stack
     * pointer and below its caller's */
    for (int i = 0; i + 1 < nf; i++) {
        if (frames[i].start == 0) continue;
        for (int e = 0; e < ne; e++)
            if (entries[e] >= frames[i].sp && entries[e] < frames[i + 1].sp)
                lp_ranges_add(eval, frames[i].start, frames[i].end);
    }
}

#if PY_VERSION_HEX >= 0x030E0000
/* The serial of the task the thread runs (collect/task_ids.h). Nothing
 * read while no task has one (CPU mode, a program without asyncio); a
 * handler reads its own thread's state directly (whole while the thread
 * runs: the fault-safe reads are for the top of its frame chain). */
static uint32_t running_task(const void *tstate, lp_reader reader) {
    if (lp_task_ids_given() == 0) return 0;
    if (reader == lp_pyframes_interrupted_read) reader = NULL;
    return lp_task_ids_find(lp_pyframes_running_task(tstate, reader));
}
#endif

/* The interpreter as the sampler sees it; ranges found once. */
static const lp_sampler_host *interpreter_host(void) {
    static lp_sampler_host host;
    if (host.capture) return &host;
    host.holds_gil = lp_pyframes_holds_gil;
    host.top = lp_pyframes_top;
#if PY_VERSION_HEX >= 0x030E0000
    host.task = running_task;
#endif
    host.interrupted_read = lp_pyframes_interrupted_read;
    host.safe_read = lp_pyframes_safe_read;
    host.stack_ranges = lp_pyframes_stack_ranges;
    host.capture_memo = lp_pyframes_capture_memo;
    host.drain_behind = ask_drain_behind;
    host.release_gil = save_thread;
    host.reacquire_gil = restore_thread;
    lp_sampler_text_range((uintptr_t)(void *)&PyEval_EvalCode, &host.interp_lo, &host.interp_hi);
    /* libpython's thread-local reads go through the dynamic linker (a
     * statically linked interpreter reads them inline, and there the calls
     * are an extension's own: native) */
    Dl_info where;
    if (dladdr((void *)&PyEval_EvalCode, &where) && where.dli_fname && strstr(where.dli_fname, "libpython"))
        lp_sampler_symbol_range("__tls_get_addr", &host.tls_lo, &host.tls_hi);
    /* this extension's own code: the -l tracer's callbacks */
    lp_sampler_text_range((uintptr_t)(void *)&interpreter_host, &host.self_lo, &host.self_hi);
    find_eval_loop(&host.eval);
    host.capture = lp_pyframes_capture;
    return &host;
}

/* [(lo, hi), ...]: the eval loop's parts as found (tests, diagnostics) */
static PyObject *py_eval_loop_ranges(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    const lp_sampler_host *h = interpreter_host();
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < h->eval.n; i++) {
        PyObject *t =
            Py_BuildValue("(KK)", (unsigned long long)h->eval.lo[i], (unsigned long long)h->eval.hi[i]);
        if (!t || PyList_Append(list, t) < 0) Py_CLEAR(list);
        Py_XDECREF(t);
    }
    return list;
}

/* (start, end) of the function the unwind tables give for an address, or
 * None: the lookup find_eval_loop relies on (tests, diagnostics) */
static PyObject *py_unwind_table_range(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long long addr = PyLong_AsUnsignedLongLong(arg);
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    uintptr_t lo = 0, hi = 0;
    if (lp_eh_function_range((uintptr_t)addr, &lo, &hi) < 0) Py_RETURN_NONE;
    return Py_BuildValue("(KK)", (unsigned long long)lo, (unsigned long long)hi);
}

/* sampler_start's cpu_source beyond lp_cpu_source: the sampler thread,
 * reading the running threads from outside (collect/outside_read.h) */
#define CPU_SOURCE_OUTSIDE 3

static PyObject *py_start(PyObject *self, PyObject *args) {
    (void)self;
    const char *mode;
    double rate;
    int signo, native = 0, cpu_source = LP_CPU_PERF, perf_trap = 0;
    if (!PyArg_ParseTuple(args, "sdi|iip", &mode, &rate, &signo, &native, &cpu_source, &perf_trap))
        return NULL;
    if (cpu_source < LP_CPU_TIMERS || cpu_source > CPU_SOURCE_OUTSIDE) {
        PyErr_SetString(PyExc_ValueError,
                        "cpu_source must be 0 (timers), 1 (thread), 2 (perf) or 3 (thread, outside reads)");
        return NULL;
    }
    memset(slot_last, 0, sizeof slot_last); /* stack ids of an earlier table mean nothing now */
    memset(&last_other, 0, sizeof last_other);
    other_charged_ns = other_uncharged_ns = 0;
    if (!(rate > 0 && rate <= LP_SAMPLER_MAX_RATE_HZ)) {
        PyErr_Format(PyExc_ValueError, "rate_hz must be in (0, %d]", LP_SAMPLER_MAX_RATE_HZ);
        return NULL;
    }
    if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP) {
        PyErr_SetString(PyExc_ValueError, "invalid sampling signal");
        return NULL;
    }
    lp_sampler_config cfg;
    if (strcmp(mode, "cpu") == 0) cfg.mode = LP_MODE_CPU;
    else if (strcmp(mode, "wall") == 0) cfg.mode = LP_MODE_WALL;
    else {
        PyErr_SetString(PyExc_ValueError, "mode must be 'cpu' or 'wall'");
        return NULL;
    }
    cfg.signo = signo;
    cfg.period_ns = (uint64_t)(1e9 / rate);
    cfg.others = 1;
    /* outside reads where this process may read its own memory; else the
     * perf events (which fall back to the sampler thread's signals) */
    if (cpu_source == CPU_SOURCE_OUTSIDE && !lp_outside_available()) cpu_source = LP_CPU_PERF;
    cfg.outside_reads = cpu_source == CPU_SOURCE_OUTSIDE;
    cfg.cpu_source = cfg.outside_reads ? LP_CPU_THREAD : (lp_cpu_source)cpu_source;
    cfg.perf_trap = perf_trap;
    /* split samples at the default CPU rate, never above the reads' */
    cfg.split_period_ns = 0;
    if (cfg.outside_reads) {
        cfg.split_period_ns = (uint64_t)(1e9 / LP_SAMPLER_SPLIT_RATE_HZ);
        if (cfg.split_period_ns < cfg.period_ns) cfg.split_period_ns = cfg.period_ns;
    }
    if (lp_agg_init() < 0 || lp_resolve_install_hook() < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lprof: cannot set up the stack table");
        return NULL;
    }
    const char *why = NULL;
    lp_sampler_host host = *interpreter_host();
    if (native) {
        if (lp_native_unwind_load(&why) < 0) {
            PyErr_Format(PyExc_RuntimeError, "--native: %s", why);
            return NULL;
        }
        host.native = lp_native_unwind;
        splice_rules = (lp_splice_rules){host.eval, host.interp_lo, host.interp_hi, native == 2};
        native_self_lo = host.self_lo;
        native_self_hi = host.self_hi;
    }
    __atomic_store_n(&native_mode, native, __ATOMIC_RELEASE); /* after the rules: hooks read them */
    native_mismatch = 0;
    threads_unsampled = 0;
    config = cfg;
    lp_sampler_reset_stats();
    if (lp_sampler_start(&cfg, &host, &why) < 0) {
        PyErr_SetString(PyExc_RuntimeError, why);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_stop();
    __atomic_store_n(&native_mode, 0, __ATOMIC_RELEASE);
    return py_drain(NULL, NULL);
}

static PyObject *py_settle(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(lp_sampler_settle());
}

static PyObject *py_release_sigtrap(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_release_sigtrap();
    Py_RETURN_NONE;
}

static PyObject *py_pause(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_pause();
    Py_RETURN_NONE;
}

static PyObject *py_perf_warm(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(lp_perf_clock_warm() == 0);
}

static PyObject *py_drain_wait(PyObject *self, PyObject *arg) {
    (void)self;
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) return NULL;
    if (seconds < 0) seconds = 0;
    int asked;
    Py_BEGIN_ALLOW_THREADS asked = lp_sampler_drain_wait(seconds);
    Py_END_ALLOW_THREADS return PyBool_FromLong(asked);
}

static PyObject *py_drain_wake(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_drain_wake();
    Py_RETURN_NONE;
}

static PyObject *py_resume(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_resume();
    Py_RETURN_NONE;
}

static PyObject *py_register_current(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyThreadState *ts = PyThreadState_Get();
    uint64_t key = lp_pyframes_thread_key(ts);
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int slot = lp_sampler_register(ts, key, tid, 0);
    if (slot < 0 && lp_sampler_running() && !lp_sampler_is_registered(key)) {
        /* The table is full of ended threads whose samples the drain thread
         * has not taken yet: it needs the GIL, which a busy machine gives it
         * late while short threads keep starting (300 threads of 5 ms lost
         * half their CPU time so). Drain here, GIL held: that frees them. */
        drain_rings();
        slot = lp_sampler_register(ts, key, tid, 0);
    }
    if (slot < 0 && lp_sampler_running()) threads_unsampled++;
    return PyBool_FromLong(slot >= 0);
}

/* sampler_unregister_current(code=None): code is what the thread ran (its
 * target's code object), charged at its first line with the CPU time of a
 * thread no sample saw (one that ran between kernel ticks: many do on a
 * busy machine). The drain reads it later; a code object's death drains
 * the rings first, so the pointer stays good. */
static PyObject *py_unregister_current(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    lp_rawframe ran = {NULL, -1, 0};
    if (nargs > 0 && args[0] != Py_None && PyCode_Check(args[0])) ran.code = args[0];
    lp_sampler_unregister_self(lp_pyframes_thread_key(PyThreadState_Get()), ran.code ? &ran : NULL);
    Py_RETURN_NONE;
}

/* register_threads([(ident, native_id), ...]): threads already running,
 * read fault-safely since lprof does not see their exit. */
static PyObject *py_register_threads(PyObject *self, PyObject *list) {
    (void)self;
    PyObject *seq = PySequence_Fast(list, "expected a sequence of (ident, native_id)");
    if (!seq) return NULL;
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    long count = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        unsigned long long ident;
        long native;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Kl", &ident, &native)) {
            Py_DECREF(seq);
            return NULL;
        }
        for (PyThreadState *p = PyInterpreterState_ThreadHead(interp); p; p = PyThreadState_Next(p)) {
            if (lp_pyframes_thread_key(p) != ident) continue;
            if (native <= 0) native = lp_pyframes_native_tid(p);
            if (native > 0 && lp_sampler_register(p, ident, (pid_t)native, 1) >= 0) count++;
            break;
        }
    }
    Py_DECREF(seq);
    return PyLong_FromLong(count);
}

/* bytes: the opcodes the samples' leaf-on-a-call rule counts (tests) */
static PyObject *py_call_opcodes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    char out[256];
    Py_ssize_t n = 0;
    for (int op = 0; op < 256; op++)
        if (call_opcodes[op]) out[n++] = (char)op;
    return PyBytes_FromStringAndSize(out, n);
}

/* One entry of the stats dict; -1 with an exception set on failure. */
static int stats_set(PyObject *d, const char *key, PyObject *value) {
    if (value == NULL) return -1;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    lp_others_stats os;
    lp_others_get_stats(&os);
    lp_stacktab *t = lp_agg_stacks();
    static const char *sources[] = {"timers", "thread", "perf"};
    /* counts, each an unsigned 64-bit number (a dict built entry by entry:
     * a Py_BuildValue format this long got two types wrong once) */
    const struct {
        const char *key;
        unsigned long long value;
    } counts[] = {
        {"lprof_threads_ns", os.own_ns},
        {"others_measured_ns", os.measured_ns},
        {"others_lost_ns", os.lost_ns},
        {"others_charged_ns", other_charged_ns},
        {"others_uncharged_ns", other_uncharged_ns},
        {"signals", st.signals},
        {"in_profiler", st.in_profiler},
        {"drains_behind", st.drains_behind},
        {"dropped", st.dropped},
        {"truncated", st.truncated},
        {"wall_reads", st.wall_reads},
        {"period_ns", config.period_ns},
        {"stack_overflows", t ? lp_stacktab_overflows(t) : 0},
        {"stack_nodes", t ? lp_stacktab_node_count(t) : 0},
        {"native_mismatch", native_mismatch},
        {"threads_unsampled", threads_unsampled},
        {"perf_stalled", st.perf_stalled},
        {"outside_samples", st.outside_samples},
        {"outside_retries", st.outside_retries},
        {"outside_fetches", st.outside_fetches},
        {"split_samples", st.split_samples},
    };
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (stats_set(d, counts[i].key, PyLong_FromUnsignedLongLong(counts[i].value)) < 0) goto fail;
    if (stats_set(d, "signal", PyLong_FromLong(st.signo)) < 0 ||
        stats_set(d, "native", PyLong_FromLong(native_mode)) < 0 ||
        stats_set(d, "cpu_source",
                  PyUnicode_FromString(st.outside_reads                           ? "outside"
                                       : st.cpu_source >= 0 && st.cpu_source <= 2 ? sources[st.cpu_source]
                                                                                  : "?")) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *py_default_signal(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(lp_sampler_default_signal());
}

/* None when --native can work here, else the reason (libunwind missing). */
static PyObject *py_native_unwind_check(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    const char *why = NULL;
    if (lp_native_unwind_load(&why) == 0) Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

static PyMethodDef methods[] = {
    {"native_unwind_check", py_native_unwind_check, METH_NOARGS, "None if --native can run, else why not."},
    {"eval_loop_ranges", py_eval_loop_ranges, METH_NOARGS,
     "[(lo, hi), ...]: the interpreter's eval loop code as found."},
    {"unwind_table_range", py_unwind_table_range, METH_O,
     "unwind_table_range(address): (start, end) of its function in the unwind tables, or None."},
    {"sampler_perf_warm", py_perf_warm, METH_NOARGS,
     "sampler_perf_warm(): switches the kernel's perf hooks on in a thread of its own while lprof "
     "starts (collect/perf_clock.h); nothing waits for it (sampler_settle). False when the thread "
     "could not start."},
    {"sampler_start", py_start, METH_VARARGS,
     "sampler_start(mode, rate_hz, signo, native=0, cpu_source=2, perf_trap=False): native 1 = native "
     "frames, 2 = all of them; cpu_source (CPU mode, collect/sampler.h): 0 per-thread CPU timers, 1 the "
     "sampler thread, 2 per-thread perf task-clock events (the thread where perf_event_open fails), 3 the "
     "sampler "
     "thread reading the running threads from outside, no signal (collect/outside_read.h); "
     "perf_trap: the events raise SIGTRAP where nobody handles it (signo otherwise)"},
    {"sampler_stop", py_stop, METH_NOARGS, "Stop timers and drain; returns samples drained."},
    {"sampler_drain", py_drain, METH_NOARGS, "Move ring samples into the stack table."},
    {"sampler_drain_wait", py_drain_wait, METH_O,
     "sampler_drain_wait(seconds): sleeps, GIL released, until a ring is half full, "
     "sampler_drain_wake() is called, or the time is up; True if asked."},
    {"sampler_drain_wake", py_drain_wake, METH_NOARGS, "Ends sampler_drain_wait's sleep now."},
    {"sampler_pause", py_pause, METH_NOARGS,
     "Before an exec: no sampling signal can be generated once it returns (threads stay registered)."},
    {"sampler_resume", py_resume, METH_NOARGS, "After a failed exec: sampling goes on."},
    {"sampler_settle", py_settle, METH_NOARGS,
     "sampler_settle() -> bool: the perf events replace the CPU timers the threads sampled with while "
     "the kernel switched its perf hooks on (True when they did now)."},
    {"sampler_release_sigtrap", py_release_sigtrap, METH_NOARGS,
     "The program takes SIGTRAP: perf events raise the sampling signal instead."},
    {"sampler_register_current", py_register_current, METH_NOARGS, "Sample the calling thread."},
    {"sampler_unregister_current", (PyCFunction)(void (*)(void))py_unregister_current, METH_FASTCALL,
     "Stop sampling the calling thread; optional code object of what it ran."},
    {"sampler_register_threads", py_register_threads, METH_O, "Sample running threads [(ident, native_id)]."},
    {"sampler_call_opcodes", py_call_opcodes, METH_NOARGS, "bytes: the opcodes that call functions."},
    {"sampler_stats", py_stats, METH_NOARGS, "Counters: signals, dropped, truncated, ..."},
    {"sampler_default_signal", py_default_signal, METH_NOARGS,
     "The first free real-time signal from SIGRTMIN+4 (never SIGPROF)."},
    {NULL, NULL, 0, NULL},
};

int lp_pysampler_init(PyObject *module) {
    set_call_opcodes();
    if (lp_agg_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "lprof: cannot reserve the stack table");
        return -1;
    }
    /* aggregate drains the rings through this (snapshots, the code hook) */
    static const lp_agg_source rings = {drain_rings, lp_sampler_has_pending, lp_sampler_running,
                                        lp_outside_code_dying};
    lp_agg_set_source(&rings);
    if (lp_resolve_install_hook() < 0) return -1;
    if (PyModule_AddIntConstant(module, "SAMPLER_MAX_RATE_HZ", LP_SAMPLER_MAX_RATE_HZ) < 0) return -1;
    if (PyModule_AddIntConstant(module, "SAMPLER_DEFAULT_RATE_HZ", LP_SAMPLER_DEFAULT_RATE_HZ) < 0) return -1;
    if (PyModule_AddIntConstant(module, "SAMPLER_DEFAULT_CPU_RATE_HZ", LP_SAMPLER_DEFAULT_CPU_RATE_HZ) < 0)
        return -1;
    return PyModule_AddFunctions(module, methods);
}
