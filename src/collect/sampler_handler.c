/* collect: the sampler's signal handler and all it reaches, in a file of its
 * own: `make ctest` compiles it and fails if its object calls anything
 * outside an allowlist of async-signal-safe symbols
 * (tests/c/check_handler_symbols.sh). No malloc, no locks, no stdio, no TLS;
 * the frame walker is reached through the host's pointers. It finds its
 * thread's slot from the timer's sigval (index + generation) or by tid (wall
 * signals) and writes one record into that slot's SPSC ring. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "collect/sampler_state.h"

lp_sampler_state lp_sampler_S;
#define S lp_sampler_S

#ifdef TRAP_PERF
#define LP_TRAP_PERF TRAP_PERF
#else
#define LP_TRAP_PERF 6 /* Linux's si_code of a sigtrap perf event (asm-generic/siginfo.h) */
#endif

static uintptr_t context_pc(void *uc) {
    ucontext_t *u = uc;
#if defined(__x86_64__)
    return (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)u->uc_mcontext.pc;
#else
    (void)u;
    return 0;
#endif
}

static int after_syscall(uintptr_t pc) {
#if defined(__x86_64__)
    /* the two bytes before PC are on the same (mapped) page as PC */
    if ((pc & 4095u) < 2) return 0;
    const uint8_t *p = (const uint8_t *)pc;
    return p[-2] == 0x0f && p[-1] == 0x05;
#else
    (void)pc;
    return 0;
#endif
}

/* The slot a timer signal was armed for, NULL if that registration is over
 * (the slot may have a new owner: a different generation). *gen is the
 * generation to re-check once the handler is counted in. */
static lp_sampler_slot *slot_by_sigval(uintptr_t v, uint32_t *gen) {
    uintptr_t idx = v & ((1u << LP_SLOT_INDEX_BITS) - 1);
    if (idx >= LP_SAMPLER_MAX_THREADS) return NULL;
    lp_sampler_slot *t = &S.slots[idx];
    *gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
    return lp_sampler_sigval((int)idx, *gen) == v ? t : NULL;
}

static lp_sampler_slot *slot_by_tid(pid_t tid, uint32_t *gen) {
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        lp_sampler_slot *t = &S.slots[i];
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
        *gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) == tid) return t;
    }
    return NULL;
}

static void take_sample(lp_sampler_slot *t, uint32_t weight, uintptr_t pc, void *uc, int split) {
    const lp_sampler_host *h = &S.host;
    lp_sample *s = lp_ring_reserve(&t->ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return; /* counted by the ring */
    lp_reader rd = t->safe_reads ? h->safe_read : h->interrupted_read;
    uint32_t flags = split ? LP_SF_SPLIT : 0;
    if (h->holds_gil(t->tstate, rd) == 1) flags |= LP_SF_GIL;
    if ((pc >= h->interp_lo && pc < h->interp_hi) || (pc >= h->tls_lo && pc < h->tls_hi))
        flags |= LP_SF_IN_INTERP;
    if (after_syscall(pc)) flags |= LP_SF_SYSCALL;
    if (lp_ranges_has(&h->eval, pc)) flags |= LP_SF_IN_EVAL;
    int truncated = 0;
    int n = h->capture(t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, &truncated, rd);
    if (n < 0) n = 0;
    if (n > LP_SAMPLER_MAX_DEPTH) n = LP_SAMPLER_MAX_DEPTH;
    if (truncated) {
        flags |= LP_SF_TRUNCATED;
        __atomic_fetch_add(&S.truncated, 1, __ATOMIC_RELAXED);
    }
    /* only the frames that changed: deep stacks at high rates fit the ring
     * (not with --native, whose addresses follow the frames) */
    uint32_t shared = 0;
    if (!h->native) {
        shared = lp_frame_chain_encode(&t->chain, s->frames, (uint32_t)n);
        flags |= LP_SF_CHAINED;
        n -= (int)shared;
    }
    s->weight = weight;
    s->flags = flags;
    s->depth = (uint32_t)n;
    s->shared = shared;
    s->task = h->task ? h->task(t->tstate, rd) : 0;
    s->reserved = 0;
    s->thread_key = t->thread_key;
    s->cpu_ns = split ? S.cfg.split_period_ns : 0;
    struct timespec now; /* vDSO, async-signal-safe (POSIX) */
    s->t_ns = clock_gettime(CLOCK_MONOTONIC, &now) == 0
                  ? (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec
                  : 0;
    if (!(flags & LP_SF_IN_INTERP)) /* the other threads' clock asks (other_threads.h) */
        __atomic_store_n(&t->native_t_ns, s->t_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&t->sample_t_ns, s->t_ns, __ATOMIC_RELEASE);
    int nn = 0;
    if (h->native && !split) { /* a split sample's stack is its line's only */
        nn = h->native(uc, (uintptr_t *)(void *)(s->frames + n), LP_NATIVE_MAX_DEPTH);
        if (nn < 0) nn = 0;
    }
    s->native_depth = (uint32_t)nn;
    lp_ring_commit(&t->ring, (uint32_t)(sizeof(lp_sample) + (size_t)n * sizeof(lp_rawframe) +
                                        (size_t)nn * sizeof(uintptr_t)));
    if (split) {
        __atomic_fetch_add(&S.split_samples, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&t->samples_taken, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&S.signals, 1, __ATOMIC_RELAXED);
    }
    lp_sampler_ask_drain(&t->ring);
}

/* A SIGTRAP that no perf event raised (a breakpoint, raise(SIGTRAP)): lprof
 * took SIGTRAP only where its action was the default, so that action it
 * gets, from now on: it is pending again (blocked while this handler runs)
 * and acts when the handler returns. */
static void pass_on_sigtrap(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL; /* the mask is empty: zeroed */
    sigaction(SIGTRAP, &dfl, NULL);
    raise(SIGTRAP);
}

/* A perf event's sample weighs the periods of the thread's CPU clock since
 * its last one, rounded, the remainder carried: overflows during a long
 * stay in the kernel (a page-fault storm, a big copy) raise one signal (a
 * sigtrap still pending takes no second), and counted as one period each
 * they left the thread's time behind what its clock said until the stall
 * check closed its event (most of a 10 kHz numpy run on no line). 0: a
 * queued signal whose time an earlier one took. */
static uint32_t perf_weight(lp_sampler_slot *t) {
    struct timespec ts;
    if (clock_gettime(t->cpu_clock, &ts) != 0) return 1;
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t period = S.cfg.period_ns, seen = t->perf_seen_ns;
    if (now <= seen) return 0;
    uint64_t n = (now - seen + period / 2) / period;
    if (n > 1000000u) n = 1000000u;
    t->perf_seen_ns = seen + n * period;
    return (uint32_t)n;
}

void lp_sampler_on_signal(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    /* si_code: a perf event's own (fasync POLL_IN, sigtrap TRAP_PERF), as
     * TRAP_BRKPT shares POLL_IN's value */
    int perf_overflow = sig == SIGTRAP ? si->si_code == LP_TRAP_PERF : si->si_code == POLL_IN;
    if (sig == SIGTRAP && !perf_overflow) {
        pass_on_sigtrap();
        goto out;
    }
    if (!__atomic_load_n(&S.running, __ATOMIC_ACQUIRE)) goto out;
    lp_sampler_slot *t;
    uint32_t gen = 0, weight = 1;
    if (si->si_code == SI_TIMER) {
        t = slot_by_sigval((uintptr_t)si->si_value.sival_ptr, &gen);
        if (si->si_overrun > 0) weight += (uint32_t)si->si_overrun;
    } else {
        t = slot_by_tid((pid_t)syscall(SYS_gettid), &gen);
    }
    if (t == NULL) goto out;
    /* CPU mode without timers: a perf event's overflow (one period), or the
     * sampler thread's ask (the periods it asked for: several asks coalesce
     * into one signal); anything else is not ours to take */
    int cpu_ask = S.cfg.mode == LP_MODE_CPU && si->si_code != SI_TIMER;
    /* beside outside reads: a split event's sample, which accounts no CPU
     * time (the reads do) */
    int split = si->si_code != SI_TIMER && perf_overflow && S.cfg.cpu_source == LP_CPU_THREAD &&
                S.cfg.outside_reads && S.cfg.split_period_ns;
    if (split) {
        cpu_ask = 0;
    } else if (cpu_ask) {
        if (S.cfg.cpu_source == LP_CPU_PERF && perf_overflow) {
            if ((weight = perf_weight(t)) == 0) goto out;
        } else if (S.cfg.cpu_source != LP_CPU_THREAD || si->si_code != SI_TKILL ||
                   (weight = __atomic_exchange_n(&t->pending, 0, __ATOMIC_ACQ_REL)) == 0)
            goto out;
    } else if (S.cfg.mode == LP_MODE_WALL && si->si_code == SI_TKILL) {
        /* the wall thread's ask: the periods since it last charged this
         * thread (several asks coalesce into one signal) */
        if ((weight = __atomic_exchange_n(&t->pending, 0, __ATOMIC_ACQ_REL)) == 0) goto out;
    }
    /* counted in before the re-check, so the drain cannot recycle the slot
     * under us (it checks in_handler after marking the slot DEAD) */
    __atomic_fetch_add(&t->in_handler, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&t->state, __ATOMIC_SEQ_CST) == LP_SLOT_ACTIVE &&
        __atomic_load_n(&t->gen, __ATOMIC_SEQ_CST) == gen) {
        uintptr_t pc = context_pc(uc);
        /* every expiry counts as accounted CPU time, taken or not: the
         * thread's tail at its end is what no expiry covered */
        if (si->si_code == SI_TIMER || cpu_ask) __atomic_fetch_add(&t->expiries, weight, __ATOMIC_RELAXED);
        if (split) __atomic_fetch_add(&t->split_taken, 1, __ATOMIC_RELAXED);
        if (pc >= S.host.self_lo && pc < S.host.self_hi) {
            /* inside lprof itself (the -l tracer): not the program's time */
            if (!split) __atomic_fetch_add(&S.in_profiler, 1, __ATOMIC_RELAXED);
        } else {
            take_sample(t, weight, pc, uc, split);
        }
    }
    __atomic_fetch_sub(&t->in_handler, 1, __ATOMIC_RELEASE);
out:
    errno = saved_errno;
}
