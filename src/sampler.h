/* collect: the signal-based sampler (pysampler_signal.c): per-thread CPU
 * timers or a wall-clock sampler thread, the signal handler, raw sample
 * records into per-thread SPSC rings. Knows nothing about tables; the drain
 * (pysampler.c, GIL held) reads the rings with lp_sampler_next().
 * Thread-safety: every function except lp_sampler_on_signal and the wall
 * thread is called with the GIL held. Design: docs/design-sampler.md. */
#ifndef LPROF_SAMPLER_H
#define LPROF_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "base.h"
#include "stacktab.h"

#define LP_SAMPLER_MAX_THREADS 128
#define LP_SAMPLER_MAX_DEPTH 256          /* frames kept per sample (leaf side) */
#define LP_SAMPLER_RING_BYTES (256 * 1024) /* per thread */

typedef enum { LP_MODE_CPU = 0, LP_MODE_WALL = 1 } lp_sampler_mode;

/* Sample flags (set in the handler, internals.md 1.8). */
#define LP_SF_GIL 1u           /* the thread held the GIL */
#define LP_SF_IN_INTERP 2u     /* PC inside the interpreter's text segment */
#define LP_SF_SYSCALL 4u       /* PC right after a syscall instruction */
#define LP_SF_DETACHED 8u      /* wall mode: read from the sampler thread */
#define LP_SF_TRUNCATED 16u    /* root-side frames were dropped */
#define LP_SF_IN_EVAL 32u      /* PC inside _PyEval_EvalFrameDefault itself */

/* One sample as the drain sees it. */
typedef struct {
    uint32_t weight;     /* 1 + timer overrun */
    uint32_t flags;
    uint32_t depth;
    uint32_t pad_;
    uint64_t thread_key; /* PyThreadState.thread_id */
    uint64_t cpu_ns;     /* detached wall samples: thread CPU time since the last one */
    lp_rawframe frames[]; /* leaf first */
} lp_sample;

typedef struct {
    lp_sampler_mode mode;
    int signo;
    uint64_t period_ns;
} lp_sampler_config;

/* Installs the handler and starts sampling (no threads yet in CPU mode:
 * register them). 0, or -1 with errno-style reason in *why. */
LP_INTERNAL int lp_sampler_start(const lp_sampler_config *cfg, const char **why);
/* Stops timers and the wall thread; samples stay in the rings for the drain. */
LP_INTERNAL void lp_sampler_stop(void);
LP_INTERNAL int lp_sampler_running(void);

/* Registers a thread: tstate, its thread key, native tid. safe_reads = 1
 * when lprof does not control the thread's exit (read it fault-safely).
 * Returns the slot or -1 (table full or timer_create failed). */
LP_INTERNAL int lp_sampler_register(const void *tstate, uint64_t thread_key, pid_t tid, int safe_reads);
/* Stops sampling that thread (its slot is recycled after the next drain). */
LP_INTERNAL void lp_sampler_unregister(uint64_t thread_key);
/* Is a thread key registered (ACTIVE)? */
LP_INTERNAL int lp_sampler_is_registered(uint64_t thread_key);
/* The tstate of an ACTIVE slot, NULL otherwise (for liveness checks). */
LP_INTERNAL const void *lp_sampler_slot_tstate(int slot, uint64_t *thread_key);

/* Drain side: calls fn for every sample in every ring, then recycles dead
 * slots. Returns the number of samples seen. */
typedef void (*lp_sample_fn)(const lp_sample *s, void *arg);
LP_INTERNAL uint64_t lp_sampler_drain(lp_sample_fn fn, void *arg);
LP_INTERNAL int lp_sampler_has_pending(void);

typedef struct {
    uint64_t signals;    /* handler invocations that took a sample */
    uint64_t dropped;    /* samples lost: ring full or unreadable */
    uint64_t truncated;  /* samples whose stack was cut at MAX_DEPTH */
    uint64_t wall_reads; /* detached threads read by the wall thread */
    uint64_t in_profiler; /* signals that landed in lprof's own code: not counted */
    int signo;
} lp_sampler_stats;
LP_INTERNAL void lp_sampler_get_stats(lp_sampler_stats *out);
LP_INTERNAL void lp_sampler_reset_stats(void);

/* Picks the default signal: SIGPROF unless the program has a SIGPROF
 * handler or an armed ITIMER_PROF, then a real-time signal. */
LP_INTERNAL int lp_sampler_default_signal(void);

#endif
