/* make bench, rates section: what one interruption of a running thread
 * costs on this host, with nothing of lprof's in it. A CPU-bound loop runs
 * once alone and once with a task-clock perf event that raises a signal
 * every 100 us of the thread's CPU (10 kHz), into a handler that only
 * counts; the difference over the signals is the floor under any sampler
 * that stops the thread for each sample (on a VM, the timer interrupt's
 * exit dominates). A self-sent signal's cost is printed beside it, and two
 * ways of another thread's, on the loop's CPU time: signalling the loop's
 * thread every 100 us of wall time (a sampler thread that stops it), and
 * copying 64 KiB of this process's memory every 100 us without stopping it
 * (a sampler thread that reads the frames where they are: what the loop
 * pays is the memory traffic, where a core is free for the reader). Last,
 * the same perf event writing each sample's user PC into its mmap'd ring
 * instead of raising a signal (what a sampler that took the PC so and read
 * the stack from outside would pay: the timer interrupt alone).
 * Output, one line: "perf_us=<float> signals=<n> self_signal_us=<float>
 * cross_signal_us=<float> reader_us=<float> ring_us=<float>", perf_us and
 * ring_us none where perf events are not allowed, the other two "none"
 * where no second thread could run. */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <math.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static volatile long signals;
static volatile unsigned long sink;

static void count(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
    signals = signals + 1;
}

static double thread_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void spin(long rounds) {
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < 10000; i++) sink = sink * 6364136223846793005ul + 1;
}

/* The CPU seconds `rounds` of the loop take, the mean of three runs (the
 * signals counted over the same three runs divide its difference). */
static double timed(long rounds) {
    double t0 = thread_cpu_s();
    for (int k = 0; k < 3; k++) spin(rounds);
    return (thread_cpu_s() - t0) / 3;
}

/* ---- another thread, every 100 us of wall time ---- */

static atomic_int other_stop;
static pid_t loop_tid;
static char read_src[65536], read_dst[65536];

static void *other_thread(void *reader) {
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    while (!atomic_load(&other_stop)) {
        at.tv_nsec += 100000;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_nsec -= 1000000000L;
            at.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        if (reader) {
            struct iovec local = {read_dst, sizeof read_dst}, remote = {read_src, sizeof read_src};
            if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) > 0) signals = signals + 1;
        } else {
            syscall(SYS_tgkill, getpid(), loop_tid, SIGUSR1);
        }
    }
    return NULL;
}

/* The loop's CPU cost of each act of another thread, in us (as measured: a
 * cost below the noise can come out negative); NAN: no act ran. */
static double beside(long rounds, double alone, int reader) {
    pthread_t t;
    atomic_store(&other_stop, 0);
    loop_tid = (pid_t)syscall(SYS_gettid);
    signals = 0;
    if (pthread_create(&t, NULL, other_thread, reader ? (void *)1 : NULL) != 0) return NAN;
    double with = timed(rounds);
    atomic_store(&other_stop, 1);
    pthread_join(t, NULL);
    long n = signals; /* counted by the handler, or by the reader */
    return n > 0 ? (with - alone) * 3 / (double)n * 1e6 : NAN;
}

/* The loop's CPU cost of each sample a task-clock event writes into its
 * ring (user PC only, no signal), in us; NAN: no event or ring here. */
#define RING_PAGES 512 /* 2 MiB: every sample of the three runs (16 bytes each) */
static double ring_cost(long rounds, double alone) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 100000;
    a.sample_type = PERF_SAMPLE_IP;
    a.exclude_kernel = 1;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) return NAN;
    size_t len = (size_t)(RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
    void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) {
        close(fd);
        return NAN;
    }
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    double with = timed(rounds);
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t head = __atomic_load_n(&((struct perf_event_mmap_page *)ring)->data_head, __ATOMIC_ACQUIRE);
    munmap(ring, len);
    close(fd);
    double n = (double)head / 16.0 / 3; /* header + IP a sample; timed() ran the loop three times */
    return n > 0 ? (with - alone) / n * 1e6 : NAN;
}

static void print_others(long rounds, double alone) {
    double cross = beside(rounds, alone, 0), reader = beside(rounds, alone, 1);
    double ring = ring_cost(rounds, alone);
    if (isnan(cross)) printf(" cross_signal_us=none");
    else printf(" cross_signal_us=%.2f", cross);
    if (isnan(reader)) printf(" reader_us=none");
    else printf(" reader_us=%.2f", reader);
    if (isnan(ring)) printf(" ring_us=none\n");
    else printf(" ring_us=%.2f\n", ring);
}

int main(void) {
    long rounds = 1;
    for (double t = timed(rounds); t < 0.3; t = timed(rounds)) rounds *= 2; /* ~0.3-0.6 s */
    double alone = timed(rounds);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = count;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGIO, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);

    /* a self-sent signal: the cheapest interruption */
    double t0 = thread_cpu_s();
    for (int i = 0; i < 20000; i++) syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
    double self_us = (thread_cpu_s() - t0) / 20000 * 1e6;

    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 100000; /* ns of the thread's CPU: 10 kHz */
    a.exclude_kernel = 1;
    a.disabled = 1;
    a.wakeup_events = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) {
        printf("perf_us=none signals=0 self_signal_us=%.2f", self_us);
        print_others(rounds, alone);
        return 0;
    }
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGIO) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        printf("perf_us=none signals=0 self_signal_us=%.2f", self_us);
        print_others(rounds, alone);
        return 0;
    }
    signals = 0;
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    double with = timed(rounds);
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    long n = signals / 3; /* timed() ran the loop three times */
    double per_us = n > 0 ? (with - alone) / (double)n * 1e6 : 0.0;
    close(fd);
    printf("perf_us=%.2f signals=%ld self_signal_us=%.2f", per_us, n, self_us);
    print_others(rounds, alone);
    return 0;
}
