/* collect: the signal-based sampler's set-up side (see collect/sampler.h):
 * per-thread CPU timers (timer_create on the thread's CPU clock,
 * SIGEV_THREAD_ID, sigval = slot index + generation), perf events, or the
 * sampler thread (collect/sampler_thread.c, started and stopped here);
 * thread slots, rings, drain and counters. The handler is
 * collect/sampler_handler.c. Pure C: the interpreter is reached
 * only through the lp_sampler_host given at start. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "collect/ring.h"
#include "collect/sampler.h"
#include "collect/sampler_state.h"
#include "collect/other_threads.h"
#include "collect/outside_read.h"
#include "collect/perf_clock.h"
#include "common/own_map.h"
#include "common/own_tids.h"
#include "common/thread_start.h"
#include "common/wakeable_sleep.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid /* glibc 2.36 lacks the macro */
#endif

#define S lp_sampler_S
typedef lp_sampler_slot slot;

/* ---- set-up (GIL held) ---- */

typedef struct {
    uintptr_t want, *lo, *hi;
} text_probe;

static int find_text_segment(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    text_probe *probe = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (probe->want >= lo && probe->want < hi) {
            *probe->lo = lo;
            *probe->hi = hi;
            return 1;
        }
    }
    return 0;
}

int lp_sampler_text_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t l = 0, h = 0;
    text_probe probe = {addr, &l, &h};
    if (!dl_iterate_phdr(find_text_segment, &probe)) return -1;
    *lo = l;
    *hi = h;
    return 0;
}

int lp_sampler_symbol_range(const char *name, uintptr_t *lo, uintptr_t *hi) {
    void *fn = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) return -1;
    *lo = (uintptr_t)fn;
    *hi = *lo + sym->st_size;
    return 0;
}

static void child_after_fork(void) {
    /* timers and the wall thread are not inherited: disable cleanly */
    __atomic_store_n(&S.running, 0, __ATOMIC_RELEASE);
    S.wall_running = 0;
    S.paused = 0;
    lp_outside_end(); /* a read the parent's sampler thread was in is nobody's here */
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        S.slots[i].state = LP_SLOT_FREE;
        S.slots[i].has_timer = 0;
        S.slots[i].has_perf = 0; /* the events' pages are not inherited (perf_clock.h) */
        if (S.ring_mem) lp_ring_reset(&S.slots[i].ring);
    }
    if (S.ring_mem) {
        lp_ring_reset(&S.wall_ring);
        lp_ring_reset(&S.others_ring);
    }
    S.perf_pending = 0;
    S.behind_asked = 0; /* a pending call of the parent's drains nothing here */
    lp_others_after_fork();
    lp_own_tids_reset();
    lp_perf_clock_after_fork();
}

static int setup_memory(void) {
    if (S.ring_mem) return 0;
    size_t slots = (size_t)LP_SAMPLER_MAX_THREADS * LP_SAMPLER_RING_BYTES;
    size_t total = slots + LP_SAMPLER_WALL_RING_BYTES + LP_SAMPLER_RING_BYTES;
    void *m = lp_own_map(total, MAP_NORESERVE);
    if (m == MAP_FAILED) return -1;
    S.ring_mem = m;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
        lp_ring_init(&S.slots[i].ring, S.ring_mem + (size_t)i * LP_SAMPLER_RING_BYTES, LP_SAMPLER_RING_BYTES);
    lp_ring_init(&S.wall_ring, S.ring_mem + slots, LP_SAMPLER_WALL_RING_BYTES);
    lp_ring_init(&S.others_ring, S.ring_mem + slots + LP_SAMPLER_WALL_RING_BYTES, LP_SAMPLER_RING_BYTES);
    return 0;
}

/* A real-time signal, never SIGPROF: a program may install its own SIGPROF
 * handler and ITIMER_PROF at any time after lprof started (profilers and
 * timeouts do), and must then get only its own signals while lprof keeps its
 * samples. The first of SIGRTMIN+4.. that nobody handles yet. */
int lp_sampler_default_signal(void) {
    for (int sig = SIGRTMIN + 4; sig < SIGRTMAX; sig++) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == lp_sampler_on_signal) return sig;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) return sig;
    }
    return SIGRTMIN + 4;
}

static int start_wall_thread(void) {
    __atomic_store_n(&S.wall_running, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&S.wall_started, 0, __ATOMIC_RELEASE);
    int rc = lp_thread_create_quiet(&S.wall_thread, lp_sampler_thread_main, NULL); /* it takes no signals */
    if (rc != 0) S.wall_running = 0;
    else lp_wait_for_flag(&S.wall_started, LP_THREAD_START_WAIT_NS); /* see common/thread_start.h */
    return rc;
}

static void stop_wall_thread(void) {
    if (!S.wall_running) return;
    lp_sleep_stop(&S.wall_running); /* wakes it: the join takes microseconds */
    /* the join may still wait for a tick in progress: let the program's threads run */
    void *saved = S.host.release_gil ? S.host.release_gil() : NULL;
    pthread_join(S.wall_thread, NULL);
    if (S.host.reacquire_gil) S.host.reacquire_gil(saved);
}

/* lprof's handler on SIGTRAP, where nobody else handles it (the default
 * action): the handler passes on any SIGTRAP but a perf event's, by that
 * default action (sampler_handler.c). 0 when it holds SIGTRAP. Asked of
 * the kernel each start: the program may have taken SIGTRAP since. */
static int take_sigtrap(void) {
    struct sigaction old;
    if (sigaction(SIGTRAP, NULL, &old) != 0) return -1;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == lp_sampler_on_signal) return 0;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = lp_sampler_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGTRAP, &sa, NULL) == 0 ? 0 : -1;
}

/* CPU mode, perf source: which signal the events raise, asked of the kernel
 * by probes on this thread (the handler is in, not running: a signal one
 * sends before its close is ignored). SIGTRAP where lprof holds it and the
 * kernel has sigtrap events, else the configured signal; no event at all:
 * the sampler thread's source instead. */
static void choose_perf_signal(void) {
    pid_t me = (pid_t)syscall(SYS_gettid);
    if (S.perf_signo == SIGTRAP) {
        void *probe = take_sigtrap() == 0 ? lp_perf_clock_open(me, S.cfg.period_ns, SIGTRAP) : NULL;
        if (!probe) S.perf_signo = S.cfg.signo;
        lp_perf_clock_close(probe);
    }
    if (S.perf_signo != SIGTRAP) {
        void *probe = lp_perf_clock_open(me, S.cfg.period_ns, S.cfg.signo);
        if (!probe) S.cfg.cpu_source = LP_CPU_THREAD;
        lp_perf_clock_close(probe);
    }
}

/* Outside reads with split samples beside them (lp_sampler_config). */
static int split_wanted(void) {
    return S.cfg.cpu_source == LP_CPU_THREAD && S.cfg.outside_reads && S.cfg.split_period_ns > 0;
}

/* A thread's split event, where none is open and the kernel's switch-on is
 * over; failing, the thread's reads keep their own rule. */
static void open_split(slot *t) {
    if (!split_wanted() || S.split_pending || S.paused || t->has_perf) return;
    t->split_start_ns = clock_ns(t->cpu_clock);
    __atomic_store_n(&t->split_taken, 0, __ATOMIC_RELAXED);
    t->perf =
        lp_perf_clock_open(__atomic_load_n(&t->tid, __ATOMIC_RELAXED), S.cfg.split_period_ns, S.cfg.signo);
    t->has_perf = t->perf != NULL;
}

int lp_sampler_start(const lp_sampler_config *cfg, const lp_sampler_host *host, const char **why) {
    if (S.running) {
        *why = "sampler already running";
        return -1;
    }
    if (!host->capture || !host->holds_gil || !host->top || !host->interrupted_read || !host->safe_read ||
        !host->release_gil != !host->reacquire_gil) {
        *why = "sampler host lacks a frame walker function";
        return -1;
    }
    if (setup_memory() < 0) {
        *why = "cannot reserve memory for the sample rings";
        return -1;
    }
    if (!S.atfork_done) {
        pthread_atfork(NULL, NULL, child_after_fork);
        S.atfork_done = 1;
    }
    S.cfg = *cfg;
    S.host = *host;
    if (S.installed_signo != cfg->signo) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = lp_sampler_on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(cfg->signo, &sa, NULL) != 0) {
            *why = "sigaction failed for the sampling signal";
            return -1;
        }
        S.installed_signo = cfg->signo;
    }
    S.perf_signo = cfg->signo;
    S.perf_pending = 0;
    S.split_pending = 0;
    if (split_wanted() && !lp_perf_clock_warm_done()) {
        lp_perf_clock_warm_on_done(lp_sampler_drain_wake);
        S.split_pending = 1; /* the reads' own rule until lp_sampler_settle */
    }
    if (cfg->mode == LP_MODE_CPU && cfg->cpu_source == LP_CPU_PERF) {
        /* the drain is woken when the kernel's switch-on is over */
        lp_perf_clock_warm_on_done(lp_sampler_drain_wake);
        if (cfg->perf_trap && take_sigtrap() == 0) S.perf_signo = SIGTRAP; /* the probe decides */
        if (lp_perf_clock_warm_done()) choose_perf_signal();
        else S.perf_pending = 1; /* CPU timers until lp_sampler_settle: the program does not wait */
    }
    __atomic_store_n(&S.running, 1, __ATOMIC_RELEASE);
    S.paused = 0;
    if ((S.cfg.mode == LP_MODE_WALL || S.cfg.cpu_source == LP_CPU_THREAD) && start_wall_thread() != 0) {
        __atomic_store_n(&S.running, 0, __ATOMIC_RELEASE);
        *why = "cannot start the sampler thread";
        return -1;
    }
    /* failing: the other threads' CPU time is not counted (their stats say 0 ticks) */
    if (cfg->others) lp_others_start();
    return 0;
}

static void disarm(slot *t) {
    if (t->has_timer) {
        timer_delete(t->timer);
        t->has_timer = 0;
    }
    if (t->has_perf) {
        lp_perf_clock_close(t->perf);
        t->has_perf = 0;
    }
}

void lp_sampler_stop(void) {
    if (!S.running) return;
    lp_others_stop(); /* its last tick reads the slots still registered */
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (t->state == LP_SLOT_ACTIVE) __atomic_store_n(&t->state, LP_SLOT_DEAD, __ATOMIC_SEQ_CST);
        disarm(t);
    }
    stop_wall_thread();
    /* our handler stays installed and does nothing while stopped: a signal
     * still pending from a deleted timer must not kill the process */
    __atomic_store_n(&S.running, 0, __ATOMIC_RELEASE);
    S.paused = 0;
}

/* it_value 0 disarms; the period re-arms (expiries restart from now) */
static void set_timer(slot *t, uint64_t period_ns) {
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(period_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(period_ns % 1000000000ull);
    its.it_value = its.it_interval;
    timer_settime(t->timer, 0, &its, NULL);
}

void lp_sampler_pause(void) {
    if (!S.running || S.paused) return;
    S.paused = 1;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (t->has_timer) set_timer(t, 0);
        else if (t->has_perf) { /* closed: no signal from it after this (reopened by resume) */
            lp_perf_clock_close(t->perf);
            t->has_perf = 0;
        } else if (!(S.cfg.mode == LP_MODE_CPU && S.cfg.cpu_source == LP_CPU_THREAD &&
                     t->state == LP_SLOT_ACTIVE))
            continue;
        t->paused_cpu_ns = clock_ns(t->cpu_clock);
    }
    stop_wall_thread();
}

void lp_sampler_release_sigtrap(void) {
    if (S.perf_signo != SIGTRAP) return;
    /* the events reopen raising the real-time signal; lprof's handler stays
     * on SIGTRAP until the program's replaces it (a SIGTRAP still pending
     * meets lprof's, which takes it as a sample's) */
    int was_paused = S.paused;
    if (!was_paused) lp_sampler_pause();
    S.perf_signo = S.cfg.signo;
    if (!was_paused) lp_sampler_resume();
}

int lp_sampler_settle(void) {
    if (S.split_pending && S.running && lp_perf_clock_warm_done()) {
        S.split_pending = 0;
        for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
            if (__atomic_load_n(&S.slots[i].state, __ATOMIC_ACQUIRE) == LP_SLOT_ACTIVE)
                open_split(&S.slots[i]);
        return 1;
    }
    if (!S.perf_pending || !S.running || !lp_perf_clock_warm_done()) return 0;
    S.perf_pending = 0;
    choose_perf_signal();
    if (S.cfg.cpu_source != LP_CPU_PERF) {
        S.cfg.cpu_source = LP_CPU_TIMERS; /* no event here after all: the timers go on */
        S.perf_signo = S.cfg.signo;
        return 1;
    }
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (!t->has_timer || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
        /* paused: no event now, resume opens it (perf_pending is over) */
        t->perf_seen_ns = clock_ns(t->cpu_clock);
        void *ev = S.paused ? NULL
                            : lp_perf_clock_open(__atomic_load_n(&t->tid, __ATOMIC_RELAXED), S.cfg.period_ns,
                                                 S.perf_signo);
        if (!S.paused && !ev) continue; /* its timer goes on */
        /* a signal the timer had queued is still a sample of its own
         * period: its slot and generation are unchanged */
        timer_delete(t->timer);
        t->has_timer = 0;
        t->perf = ev;
        t->has_perf = ev != NULL;
    }
    return 1;
}

int lp_sampler_check_sigtrap(void) {
    if (!S.running || S.perf_signo != SIGTRAP) return 0;
    struct sigaction now;
    if (sigaction(SIGTRAP, NULL, &now) != 0) return 0;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == lp_sampler_on_signal) return 0;
    lp_sampler_release_sigtrap();
    return 1;
}

void lp_sampler_resume(void) {
    if (!S.paused) return;
    S.paused = 0;
    if (!S.running) return;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (!t->has_timer || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
        /* CPU spent while paused is not the program's to sample: keep it
         * out of what the thread's end counts as not covered by expiries */
        uint64_t now = clock_ns(t->cpu_clock);
        if (t->paused_cpu_ns && now > t->paused_cpu_ns) t->start_cpu_ns += now - t->paused_cpu_ns;
        t->paused_cpu_ns = 0;
        set_timer(t, S.cfg.period_ns);
    }
    if (S.cfg.mode == LP_MODE_CPU && S.cfg.cpu_source != LP_CPU_TIMERS) {
        for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
            slot *t = &S.slots[i];
            if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
            if (S.cfg.cpu_source == LP_CPU_PERF && !S.perf_pending && !t->has_perf) {
                t->perf_seen_ns = clock_ns(t->cpu_clock);
                t->perf = lp_perf_clock_open(__atomic_load_n(&t->tid, __ATOMIC_RELAXED), S.cfg.period_ns,
                                             S.perf_signo);
                t->has_perf = t->perf != NULL; /* failing: its CPU time goes to its tail */
            }
            open_split(t);
            uint64_t now = clock_ns(t->cpu_clock);
            if (t->paused_cpu_ns && now > t->paused_cpu_ns) {
                t->start_cpu_ns += now - t->paused_cpu_ns;
                t->offered_cpu_ns += now - t->paused_cpu_ns;
            }
            t->paused_cpu_ns = 0;
            t->seen_cpu_ns = now;
        }
    }
    if (S.cfg.mode == LP_MODE_WALL)
        for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
            if (__atomic_load_n(&S.slots[i].state, __ATOMIC_ACQUIRE) == LP_SLOT_ACTIVE)
                open_split(&S.slots[i]);
    if (S.cfg.mode == LP_MODE_WALL || S.cfg.cpu_source == LP_CPU_THREAD)
        start_wall_thread(); /* failing: no samples from here */
}

int lp_sampler_running(void) { return __atomic_load_n(&S.running, __ATOMIC_ACQUIRE); }

int lp_sampler_register(const void *tstate, uint64_t thread_key, pid_t tid, int safe_reads) {
    if (!S.running || !S.ring_mem) return -1;
    if (lp_sampler_is_registered(thread_key)) return -1;
    slot *t = NULL;
    int idx = -1;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS && !t; i++)
        if (S.slots[i].state == LP_SLOT_FREE) {
            t = &S.slots[i];
            idx = i;
        }
    if (!t) return -1;
    lp_ring_reset(&t->ring);
    /* the new owner's first stacks are whole (the wall thread may still be
     * reading the slot's earlier owner: either way, both ends agree) */
    lp_frame_chain_reset(&t->chain);
    lp_frame_chain_reset(&t->wall_chain);
    t->wall_read_cpu_ns = 0;
    t->wall_read_task = 0;
    memset(&t->outside_root, 0, sizeof t->outside_root);
    __atomic_store_n(&t->wall_seen_ns, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
    /* a new owner: timer signals queued for an earlier one no longer match */
    __atomic_store_n(&t->gen, t->gen + 1, __ATOMIC_RELEASE);
    t->tstate = tstate;
    t->thread_key = thread_key;
    __atomic_store_n(&t->tid, tid, __ATOMIC_RELAXED);
    t->safe_reads = safe_reads;
    t->cpu_clock = (clockid_t)((~(unsigned)tid << 3) | 6); /* == pthread_getcpuclockid for tid */
    t->last_cpu_ns = 0;
    t->expiries = t->samples_taken = 0;
    t->start_cpu_ns = clock_ns(t->cpu_clock);
    t->paused_cpu_ns = 0;
    __atomic_store_n(&t->end_cpu_ns, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&t->native_t_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->sample_t_ns, 0, __ATOMIC_RELAXED);
    t->seen_cpu_ns = t->offered_cpu_ns = t->start_cpu_ns;
    __atomic_store_n(&t->detached_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->pending, 0, __ATOMIC_RELAXED);
    t->charged_ns = 0;
    t->allowed_ns = UINT64_MAX;
    if (S.cfg.mode == LP_MODE_CPU && S.cfg.cpu_source == LP_CPU_PERF && !S.perf_pending) {
        t->perf_seen_ns = t->start_cpu_ns;
        t->perf = lp_perf_clock_open(tid, S.cfg.period_ns, S.perf_signo);
        if (!t->perf) return -1;
        t->has_perf = 1;
        __atomic_store_n(&t->state, LP_SLOT_ACTIVE, __ATOMIC_RELEASE);
    } else if (S.cfg.mode == LP_MODE_CPU && S.cfg.cpu_source != LP_CPU_THREAD) { /* timers, or perf pending */
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = S.cfg.signo;
        sev.sigev_value.sival_ptr = (void *)lp_sampler_sigval(idx, t->gen);
        sev.sigev_notify_thread_id = tid;
        if (timer_create(t->cpu_clock, &sev, &t->timer) != 0) return -1;
        t->has_timer = 1;
        __atomic_store_n(&t->state, LP_SLOT_ACTIVE, __ATOMIC_RELEASE);
        if (!S.paused) set_timer(t, S.cfg.period_ns);
    } else {
        open_split(t);
        __atomic_store_n(&t->state, LP_SLOT_ACTIVE, __ATOMIC_RELEASE);
    }
    return idx;
}

void lp_sampler_unregister(uint64_t thread_key) {
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (t->state == LP_SLOT_ACTIVE && t->thread_key == thread_key) {
            __atomic_store_n(&t->state, LP_SLOT_DEAD, __ATOMIC_SEQ_CST);
            disarm(t);
        }
    }
}

/* The calling thread's CPU time that no timer expiry covered, as an
 * LP_SF_TAIL sample. Called with the sampling signal blocked on this thread,
 * so it is the ring's only producer; the slot is still ACTIVE, so no drain
 * frees it meanwhile. A thread that was never sampled carries its own stack
 * (where it is ending); otherwise the drain charges its last sample's. */
static void account_tail(slot *t, const lp_rawframe *ran) {
    uint64_t cpu = clock_ns(t->cpu_clock);
    uint64_t covered = t->start_cpu_ns + __atomic_load_n(&t->expiries, __ATOMIC_RELAXED) * S.cfg.period_ns +
                       __atomic_load_n(&t->detached_ns, __ATOMIC_ACQUIRE);
    if (cpu <= covered) return;
    lp_sample *s = lp_ring_reserve(&t->ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return;
    int n = 0, truncated = 0;
    if (__atomic_load_n(&t->samples_taken, __ATOMIC_RELAXED) == 0) {
        int skip = ran != NULL; /* frames[0] is the target's */
        n = S.host.capture(t->tstate, s->frames + skip, LP_SAMPLER_MAX_DEPTH - skip, &truncated, NULL);
        if (n < 0) n = 0;
        if (n > LP_SAMPLER_MAX_DEPTH - skip) n = LP_SAMPLER_MAX_DEPTH - skip;
        if (skip) {
            s->frames[0] = *ran;
            n++;
        }
    }
    s->weight = 0;
    s->flags = LP_SF_TAIL | (truncated ? LP_SF_TRUNCATED : 0);
    s->depth = (uint32_t)n;
    s->native_depth = 0;
    s->task = s->reserved = 0; /* charged to the thread's last stack, whole */
    s->thread_key = t->thread_key;
    s->cpu_ns = cpu - covered;
    s->t_ns = 0; /* not a moment: kept off the timeline */
    lp_ring_commit(&t->ring, (uint32_t)(sizeof(lp_sample) + (size_t)n * sizeof(lp_rawframe)));
}

void lp_sampler_unregister_self(uint64_t thread_key, const lp_rawframe *ran) {
    pid_t me = (pid_t)syscall(SYS_gettid);
    sigset_t block, old;
    sigemptyset(&block);
    if (S.cfg.signo > 0) sigaddset(&block, S.cfg.signo);
    if (S.perf_signo > 0) sigaddset(&block, S.perf_signo);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (t->state != LP_SLOT_ACTIVE || t->thread_key != thread_key) continue;
        if (S.running && S.cfg.mode == LP_MODE_CPU &&
            (t->has_timer || t->has_perf || S.cfg.cpu_source == LP_CPU_THREAD) &&
            __atomic_load_n(&t->tid, __ATOMIC_RELAXED) == me)
            account_tail(t, ran);
        if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) == me) /* for the other threads' clock */
            __atomic_store_n(&t->end_cpu_ns, clock_ns(t->cpu_clock), __ATOMIC_RELEASE);
        __atomic_store_n(&t->state, LP_SLOT_DEAD, __ATOMIC_SEQ_CST);
        disarm(t);
    }
    /* an expiry still pending is delivered now and ignored: the slot is
     * DEAD, and its CPU time is in the tail */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int lp_sampler_is_registered(uint64_t thread_key) {
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
        if (S.slots[i].state == LP_SLOT_ACTIVE && S.slots[i].thread_key == thread_key) return 1;
    return 0;
}

const void *lp_sampler_slot_tstate(int i, uint64_t *thread_key) {
    if (i < 0 || i >= LP_SAMPLER_MAX_THREADS || S.slots[i].state != LP_SLOT_ACTIVE) return NULL;
    *thread_key = S.slots[i].thread_key;
    return S.slots[i].tstate;
}

/* A handler's record with its whole stack again (frame_chain.h), in
 * `whole`; NULL when it cannot follow the previous one (counted dropped). */
static const lp_sample *unchain(const lp_sample *s, lp_frame_chain *drained, lp_sample *whole) {
    *whole = *s;
    int n =
        lp_frame_chain_decode(drained, s->frames, s->depth, s->shared, whole->frames, LP_SAMPLER_MAX_DEPTH);
    if (n < 0) {
        __atomic_fetch_add(&S.dropped_reads, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    whole->depth = (uint32_t)n;
    whole->shared = 0;
    whole->flags &= ~LP_SF_CHAINED;
    return whole;
}

static uint64_t drain_ring(lp_ring *r, int slot_index, lp_sample_fn fn, void *arg) {
    uint64_t n = 0;
    uint32_t len;
    const lp_sample *s;
    /* room for one whole sample (frames only: a chained one has no native part) */
    _Alignas(lp_sample) unsigned char room[sizeof(lp_sample) + LP_SAMPLER_MAX_DEPTH * sizeof(lp_rawframe)];
    while ((s = lp_ring_peek(r, &len)) != NULL) {
        if (s->flags & LP_SF_CHAINED) {
            /* a thread's own ring, or the wall ring's records of one slot */
            uint32_t at = slot_index >= 0 ? (uint32_t)slot_index : s->chain_slot;
            if (at < LP_SAMPLER_MAX_THREADS)
                s = unchain(s, slot_index >= 0 ? &S.slots[at].drained : &S.slots[at].wall_drained,
                            (lp_sample *)(void *)room);
            else s = NULL;
        }
        if (s != NULL) fn(s, slot_index, arg);
        lp_ring_release(r);
        n++;
    }
    return n;
}

/* A thread that blocks the sampling signal while it computes lets its perf
 * event's signals queue up, one per period; when the user's queue of
 * real-time signals is full, the kernel sends SIGIO instead, whose default
 * action ends the process. So an event whose thread is more than
 * LP_PERF_MAX_BEHIND periods behind is closed: its CPU time goes to its
 * tail (at most LP_PERF_MAX_BEHIND plus a drain period's worth queue). */
#define LP_PERF_MAX_BEHIND 1000u

static void close_stalled_perf(slot *t) {
    if (!t->has_perf || t->state != LP_SLOT_ACTIVE) return;
    uint64_t cpu = clock_ns(t->cpu_clock);
    int split = split_wanted();
    uint64_t period = split ? S.cfg.split_period_ns : S.cfg.period_ns;
    uint64_t covered = split ? t->split_start_ns + __atomic_load_n(&t->split_taken, __ATOMIC_RELAXED) * period
                             : t->start_cpu_ns + __atomic_load_n(&t->expiries, __ATOMIC_RELAXED) * period;
    if (cpu <= covered + (uint64_t)LP_PERF_MAX_BEHIND * period) return;
    lp_perf_clock_close(t->perf);
    t->has_perf = 0;
    __atomic_fetch_add(&S.perf_stalled, 1, __ATOMIC_RELAXED);
}

int lp_sampler_drain_wait(double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)(seconds * 1e9);
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    if (!__atomic_load_n(&S.drain_asked, __ATOMIC_ACQUIRE)) lp_futex_wait_until(&S.drain_asked, 0, &until);
    return __atomic_exchange_n(&S.drain_asked, 0, __ATOMIC_ACQ_REL);
}

void lp_sampler_drain_wake(void) {
    __atomic_store_n(&S.drain_asked, 1, __ATOMIC_RELEASE);
    lp_futex_wake(&S.drain_asked, INT_MAX);
}

/* CPU mode: what a slot's samples may charge in all, from its thread's CPU
 * clock now (or at its end) less the time before registration, paused, or
 * covered by detached reads (charged through the wall ring). Samples
 * committed after this read are held to it too: a rare one loses the part
 * of its period that ran after the read. */
static void set_allowance(slot *t) {
    uint64_t cpu = __atomic_load_n(&t->end_cpu_ns, __ATOMIC_ACQUIRE);
    if (cpu == 0) cpu = clock_ns(t->cpu_clock); /* 0: the thread is gone */
    uint64_t before = t->start_cpu_ns + __atomic_load_n(&t->detached_ns, __ATOMIC_ACQUIRE);
    t->allowed_ns = cpu == 0 ? UINT64_MAX : cpu > before ? cpu - before : 0;
}

uint64_t lp_sampler_take_cpu(int i, uint64_t want_ns) {
    if (i < 0 || i >= LP_SAMPLER_MAX_THREADS || S.cfg.mode != LP_MODE_CPU) return want_ns;
    slot *t = &S.slots[i];
    uint64_t left = t->allowed_ns > t->charged_ns ? t->allowed_ns - t->charged_ns : 0;
    uint64_t granted = want_ns < left ? want_ns : left;
    t->charged_ns += granted;
    return granted;
}

uint64_t lp_sampler_drain(lp_sample_fn fn, void *arg) {
    if (!S.ring_mem) return 0;
    uint64_t n = 0;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        slot *t = &S.slots[i];
        if (t->state == LP_SLOT_FREE) continue;
        close_stalled_perf(t);
        if (S.cfg.mode == LP_MODE_CPU && !lp_ring_empty(&t->ring)) set_allowance(t);
        n += drain_ring(&t->ring, i, fn, arg);
        /* a DEAD slot is free once drained and no handler is inside it; a
         * timer signal still queued for it finds a new generation later */
        if (t->state == LP_SLOT_DEAD && __atomic_load_n(&t->in_handler, __ATOMIC_SEQ_CST) == 0 &&
            lp_ring_empty(&t->ring))
            __atomic_store_n(&t->state, LP_SLOT_FREE, __ATOMIC_RELEASE);
    }
    n += drain_ring(&S.wall_ring, -1, fn, arg);
    n += drain_ring(&S.others_ring, -2, fn, arg);
    __atomic_store_n(&S.behind_asked, 0, __ATOMIC_RELEASE); /* the clock thread may ask again */
    return n;
}

void lp_sampler_check_behind(void) {
    if (!S.ring_mem || !S.host.drain_behind || __atomic_load_n(&S.behind_asked, __ATOMIC_ACQUIRE)) return;
    int behind = lp_ring_mostly_full(&S.wall_ring) || lp_ring_mostly_full(&S.others_ring);
    for (int i = 0; !behind && i < LP_SAMPLER_MAX_THREADS; i++)
        behind = __atomic_load_n(&S.slots[i].state, __ATOMIC_ACQUIRE) != LP_SLOT_FREE &&
                 lp_ring_mostly_full(&S.slots[i].ring);
    if (!behind || __atomic_exchange_n(&S.behind_asked, 1, __ATOMIC_ACQ_REL)) return;
    __atomic_fetch_add(&S.drains_behind, 1, __ATOMIC_RELAXED);
    S.host.drain_behind();
}

int lp_sampler_has_pending(void) {
    if (!S.ring_mem) return 0;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
        if (S.slots[i].state != LP_SLOT_FREE && !lp_ring_empty(&S.slots[i].ring)) return 1;
    return !lp_ring_empty(&S.wall_ring) || !lp_ring_empty(&S.others_ring);
}

void lp_sampler_get_stats(lp_sampler_stats *out) {
    memset(out, 0, sizeof *out);
    out->signals = __atomic_load_n(&S.signals, __ATOMIC_RELAXED);
    uint64_t dropped = __atomic_load_n(&S.dropped_reads, __ATOMIC_RELAXED);
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS && S.ring_mem; i++) dropped += S.slots[i].ring.dropped;
    if (S.ring_mem) dropped += S.wall_ring.dropped;
    out->dropped = dropped;
    out->truncated = __atomic_load_n(&S.truncated, __ATOMIC_RELAXED);
    out->wall_reads = __atomic_load_n(&S.wall_reads, __ATOMIC_RELAXED);
    out->in_profiler = __atomic_load_n(&S.in_profiler, __ATOMIC_RELAXED);
    out->drains_behind = __atomic_load_n(&S.drains_behind, __ATOMIC_RELAXED);
    /* the signal that made the samples */
    int perf = S.cfg.mode == LP_MODE_CPU && S.cfg.cpu_source == LP_CPU_PERF && !S.perf_pending;
    out->signo = perf ? S.perf_signo : S.cfg.signo;
    /* pending at the end: CPU timers made every signal */
    out->cpu_source = S.perf_pending ? LP_CPU_TIMERS : S.cfg.cpu_source;
    out->perf_stalled = __atomic_load_n(&S.perf_stalled, __ATOMIC_RELAXED);
    out->outside_reads = S.cfg.cpu_source == LP_CPU_THREAD && S.cfg.outside_reads;
    out->outside_samples = __atomic_load_n(&S.outside_samples, __ATOMIC_RELAXED);
    out->outside_retries = __atomic_load_n(&S.outside_retries, __ATOMIC_RELAXED);
    out->outside_fetches = lp_outside_fetches();
    out->split_samples = __atomic_load_n(&S.split_samples, __ATOMIC_RELAXED);
}

void lp_sampler_reset_stats(void) {
    S.signals = S.dropped_reads = S.truncated = S.wall_reads = S.in_profiler = S.perf_stalled =
        S.drains_behind = S.outside_samples = S.outside_retries = S.split_samples = 0;
    lp_outside_reset_fetches();
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS && S.ring_mem; i++) S.slots[i].ring.dropped = 0;
    if (S.ring_mem) S.wall_ring.dropped = 0;
}
