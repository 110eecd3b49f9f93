/* outside_read: a code object's death waits for a read in progress, and
 * the read drops itself only if it names that code (collect/outside_read.h).
 * The dying side runs on a thread of its own, as the interpreter's
 * destruction hook does beside lprof's sampler thread. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "collect/outside_read.h"

static int code_a, code_b; /* their addresses are the fake code objects */
static int death_returned;

static void *dies(void *arg) {
    lp_outside_code_dying(arg);
    __atomic_store_n(&death_returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void pause_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

TEST(a_death_during_a_read_waits_for_it_and_drops_only_a_read_naming_it) {
    lp_rawframe with_a[2] = {{&code_b, 10, 0}, {&code_a, 20, 0}};
    lp_rawframe without_a[1] = {{&code_b, 10, 0}};
    lp_outside_begin();
    CHECK(lp_outside_unchanged(with_a, 2)); /* no death yet */
    pthread_t th;
    __atomic_store_n(&death_returned, 0, __ATOMIC_SEQ_CST);
    REQUIRE(pthread_create(&th, NULL, dies, &code_a) == 0);
    /* the death is seen once the other thread has published it */
    int seen = 0;
    for (int i = 0; i < 5000 && !seen; i++) {
        if (!lp_outside_unchanged(with_a, 2)) seen = 1;
        else pause_ms(1);
    }
    CHECK(seen);
    CHECK(lp_outside_unchanged(without_a, 1)); /* another code's death does not matter */
    pause_ms(20);
    CHECK(!__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST)); /* it waits for the read */
    lp_outside_end();
    pthread_join(th, NULL);
    CHECK(__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST));
    /* a read that begins after the death does not see it */
    lp_outside_begin();
    CHECK(lp_outside_unchanged(with_a, 2));
    lp_outside_end();
}

TEST(without_a_read_in_progress_a_death_does_not_wait) {
    __atomic_store_n(&death_returned, 0, __ATOMIC_SEQ_CST);
    dies(&code_b);
    CHECK(__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST));
}

/* Refuses process_vm_readv with EPERM, as a container's seccomp profile
 * does without CAP_SYS_PTRACE; 0 when installed. */
static int refuse_process_vm_readv(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1 /* EPERM */),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

TEST(outside_reads_are_available_unless_process_vm_readv_is_refused) {
    CHECK_EQ_INT(lp_outside_available(), 1);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (refuse_process_vm_readv() != 0) _exit(2); /* no seccomp here */
        _exit(lp_outside_available() == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 2) {
        fprintf(stderr, "skipped: no seccomp filters here\n");
        return;
    }
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

RUN_TESTS(outside_reads_are_available_unless_process_vm_readv_is_refused,
          a_death_during_a_read_waits_for_it_and_drops_only_a_read_naming_it,
          without_a_read_in_progress_a_death_does_not_wait)
