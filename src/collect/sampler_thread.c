/* collect: lprof's sampler thread (see collect/sampler.h): in wall mode it
 * wakes every period, asks the thread holding the GIL for its sample (or,
 * from 5 kHz, reads it from outside) and reads the threads without the GIL
 * where they stand; in CPU mode with the sampler thread's source it looks at
 * every thread's CPU clock and signals or reads the threads that owe
 * samples. Started and stopped by collect/sampler.c; shares its state
 * (collect/sampler_state.h). */
#define _GNU_SOURCE 1
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect/frame_chain.h"
#include "collect/outside_read.h"
#include "collect/ring.h"
#include "collect/sampler.h"
#include "collect/sampler_state.h"
#include "common/own_tids.h"
#include "common/wakeable_sleep.h"

#define S lp_sampler_S
typedef lp_sampler_slot slot;

/* A detached read's frames as changes from its thread's previous one in the
 * wall ring (collect/frame_chain.h): that ring interleaves threads, so each
 * slot keeps its own chain for it, named in the record. Returns the frames
 * kept. */
static int chain_detached(slot *t, lp_sample *s, int n) {
    uint32_t shared = lp_frame_chain_encode(&t->wall_chain, s->frames, (uint32_t)n);
    s->shared = shared;
    s->chain_slot = (uint32_t)(t - S.slots);
    s->flags |= LP_SF_CHAINED;
    return n - (int)shared;
}

/* Commits a detached read of t into the wall ring: its n frames (already
 * in s, after any chaining), weight, flags and the CPU time it carries. */
static void commit_detached(slot *t, lp_sample *s, int n, uint32_t weight, uint32_t flags, uint64_t cpu_ns,
                            uint32_t task) {
    s->weight = weight;
    s->flags = flags;
    s->depth = (uint32_t)n;
    s->native_depth = 0; /* another thread's native stack cannot be unwound locally */
    s->task = task;
    s->reserved = 0;
    s->thread_key = t->thread_key;
    s->cpu_ns = cpu_ns;
    s->t_ns = clock_ns(CLOCK_MONOTONIC);
    if (flags & LP_SF_TRUNCATED) __atomic_fetch_add(&S.truncated, 1, __ATOMIC_RELAXED);
    lp_ring_commit(&S.wall_ring, (uint32_t)(sizeof(lp_sample) + (size_t)n * sizeof(lp_rawframe)));
    __atomic_fetch_add(&S.wall_reads, 1, __ATOMIC_RELAXED);
    lp_sampler_ask_drain(&S.wall_ring);
}

/* The task a detached thread runs: without the GIL it cannot switch tasks,
 * so the one read beside its stack is the stack's. */
static uint32_t detached_task(slot *t) { return S.host.task ? S.host.task(t->tstate, S.host.safe_read) : 0; }

static void wall_read_detached(slot *t, uint32_t periods) {
    lp_sample *s = lp_ring_reserve(&S.wall_ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return;
    uint64_t cpu = clock_ns(t->cpu_clock);
    if (cpu != 0 && cpu == t->wall_read_cpu_ns && __atomic_load_n(&t->wall_chain.n, __ATOMIC_RELAXED) > 0) {
        /* not run since its last read: the same stack, all of it shared */
        s->shared = __atomic_load_n(&t->wall_chain.n, __ATOMIC_RELAXED);
        s->chain_slot = (uint32_t)(t - S.slots);
        commit_detached(t, s, 0, periods,
                        LP_SF_DETACHED | LP_SF_CHAINED | (t->wall_read_truncated ? LP_SF_TRUNCATED : 0), 0,
                        t->wall_read_task);
        return;
    }
    const void *top = S.host.top(t->tstate, S.host.safe_read);
    int truncated = 0;
    int n = S.host.capture(t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, &truncated, S.host.safe_read);
    /* the chain is frozen only while detached: discard if it moved, and
     * give its periods back to the next pass (a thread that releases and
     * retakes the GIL thousands of times a second moves under many reads:
     * 0.7% of its wall time was lost so at 10 kHz) */
    if (S.host.holds_gil(t->tstate, S.host.safe_read) != 0 ||
        S.host.top(t->tstate, S.host.safe_read) != top) {
        __atomic_store_n(&t->wall_seen_ns,
                         __atomic_load_n(&t->wall_seen_ns, __ATOMIC_RELAXED) -
                             (uint64_t)periods * S.cfg.period_ns,
                         __ATOMIC_RELAXED);
        return;
    }
    s->flags = 0;
    n = chain_detached(t, s, n < 0 ? 0 : n);
    t->wall_read_cpu_ns = cpu;
    t->wall_read_truncated = truncated;
    t->wall_read_task = detached_task(t);
    uint64_t ran = cpu > t->last_cpu_ns && t->last_cpu_ns ? cpu - t->last_cpu_ns : 0;
    t->last_cpu_ns = cpu;
    commit_detached(t, s, n, periods, s->flags | LP_SF_DETACHED | (truncated ? LP_SF_TRUNCATED : 0), ran,
                    t->wall_read_task);
}

/* CPU mode: commits a read of a thread not holding the GIL, whose stack is
 * frozen, with the CPU time it owes (native time: collect/charge.h). */
static void commit_owed(slot *t, lp_sample *s, int n, int truncated, uint64_t owed_ns) {
    s->flags = 0;
    n = chain_detached(t, s, n);
    t->offered_cpu_ns += owed_ns;
    __atomic_fetch_add(&t->detached_ns, owed_ns, __ATOMIC_RELEASE);
    commit_detached(t, s, n, 1, s->flags | LP_SF_DETACHED | (truncated ? LP_SF_TRUNCATED : 0), owed_ns,
                    detached_task(t));
}

/* CPU mode, the sampler thread: a thread that did not run in this period
 * (it waits, or ran a little between waits) is read where it stands, its
 * stack frozen while it does not hold the GIL, with the CPU time it owes;
 * a signal could end its wait early (EINTR). */
static void cpu_read_detached(slot *t, uint64_t owed_ns) {
    lp_sample *s = lp_ring_reserve(&S.wall_ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return;
    const void *top = S.host.top(t->tstate, S.host.safe_read);
    int truncated = 0;
    int n = S.host.capture(t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, &truncated, S.host.safe_read);
    if (n <= 0 || S.host.holds_gil(t->tstate, S.host.safe_read) != 0 ||
        S.host.top(t->tstate, S.host.safe_read) != top) {
        __atomic_fetch_add(&S.dropped_reads, 1, __ATOMIC_RELAXED);
        return; /* moved: its time stays owed, for the next look */
    }
    commit_owed(t, s, n, truncated, owed_ns);
}

/* CPU mode with outside reads: a thread holding the GIL, read where it runs
 * instead of signalled (collect/outside_read.h), with the CPU time it owes.
 * A read during which the innermost frame moved counts if it still reaches
 * the outermost frame of the thread's last unmoved read (or is cut at the
 * depth limit): the copies then hold a stack of some moment of the read (a
 * generator that yields meanwhile leaves a chain cut at its frame, which
 * does not). Otherwise it is read again at once, up to LP_OUTSIDE_TRIES
 * times, and then the time stays owed, for the next look; carried so, the
 * time of call-heavy stretches went to the next steady line (a 500-deep
 * descent to line A of s_recursion: 0.56 points off at 10 kHz), the further
 * the lower the rate. */
#define LP_OUTSIDE_TRIES 3
static int read_whole(slot *t, lp_sample *s, int *n, int *truncated, int *moved) {
    lp_outside_begin();
    *n = lp_outside_capture(&S.host, t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, truncated, moved);
    int whole = *n > 0 && (!*moved || *truncated ||
                           (s->frames[*n - 1].code == t->outside_root.code &&
                            s->frames[*n - 1].offset == t->outside_root.offset));
    if (whole && lp_outside_unchanged(s->frames, *n)) return 1; /* ended by the caller, after its commit */
    lp_outside_end();
    return 0;
}

/* A running thread's whole read, tried up to LP_OUTSIDE_TRIES times: 1 with
 * its frames chained in s (*n of them) and the read still open (the caller
 * commits it, then lp_outside_end), 0 when every try moved. */
static int read_running(slot *t, lp_sample *s, int *n, int *truncated) {
    int moved = 0, whole = 0;
    for (int try = 0; try < LP_OUTSIDE_TRIES && !whole; try++) {
        *truncated = moved = 0;
        whole = read_whole(t, s, n, truncated, &moved);
        if (!whole) __atomic_fetch_add(&S.outside_retries, 1, __ATOMIC_RELAXED);
    }
    if (!whole) return 0;
    if (!moved) t->outside_root = s->frames[*n - 1];
    s->flags = 0;
    *n = chain_detached(t, s, *n);
    return 1;
}

/* Commits read_running's read, weighing `weight` samples and `ns` of time,
 * and ends it. */
static void commit_running(slot *t, lp_sample *s, int n, uint32_t weight, int truncated, uint64_t ns) {
    commit_detached(t, s, n, weight, s->flags | LP_SF_OUTSIDE | LP_SF_GIL | (truncated ? LP_SF_TRUNCATED : 0),
                    ns, detached_task(t));
    __atomic_fetch_add(&S.outside_samples, 1, __ATOMIC_RELAXED);
    lp_outside_end();
}

static void cpu_read_running(slot *t, uint64_t owed_ns) {
    lp_sample *s = lp_ring_reserve(&S.wall_ring, LP_SAMPLE_MAX_BYTES);
    int n = 0, truncated = 0;
    if (s == NULL || !read_running(t, s, &n, &truncated)) return; /* the time stays owed */
    t->offered_cpu_ns += owed_ns;
    __atomic_fetch_add(&t->detached_ns, owed_ns, __ATOMIC_RELEASE);
    commit_running(t, s, n, 1, truncated, owed_ns);
}

/* Wall mode with outside reads (from 5 kHz): the thread holding the GIL is
 * read where it runs, as in CPU mode, weighing the wall periods since its
 * last read, which it spent running (its split samples divide them into
 * Python, native and system). A read that keeps moving gives its periods
 * back to the next pass. */
static void wall_read_running(slot *t, uint32_t periods) {
    lp_sample *s = lp_ring_reserve(&S.wall_ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return;
    int n = 0, truncated = 0;
    if (!read_running(t, s, &n, &truncated)) {
        __atomic_store_n(&t->wall_seen_ns,
                         __atomic_load_n(&t->wall_seen_ns, __ATOMIC_RELAXED) -
                             (uint64_t)periods * S.cfg.period_ns,
                         __ATOMIC_RELAXED);
        return;
    }
    commit_running(t, s, n, periods, truncated, (uint64_t)periods * S.cfg.period_ns);
}

/* CPU mode with outside reads: a thread that runs without the GIL (native
 * code that released it: numpy's sort, a compression call) has a frozen
 * Python stack, read as a waiting thread's is, through the outside reads'
 * block copies, with the CPU time it owes as native time (its split samples
 * tell native from system per line: aggregate/cpu_split.h). Signalled
 * instead, as before split samples existed, half of a numpy sort loop's
 * 10 kHz came as signals from this thread: 1.2x. */
static void cpu_read_released(slot *t, uint64_t owed_ns) {
    lp_sample *s = lp_ring_reserve(&S.wall_ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return;
    int truncated = 0, moved = 0;
    lp_outside_begin();
    int n = lp_outside_capture(&S.host, t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, &truncated, &moved);
    if (n > 0 && !moved && S.host.holds_gil(t->tstate, S.host.safe_read) == 0 &&
        lp_outside_unchanged(s->frames, n)) {
        commit_owed(t, s, n, truncated, owed_ns);
        __atomic_fetch_add(&S.outside_samples, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&S.outside_retries, 1, __ATOMIC_RELAXED); /* its time stays owed */
    }
    lp_outside_end();
}

/* One look at every thread: the CPU time it spent since the samples asked
 * for so far, in whole periods, is asked of its handler by a signal (one in
 * flight at a time: asks add up in `pending`) while it runs; see above for
 * one that does not. Weighted samples at the rate asked, whatever the tick. */
static void cpu_look(pid_t pid) {
    uint64_t period = S.cfg.period_ns;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
        uint64_t cpu = clock_ns(t->cpu_clock);
        if (cpu == 0) continue; /* the thread is gone */
        uint64_t ran = cpu > t->seen_cpu_ns ? cpu - t->seen_cpu_ns : 0;
        t->seen_cpu_ns = cpu;
        /* a read weighs exactly what the thread owes: with outside reads
         * half a period is enough (the look wakes a little before a
         * thread's clock has gone a whole one: 5.9 kHz of 10 asked else) */
        if (cpu < t->offered_cpu_ns + (S.cfg.outside_reads ? period / 2 : period)) continue;
        uint64_t owed = cpu - t->offered_cpu_ns;
        int gil = S.host.holds_gil(t->tstate, S.host.safe_read);
        if (S.cfg.outside_reads && gil == 1) {
            cpu_read_running(t, owed);
        } else if (S.cfg.outside_reads && gil == 0) {
            cpu_read_released(t, owed);
        } else if (ran >= period / 2 || gil == 1) {
            uint32_t periods = (uint32_t)(owed / period);
            t->offered_cpu_ns += (uint64_t)periods * period;
            if (__atomic_fetch_add(&t->pending, periods, __ATOMIC_ACQ_REL) == 0)
                syscall(SYS_tgkill, pid, __atomic_load_n(&t->tid, __ATOMIC_RELAXED), S.cfg.signo);
        } else if (gil == 0) {
            cpu_read_detached(t, owed);
        }
    }
}

/* Wall mode: how many periods a read of `t` now stands for, rounded, the
 * remainder carried: a pass slower than the period (deep stacks, many
 * threads, a busy machine) loses no wall time. 0: a pass so early that this
 * one stands for none (the next covers it). */
static uint32_t wall_periods(slot *t, uint64_t now) {
    uint64_t seen = __atomic_load_n(&t->wall_seen_ns, __ATOMIC_RELAXED);
    uint64_t period = S.cfg.period_ns;
    if (seen == 0) {
        __atomic_store_n(&t->wall_seen_ns, now, __ATOMIC_RELAXED);
        return 1;
    }
    int64_t ahead = (int64_t)(now - seen) + (int64_t)(period / 2);
    uint64_t n = ahead > 0 ? (uint64_t)ahead / period : 0;
    if (n > UINT32_MAX / 2) n = UINT32_MAX / 2;
    __atomic_store_n(&t->wall_seen_ns, seen + n * period, __ATOMIC_RELAXED);
    return (uint32_t)n;
}

void *lp_sampler_thread_main(void *arg) {
    (void)arg;
    lp_own_tid_add_self();
    /* started or resumed: time before now (a pause) is not the program's */
    uint64_t started = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
        __atomic_store_n(&S.slots[i].wall_seen_ns, started, __ATOMIC_RELAXED);
    __atomic_store_n(&S.wall_started, 1, __ATOMIC_RELEASE);
    pid_t pid = getpid();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (__atomic_load_n(&S.wall_running, __ATOMIC_ACQUIRE)) {
        uint64_t ns = (uint64_t)next.tv_nsec + S.cfg.period_ns;
        next.tv_sec += (time_t)(ns / 1000000000ull);
        next.tv_nsec = (long)(ns % 1000000000ull);
        lp_sleep_while_running(&S.wall_running, &next);
        if (!__atomic_load_n(&S.wall_running, __ATOMIC_ACQUIRE)) break;
        if (!__atomic_load_n(&S.running, __ATOMIC_ACQUIRE)) continue;
        if (S.cfg.mode == LP_MODE_CPU) {
            cpu_look(pid);
            continue;
        }
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
            slot *t = &S.slots[i];
            if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
            int gil = S.host.holds_gil(t->tstate, S.host.safe_read);
            if (gil < 0) continue; /* unreadable: its time goes to the next read */
            uint32_t periods = wall_periods(t, now);
            if (periods == 0) continue;
            if (gil == 1 && S.cfg.outside_reads) {
                t->last_cpu_ns = clock_ns(t->cpu_clock);
                wall_read_running(t, periods);
            } else if (gil == 1) {
                t->last_cpu_ns = clock_ns(t->cpu_clock);
                /* running: it samples itself, weighing the periods asked
                 * for (asks add up while a signal is in flight) */
                if (__atomic_fetch_add(&t->pending, periods, __ATOMIC_ACQ_REL) == 0 &&
                    syscall(SYS_tgkill, pid, __atomic_load_n(&t->tid, __ATOMIC_RELAXED), S.cfg.signo) != 0)
                    /* not sent (the thread ended, or the signal queue is
                     * full): no signal is in flight, so the next pass asks */
                    __atomic_store_n(&t->pending, 0, __ATOMIC_RELEASE);
            } else {
                wall_read_detached(t, periods);
            }
        }
    }
    lp_own_tid_remove_self();
    return NULL;
}
