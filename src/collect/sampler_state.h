/* collect: the sampler's state, shared by its set-up side (collect/sampler.c)
 * and its signal handler (collect/sampler_handler.c, kept apart so that
 * `make ctest` can check every symbol the handler's object calls). Not for
 * other files: they use collect/sampler.h. */
#ifndef LPROF_COLLECT_SAMPLER_STATE_H
#define LPROF_COLLECT_SAMPLER_STATE_H

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect/frame_chain.h"
#include "collect/native_unwind.h"
#include "collect/ring.h"
#include "collect/sampler.h"
#include "common/wakeable_sleep.h" /* lp_futex_wake */

enum { LP_SLOT_FREE = 0, LP_SLOT_ACTIVE = 1, LP_SLOT_DEAD = 2 };

/* One registered thread. state, gen: written by register / unregister /
 * drain (one thread at a time), read by the handler and the wall thread.
 * ring: producer = the thread's own handler, consumer = the drain.
 * in_handler: handlers between their slot check and their commit; the
 * drain frees a DEAD slot only when none is (so a recycled slot's ring
 * never has a second producer). */
typedef struct {
    int state;
    uint32_t gen; /* bumped at each register: tells a stale timer signal */
    int in_handler;
    int safe_reads;
    const void *tstate;
    uint64_t thread_key;
    pid_t tid;
    int has_timer;
    timer_t timer;
    int has_perf;
    void *perf; /* LP_CPU_PERF: its task-clock event (collect/perf_clock.h) */
    clockid_t cpu_clock;
    uint64_t last_cpu_ns; /* wall thread only */
    /* CPU mode: the thread's CPU clock at registration, timer expiries
     * counted by its handler (overruns included) and samples committed;
     * read by the thread itself at its end (lp_sampler_unregister_self) */
    uint64_t start_cpu_ns, expiries, samples_taken;
    uint64_t paused_cpu_ns; /* its CPU clock at lp_sampler_pause */
    /* its CPU clock when it unregistered itself (0: not so): the other
     * threads' clock (collect/other_threads.c) reads it, the thread gone */
    uint64_t end_cpu_ns;
    /* CLOCK_MONOTONIC of its latest sample, and of its latest one outside
     * the interpreter's code (in a C extension): written by its handler,
     * read by that clock */
    uint64_t sample_t_ns, native_t_ns;
    /* CPU mode with the sampler thread (cfg.cpu_thread): its CPU clock at
     * the thread's last look (seen), up to which samples were asked for
     * (offered), periods asked for and not yet taken by the handler
     * (pending, exchanged to 0 there), and the CPU time its detached reads
     * covered (detached: the thread's end counts it as sampled) */
    uint64_t seen_cpu_ns, offered_cpu_ns, detached_ns;
    uint32_t pending;
    /* CPU mode, the drain's side: what its samples charged so far, and what
     * its CPU clock allowed in all when the drain reached its ring
     * (UINT64_MAX: unknown, no limit); see lp_sampler_take_cpu */
    uint64_t charged_ns, allowed_ns;
    /* wall mode: CLOCK_MONOTONIC up to which the wall thread has charged the
     * thread (each read weighs the periods since: a pass slower than the
     * period loses no time), and its last detached read: the thread's CPU
     * clock then, whether that stack was cut and the task it ran (a thread
     * that has not run since has the same stack and task: not read again) */
    uint64_t wall_seen_ns, wall_read_cpu_ns;
    int wall_read_truncated;
    uint32_t wall_read_task;
    /* CPU mode, outside reads: the outermost frame of the thread's last
     * read that did not move (a moved read that reaches it is whole) */
    lp_rawframe outside_root;
    /* ... and its split event's: the thread's CPU clock when it opened and
     * the split signals its handler took since (a thread blocking the signal
     * has its event closed, as a perf source's: sampler.c) */
    uint64_t split_start_ns, split_taken;
    /* CPU mode, perf source: the thread's CPU clock up to which its perf
     * samples weighed (set where its event opens, then by its handler) */
    uint64_t perf_seen_ns;
    lp_ring ring;
    /* the ring's stacks as changes (collect/frame_chain.h): the handler's
     * previous stack, and the drain's copy of it; the same for the wall
     * thread's detached reads of this thread, in the wall ring */
    lp_frame_chain chain, drained, wall_chain, wall_drained;
} lp_sampler_slot;

/* A timer's sigval: slot index in the low 8 bits, generation above (as many
 * bits as a pointer has left), compared whole by the handler. */
#define LP_SLOT_INDEX_BITS 8
_Static_assert(LP_SAMPLER_MAX_THREADS <= (1 << LP_SLOT_INDEX_BITS), "slot index must fit the sigval");
static inline uintptr_t lp_sampler_sigval(int idx, uint32_t gen) {
    return ((uintptr_t)gen << LP_SLOT_INDEX_BITS) | (uintptr_t)idx;
}

_Static_assert(LP_FRAME_CHAIN_MAX == LP_SAMPLER_MAX_DEPTH, "a chain holds a whole sample");

#define LP_SAMPLE_MAX_BYTES \
    (sizeof(lp_sample) + LP_SAMPLER_MAX_DEPTH * sizeof(lp_rawframe) + LP_NATIVE_MAX_DEPTH * sizeof(uintptr_t))

typedef struct {
    int running; /* the handler does nothing unless set */
    lp_sampler_config cfg;
    lp_sampler_host host; /* set before running, constant while it is */
    int installed_signo;  /* 0 = no handler installed by us */
    int perf_signo;       /* what the perf events raise: cfg.signo, or SIGTRAP (sigtrap events) */
    /* CPU mode, perf source, started while the kernel still switched its
     * perf hooks on (perf_clock.h): the threads sample with CPU timers
     * until lp_sampler_settle opens their events */
    int perf_pending;
    /* the same for the split events beside outside reads (cfg.split_period_ns):
     * the reads' own rule alone until lp_sampler_settle opens them */
    int split_pending;
    lp_sampler_slot slots[LP_SAMPLER_MAX_THREADS];
    uint8_t *ring_mem;   /* mmap: one ring per slot + the wall ring */
    lp_ring wall_ring;   /* producer: wall thread */
    lp_ring others_ring; /* producer: the other threads' clock (collect/other_threads.c) */
    pthread_t wall_thread;
    int wall_running;
    int wall_started; /* set by the wall thread first thing: its start-up is over */
    int paused;       /* lp_sampler_pause: timers disarmed, no wall thread */
    uint64_t signals, dropped_reads, truncated, wall_reads, in_profiler;
    uint64_t perf_stalled; /* perf events closed: their thread blocked the signal (sampler.c) */
    int atfork_done;
    /* 1: a ring is more than half full, or the drain's wait is over (stop):
     * the futex word lp_sampler_drain_wait sleeps on */
    int drain_asked;
    /* 1: the host was asked to drain elsewhere (drain_behind) since the
     * last drain; how many times in all */
    int behind_asked;
    uint64_t drains_behind;
    uint64_t outside_samples, outside_retries; /* outside reads (collect/outside_read.h) */
    uint64_t split_samples;                    /* their split samples (LP_SF_SPLIT) */
} lp_sampler_state;

extern LP_INTERNAL lp_sampler_state lp_sampler_S;

/* A producer found its ring more than half full: wakes the drain thread now
 * rather than at its next period (once until the drain has waited again).
 * Signal-safe: an atomic exchange and the futex syscall. */
static inline void lp_sampler_ask_drain(const lp_ring *r) {
    if (!lp_ring_half_full(r) || __atomic_exchange_n(&lp_sampler_S.drain_asked, 1, __ATOMIC_ACQ_REL)) return;
    lp_futex_wake(&lp_sampler_S.drain_asked, 1);
}

/* A clock's time in ns (0: the clock is gone, as a thread's CPU clock is
 * once the thread ended). */
static inline uint64_t clock_ns(clockid_t c) {
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The sampler thread's body (collect/sampler_thread.c); collect/sampler.c
 * starts it with a NULL argument and stops it through S.wall_running. */
LP_INTERNAL void *lp_sampler_thread_main(void *arg);

/* The handler (collect/sampler_handler.c), installed with SA_SIGINFO. */
LP_INTERNAL void lp_sampler_on_signal(int sig, siginfo_t *si, void *uc) LP_SIGNAL_SAFE;

#endif
