/* export/emergency.c: what a dying process leaves. Each case runs in a
 * forked child, which dies by the signal; the parent checks how and what. */
#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export/emergency.h"

static char dir[] = "/tmp/lprof-emergency-XXXXXX";

static void paths(char *path, char *tmp, const char *name) {
    snprintf(path, 256, "%s/%s", dir, name);
    snprintf(tmp, 256, "%s/.%s.tmp", dir, name);
}

static size_t read_file(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, cap);
    close(fd);
    return n > 0 ? (size_t)n : 0;
}

/* A fatal signal writes the last checkpoint, then the default action runs. */
TEST(abort_writes_last_checkpoint_and_dies_by_it) {
    char path[256], tmp[256], buf[64];
    paths(path, tmp, "abort.lprof");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (lp_emergency_arm(0, path, tmp, 0644) != 0) _exit(3);
        lp_emergency_checkpoint("first", 5);
        lp_emergency_checkpoint("second one", 10);
        raise(SIGABRT);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    size_t n = read_file(path, buf, sizeof buf);
    CHECK_EQ_INT(n, 10);
    CHECK(memcmp(buf, "second one", 10) == 0);
    CHECK(access(tmp, F_OK) != 0); /* renamed, not left behind */
}

/* No checkpoint yet: nothing is written (no empty or partial file). */
TEST(no_checkpoint_no_file) {
    char path[256], tmp[256];
    paths(path, tmp, "none.lprof");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        lp_emergency_arm(0, path, tmp, 0644);
        raise(SIGABRT);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(access(path, F_OK) != 0);
}

/* SIGTERM only wakes the watcher; the owner dies when it asks to. */
TEST(sigterm_notifies_then_dies_on_request) {
    char path[256], tmp[256];
    paths(path, tmp, "term.lprof");
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) != 0) _exit(3);
        if (lp_emergency_wait(0.01) != 0) _exit(4); /* nothing yet: the wait times out */
        raise(SIGTERM);
        if (lp_emergency_wait(5.0) != SIGTERM) _exit(5);
        if (lp_emergency_pending() != SIGTERM) _exit(6);
        if (write(fds[1], "ok", 2) != 2) _exit(7);
        lp_emergency_die(SIGTERM);
        _exit(8);
    }
    close(fds[1]);
    char buf[4] = {0};
    CHECK_EQ_INT(read(fds[0], buf, 2), 2);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

/* A child forked after arming behaves as without lprof: SIGTERM kills it,
 * the parent's watcher is not woken. */
TEST(forked_child_dies_by_default) {
    char path[256], tmp[256];
    paths(path, tmp, "child.lprof");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) != 0) _exit(3);
        pid_t child = fork();
        if (child == 0) {
            raise(SIGTERM);
            _exit(9);
        }
        int st = 0;
        waitpid(child, &st, 0);
        int notified = lp_emergency_wait(0.05) != 0;
        _exit(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && !notified ? 0 : 10);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Disarm puts back what was there. */
TEST(disarm_restores_previous_handlers) {
    char path[256], tmp[256];
    paths(path, tmp, "disarm.lprof");
    struct sigaction before, after;
    sigaction(SIGABRT, NULL, &before);
    REQUIRE(lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) == 0);
    CHECK(lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) != 0); /* once at a time */
    lp_emergency_disarm();
    sigaction(SIGABRT, NULL, &after);
    CHECK(after.sa_handler == before.sa_handler);
    sigaction(SIGTERM, NULL, &after);
    CHECK(after.sa_handler == SIG_DFL);
}

/* The end of a run releases the watcher for good, whatever it waits for;
 * a new arming starts with no stale wake-up. */
TEST(release_ends_the_wait_and_rearming_forgets_it) {
    char path[256], tmp[256];
    paths(path, tmp, "release.lprof");
    REQUIRE(lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) == 0);
    lp_emergency_release();
    CHECK_EQ_INT(lp_emergency_wait(-1), -1);
    lp_emergency_release(); /* a second post, left unconsumed */
    lp_emergency_disarm();
    REQUIRE(lp_emergency_arm(LP_EMERGENCY_TERM, path, tmp, 0644) == 0);
    CHECK_EQ_INT(lp_emergency_wait(0.01), 0);
    lp_emergency_disarm();
}

/* QUIET: a fatal signal still writes the checkpoint, and says nothing on
 * fd 2 (a followed child's stderr is the program's). */
TEST(quiet_writes_the_file_and_says_nothing) {
    char path[256], tmp[256], errpath[256], buf[64];
    paths(path, tmp, "quiet.lprof");
    snprintf(errpath, sizeof errpath, "%s/quiet.err", dir);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err < 0 || dup2(err, 2) < 0) _exit(3);
        if (lp_emergency_arm(LP_EMERGENCY_QUIET, path, tmp, 0644) != 0) _exit(3);
        lp_emergency_checkpoint("kept", 4);
        abort();
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK_EQ_INT((int)read_file(path, buf, sizeof buf), 4);
    CHECK_EQ_INT((int)read_file(errpath, buf, sizeof buf), 0);
}

static void setup(void) {
    if (mkdtemp(dir) == NULL) abort();
}

static void cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

TEST(begin) { setup(); }
TEST(end) { cleanup(); }

RUN_TESTS(begin, abort_writes_last_checkpoint_and_dies_by_it, no_checkpoint_no_file,
          sigterm_notifies_then_dies_on_request, forked_child_dies_by_default,
          disarm_restores_previous_handlers, release_ends_the_wait_and_rearming_forgets_it,
          quiet_writes_the_file_and_says_nothing, end)
