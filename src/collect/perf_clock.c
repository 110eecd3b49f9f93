/* collect: per-thread task-clock perf events (see perf_clock.h). */
#define _GNU_SOURCE 1
#include "collect/perf_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/own_tids.h"
#include "common/thread_start.h"

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void *lp_perf_clock_open(pid_t tid, uint64_t period_ns, int signo) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = period_ns;
    attr.disabled = 1; /* enabled once its signal goes to the right thread */
    attr.wakeup_events = 1;
    int trap = signo == SIGTRAP;
    if (trap) { /* the kernel raises it on the thread itself: no descriptor owner */
        attr.sigtrap = 1;
        attr.remove_on_exec = 1; /* required with sigtrap: the new image never meets it */
    }
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return NULL;
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    void *page = MAP_FAILED;
    if (trap || (fcntl(fd, F_SETSIG, signo) == 0 && fcntl(fd, F_SETOWN_EX, &owner) == 0 &&
                 fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) == 0))
        page = mmap(NULL, page_size(), PROT_READ, MAP_SHARED, fd, 0);
    if (page != MAP_FAILED &&
        (madvise(page, page_size(), MADV_DONTFORK) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)) {
        munmap(page, page_size());
        page = MAP_FAILED;
    }
    int saved = errno;
    close(fd); /* the page holds the event from here */
    errno = saved;
    return page == MAP_FAILED ? NULL : page;
}

void lp_perf_clock_close(void *handle) {
    /* the last reference: the kernel frees the event before munmap returns
     * to this thread, waiting for any signal it was about to send */
    if (handle) munmap(handle, page_size());
}

static struct {
    int started, done, held;
    void (*on_done)(void);
} warm;

static void warm_over(void) {
    void (*fn)(void) = __atomic_load_n(&warm.on_done, __ATOMIC_ACQUIRE);
    if (fn && lp_perf_clock_warm_done()) fn();
}

static void *warm_main(void *arg) {
    (void)arg;
    /* lprof's: it may run beside the program now, whose CPU its own is not */
    lp_own_tid_add_self();
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.disabled = 1; /* counts nothing, signals nothing: only the hooks' switch-on */
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) close(fd);
    __atomic_store_n(&warm.done, 1, __ATOMIC_RELEASE);
    warm_over();
    lp_own_tid_remove_self();
    return NULL;
}

int lp_perf_clock_warm(void) {
    if (warm.started) return 0;
    pthread_t thread;
    if (lp_thread_create_quiet(&thread, warm_main, NULL) != 0) return -1;
    pthread_detach(thread);
    __atomic_store_n(&warm.started, 1, __ATOMIC_RELEASE);
    return 0;
}

int lp_perf_clock_warm_done(void) {
    if (__atomic_load_n(&warm.held, __ATOMIC_ACQUIRE)) return 0;
    return !__atomic_load_n(&warm.started, __ATOMIC_ACQUIRE) || __atomic_load_n(&warm.done, __ATOMIC_ACQUIRE);
}

void lp_perf_clock_warm_on_done(void (*on_done)(void)) {
    __atomic_store_n(&warm.on_done, on_done, __ATOMIC_RELEASE);
}

void lp_perf_clock_after_fork(void) { __atomic_store_n(&warm.done, 1, __ATOMIC_RELEASE); }

void lp_perf_clock_warm_hold(int hold) {
    __atomic_store_n(&warm.held, hold != 0, __ATOMIC_RELEASE);
    if (!hold) warm_over();
}
