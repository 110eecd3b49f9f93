/* The signal sampler with a fake frame walker: real signals (a CPU timer, the
 * wall thread's tgkill, timer signals re-queued with rt_tgsigqueueinfo) run
 * the real handler; the drained samples are checked exactly. */
#define _GNU_SOURCE 1
#include "harness.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect/other_threads.h"
#include "collect/perf_clock.h"
#include "collect/sampler.h"
#include "collect/sampler_state.h"

#define SIGNO (SIGRTMIN + 5)
#define KEY_A 111u
#define KEY_B 222u

/* ---- the fake interpreter ---- */

static int codes[3];           /* their addresses are the fake code objects */
static int tstate_a, tstate_b; /* A holds the GIL, B is detached (and deep) */
/* a recursion as deep as a sample keeps, whose leaf line the test sets */
static int tstate_deep, deep_leaf_line;

static int fake_interrupted_read(void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    return 0;
}
static int fake_safe_read(void *dst, const void *src, size_t n) {
    memcpy(dst, src, n);
    return 0;
}

/* which reader the sampler passed, written into the leaf frame's offset */
static int reader_tag(lp_reader rd) { return rd == fake_interrupted_read ? 1 : rd == fake_safe_read ? 2 : 0; }

static int fake_capture(const void *tstate, lp_rawframe *out, int max, int *truncated, lp_reader rd) {
    if (tstate == &tstate_deep) {
        for (int i = 0; i < max; i++) {
            out[i].code = &codes[i == 0 ? 0 : 1];
            out[i].offset = i == 0 ? deep_leaf_line : 7;
            out[i].flags = 0;
        }
        *truncated = 1;
        return max;
    }
    int n = max < 3 ? max : 3;
    for (int i = 0; i < n; i++) {
        out[i].code = &codes[i];
        out[i].offset = 10 * (i + 1);
    }
    out[0].offset += reader_tag(rd);
    *truncated = tstate == &tstate_b;
    return n;
}

static int fake_holds_gil(const void *tstate, lp_reader rd) {
    (void)rd;
    return tstate == &tstate_a;
}

/* a detached thread that retakes the GIL under every other read: the two
 * tops a read compares (before and after its walk) differ on odd reads */
static int tstate_moving, moving_calls;

static const void *fake_top(const void *tstate, lp_reader rd) {
    (void)rd;
    if (tstate == &tstate_moving) {
        int call = moving_calls++;
        return (const char *)tstate + ((call / 2) % 2 && call % 2);
    }
    return tstate;
}

/* the running task's serial: 7 for A, 9 for B; 0 when read the wrong way
 * (the handler must read its own thread with its reader, the wall thread a
 * detached one fault-safely) */
static uint32_t fake_task(const void *tstate, lp_reader rd) {
    if (tstate == &tstate_a) return rd == fake_interrupted_read ? 7 : 0;
    return rd == fake_safe_read ? 9 : 0;
}

static lp_sampler_host fake_host(void) {
    lp_sampler_host h = {0};
    h.capture = fake_capture;
    h.holds_gil = fake_holds_gil;
    h.top = fake_top;
    h.interrupted_read = fake_interrupted_read;
    h.safe_read = fake_safe_read;
    h.interp_hi = UINTPTR_MAX; /* every PC is "in the interpreter"; none in eval or lprof */
    return h;
}

/* ---- draining into copies ---- */

typedef struct {
    uint32_t weight, flags, depth, task;
    uint64_t key, t_ns, cpu_ns;
    lp_rawframe frames[3];
} got_sample;

static got_sample got[4096];
static int n_got;

static void keep(const lp_sample *s, int slot, void *arg) {
    (void)slot;
    (void)arg;
    if (n_got >= (int)LP_ARRAY_LEN(got)) return;
    got_sample *g = &got[n_got++];
    g->weight = s->weight;
    g->flags = s->flags;
    g->depth = s->depth;
    g->task = s->task;
    g->key = s->thread_key;
    g->t_ns = s->t_ns;
    g->cpu_ns = s->cpu_ns;
    for (uint32_t i = 0; i < s->depth && i < 3; i++) g->frames[i] = s->frames[i];
}

static void count_only(const lp_sample *s, int slot, void *arg) {
    (void)s;
    (void)slot;
    (void)arg;
}

static int drain(void) {
    n_got = 0;
    lp_sampler_drain(keep, NULL);
    return n_got;
}

/* the frames fake_capture writes, leaf first, for a reader tag */
static int frames_are(const got_sample *g, int tag) {
    if (g->depth != 3) return 0;
    for (int i = 0; i < 3; i++)
        if (g->frames[i].code != &codes[i] || g->frames[i].offset != 10 * (i + 1) + (i == 0 ? tag : 0))
            return 0;
    return 1;
}

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* a sample's time (CLOCK_MONOTONIC, for the timeline) lies in [from, now] */
static int timed_since(const got_sample *g, double from) {
    return g->t_ns >= (uint64_t)(from * 1e9) - 1000 && g->t_ns <= (uint64_t)(now_s() * 1e9) + 1000;
}

static volatile uint64_t sink;
static void burn_cpu(void) {
    for (int i = 0; i < 200000; i++) sink = sink * 6364136223846793005ull + 1;
}

static void set_blocked(int blocked) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGNO);
    pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* Queues `orig` (a real timer signal) to this thread again, as the kernel
 * would deliver a stale one, then lets it run the handler. */
static int redeliver(const siginfo_t *orig, int overrun) {
    siginfo_t si = *orig;
    si.si_overrun = overrun;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), my_tid(), SIGNO, &si) != 0) return -1;
    set_blocked(0); /* delivered here, on the way out of the syscall */
    set_blocked(1);
    return 0;
}

/* With SIGNO blocked and a CPU timer armed: burns CPU until the timer's
 * signal is pending and takes it off the queue into *real (to redeliver).
 * SIGNO, or else the sampler is stopped and the signal unblocked. */
static int take_timer_signal(siginfo_t *real) {
    sigset_t pending, only;
    sigemptyset(&only);
    sigaddset(&only, SIGNO);
    for (double t0 = now_s(); now_s() - t0 < 10;) {
        burn_cpu();
        sigpending(&pending);
        if (sigismember(&pending, SIGNO)) break;
    }
    struct timespec zero = {0, 0};
    int got_sig = sigtimedwait(&only, real, &zero);
    if (got_sig != SIGNO) {
        lp_sampler_stop();
        set_blocked(0);
    }
    return got_sig;
}

static int start(lp_sampler_mode mode, uint64_t period_ns, const lp_sampler_host *h) {
    lp_sampler_config cfg = {mode, SIGNO, period_ns};
    const char *why = NULL;
    int rc = lp_sampler_start(&cfg, h, &why);
    if (rc != 0) fprintf(stderr, "lp_sampler_start: %s\n", why);
    return rc;
}

static void stop_and_clear(void) {
    lp_sampler_stop();
    drain();
    drain(); /* the first pass freed the DEAD slots' rings */
    lp_sampler_reset_stats();
}

/* ---- tests ---- */

/* A CPU timer on this thread fires while it burns CPU: the handler runs on
 * this thread and writes A's frames, read with the interrupted reader. */
TEST(test_cpu_timer_samples_own_thread) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(LP_MODE_CPU, 1000000, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    CHECK(lp_sampler_is_registered(KEY_A));
    int total = 0, bad = 0;
    uint64_t weight = 0;
    for (double t0 = now_s(); total < 3 && now_s() - t0 < 10;) {
        burn_cpu();
        int n = drain();
        for (int i = 0; i < n; i++) {
            const got_sample *g = &got[i];
            weight += g->weight;
            if (g->key != KEY_A || g->weight < 1 ||
                (g->flags & ~LP_SF_SYSCALL) != (LP_SF_GIL | LP_SF_IN_INTERP) || !frames_are(g, 1) ||
                !timed_since(g, t0))
                bad++;
        }
        total += n;
    }
    lp_sampler_unregister(KEY_A);
    CHECK(!lp_sampler_is_registered(KEY_A));
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK(total >= 3);
    CHECK_EQ_INT(bad, 0);
    CHECK(weight >= (uint64_t)total);
    CHECK_EQ_INT(st.signals, total);
    CHECK_EQ_INT(st.signo, SIGNO);
    stop_and_clear();
}

/* A timer signal queued for a slot's earlier owner must write nothing: not
 * while the slot is DEAD, and not once it was recycled for another thread
 * (two producers on one SPSC ring otherwise). The same signal while its
 * owner is registered is the control: one exact sample. */
TEST(test_stale_timer_signal_writes_nothing) {
    lp_sampler_host h = fake_host();
    set_blocked(1);
    REQUIRE(start(LP_MODE_CPU, 50 * 1000000ull, &h) == 0); /* 50 ms of CPU: fires once here */
    int slot_a = lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0);
    REQUIRE(slot_a >= 0);
    siginfo_t real;
    int got_sig = take_timer_signal(&real);
    REQUIRE(got_sig == SIGNO);
    REQUIRE(real.si_code == SI_TIMER);

    /* control: the owner's own signal, overrun 2 -> weight 3 */
    CHECK(redeliver(&real, 2) == 0);
    lp_sampler_unregister(KEY_A);    /* deletes A's timer: no real signal follows */
    CHECK(redeliver(&real, 0) == 0); /* stale while DEAD */
    CHECK_EQ_INT(drain(), 1);
    uint32_t expect_flags = LP_SF_GIL | LP_SF_IN_INTERP;
#if defined(__x86_64__)
    expect_flags |= LP_SF_SYSCALL; /* delivered right after rt_sigprocmask's syscall */
#endif
    CHECK_EQ_INT(got[0].key, KEY_A);
    CHECK_EQ_INT(got[0].weight, 3);
    CHECK_EQ_INT(got[0].flags, expect_flags);
    CHECK(frames_are(&got[0], 1));

    /* the slot, drained, is recycled for B: A's signal is stale there too */
    int slot_b = lp_sampler_register(&tstate_b, KEY_B, my_tid(), 0);
    CHECK_EQ_INT(slot_b, slot_a);
    CHECK(redeliver(&real, 0) == 0);
    CHECK_EQ_INT(drain(), 0);
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.signals, 1);
    stop_and_clear();
    set_blocked(0);
}

/* A deep stack's samples go into the ring as their changes (the leaf line):
 * two thousand 256-frame samples, 8 MiB whole, fit the 256 KiB ring
 * undrained, and each comes out of the drain whole. Past half the ring the
 * handler asks the drain thread to come now (lp_sampler_drain_wait). */
static int deep_seen, deep_bad, deep_leaf[2];
static void check_deep(const lp_sample *s, int slot, void *arg) {
    (void)slot;
    (void)arg;
    deep_seen++;
    int ok = s->depth == LP_SAMPLER_MAX_DEPTH && !(s->flags & LP_SF_CHAINED) &&
             (s->flags & LP_SF_TRUNCATED) && s->frames[0].code == &codes[0] &&
             (s->frames[0].offset == 100 || s->frames[0].offset == 101);
    for (uint32_t i = 1; ok && i < s->depth; i++)
        ok = s->frames[i].code == &codes[1] && s->frames[i].offset == 7;
    if (!ok) deep_bad++;
    else deep_leaf[s->frames[0].offset - 100]++;
}

TEST(test_deep_stacks_fill_the_ring_by_their_changes) {
    lp_sampler_host h = fake_host();
    set_blocked(1);
    REQUIRE(start(LP_MODE_CPU, 50 * 1000000ull, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_deep, KEY_A, my_tid(), 0) >= 0);
    siginfo_t real;
    int got_sig = take_timer_signal(&real);
    REQUIRE(got_sig == SIGNO);
    lp_sampler_drain_wait(0);                  /* a stale ask of an earlier test */
    CHECK_EQ_INT(lp_sampler_drain_wait(0), 0); /* nothing asked: the time-out */
    int asked_at = -1;
    for (int k = 0; k < 2000; k++) {
        deep_leaf_line = 100 + k % 2;
        CHECK(redeliver(&real, 0) == 0);
        if (asked_at < 0 && __atomic_load_n(&lp_sampler_S.drain_asked, __ATOMIC_ACQUIRE)) asked_at = k;
    }
    /* asked once the ring passed half: ~80 bytes a sample, 128 KiB */
    CHECK(asked_at > 1000 && asked_at < 2000);
    CHECK_EQ_INT(lp_sampler_drain_wait(5.0), 1);
    lp_sampler_drain_wake(); /* a stop's wake ends the wait at once too */
    CHECK_EQ_INT(lp_sampler_drain_wait(5.0), 1);
    lp_sampler_unregister(KEY_A);
    deep_seen = deep_bad = deep_leaf[0] = deep_leaf[1] = 0;
    lp_sampler_drain(check_deep, NULL);
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.dropped, 0);
    CHECK(deep_seen >= 2000); /* the timer's own signal may add one */
    CHECK_EQ_INT(deep_bad, 0);
    CHECK(deep_leaf[0] >= 1000 && deep_leaf[1] >= 1000);
    stop_and_clear();
    set_blocked(0);
}

/* The wall thread's reads of a deep thread that waits (detached) go into
 * the wall ring as changes too: hundreds of them undrained, each whole. */
TEST(test_deep_detached_reads_fill_the_wall_ring_by_their_changes) {
    lp_sampler_host h = fake_host();
    deep_leaf_line = 100;
    REQUIRE(start(LP_MODE_WALL, 200000, &h) == 0); /* every 200 us */
    REQUIRE(lp_sampler_register(&tstate_deep, KEY_B, my_tid(), 1) >= 0);
    lp_sampler_stats st;
    for (double t0 = now_s(); now_s() - t0 < 10;) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        lp_sampler_get_stats(&st);
        if (st.wall_reads >= 500) break;
    }
    lp_sampler_unregister(KEY_B);
    deep_seen = deep_bad = deep_leaf[0] = deep_leaf[1] = 0;
    lp_sampler_drain(check_deep, NULL);
    lp_sampler_get_stats(&st);
    CHECK(st.wall_reads >= 500); /* 2 MiB whole; the wall ring is 256 KiB */
    CHECK_EQ_INT(st.dropped, 0);
    CHECK_EQ_INT(deep_seen, st.wall_reads);
    CHECK_EQ_INT(deep_bad, 0);
    stop_and_clear();
}

/* Wall mode: the wall thread signals the GIL holder (A, found by tid) and
 * reads the detached thread (B) itself with the fault-safe reader. Each
 * read weighs the periods since the previous one: B's weights add up to
 * the wall time it was registered, however late the wall thread ran. */
TEST(test_wall_mode_signals_holder_reads_detached) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(LP_MODE_WALL, 1000000, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    double b_from = now_s();
    REQUIRE(lp_sampler_register(&tstate_b, KEY_B, my_tid(), 1) >= 0);
    int n_a = 0, n_b = 0, bad = 0;
    uint64_t weight_b = 0;
    for (double t0 = now_s(); (n_a < 3 || n_b < 3 || now_s() - t0 < 0.2) && now_s() - t0 < 10;) {
        burn_cpu();
        int n = drain();
        for (int i = 0; i < n; i++) {
            const got_sample *g = &got[i];
            if (!timed_since(g, t0)) bad++;
            else if (g->key == KEY_A && g->weight >= 1 &&
                     (g->flags & ~LP_SF_SYSCALL) == (LP_SF_GIL | LP_SF_IN_INTERP) && frames_are(g, 1))
                n_a++;
            else if (g->key == KEY_B && g->weight >= 1 && g->flags == (LP_SF_DETACHED | LP_SF_TRUNCATED) &&
                     frames_are(g, 2)) {
                n_b++;
                weight_b += g->weight;
            } else bad++;
        }
    }
    lp_sampler_stop();
    double b_ms = (now_s() - b_from) * 1e3;
    drain(); /* the reads after the loop's last drain */
    for (int i = 0; i < n_got; i++) weight_b += got[i].key == KEY_B ? got[i].weight : 0;
    CHECK(weight_b <= b_ms + 1.5);
    CHECK(weight_b >= 0.5 * b_ms); /* the wall thread may lag, not lose time (bar its last tick) */
    CHECK(!lp_sampler_running());
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK(n_a >= 3);
    CHECK(n_b >= 3);
    CHECK_EQ_INT(bad, 0);
    CHECK(st.wall_reads >= (uint64_t)n_b);
    CHECK(st.truncated >= (uint64_t)n_b);
    stop_and_clear();
}

/* A detached read whose thread moved under it (took the GIL back) is
 * discarded, and its periods go to the next read: a thread that releases
 * and retakes the GIL thousands of times a second lost a part of its wall
 * time to such reads (0.7% at 10 kHz), counted as dropped. */
TEST(test_a_moved_read_gives_its_time_to_the_next) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(LP_MODE_WALL, 1000000, &h) == 0);
    moving_calls = 0;
    double from = now_s();
    REQUIRE(lp_sampler_register(&tstate_moving, KEY_B, my_tid(), 1) >= 0);
    uint64_t weight = 0;
    int reads = 0;
    while (now_s() - from < 0.3) {
        struct timespec ms = {0, 20 * 1000000};
        nanosleep(&ms, NULL);
        int n = drain();
        for (int i = 0; i < n; i++)
            if (got[i].key == KEY_B) {
                weight += got[i].weight;
                reads++;
            }
    }
    lp_sampler_stop();
    double ms = (now_s() - from) * 1e3;
    drain();
    for (int i = 0; i < n_got; i++) weight += got[i].key == KEY_B ? got[i].weight : 0;
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK(moving_calls >= 20); /* it was read, half of the reads discarded */
    CHECK(reads >= 5);
    CHECK_EQ_INT(st.dropped, 0);
    /* every period but the last read's, which a discarded read leaves over */
    CHECK(weight <= ms + 1.5);
    CHECK(weight >= ms - 3);
    stop_and_clear();
}

/* The clock thread's check: a ring more than 3/4 full (the drain thread
 * starved of the GIL) asks the host to drain elsewhere, once until the
 * next drain. Records are committed by hand into the wall ring (no wall
 * thread in CPU mode with timers). */
static int behind_asks;
static void count_behind(void) { behind_asks++; }

static int fill_wall_ring(double fraction) {
    lp_ring *r = &lp_sampler_S.wall_ring;
    int n = 0;
    while ((double)(r->head - r->tail) < fraction * r->size) {
        lp_sample *s = lp_ring_reserve(r, sizeof(lp_sample));
        if (!s) break;
        memset(s, 0, sizeof *s);
        s->weight = 1;
        s->flags = LP_SF_DETACHED;
        s->thread_key = KEY_B;
        lp_ring_commit(r, sizeof(lp_sample));
        n++;
    }
    return n;
}

TEST(test_a_mostly_full_ring_asks_the_host_to_drain) {
    lp_sampler_host h = fake_host();
    h.drain_behind = count_behind;
    REQUIRE(start(LP_MODE_CPU, 1000000, &h) == 0);
    behind_asks = 0;
    int n = fill_wall_ring(0.7);
    lp_sampler_check_behind();
    CHECK_EQ_INT(behind_asks, 0); /* under 3/4: the drain thread is in time */
    n += fill_wall_ring(0.8);
    lp_sampler_check_behind();
    lp_sampler_check_behind();
    CHECK_EQ_INT(behind_asks, 1); /* once until a drain */
    n_got = 0;
    CHECK_EQ_INT(lp_sampler_drain(count_only, NULL), n);
    fill_wall_ring(0.8);
    lp_sampler_check_behind();
    CHECK_EQ_INT(behind_asks, 2); /* asked again after the drain */
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.drains_behind, 2);
    CHECK_EQ_INT(st.dropped, 0);
    stop_and_clear();
}

/* Each sample carries the serial of the task its thread ran, read as its
 * frames are (host.task); none without the host's reader. */
TEST(test_samples_carry_the_running_task) {
    for (int with_task = 0; with_task < 2; with_task++) {
        lp_sampler_host h = fake_host();
        if (with_task) h.task = fake_task;
        REQUIRE(start(LP_MODE_WALL, 1000000, &h) == 0);
        REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
        REQUIRE(lp_sampler_register(&tstate_b, KEY_B, my_tid(), 1) >= 0);
        int n_a = 0, n_b = 0, bad = 0;
        for (double t0 = now_s(); (n_a < 3 || n_b < 3) && now_s() - t0 < 10;) {
            burn_cpu();
            int n = drain();
            for (int i = 0; i < n; i++) {
                const got_sample *g = &got[i];
                uint32_t want = !with_task ? 0 : g->key == KEY_A ? 7 : 9;
                if (g->task != want) bad++;
                n_a += g->key == KEY_A;
                n_b += g->key == KEY_B;
            }
        }
        CHECK(n_a >= 3);
        CHECK(n_b >= 3);
        CHECK_EQ_INT(bad, 0);
        stop_and_clear();
    }
}

/* A signal landing in lprof's own code (the host's self range) is counted
 * apart and writes no sample. */
TEST(test_signal_in_lprof_code_is_not_a_sample) {
    lp_sampler_host h = fake_host();
    h.self_hi = UINTPTR_MAX;
    REQUIRE(start(LP_MODE_CPU, 1000000, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    lp_sampler_stats st = {0};
    for (double t0 = now_s(); st.in_profiler < 2 && now_s() - t0 < 10;) {
        burn_cpu();
        lp_sampler_get_stats(&st);
    }
    CHECK(st.in_profiler >= 2);
    CHECK_EQ_INT(st.signals, 0);
    CHECK_EQ_INT(drain(), 0);
    stop_and_clear();
}

/* A host without a walker is refused, and nothing starts. */
TEST(test_start_refuses_incomplete_host) {
    lp_sampler_host h = fake_host();
    h.capture = NULL;
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000};
    const char *why = NULL;
    CHECK_EQ_INT(lp_sampler_start(&cfg, &h, &why), -1);
    CHECK(why != NULL);
    CHECK(!lp_sampler_running());
}

static uint64_t signals_so_far(void) {
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    return st.signals;
}

/* Signals counted within 10 s of burning CPU, starting from `from`. */
static int signals_come(uint64_t from) {
    for (double t0 = now_s(); now_s() - t0 < 10;) {
        burn_cpu();
        drain();
        if (signals_so_far() > from) return 1;
    }
    return 0;
}

/* Before an exec: once lp_sampler_pause returns no sampling signal is
 * generated (a CPU timer or the wall thread's), none is left pending; resume
 * brings sampling back. In both modes, at 1 ms. */
static void check_pause(lp_sampler_mode mode) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(mode, 1000000, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    CHECK(signals_come(0));
    lp_sampler_pause();
    uint64_t paused_at = signals_so_far();
    for (double t0 = now_s(); now_s() - t0 < 0.1;) burn_cpu(); /* 100 periods */
    sigset_t pending;
    sigpending(&pending);
    CHECK(!sigismember(&pending, SIGNO));
    CHECK_EQ_INT(signals_so_far(), paused_at);
    lp_sampler_resume();
    CHECK(signals_come(paused_at));
    stop_and_clear();
}

TEST(test_pause_cpu_mode) { check_pause(LP_MODE_CPU); }

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* seconds of this thread's CPU time (a busy machine only makes it longer) */
static void burn_for(double seconds) {
    for (double t0 = thread_cpu_s(); thread_cpu_s() - t0 < seconds;) burn_cpu();
}

/* A thread's end charges the CPU time no timer expiry covered (its tail);
 * CPU spent while paused (the profile saved before an exec that then
 * failed) is lprof's, not the program's: it stays out of the tail. A 10 s
 * period: no expiry in this test, the whole run is tail. */
TEST(test_paused_cpu_is_not_in_the_tail) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(LP_MODE_CPU, 10 * 1000000000ull, &h) == 0);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    burn_for(0.02);
    lp_sampler_pause();
    burn_for(0.3);
    lp_sampler_resume();
    burn_for(0.02);
    set_blocked(1);
    lp_sampler_unregister_self(KEY_A, NULL);
    set_blocked(0);
    uint64_t tail = 0;
    int n = drain();
    for (int i = 0; i < n; i++)
        if (got[i].key == KEY_A && (got[i].flags & LP_SF_TAIL)) tail += got[i].cpu_ns;
    CHECK(tail >= 39 * 1000000ull); /* the 40 ms of CPU it ran unpaused */
    CHECK(tail < 200 * 1000000ull); /* not the 300 ms paused */
    stop_and_clear();
}
TEST(test_pause_wall_mode) { check_pause(LP_MODE_WALL); }

/* The drain lets a thread's samples charge no more CPU time than its CPU
 * clock advanced while sampled: a drain that asks three times each sample's
 * weight (an event running ahead of the clock) gets the clock's time, and
 * once that is spent, only what the thread ran since. Other slots and wall
 * mode get what they ask. */
static uint64_t asked_ns, granted_ns;
static void ask_thrice(const lp_sample *s, int slot, void *arg) {
    (void)arg;
    if (s->flags & LP_SF_TAIL) return;
    uint64_t want = 3ull * s->weight * 1000000ull;
    asked_ns += want;
    granted_ns += lp_sampler_take_cpu(slot, want);
}

TEST(test_samples_charge_no_more_than_the_thread_clock) {
    lp_sampler_host h = fake_host();
    REQUIRE(start(LP_MODE_CPU, 1000000, &h) == 0);
    double t0 = thread_cpu_s();
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    burn_for(0.1);
    asked_ns = granted_ns = 0;
    lp_sampler_drain(ask_thrice, NULL);
    double ran = thread_cpu_s() - t0;
    CHECK(asked_ns > granted_ns);    /* it was held back */
    CHECK(granted_ns <= ran * 1e9);  /* to the clock */
    CHECK(granted_ns >= 0.08 * 1e9); /* and given it (100 ms burnt) */
    uint64_t first = granted_ns;
    double t1 = thread_cpu_s();
    burn_for(0.05);
    lp_sampler_drain(ask_thrice, NULL);
    CHECK(granted_ns - first <= (thread_cpu_s() - t1) * 1e9 + 2e6); /* what it ran since (a sample's start) */
    CHECK(granted_ns - first >= 0.03 * 1e9);
    CHECK_EQ_INT(lp_sampler_take_cpu(-1, 5), 5); /* the wall ring's reads */
    CHECK_EQ_INT(lp_sampler_take_cpu(-2, 7), 7); /* the other threads' clock */
    stop_and_clear();
    REQUIRE(start(LP_MODE_WALL, 1000000, &h) == 0);
    CHECK_EQ_INT(lp_sampler_take_cpu(0, 9), 9);
    stop_and_clear();
}

/* The wall thread has finished starting when start (and resume) return: a
 * program that forks on its first line must not fork while the thread's
 * start-up is inside an allocator that takes no lock around fork (ASan's).
 * White-box: the flag is the thread's first write. */
TEST(test_wall_thread_started_when_start_returns) {
    lp_sampler_host h = fake_host();
    for (int i = 0; i < 20; i++) {
        REQUIRE(start(LP_MODE_WALL, 1000000, &h) == 0);
        CHECK(__atomic_load_n(&lp_sampler_S.wall_started, __ATOMIC_ACQUIRE));
        lp_sampler_pause();
        lp_sampler_resume();
        CHECK(__atomic_load_n(&lp_sampler_S.wall_started, __ATOMIC_ACQUIRE));
        stop_and_clear();
    }
}

/* A thread the sampler does not know spins while the registered thread (B:
 * detached, so in native code or waiting for the GIL) waits for it: the
 * other threads' clock hands that thread's CPU time, as its own clock
 * measured it, to B's frames (read with the fault-safe reader), asking the
 * drain to keep it there only if B's leaf stands on a call; the registered
 * thread's own CPU time before it waits is not in it. */
static void *spin_thread(void *arg) {
    double *used = arg, t0 = thread_cpu_s();
    while (thread_cpu_s() - t0 < 0.3) burn_cpu();
    *used = thread_cpu_s() - t0;
    return NULL;
}

TEST(test_other_threads_cpu_goes_to_the_thread_in_native_code) {
    lp_sampler_host h = fake_host();
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 1};
    const char *why = NULL;
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    REQUIRE(lp_sampler_register(&tstate_b, KEY_B, my_tid(), 1) >= 0);
    double mine = thread_cpu_s();
    while (thread_cpu_s() - mine < 0.1) burn_cpu(); /* the registered thread's own */
    double used = 0;
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, spin_thread, &used) == 0);
    pthread_join(th, NULL);
    lp_sampler_stop();
    n_got = 0;
    lp_sampler_drain(keep, NULL);
    uint64_t placed = 0, other = 0, checked = 0;
    int bad = 0;
    for (int i = 0; i < n_got; i++) {
        const got_sample *g = &got[i];
        if (!(g->flags & LP_SF_OTHER)) continue;
        other += g->cpu_ns;
        if (g->depth == 0) continue;
        if (g->key != KEY_B || !frames_are(g, 2)) bad++;
        /* B waits without the GIL (or, the tick before, ran bytecode to the
         * fake host): the drain is asked to find its leaf on a call, as a
         * join's is and a GIL wait's is not */
        if (g->flags & LP_SF_GIL) checked += g->cpu_ns;
        placed += g->cpu_ns;
    }
    lp_others_stats st;
    lp_others_get_stats(&st);
    CHECK(used >= 0.3);
    /* what the process spent beyond its registered thread: the spinning
     * thread's time, and its start-up (a sliver) */
    CHECK(other >= (uint64_t)(used * 0.95e9) && other <= (uint64_t)(used * 1.05e9) + 20000000u);
    CHECK(placed >= (uint64_t)(used * 0.9e9));
    CHECK(checked == placed);
    CHECK(st.measured_ns == other && st.ticks > 0);
    CHECK_EQ_INT(bad, 0);
    stop_and_clear();
}

/* The registered thread (B: without the GIL) burns CPU beside a thread the
 * sampler does not know: the tick's "ran" test alone cannot tell a thread
 * computing in native code from one that ran bytecode and now waits for the
 * GIL. Returns the share of the spinner's CPU time, on B's records, that
 * asks the drain to find B's leaf on a call (LP_SF_GIL on an LP_SF_OTHER
 * record); -1 if nothing was placed on B. */
static double checked_share_beside_running(const lp_sampler_host *h) {
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 1};
    const char *why = NULL;
    if (lp_sampler_start(&cfg, h, &why) != 0 || lp_sampler_register(&tstate_b, KEY_B, my_tid(), 1) < 0)
        return -1;
    double used = 0;
    pthread_t th;
    if (pthread_create(&th, NULL, spin_thread, &used) != 0) return -1;
    for (double t0 = thread_cpu_s(); thread_cpu_s() - t0 < 0.3;) burn_cpu(); /* B runs too */
    pthread_join(th, NULL);
    lp_sampler_stop();
    n_got = 0;
    lp_sampler_drain(keep, NULL);
    uint64_t on_b = 0, checked = 0;
    for (int i = 0; i < n_got; i++) {
        const got_sample *g = &got[i];
        if (!(g->flags & LP_SF_OTHER) || g->depth == 0 || g->key != KEY_B) continue;
        on_b += g->cpu_ns;
        if (g->flags & LP_SF_GIL) checked += g->cpu_ns;
    }
    stop_and_clear();
    return on_b ? (double)checked / (double)on_b : -1;
}

/* B's own CPU samples decide: taken inside the interpreter (bytecode, then
 * waiting for the GIL after a forced switch), B's records are checked at the
 * drain; taken outside it (native code), they are B's as they are. Majorities,
 * not all: on a busy machine B may not run in a tick (then it is "waiting",
 * unchecked) or its latest sample may be older than two ticks (checked). */
TEST(test_other_threads_cpu_goes_to_a_running_thread_only_if_native) {
    lp_sampler_host h = fake_host(); /* every PC "in the interpreter" */
    double bytecode = checked_share_beside_running(&h);
    CHECK(bytecode >= 0.5);
    h.interp_hi = 0; /* no PC in the interpreter: every sample native */
    double native = checked_share_beside_running(&h);
    CHECK(native >= 0 && native <= 0.5);
    fprintf(stderr, "checked share: bytecode %.2f, native %.2f\n", bytecode, native);
}

/* Samples of this thread until `want` were drained (10 s at most). */
static int burn_until_samples(int want) {
    int total = 0;
    for (double t0 = now_s(); total < want && now_s() - t0 < 10;) {
        burn_cpu();
        total += drain();
    }
    return total;
}

/* Sampling goes on: 3 more samples of this thread than `before` signals. */
static void samples_go_on(uint64_t before) {
    CHECK(burn_until_samples(3) >= 3);
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK(st.signals >= before + 3);
}

static void sigtrap_to_default(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTRAP, &dfl, NULL);
}

/* CPU sampling whose perf events raise SIGTRAP (cfg: perf source,
 * perf_trap): 1 once started, 0 (failed, or stopped again and said why)
 * where perf events are refused or the kernel lacks sigtrap events. */
static int start_with_sigtrap_events(const lp_sampler_config *cfg) {
    lp_sampler_host h = fake_host();
    const char *why = NULL;
    if (lp_sampler_start(cfg, &h, &why) != 0) {
        CHECK(why == NULL);
        return 0;
    }
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    if (st.cpu_source == LP_CPU_PERF && st.signo == SIGTRAP) return 1;
    fprintf(stderr, "skipped: no sigtrap perf events here (source %d, signal %d)\n", st.cpu_source, st.signo);
    lp_sampler_stop();
    return 0;
}

/* perf_trap: the perf events raise SIGTRAP (sigtrap events), which lprof's
 * handler then holds; released (the program takes SIGTRAP), they raise the
 * configured signal and sampling goes on. Skipped where perf events are
 * refused (the thread source instead) or the kernel lacks sigtrap. */
TEST(test_perf_events_raise_sigtrap_until_released) {
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 0, LP_CPU_PERF, 1};
    if (!start_with_sigtrap_events(&cfg)) return;
    lp_sampler_stats st;
    struct sigaction held;
    REQUIRE(sigaction(SIGTRAP, NULL, &held) == 0);
    CHECK(held.sa_sigaction == lp_sampler_on_signal);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    CHECK(burn_until_samples(3) >= 3);
    lp_sampler_release_sigtrap();
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.signo, SIGNO);
    samples_go_on(st.signals);
    lp_sampler_unregister(KEY_A);
    stop_and_clear();
    /* the program took SIGTRAP meanwhile: a later start leaves it alone */
    struct sigaction theirs;
    memset(&theirs, 0, sizeof theirs);
    theirs.sa_handler = SIG_IGN;
    REQUIRE(sigaction(SIGTRAP, &theirs, NULL) == 0);
    lp_sampler_host h = fake_host();
    const char *why = NULL;
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    lp_sampler_get_stats(&st);
    CHECK(st.signo != SIGTRAP);
    REQUIRE(sigaction(SIGTRAP, NULL, &held) == 0);
    CHECK(held.sa_handler == SIG_IGN);
    lp_sampler_stop();
    theirs.sa_handler = SIG_DFL;
    sigaction(SIGTRAP, &theirs, NULL);
}

static volatile sig_atomic_t their_traps;
static void their_sigtrap(int signo) {
    (void)signo;
    their_traps++;
}

/* A C extension's own sigaction(SIGTRAP) goes past any wrapper of
 * signal.signal: the drain's check sees lprof's handler gone and moves the
 * events to the real-time signal, so the extension's handler meets no
 * more samples and sampling goes on. */
TEST(test_sigtrap_taken_by_sigaction_moves_the_events) {
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 0, LP_CPU_PERF, 1};
    if (!start_with_sigtrap_events(&cfg)) return;
    lp_sampler_stats st;
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    CHECK(burn_until_samples(3) >= 3);
    CHECK_EQ_INT(lp_sampler_check_sigtrap(), 0); /* still lprof's */
    struct sigaction theirs;
    memset(&theirs, 0, sizeof theirs);
    theirs.sa_handler = their_sigtrap;
    sigemptyset(&theirs.sa_mask);
    REQUIRE(sigaction(SIGTRAP, &theirs, NULL) == 0);
    CHECK_EQ_INT(lp_sampler_check_sigtrap(), 1);
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.signo, SIGNO);
    their_traps = 0;
    samples_go_on(st.signals);
    CHECK_EQ_INT((int)their_traps, 0);
    CHECK_EQ_INT(lp_sampler_check_sigtrap(), 0); /* moved once */
    lp_sampler_unregister(KEY_A);
    stop_and_clear();
    sigtrap_to_default();
}

/* Started while the kernel still switches its perf hooks on (held here),
 * the sampler does not wait: the thread samples with a CPU timer from the
 * start, and settle() puts its perf event in the timer's place once the
 * switch-on is over. Skipped where perf events are refused. */
TEST(test_cpu_timers_sample_until_the_perf_events_take_over) {
    lp_sampler_host h = fake_host();
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 0, LP_CPU_PERF, 1};
    const char *why = NULL;
    lp_perf_clock_warm_hold(1);
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(st.cpu_source, LP_CPU_TIMERS); /* pending: the timers sample */
    CHECK_EQ_INT(st.signo, SIGNO);
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    CHECK_EQ_INT(lp_sampler_settle(), 0); /* the switch-on is not over */
    CHECK(burn_until_samples(3) >= 3);
    lp_sampler_get_stats(&st);
    uint64_t by_timers = st.signals;
    CHECK(by_timers >= 3);
    lp_perf_clock_warm_hold(0); /* over: the drain is woken */
    CHECK_EQ_INT(lp_sampler_drain_wait(0), 1);
    CHECK_EQ_INT(lp_sampler_settle(), 1);
    CHECK_EQ_INT(lp_sampler_settle(), 0); /* once */
    lp_sampler_get_stats(&st);
    if (st.cpu_source != LP_CPU_PERF) {
        fprintf(stderr, "skipped: no perf events here (the timers went on: source %d)\n", st.cpu_source);
        CHECK_EQ_INT(st.cpu_source, LP_CPU_TIMERS);
        lp_sampler_unregister(KEY_A);
        stop_and_clear();
        return;
    }
    CHECK(st.signo == SIGTRAP || st.signo == SIGNO);
    int slot_has_perf = 0, slot_has_timer = 0;
    for (int i = 0; i < LP_SAMPLER_MAX_THREADS; i++)
        if (lp_sampler_S.slots[i].state == LP_SLOT_ACTIVE) {
            slot_has_perf |= lp_sampler_S.slots[i].has_perf;
            slot_has_timer |= lp_sampler_S.slots[i].has_timer;
        }
    CHECK(slot_has_perf && !slot_has_timer);
    samples_go_on(by_timers);
    lp_sampler_unregister(KEY_A);
    stop_and_clear();
    sigtrap_to_default();
}

/* CPU mode with outside reads: the thread holding the GIL is never
 * signalled; the sampler thread reads it where it runs (through its block
 * copies: neither of the host's readers reaches the walker) with the CPU
 * time it owes, and the reads hold all of that time. */
TEST(test_outside_reads_sample_the_gil_holder_without_a_signal) {
    lp_sampler_host h = fake_host();
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 0, LP_CPU_THREAD, 0, 1};
    const char *why = NULL;
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    double t0 = thread_cpu_s();
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    while (thread_cpu_s() - t0 < 0.3) burn_cpu();
    lp_sampler_unregister(KEY_A);
    double used = thread_cpu_s() - t0;
    lp_sampler_stop();
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    n_got = 0;
    lp_sampler_drain(keep, NULL);
    uint64_t covered = 0;
    int outside = 0, bad = 0;
    for (int i = 0; i < n_got; i++) {
        const got_sample *g = &got[i];
        if (g->flags & LP_SF_TAIL) continue; /* the time after the last read */
        if ((g->flags & (LP_SF_OUTSIDE | LP_SF_GIL)) != (LP_SF_OUTSIDE | LP_SF_GIL) || g->key != KEY_A ||
            !frames_are(g, 0))
            bad++;
        covered += g->cpu_ns;
        outside++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(st.signals, 0);
    CHECK(st.outside_reads);
    CHECK_EQ_INT(st.outside_samples, (uint64_t)outside);
    /* 1 ms periods of 0.3 s of CPU: a read at least every other period
     * (the sampler thread wakes late on a busy machine: its reads then
     * carry more time) */
    CHECK(outside >= 100);
    /* all of the thread's time but the last period's, none twice */
    CHECK(covered <= (uint64_t)(used * 1e9) + 1000000u);
    CHECK(covered + 20000000u >= (uint64_t)(used * 1e9));
    stop_and_clear();
}

/* Beside the outside reads, a perf event signals the thread every split
 * period of its CPU time for a split sample: flagged LP_SF_SPLIT, weighing
 * the split period, counted apart from the signals, and taking nothing from
 * the reads, which still hold all of the thread's time. */
TEST(test_split_samples_come_beside_the_outside_reads) {
    lp_sampler_host h = fake_host();
    lp_sampler_config cfg = {LP_MODE_CPU, SIGNO, 1000000, 0, LP_CPU_THREAD, 0, 1, 4000000};
    const char *why = NULL;
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    double t0 = thread_cpu_s();
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    while (thread_cpu_s() - t0 < 0.3) burn_cpu();
    lp_sampler_unregister(KEY_A);
    double used = thread_cpu_s() - t0;
    lp_sampler_stop();
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    n_got = 0;
    lp_sampler_drain(keep, NULL);
    if (st.split_samples == 0) {
        fprintf(stderr, "skipped: no perf events here (no split samples)\n");
        stop_and_clear();
        return;
    }
    uint64_t covered = 0;
    int split = 0, bad = 0;
    for (int i = 0; i < n_got; i++) {
        const got_sample *g = &got[i];
        if (g->flags & LP_SF_TAIL) continue;
        if (g->flags & LP_SF_SPLIT) {
            /* taken by the thread's own handler: its interrupted reader (tag 1) */
            if (g->cpu_ns != 4000000 || g->key != KEY_A || !frames_are(g, 1) || (g->flags & LP_SF_OUTSIDE))
                bad++;
            split++;
            continue;
        }
        if ((g->flags & (LP_SF_OUTSIDE | LP_SF_GIL)) != (LP_SF_OUTSIDE | LP_SF_GIL)) bad++;
        covered += g->cpu_ns;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(st.signals, 0);
    CHECK_EQ_INT(st.split_samples, (uint64_t)split);
    /* 0.3 s of CPU at one a 4 ms: 75, fewer where signals coalesce */
    CHECK(split >= 40 && split <= 76);
    CHECK(covered <= (uint64_t)(used * 1e9) + 1000000u);
    CHECK(covered + 20000000u >= (uint64_t)(used * 1e9));
    stop_and_clear();
}

/* Wall mode with outside reads: the thread holding the GIL is read where it
 * runs, not signalled, each read weighing the wall periods since the last;
 * a thread without it is read detached as before. The reads hold the wall
 * time, none twice; split samples come beside them on the running thread. */
TEST(test_wall_mode_reads_the_gil_holder_from_outside) {
    lp_sampler_host h = fake_host();
    lp_sampler_config cfg = {LP_MODE_WALL, SIGNO, 1000000, 0, LP_CPU_THREAD, 0, 1, 4000000};
    const char *why = NULL;
    REQUIRE(lp_sampler_start(&cfg, &h, &why) == 0);
    double from = now_s();
    REQUIRE(lp_sampler_register(&tstate_a, KEY_A, my_tid(), 0) >= 0);
    uint64_t weight = 0;
    int reads = 0, split = 0, bad = 0;
    while (now_s() - from < 0.3) {
        burn_cpu();
        int n = drain();
        for (int i = 0; i < n; i++) {
            const got_sample *g = &got[i];
            if (g->flags & LP_SF_SPLIT) {
                split++;
            } else if ((g->flags & (LP_SF_OUTSIDE | LP_SF_GIL)) == (LP_SF_OUTSIDE | LP_SF_GIL) &&
                       g->key == KEY_A && frames_are(g, 0) && g->cpu_ns == (uint64_t)g->weight * 1000000u) {
                weight += g->weight;
                reads++;
            } else {
                bad++;
            }
        }
    }
    lp_sampler_unregister(KEY_A);
    lp_sampler_stop();
    double ms = (now_s() - from) * 1e3;
    int n = drain();
    for (int i = 0; i < n; i++)
        if (got[i].flags & LP_SF_OUTSIDE) weight += got[i].weight;
    lp_sampler_stats st;
    lp_sampler_get_stats(&st);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(st.signals, 0);
    CHECK(st.outside_reads);
    CHECK(reads >= 50);
    /* every period but the last pass's, none twice (a busy machine delays
     * the wall thread: its reads then weigh more periods) */
    CHECK(weight <= ms + 1.5);
    CHECK(weight >= 0.8 * ms);
    if (st.split_samples == 0) fprintf(stderr, "no perf events here: no split samples\n");
    else CHECK(split > 0);
    stop_and_clear();
}

RUN_TESTS(test_wall_mode_reads_the_gil_holder_from_outside, test_split_samples_come_beside_the_outside_reads,
          test_outside_reads_sample_the_gil_holder_without_a_signal,
          test_other_threads_cpu_goes_to_the_thread_in_native_code,
          test_other_threads_cpu_goes_to_a_running_thread_only_if_native, test_cpu_timer_samples_own_thread,
          test_stale_timer_signal_writes_nothing, test_deep_stacks_fill_the_ring_by_their_changes,
          test_deep_detached_reads_fill_the_wall_ring_by_their_changes,
          test_wall_mode_signals_holder_reads_detached, test_a_moved_read_gives_its_time_to_the_next,
          test_a_mostly_full_ring_asks_the_host_to_drain, test_samples_carry_the_running_task,
          test_signal_in_lprof_code_is_not_a_sample, test_start_refuses_incomplete_host, test_pause_cpu_mode,
          test_pause_wall_mode, test_paused_cpu_is_not_in_the_tail,
          test_wall_thread_started_when_start_returns, test_perf_events_raise_sigtrap_until_released,
          test_sigtrap_taken_by_sigaction_moves_the_events,
          test_cpu_timers_sample_until_the_perf_events_take_over,
          test_samples_charge_no_more_than_the_thread_clock)
