/* collect: the signal-based sampler, pure C: per-thread CPU timers or a
 * wall-clock sampler thread, the signal handler (collect/sampler_handler.c),
 * raw sample records into per-thread SPSC rings. Knows nothing about tables
 * or the interpreter: what it needs from the interpreter (frame walker,
 * text ranges, GIL release) is injected at start as an lp_sampler_host; the
 * Python glue and the drain are collect/cpython/sampler.c. Thread-safety:
 * every function except the handler and the wall thread is called by one
 * thread at a time (the GIL holder). Design: docs/design-sampler.md. */
#ifndef LPROF_COLLECT_SAMPLER_H
#define LPROF_COLLECT_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "common/base.h"
#include "common/rawframe.h" /* lp_rawframe */
#include "collect/reader.h"
#include "common/ranges.h"

#define LP_SAMPLER_MAX_THREADS 128
#define LP_SAMPLER_MAX_DEPTH   256          /* frames kept per sample (leaf side) */
#define LP_SAMPLER_RING_BYTES  (256 * 1024) /* per thread */
/* the wall thread's detached reads of every waiting thread share one ring */
#define LP_SAMPLER_WALL_RING_BYTES (1024 * 1024)
/* Highest sampling rate accepted (lprof._lprof.SAMPLER_MAX_RATE_HZ; the CLI
 * checks --rate against it). CPU timers fire on the kernel tick anyway. */
#define LP_SAMPLER_MAX_RATE_HZ 10000
/* The default rates (lprof._lprof.SAMPLER_DEFAULT_RATE_HZ, _CPU_RATE_HZ).
 * --wall: 1000 reads a second per thread. CPU mode: 250 signals per CPU
 * second, each of a thread's task-clock perf event (collect/perf_clock.h):
 * the most the overhead target (2% of the run) allows on this project's
 * 2-core VM, where a sample costs some 27 us all told with the events'
 * SIGTRAP (17 us of it the kernel's and the hypervisor's, 14 the event's
 * timer; 43 us with the real-time signal: docs/design-sampler.md), and
 * already within 1 point of the known shares on the bench's workloads. */
#define LP_SAMPLER_DEFAULT_RATE_HZ     1000
#define LP_SAMPLER_DEFAULT_CPU_RATE_HZ 250
/* Split samples a CPU second beside outside reads (LP_SF_SPLIT): what a
 * perf signal costs at the default rate (about 1%), enough to split a hot
 * line's time into Python, native and system within a point or two */
#define LP_SAMPLER_SPLIT_RATE_HZ 250

typedef enum { LP_MODE_CPU = 0, LP_MODE_WALL = 1 } lp_sampler_mode;

/* What makes CPU-mode signals: POSIX CPU timers per thread (checked by the
 * kernel at its tick only: 250 Hz on Debian), lprof's sampler thread
 * reading each thread's CPU clock every period and signalling the running
 * ones (the rate asked; a signal sent from another CPU lands a few
 * microseconds late), or a task-clock perf event per thread
 * (collect/perf_clock.h: the rate asked, raised where the thread runs).
 * Asked for perf, the sampler takes the thread where perf_event_open fails.
 * The sampler thread may also read the running threads from outside instead
 * of signalling them (lp_sampler_config.outside_reads). */
typedef enum { LP_CPU_TIMERS = 0, LP_CPU_THREAD = 1, LP_CPU_PERF = 2 } lp_cpu_source;

/* Sample flags (set in the handler; the drain charges by them: collect/charge.h). */
#define LP_SF_GIL       1u  /* the thread held the GIL */
#define LP_SF_IN_INTERP 2u  /* PC inside the interpreter's text segment */
#define LP_SF_SYSCALL   4u  /* PC right after a syscall instruction */
#define LP_SF_DETACHED  8u  /* wall mode: read from the sampler thread */
#define LP_SF_TRUNCATED 16u /* root-side frames were dropped */
#define LP_SF_IN_EVAL   32u /* PC inside _PyEval_EvalFrameDefault itself */
#define LP_SF_TAIL \
    64u /* CPU mode, a thread's end: cpu_ns of CPU time after its last
                                * timer expiry; depth 0 = charge it to the thread's last sample */
#define LP_SF_OTHER \
    128u /* cpu_ns of CPU time of threads the sampler does not sample,
                                * charged to these frames (a thread in native code; with
                                * LP_SF_GIL: only if the leaf stands on a call), or, depth 0,
                                * placed by the drain (collect/other_threads.h) */
#define LP_SF_OUTSIDE \
    512u /* CPU mode, outside reads: a thread holding the GIL read by the
                                * sampler thread as it ran (collect/outside_read.h); cpu_ns
                                * of CPU time, no PC: Python time, or native where the leaf
                                * stands on a call */
#define LP_SF_SPLIT \
    1024u /* CPU mode, outside reads: a perf event's sample beside the reads,
                                * with its PC, only to split their CPU time into Python,
                                * native and system (aggregate/cpu_split.h); cpu_ns: the
                                * split period. Counts no CPU time of its own */
#define LP_SF_CHAINED \
    256u /* the handler's record keeps only the leaf-side frames that differ
                                * from its thread's previous one; `shared` root-side frames
                                * are that one's (collect/frame_chain.h). The drain hands
                                * on the whole stack, without this flag */

/* One sample as the drain sees it. */
typedef struct {
    uint32_t weight; /* 1 + timer overrun */
    uint32_t flags;
    uint32_t depth;
    uint32_t native_depth; /* lprof --native: instruction addresses after the frames */
    uint32_t shared;       /* LP_SF_CHAINED: root-side frames of the previous record */
    uint32_t chain_slot;   /* LP_SF_CHAINED in the wall ring: whose previous record */
    uint32_t task;         /* serial of the asyncio task the thread ran (host.task), 0: none */
    uint32_t reserved;     /* 0 */
    uint64_t thread_key;   /* PyThreadState.thread_id */
    uint64_t cpu_ns;       /* detached wall samples: thread CPU time since the last one;
                          * LP_SF_TAIL: the unsampled CPU time at the thread's end */
    uint64_t t_ns;         /* CLOCK_MONOTONIC when taken (the timeline); 0: not on it */
    lp_rawframe frames[];  /* leaf first; then native_depth uintptr_t, leaf first */
} lp_sample;

/* The native instruction addresses of a sample (native_depth of them). */
static inline const uintptr_t *lp_sample_native(const lp_sample *s) {
    return (const uintptr_t *)(const void *)(s->frames + s->depth);
}

typedef struct {
    lp_sampler_mode mode;
    int signo;
    uint64_t period_ns;
    int others;               /* count the CPU time of threads not sampled (collect/other_threads.h) */
    lp_cpu_source cpu_source; /* CPU mode: see above */
    /* CPU mode, perf: the events raise SIGTRAP where the kernel has sigtrap
     * events and nobody handles SIGTRAP (about half the cost of signo's
     * fasync path on a VM: collect/perf_clock.h); signo otherwise. The
     * glue asks it only where the user named no signal and nothing traces
     * the process (a debugger takes every SIGTRAP for itself). */
    int perf_trap;
    /* CPU mode, LP_CPU_THREAD: the thread holding the GIL is read from
     * outside as it runs, not signalled (collect/outside_read.h) */
    int outside_reads;
    /* With outside_reads: a task-clock perf event per thread every
     * split_period_ns of its CPU time signals it for a split sample
     * (LP_SF_SPLIT); 0: none, the reads' own rule alone */
    uint64_t split_period_ns;
} lp_sampler_config;

/* What the sampler needs from the interpreter, given at start: the Python
 * glue passes the real frame walker (collect/cpython/frames.h), tests a
 * fake. capture and holds_gil run inside the signal handler with
 * interrupted_read: they must be LP_SIGNAL_SAFE. */
typedef struct {
    /* the thread's frames, leaf first; returns how many were written */
    int (*capture)(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader);
    int (*holds_gil)(const void *tstate, lp_reader reader);   /* 1, 0, or -1 unreadable */
    const void *(*top)(const void *tstate, lp_reader reader); /* innermost frame (re-check) */
    /* capture, with a memo of code objects already read (collect/
     * code_memo.h); NULL: capture alone */
    int (*capture_memo)(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader reader,
                        void *memo);
    /* the memory the thread's frames live in, as ranges (at most max);
     * NULL or 0: none known (collect/cpython/frames.h) */
    int (*stack_ranges)(const void *tstate, lp_reader reader, uintptr_t *lo, uintptr_t *hi, int max);
    /* the serial of the asyncio task the thread runs (collect/task_ids.h),
     * 0 for none; NULL: never one (before 3.14, the C tests' fake) */
    uint32_t (*task)(const void *tstate, lp_reader reader);
    /* lprof --native (NULL: off): the interrupted thread's native stack from
     * the handler's ucontext, leaf first (collect/native_unwind.h) */
    int (*native)(void *ucontext, uintptr_t *ips, int max);
    lp_reader interrupted_read;     /* the handler walking its own, interrupted thread */
    lp_reader safe_read;            /* fault-safe reads of another or an unowned thread */
    uintptr_t interp_lo, interp_hi; /* interpreter's executable segment: LP_SF_IN_INTERP */
    /* the dynamic linker's __tls_get_addr where the interpreter is a shared
     * library (libpython): its thread-local reads (3.13's thread state, on
     * every small-object allocation) call it, some 8% of a pure-Python
     * loop's samples; interpreter work too (LP_SF_IN_INTERP). 0, 0: none */
    uintptr_t tls_lo, tls_hi;
    lp_ranges eval;             /* the eval loop function's parts: LP_SF_IN_EVAL */
    uintptr_t self_lo, self_hi; /* lprof's own code: signals there are not counted */
    /* A ring is more than three quarters full: the drain thread has not had
     * the GIL for a while (a thread that releases and retakes it thousands
     * of times a second keeps the others waiting for seconds), and samples
     * are about to be lost. Asks a thread that gets the GIL to drain; called
     * by lprof's clock thread without the GIL, at most once until the next
     * drain. NULL: nothing to ask. */
    void (*drain_behind)(void);
    /* around stop's wait for the wall thread; both NULL: nothing to release */
    void *(*release_gil)(void);
    void (*reacquire_gil)(void *saved);
} lp_sampler_host;

/* Installs the handler and starts sampling (no threads yet in CPU mode:
 * register them). host is copied. 0, or -1 with the reason in *why. */
LP_INTERNAL int lp_sampler_start(const lp_sampler_config *cfg, const lp_sampler_host *host, const char **why);
/* Stops timers and the wall thread; samples stay in the rings for the drain. */
LP_INTERNAL void lp_sampler_stop(void);
LP_INTERNAL int lp_sampler_running(void);
/* Around an exec: exec resets the sampling signal to its default action,
 * which ends the new program, so a signal generated while the calling
 * thread is inside execve (its CPU timer expiring, the wall thread
 * signalling it) kills what it runs. pause: the wall thread ends and every
 * timer is disarmed, threads stay registered; when it returns no sampling
 * signal can be generated any more, and one already pending has been
 * delivered to the handler (still installed). resume: after a failed exec,
 * sampling goes on as before. Both no-ops when not running / not paused. */
LP_INTERNAL void lp_sampler_pause(void);
LP_INTERNAL void lp_sampler_resume(void);
/* The program sets its own SIGTRAP handler: perf events that raise SIGTRAP
 * (lp_sampler_config.perf_trap) raise the configured signal from now on. */
LP_INTERNAL void lp_sampler_release_sigtrap(void);
/* CPU mode, perf source: once the kernel's switch-on of its perf hooks is
 * over (collect/perf_clock.h), each thread's perf event replaces the CPU
 * timer it sampled with since the start (which then did not wait for the
 * switch-on: 5-25 ms of every run on a VM). 1 when it did so now (or found
 * no event possible after all: the timers go on), 0 when nothing was
 * pending or the switch-on is not over. Same caller rules as register. */
LP_INTERNAL int lp_sampler_settle(void);
/* Asked by each drain: where something other than lprof's handler now
 * holds SIGTRAP (a C extension's own sigaction, which no wrapper of
 * signal.signal sees), the events move to the real-time signal as
 * lp_sampler_release_sigtrap does. 1 when they moved. Same caller rules. */
LP_INTERNAL int lp_sampler_check_sigtrap(void);

/* Registers a thread: tstate, its thread key, native tid. safe_reads = 1
 * when lprof does not control the thread's exit (read it fault-safely).
 * Returns the slot or -1 (table full or timer_create failed). */
LP_INTERNAL int lp_sampler_register(const void *tstate, uint64_t thread_key, pid_t tid, int safe_reads);
/* Stops sampling that thread (its slot is recycled after the next drain). */
LP_INTERNAL void lp_sampler_unregister(uint64_t thread_key);
/* The same, called by that thread itself as it ends: in CPU mode the CPU
 * time it spent after its last timer expiry (up to a kernel tick, most of a
 * short thread's time) goes into its ring as an LP_SF_TAIL sample.
 * ran (may be NULL): the frame of what the thread ran (its target), the
 * leaf of a never-sampled thread's tail: where it ends, the target has
 * returned, and only the thread's start-up frames are left. */
LP_INTERNAL void lp_sampler_unregister_self(uint64_t thread_key, const lp_rawframe *ran);
/* Is a thread key registered (ACTIVE)? */
LP_INTERNAL int lp_sampler_is_registered(uint64_t thread_key);
/* The tstate of an ACTIVE slot, NULL otherwise (for liveness checks). */
LP_INTERNAL const void *lp_sampler_slot_tstate(int slot, uint64_t *thread_key);

/* Drain side: calls fn for every sample in every ring, then recycles dead
 * slots. Returns the number of samples seen. */
/* slot: the registration's slot index (samples of one slot come in the
 * order they were taken), -1 for the wall thread's reads, -2 for the other
 * threads' clock (collect/other_threads.h) */
typedef void (*lp_sample_fn)(const lp_sample *s, int slot, void *arg);
LP_INTERNAL uint64_t lp_sampler_drain(lp_sample_fn fn, void *arg);
/* CPU mode, from the drain's fn: the CPU time a sample of `slot` may charge
 * of the want_ns it stands for. In all, a thread's samples never charge more
 * than its CPU clock advanced while sampled (as read when the drain reached
 * its ring): a perf task-clock event counts the time its thread is
 * scheduled in, which runs ahead of that clock on a busy VM. Any other slot
 * or mode: want_ns. */
LP_INTERNAL uint64_t lp_sampler_take_cpu(int slot, uint64_t want_ns);
/* The drain thread's sleep between drains: returns after `seconds`, or
 * sooner once a ring is more than half full or lp_sampler_drain_wake is
 * called; 1 if it was asked so, 0 on the time-out. No GIL needed. */
LP_INTERNAL int lp_sampler_drain_wait(double seconds);
LP_INTERNAL void lp_sampler_drain_wake(void);
LP_INTERNAL int lp_sampler_has_pending(void);
/* The clock thread's check, no GIL: calls the host's drain_behind when a
 * ring is mostly full (once until the next drain). Counted in stats. */
LP_INTERNAL void lp_sampler_check_behind(void);

typedef struct {
    uint64_t signals;     /* handler invocations that took a sample */
    uint64_t dropped;     /* samples lost: ring full or unreadable */
    uint64_t truncated;   /* samples whose stack was cut at MAX_DEPTH */
    uint64_t wall_reads;  /* detached threads read by the wall thread (CPU mode: the
                          * CPU sampler thread's reads of threads not running) */
    uint64_t in_profiler; /* signals that landed in lprof's own code: not counted */
    int signo;
    lp_cpu_source cpu_source; /* what made CPU-mode signals (after any fallback) */
    uint64_t perf_stalled;    /* perf events closed because their thread blocked the signal */
    uint64_t drains_behind;   /* times the host was asked to drain (lp_sampler_check_behind) */
    int outside_reads;        /* CPU mode: running threads read from outside (config) */
    uint64_t outside_samples; /* reads of running threads committed */
    uint64_t outside_retries; /* ... that found the thread moved (its time goes to the next) */
    uint64_t outside_fetches; /* system calls those reads made (collect/block_copy.h) */
    uint64_t split_samples;   /* LP_SF_SPLIT samples taken beside them */
} lp_sampler_stats;
LP_INTERNAL void lp_sampler_get_stats(lp_sampler_stats *out);
LP_INTERNAL void lp_sampler_reset_stats(void);

/* Picks the default signal: the first real-time signal from SIGRTMIN+4 on
 * that nobody handles yet (or that lprof's handler holds already), never
 * SIGPROF, which the program may take for itself at any time. */
LP_INTERNAL int lp_sampler_default_signal(void);

/* For the host's ranges: the executable segment of a loaded object that
 * holds addr, and the extent of a function found by name (dlsym). 0, or -1
 * (ranges left as they were). */
LP_INTERNAL int lp_sampler_text_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);
LP_INTERNAL int lp_sampler_symbol_range(const char *name, uintptr_t *lo, uintptr_t *hi);

#endif
