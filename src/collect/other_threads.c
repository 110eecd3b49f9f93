/* collect: the CPU time of threads the sampler does not sample (see
 * other_threads.h). Pure C: the interpreter is reached only through the
 * sampler's host (frame walker, GIL test, fault-safe reader). */
#define _GNU_SOURCE 1
#include "collect/other_threads.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect/sampler_state.h"
#include "common/own_tids.h"
#include "common/thread_start.h"
#include "common/wakeable_sleep.h"

#define S lp_sampler_S

/* The clock's view of one slot: which registration it last read and that
 * registration's CPU clock then. */
typedef struct {
    int valid;
    uint32_t gen;
    uint64_t last_ns;
} py_seen;

static struct {
    pthread_t thread;
    int running, started, have_thread;
    uint64_t proc_last_ns;
    int64_t pending_ns; /* measured, not handed on yet (a tick's reads are not
                         * simultaneous: a tick may come out slightly negative) */
    py_seen py[LP_SAMPLER_MAX_THREADS];
    uint64_t own_last_ns; /* own_total() at the last tick */
    uint64_t own_ns;      /* lprof's threads' CPU time since the start */
    /* the thread that started the clock, and its CPU clock then: it runs
     * lprof's start-up until it registers, time that is neither another
     * thread's nor before the start */
    pid_t starter_tid;
    uint64_t starter_cpu_ns;
    uint64_t measured_ns, lost_ns, ticks;
} O;

static clockid_t tid_clock(pid_t tid) { return (clockid_t)((~(unsigned)tid << 3) | 6); }

/* The CPU time registered Python threads spent since the last tick; each
 * slot's own part in d[] (0 for slots not read). */
static uint64_t python_delta(uint64_t d[LP_SAMPLER_MAX_THREADS]) {
    uint64_t sum = 0;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        lp_sampler_slot *t = &S.slots[i];
        py_seen *p = &O.py[i];
        d[i] = 0;
        int state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        uint32_t gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
        if (p->valid && p->gen != gen) p->valid = 0; /* its thread is gone: its last part was the process's */
        if (state == LP_SLOT_FREE) {
            p->valid = 0;
            continue;
        }
        uint64_t now;
        if (state == LP_SLOT_DEAD) {
            /* ended: the clock it left (it may be unreadable now) */
            now = __atomic_load_n(&t->end_cpu_ns, __ATOMIC_ACQUIRE);
            if (!now) now = clock_ns(t->cpu_clock);
            if (p->valid && now > p->last_ns) d[i] = now - p->last_ns;
            p->valid = 0;
            p->gen = gen;
            sum += d[i];
            continue;
        }
        now = clock_ns(t->cpu_clock);
        if (!now) continue;
        if (!p->valid) { /* a new registration: from its clock at registering */
            p->valid = 1;
            p->gen = gen;
            p->last_ns = t->start_cpu_ns && t->start_cpu_ns <= now ? t->start_cpu_ns : now;
            if (O.starter_tid && t->tid == O.starter_tid && O.starter_cpu_ns <= p->last_ns) {
                p->last_ns = O.starter_cpu_ns; /* the starter: from the clock's start */
                O.starter_tid = 0;
            }
        }
        if (now > p->last_ns) d[i] = now - p->last_ns;
        p->last_ns = now > p->last_ns ? now : p->last_ns;
        sum += d[i];
    }
    return sum;
}

/* The CPU time lprof's own threads ever had: the live ones' clocks, and
 * what the ended ones had at their end (own_tids.h). Counted as a total, so
 * that a thread that ended since the last tick (the -i writer after a last,
 * heavy checkpoint; the clock itself at the stop) or started since (all of
 * its time) is lprof's, not a thread without Python's. */
static uint64_t own_total(void) {
    pid_t live[LP_OWN_TIDS_MAX];
    int n = lp_own_tids_list(live, LP_OWN_TIDS_MAX);
    uint64_t sum = lp_own_tids_exited_cpu_ns();
    for (int k = 0; k < n; k++) sum += clock_ns(tid_clock(live[k]));
    return sum;
}

/* The CPU time lprof's own threads spent since the last tick. */
static uint64_t own_delta(void) {
    uint64_t total = own_total();
    uint64_t d = total > O.own_last_ns ? total - O.own_last_ns : 0;
    O.own_last_ns = total > O.own_last_ns ? total : O.own_last_ns;
    __atomic_fetch_add(&O.own_ns, d, __ATOMIC_RELAXED);
    return d;
}

/* Reads slot t's stack (frozen while it does not hold the GIL; or while a
 * holder sits in native code) into a record of cpu_ns; 1 when written.
 * check: the drain keeps it only if the leaf frame stands on a call (the
 * record's LP_SF_GIL flag asks it, whether or not the thread holds the GIL). */
static int emit_stack(lp_sampler_slot *t, int want_gil, int check, uint64_t cpu_ns, uint64_t now_ns) {
    const lp_sampler_host *h = &S.host;
    lp_sample *s = lp_ring_reserve(&S.others_ring, LP_SAMPLE_MAX_BYTES);
    if (s == NULL) return 0;
    const void *top = h->top(t->tstate, h->safe_read);
    int truncated = 0;
    int n = h->capture(t->tstate, s->frames, LP_SAMPLER_MAX_DEPTH, &truncated, h->safe_read);
    if (n <= 0 || h->holds_gil(t->tstate, h->safe_read) != want_gil || h->top(t->tstate, h->safe_read) != top)
        return 0; /* it moved: not committed */
    if (n > LP_SAMPLER_MAX_DEPTH) n = LP_SAMPLER_MAX_DEPTH;
    s->weight = 0;
    s->flags = LP_SF_OTHER | (truncated ? LP_SF_TRUNCATED : 0) | (check ? LP_SF_GIL : 0);
    s->depth = (uint32_t)n;
    s->native_depth = 0;
    s->task = s->reserved = 0; /* other threads' time: not the task's */
    s->thread_key = t->thread_key;
    s->cpu_ns = cpu_ns;
    s->t_ns = now_ns;
    lp_ring_commit(&S.others_ring, (uint32_t)(sizeof(lp_sample) + (size_t)n * sizeof(lp_rawframe)));
    return 1;
}

static void emit_unplaced(uint64_t cpu_ns, uint64_t now_ns) {
    lp_sample *s = lp_ring_reserve(&S.others_ring, sizeof(lp_sample));
    if (s == NULL) {
        __atomic_fetch_add(&O.lost_ns, cpu_ns, __ATOMIC_RELAXED);
        return;
    }
    memset(s, 0, sizeof *s);
    s->flags = LP_SF_OTHER;
    s->cpu_ns = cpu_ns;
    s->t_ns = now_ns;
    lp_ring_commit(&S.others_ring, sizeof(lp_sample));
}

enum { TIER_NONE = 0, TIER_COMPUTING = 1, TIER_HOLDER = 2, TIER_WAITING = 3 };

/* The thread's own latest sample was taken outside the interpreter's code
 * (one now and then lands in libc's malloc from bytecode: the latest, not
 * any). Recent enough: in CPU mode a thread's samples follow its own CPU
 * time, so its latest is at most about a period of its running old however
 * busy the machine (a wall-clock bound failed there: under load a thread
 * computing in native code went 20 ms of wall time without a sample); wall
 * mode's follow the wall clock: within two ticks. Only CPU mode's samples
 * say it of a thread without the GIL (wall mode reads those from its thread). */
static int native_lately(lp_sampler_slot *t, uint64_t now) {
    uint64_t latest = __atomic_load_n(&t->sample_t_ns, __ATOMIC_ACQUIRE);
    uint64_t seen = __atomic_load_n(&t->native_t_ns, __ATOMIC_RELAXED);
    if (!seen || seen != latest) return 0;
    return S.cfg.mode == LP_MODE_CPU || (now >= seen && now - seen <= 2 * LP_OTHERS_PERIOD_NS);
}

/* Hands `cpu_ns` to the Python threads in native code now (the tiers of
 * other_threads.h), evenly; what none takes goes out unplaced. */
static void place(uint64_t cpu_ns, const uint64_t d[LP_SAMPLER_MAX_THREADS]) {
    const lp_sampler_host *h = &S.host;
    uint8_t tier[LP_SAMPLER_MAX_THREADS], check[LP_SAMPLER_MAX_THREADS];
    int count[4] = {0, 0, 0, 0};
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++) {
        lp_sampler_slot *t = &S.slots[i];
        tier[i] = TIER_NONE;
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LP_SLOT_ACTIVE) continue;
        int gil = h->holds_gil(t->tstate, h->safe_read);
        /* "ran": more than a sliver of the tick (a wall-mode signal's handler
         * or a GIL hand-over is not running native code) */
        int ran = d[i] >= LP_OTHERS_RAN_NS;
        check[i] = 0;
        if (gil == 0 && ran) { /* computing in native code, or it ran bytecode and now
                                * waits for the GIL (a forced switch): CPU mode's own
                                * samples tell them apart; else its leaf must stand on a call */
            tier[i] = TIER_COMPUTING;
            check[i] = S.cfg.mode == LP_MODE_CPU && !native_lately(t, now);
        } else if (gil == 0) { /* waiting in a call (a join), or for the GIL another
                                * holds (lprof's own threads take it too): only the first
                                * stands on a call */
            tier[i] = TIER_WAITING;
            check[i] = 1;
        } else if (gil == 1 && !ran) { /* blocked: in a call, if the drain finds it so */
            tier[i] = TIER_HOLDER;
            check[i] = 1;
        } else if (gil == 1 && native_lately(t, now)) /* running native code (not bytecode) */
            tier[i] = TIER_HOLDER;
        count[tier[i]]++;
    }
    int pick = count[TIER_COMPUTING] ? TIER_COMPUTING
               : count[TIER_HOLDER]  ? TIER_HOLDER
               : count[TIER_WAITING] ? TIER_WAITING
                                     : TIER_NONE;
    uint64_t left = cpu_ns;
    if (pick != TIER_NONE) {
        uint64_t share = cpu_ns / (uint64_t)count[pick];
        int seen = 0;
        for (int i = 0; i < LP_SAMPLER_MAX_THREADS && left; i++) {
            if (tier[i] != pick) continue;
            seen++;
            uint64_t part = seen == count[pick] ? left : share;
            if (emit_stack(&S.slots[i], pick == TIER_HOLDER ? 1 : 0, check[i], part, now)) left -= part;
        }
    }
    if (left) emit_unplaced(left, now);
}

static void tick(int final) {
    if (!final) lp_sampler_check_behind(); /* the drain thread may be starved of the GIL */
    uint64_t proc = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t d[LP_SAMPLER_MAX_THREADS];
    uint64_t py = python_delta(d);
    uint64_t own = own_delta();
    int64_t other = (int64_t)(proc - O.proc_last_ns) - (int64_t)py - (int64_t)own;
    O.proc_last_ns = proc;
    __atomic_fetch_add(&O.ticks, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&S.paused, __ATOMIC_ACQUIRE)) { /* before an exec: lprof's, not the program's */
        O.pending_ns = 0;
        return;
    }
    O.pending_ns += other;
    /* under LP_OTHERS_MIN_NS left at the stop is no thread's work: the
     * clock's reads are not simultaneous, and lprof's threads run a few
     * microseconds after their clocks' last read, at their exit */
    if (O.pending_ns <= 0 || (uint64_t)O.pending_ns < LP_OTHERS_MIN_NS) {
        if (final) O.pending_ns = 0;
        return;
    }
    uint64_t cpu = (uint64_t)O.pending_ns;
    O.pending_ns = 0;
    __atomic_fetch_add(&O.measured_ns, cpu, __ATOMIC_RELAXED);
    place(cpu, d);
}

static void *others_main(void *arg) {
    (void)arg;
    lp_own_tid_add_self();
    __atomic_store_n(&O.started, 1, __ATOMIC_RELEASE);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (__atomic_load_n(&O.running, __ATOMIC_ACQUIRE)) {
        uint64_t ns = (uint64_t)next.tv_nsec + LP_OTHERS_PERIOD_NS;
        next.tv_sec += (time_t)(ns / 1000000000ull);
        next.tv_nsec = (long)(ns % 1000000000ull);
        lp_sleep_while_running(&O.running, &next);
        if (!__atomic_load_n(&O.running, __ATOMIC_ACQUIRE)) break;
        tick(0);
    }
    lp_own_tid_remove_self();
    return NULL;
}

int lp_others_start(void) {
    if (O.have_thread) return 0;
    memset(O.py, 0, sizeof O.py);
    O.pending_ns = 0;
    __atomic_store_n(&O.measured_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&O.lost_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&O.ticks, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&O.own_ns, 0, __ATOMIC_RELAXED);
    lp_ring_reset(&S.others_ring);
    O.starter_tid = (pid_t)syscall(SYS_gettid);
    O.starter_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    O.proc_last_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    O.own_last_ns = own_total(); /* lprof's threads from now on */
    __atomic_store_n(&O.running, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&O.started, 0, __ATOMIC_RELEASE);
    if (lp_thread_create_quiet(&O.thread, others_main, NULL) != 0) {
        __atomic_store_n(&O.running, 0, __ATOMIC_RELEASE);
        return -1;
    }
    O.have_thread = 1;
    lp_wait_for_flag(&O.started, LP_THREAD_START_WAIT_NS); /* see common/thread_start.h */
    return 0;
}

void lp_others_stop(void) {
    if (!O.have_thread) return;
    lp_sleep_stop(&O.running); /* wakes it: the join takes microseconds */
    /* the join may still wait for a tick in progress: let the program's threads run */
    void *saved = S.host.release_gil ? S.host.release_gil() : NULL;
    pthread_join(O.thread, NULL);
    if (S.host.reacquire_gil) S.host.reacquire_gil(saved);
    O.have_thread = 0;
    tick(1); /* up to now, whatever is left */
}

void lp_others_after_fork(void) {
    O.have_thread = 0;
    __atomic_store_n(&O.running, 0, __ATOMIC_RELEASE);
    O.own_last_ns = 0; /* the child's table starts empty (lp_own_tids_reset) */
    O.pending_ns = 0;
    O.starter_tid = 0;
}

void lp_others_get_stats(lp_others_stats *out) {
    out->measured_ns = __atomic_load_n(&O.measured_ns, __ATOMIC_RELAXED);
    out->lost_ns = __atomic_load_n(&O.lost_ns, __ATOMIC_RELAXED);
    out->ticks = __atomic_load_n(&O.ticks, __ATOMIC_RELAXED);
    out->own_ns = __atomic_load_n(&O.own_ns, __ATOMIC_RELAXED);
}
