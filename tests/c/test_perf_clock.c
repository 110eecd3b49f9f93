/* collect/perf_clock.c: a task-clock event signals its thread once per
 * period of that thread's CPU time, holds no descriptor, and sends nothing
 * once closed. Skips (passes, saying so) where perf_event_open is refused. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "collect/perf_clock.h"

static volatile sig_atomic_t hits, wrong_code;

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    if (si->si_code == POLL_IN) hits++;
    else wrong_code++;
}

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void burn(double seconds) {
    volatile double x = 0;
    double end = thread_cpu() + seconds;
    while (thread_cpu() < end) x += 1.0;
}

static int descriptors(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

TEST(signals_once_per_period_of_cpu_and_stops_when_closed) {
    int sig = SIGRTMIN + 4;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    REQUIRE(sigaction(sig, &sa, NULL) == 0);
    int before = descriptors();
    void *ev = lp_perf_clock_open((pid_t)syscall(SYS_gettid), 500000, sig); /* 2 kHz */
    if (!ev) {
        printf("perf_event_open refused here (errno %d): skipped\n", errno);
        return;
    }
    CHECK_EQ_INT(descriptors(), before); /* the page holds it, not a descriptor */
    double t0 = thread_cpu();
    burn(0.2);
    double cpu = thread_cpu() - t0;
    lp_perf_clock_close(ev);
    long got = hits;
    CHECK_NEAR((double)got, cpu / 500e-6, 0.1 * cpu / 500e-6 + 2); /* one per 0.5 ms of CPU */
    CHECK_EQ_INT(wrong_code, 0);
    burn(0.02);
    CHECK_EQ_INT(hits, got); /* closed: no more */
    signal(sig, SIG_DFL);
}

RUN_TESTS(signals_once_per_period_of_cpu_and_stops_when_closed)
