/* common: lprof's own threads by kernel tid (see own_tids.h). */
#define _GNU_SOURCE 1
#include "common/own_tids.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t tids[LP_OWN_TIDS_MAX]; /* 0 = free */
static unsigned long long exited_cpu_ns;

static pid_t self_tid(void) { return (pid_t)syscall(SYS_gettid); }

void lp_own_tid_add_self(void) {
    pid_t me = self_tid();
    for (int i = 0; i < LP_OWN_TIDS_MAX; i++) {
        pid_t expected = 0;
        if (__atomic_compare_exchange_n(&tids[i], &expected, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

void lp_own_tid_remove_self(void) {
    pid_t me = self_tid();
    struct timespec ts; /* its CPU time, all of it lprof's (the clock reads it below) */
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        __atomic_fetch_add(&exited_cpu_ns,
                           (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                           __ATOMIC_RELEASE);
    for (int i = 0; i < LP_OWN_TIDS_MAX; i++) {
        pid_t expected = me;
        __atomic_compare_exchange_n(&tids[i], &expected, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
}

int lp_own_tids_list(pid_t *out, int max) {
    int n = 0;
    for (int i = 0; i < LP_OWN_TIDS_MAX && n < max; i++) {
        pid_t t = __atomic_load_n(&tids[i], __ATOMIC_ACQUIRE);
        if (t) out[n++] = t;
    }
    return n;
}

int lp_own_tid_is(pid_t tid) {
    for (int i = 0; i < LP_OWN_TIDS_MAX; i++)
        if (tid && __atomic_load_n(&tids[i], __ATOMIC_ACQUIRE) == tid) return 1;
    return 0;
}

unsigned long long lp_own_tids_exited_cpu_ns(void) {
    return __atomic_load_n(&exited_cpu_ns, __ATOMIC_ACQUIRE);
}

void lp_own_tids_reset(void) {
    __atomic_store_n(&exited_cpu_ns, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < LP_OWN_TIDS_MAX; i++) __atomic_store_n(&tids[i], 0, __ATOMIC_RELEASE);
}
