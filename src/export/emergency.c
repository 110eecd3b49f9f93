/* export: the profile of a program that dies by a signal (see emergency.h). */
#define _GNU_SOURCE 1 /* sem_clockwait */
#include "export/emergency.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/own_tids.h"
#include "common/thread_start.h"

static const int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL LP_ARRAY_LEN(FATAL_SIGNALS)

typedef struct {
    char *data;
    size_t len, cap;
    struct timespec taken;
} checkpoint_slot;

/* Two slots: the setter fills the one that is not current, then publishes it;
 * a dying handler sets g_dying first and reads only the current one, and the
 * setter never writes again once g_dying is set (both seq_cst). */
static checkpoint_slot g_slots[2];
static atomic_int g_current = -1;
static atomic_int g_dying;
static atomic_int g_term_pending;
static atomic_int g_armed;
/* lp_emergency_relay_term: the relay, and whether this arming's SIGTERM
 * went to it */
static int (*_Atomic g_relay)(int sig);
static atomic_int g_relayed;
/* The relay's own thread, beside the watcher: a C thread (no Python, every
 * signal blocked, never ending) woken by the SIGTERM handler, so the relay
 * comes at once even while the watcher, inside a checkpoint, waits for a GIL
 * the program keeps (a SIGTERM then took 1-17 s). One per process that
 * arms with SIGTERM (a forked child starts its own). */
static sem_t g_relay_wake;
static atomic_int g_relay_wake_ok;
static pid_t g_relay_pid;
static int g_relay_started;

static pid_t g_owner;
static unsigned g_flags; /* LP_EMERGENCY_* */
static unsigned g_mode;
/* The watcher's wake-up: posted by the SIGTERM handler (sem_post is
 * async-signal-safe) and by lp_emergency_release. A semaphore, not a pipe,
 * so lprof holds no descriptor the program could see, close or reuse. */
static sem_t g_wake;
static pthread_once_t g_wake_once = PTHREAD_ONCE_INIT;
static atomic_int g_wake_ok;
static atomic_int g_released;
static char g_path[PATH_MAX], g_tmp[PATH_MAX];
/* where a fatal signal also leaves a one-line note (a followed child's
 * "<folder>/<pid>.died", read by the lprof command); "" = none */
static char g_note[PATH_MAX];
static struct sigaction g_old_fatal[N_FATAL], g_old_term;
static int g_term_installed;

/* ---- async-signal-safe text ------------------------------------------- */

typedef struct {
    char buf[PATH_MAX + 256];
    size_t n;
} line_buf;

LP_SIGNAL_SAFE static void put(line_buf *b, const char *s) {
    while (*s && b->n < sizeof b->buf - 1) b->buf[b->n++] = *s++;
}

LP_SIGNAL_SAFE static void put_uint(line_buf *b, unsigned long v) {
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < (int)sizeof digits);
    while (k > 0 && b->n < sizeof b->buf - 1) b->buf[b->n++] = digits[--k];
}

LP_SIGNAL_SAFE static const char *signal_name(int sig) {
    switch (sig) {
        case SIGSEGV: return "SIGSEGV";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGILL: return "SIGILL";
        case SIGABRT: return "SIGABRT";
        case SIGTERM: return "SIGTERM";
        default: return "a signal";
    }
}

LP_SIGNAL_SAFE static void say(line_buf *b) {
    if (g_flags & LP_EMERGENCY_QUIET) return; /* -q, or a followed child: stderr is the program's */
    b->buf[b->n++] = '\n';
    size_t off = 0;
    while (off < b->n) {
        ssize_t w = write(2, b->buf + off, b->n - off);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return;
        }
        off += (size_t)w;
    }
}

LP_SIGNAL_SAFE static int write_all(int fd, const char *p, size_t len) {
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* ---- handlers ---------------------------------------------------------- */

LP_SIGNAL_SAFE static int fatal_index(int sig) {
    for (size_t i = 0; i < N_FATAL; i++)
        if (FATAL_SIGNALS[i] == sig) return (int)i;
    return -1;
}

/* The note: "<signal number> <age of the checkpoint written, in ms, or -1:
 * none>\n", replaced whole (written beside, then renamed). */
LP_SIGNAL_SAFE static void write_note(int sig, long age_ms) {
    if (!g_note[0]) return;
    line_buf b = {.n = 0};
    put_uint(&b, (unsigned long)sig);
    put(&b, age_ms < 0 ? " -1" : " ");
    if (age_ms >= 0) put_uint(&b, (unsigned long)age_ms);
    b.buf[b.n++] = '\n';
    int fd = open(g_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)g_mode);
    if (fd < 0) return;
    int ok = write_all(fd, b.buf, b.n) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(g_tmp, g_note) != 0) unlink(g_tmp);
}

LP_SIGNAL_SAFE static void write_last_checkpoint(int sig) {
    line_buf b = {.n = 0};
    put(&b, "lprof: the program was killed by ");
    put(&b, signal_name(sig));
    int cur = atomic_load(&g_current);
    if (cur < 0) {
        put(&b, " before lprof's first checkpoint; no profile was written");
        say(&b);
        write_note(sig, -1);
        return;
    }
    const checkpoint_slot *s = &g_slots[cur];
    int fd = open(g_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)g_mode);
    int ok = fd >= 0 && write_all(fd, s->data, s->len) == 0;
    if (fd >= 0) ok = close(fd) == 0 && ok;
    ok = ok && rename(g_tmp, g_path) == 0;
    if (!ok) {
        if (fd >= 0) unlink(g_tmp);
        put(&b, "; could not write its profile to ");
        put(&b, g_path);
        say(&b);
        write_note(sig, -1);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long age = (long)(now.tv_sec - s->taken.tv_sec);
    write_note(sig,
               (long)((now.tv_sec - s->taken.tv_sec) * 1000 + (now.tv_nsec - s->taken.tv_nsec) / 1000000));
    put(&b, "; wrote its profile as of ");
    put_uint(&b, (unsigned long)(age > 0 ? age : 0));
    put(&b, " s before (lprof's last checkpoint) to ");
    put(&b, g_path);
    say(&b);
}

LP_SIGNAL_SAFE static void on_fatal(int sig, siginfo_t *info, void *ctx) {
    LP_UNUSED(info);
    LP_UNUSED(ctx);
    int saved = errno;
    if (getpid() == g_owner && atomic_exchange(&g_dying, 1) == 0) write_last_checkpoint(sig);
    int i = fatal_index(sig);
    if (i >= 0) sigaction(sig, &g_old_fatal[i], NULL);
    errno = saved;
    /* SA_NODEFER: delivered now, to the previous handler (default: death by
     * sig). A returning handler re-runs a faulting instruction, as without us. */
    raise(sig);
}

LP_SIGNAL_SAFE static void die_now(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

LP_SIGNAL_SAFE static void on_term(int sig) {
    int saved = errno;
    /* a forked child, or a second SIGTERM while the profile is being saved */
    if (getpid() != g_owner || atomic_exchange(&g_term_pending, sig) != 0) die_now(sig);
    if (!atomic_load(&g_wake_ok) || sem_post(&g_wake) != 0) die_now(sig);
    if (atomic_load(&g_relay_wake_ok)) sem_post(&g_relay_wake); /* the watcher's post is what counts */
    errno = saved;
}

/* ---- API ------------------------------------------------------------- */

static int copy_path(char *dst, const char *src) {
    size_t n = strlen(src);
    if (n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

/* An alternate stack for the arming (main) thread, so a stack overflow can
 * still run the handler; kept where the program (faulthandler) has one. */
static void ensure_altstack(void) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;
    size_t size = 64 * 1024;
    void *mem = malloc(size);
    if (mem == NULL) return;
    stack_t ss = {.ss_sp = mem, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) free(mem);
}

static void init_wake(void) { atomic_store(&g_wake_ok, sem_init(&g_wake, 0, 0) == 0); }

static void *relay_main(void *started) {
    lp_own_tid_add_self(); /* its (nil) CPU time is lprof's */
    __atomic_store_n((int *)started, 1, __ATOMIC_RELEASE);
    for (;;) {
        if (sem_wait(&g_relay_wake) != 0) {
            if (errno == EINTR) continue;
            break; /* no semaphore to wait on: the watcher relays alone */
        }
        lp_emergency_relay_term();
    }
    return NULL;
}

/* The relay thread of this process, started once (again in a forked child,
 * which has none of its parent's threads); its semaphore's posts left from
 * an earlier arming are taken first. Without it (no semaphore, no thread),
 * the watcher relays alone, on waking. */
static void ensure_relay_thread(void) {
    if (g_relay_started && g_relay_pid == getpid()) {
        while (sem_trywait(&g_relay_wake) == 0) continue;
        return;
    }
    g_relay_started = 0;
    atomic_store(&g_relay_wake_ok, 0);
    if (sem_init(&g_relay_wake, 0, 0) != 0) return;
    pthread_t thread;
    static int started;
    __atomic_store_n(&started, 0, __ATOMIC_RELEASE);
    if (lp_thread_create_quiet(&thread, relay_main, &started) != 0) return;
    pthread_detach(thread);
    lp_wait_for_flag(&started, LP_THREAD_START_WAIT_NS); /* see common/thread_start.h */
    g_relay_pid = getpid();
    g_relay_started = 1;
    atomic_store(&g_relay_wake_ok, 1);
}

int lp_emergency_arm(unsigned flags, const char *path, const char *tmp_path, unsigned mode) {
    if (atomic_load(&g_armed)) {
        errno = EBUSY;
        return -1;
    }
    if (copy_path(g_path, path) < 0 || copy_path(g_tmp, tmp_path) < 0) return -1;
    pthread_once(&g_wake_once, init_wake);
    if ((flags & LP_EMERGENCY_TERM) && !atomic_load(&g_wake_ok)) {
        errno = ENOSYS; /* no semaphore: no watcher to wake */
        return -1;
    }
    /* posts left from an earlier arming (or the parent's, in a fork) */
    while (atomic_load(&g_wake_ok) && sem_trywait(&g_wake) == 0) continue;
    atomic_store(&g_released, 0);
    g_owner = getpid();
    g_flags = flags;
    g_mode = mode;
    atomic_store(&g_term_pending, 0);
    atomic_store(&g_relayed, 0);
    if (flags & LP_EMERGENCY_TERM) ensure_relay_thread();
    atomic_store(&g_dying, 0);
    ensure_altstack();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++) sigaction(FATAL_SIGNALS[i], &sa, &g_old_fatal[i]);
    g_term_installed = 0;
    if ((flags & LP_EMERGENCY_TERM) && sigaction(SIGTERM, NULL, &g_old_term) == 0 &&
        !(g_old_term.sa_flags & SA_SIGINFO) && g_old_term.sa_handler == SIG_DFL) {
        struct sigaction term;
        memset(&term, 0, sizeof term);
        term.sa_handler = on_term;
        term.sa_flags = SA_RESTART;
        sigemptyset(&term.sa_mask);
        g_term_installed = sigaction(SIGTERM, &term, NULL) == 0;
    }
    atomic_store(&g_armed, 1);
    return 0;
}

static int is_ours(int sig, void (*handler)(void), int siginfo) {
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0) return 0;
    if (siginfo) return (cur.sa_flags & SA_SIGINFO) && (void (*)(void))cur.sa_sigaction == handler;
    return !(cur.sa_flags & SA_SIGINFO) && (void (*)(void))cur.sa_handler == handler;
}

void lp_emergency_disarm(void) {
    if (!atomic_exchange(&g_armed, 0)) return;
    for (size_t i = 0; i < N_FATAL; i++)
        if (is_ours(FATAL_SIGNALS[i], (void (*)(void))on_fatal, 1))
            sigaction(FATAL_SIGNALS[i], &g_old_fatal[i], NULL);
    if (g_term_installed && is_ours(SIGTERM, (void (*)(void))on_term, 0))
        sigaction(SIGTERM, &g_old_term, NULL);
    g_term_installed = 0;
}

/* A monotonic deadline where the C library has one: a step of the wall
 * clock must not stretch the wait between checkpoints. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define WAIT_CLOCK          CLOCK_MONOTONIC
#define TIMED_WAIT(sem, at) sem_clockwait((sem), CLOCK_MONOTONIC, (at))
#else
#define WAIT_CLOCK          CLOCK_REALTIME
#define TIMED_WAIT(sem, at) sem_timedwait((sem), (at))
#endif

int lp_emergency_wait(double timeout_s) {
    if (!atomic_load(&g_wake_ok)) return -1;
    struct timespec deadline;
    clock_gettime(WAIT_CLOCK, &deadline);
    if (timeout_s >= 0) {
        if (timeout_s > 1e6) timeout_s = 1e6;
        long long ns = (long long)deadline.tv_nsec + (long long)(timeout_s * 1e9);
        deadline.tv_sec += (time_t)(ns / 1000000000LL);
        deadline.tv_nsec = (long)(ns % 1000000000LL);
    }
    for (;;) {
        int rc = timeout_s < 0 ? sem_wait(&g_wake) : TIMED_WAIT(&g_wake, &deadline);
        if (rc == 0) break;
        if (errno == EINTR) continue;
        return 0; /* ETIMEDOUT */
    }
    if (atomic_load(&g_released)) return -1;
    int sig = atomic_load(&g_term_pending);
    return sig > 0 ? sig : 0;
}

void lp_emergency_release(void) {
    atomic_store(&g_released, 1);
    if (atomic_load(&g_wake_ok)) sem_post(&g_wake);
}

int lp_emergency_checkpoint(const void *data, size_t len) {
    if (atomic_load(&g_dying)) return -1;
    int cur = atomic_load(&g_current);
    int next = cur == 0 ? 1 : 0;
    checkpoint_slot *s = &g_slots[next];
    if (s->cap < len) {
        char *p = realloc(s->data, len ? len : 1);
        if (p == NULL) return -1;
        s->data = p;
        s->cap = len;
    }
    memcpy(s->data, data, len);
    s->len = len;
    clock_gettime(CLOCK_MONOTONIC, &s->taken);
    atomic_store(&g_current, next);
    return atomic_load(&g_dying) ? -1 : 0;
}

int lp_emergency_pending(void) { return atomic_load(&g_term_pending); }

void lp_emergency_set_relay(int (*relay)(int sig)) { atomic_store(&g_relay, relay); }

void lp_emergency_relay_term(void) {
    int sig = atomic_load(&g_term_pending);
    int (*relay)(int) = atomic_load(&g_relay);
    if (sig <= 0 || relay == NULL || getpid() != g_owner || atomic_load(&g_released)) return;
    if (atomic_exchange(&g_relayed, 1)) return;
    if (relay(sig) != 0) atomic_store(&g_relayed, 0); /* a full queue: the watcher asks again on waking */
}

int lp_emergency_note(const char *path) {
    if (atomic_load(&g_armed)) {
        errno = EBUSY;
        return -1;
    }
    if (path == NULL) {
        g_note[0] = 0;
        return 0;
    }
    return copy_path(g_note, path);
}

void lp_emergency_die(int sig) { die_now(sig); }
