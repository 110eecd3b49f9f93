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
        if (lp_emergency_arm(-1, path, tmp, 0644) != 0) _exit(3);
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
        lp_emergency_arm(-1, path, tmp, 0644);
        raise(SIGABRT);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(access(path, F_OK) != 0);
}

/* SIGTERM only notifies; the owner dies when it asks to. A second SIGTERM
 * while the first is pending kills at once. */
TEST(sigterm_notifies_then_dies_on_request) {
    char path[256], tmp[256];
    paths(path, tmp, "term.lprof");
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        int note[2];
        if (pipe(note) != 0 || lp_emergency_arm(note[1], path, tmp, 0644) != 0) _exit(3);
        raise(SIGTERM);
        unsigned char byte = 0;
        if (read(note[0], &byte, 1) != 1 || byte != SIGTERM) _exit(5);
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
 * nothing reaches the parent's pipe. */
TEST(forked_child_dies_by_default) {
    char path[256], tmp[256];
    paths(path, tmp, "child.lprof");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int note[2];
        if (pipe(note) != 0 || lp_emergency_arm(note[1], path, tmp, 0644) != 0) _exit(3);
        pid_t child = fork();
        if (child == 0) {
            raise(SIGTERM);
            _exit(9);
        }
        int st = 0;
        waitpid(child, &st, 0);
        fcntl(note[0], F_SETFL, O_NONBLOCK);
        unsigned char byte;
        int notified = read(note[0], &byte, 1) == 1;
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
    int note[2];
    REQUIRE(pipe(note) == 0);
    REQUIRE(lp_emergency_arm(note[1], path, tmp, 0644) == 0);
    CHECK(lp_emergency_arm(note[1], path, tmp, 0644) != 0); /* once at a time */
    lp_emergency_disarm();
    sigaction(SIGABRT, NULL, &after);
    CHECK(after.sa_handler == before.sa_handler);
    sigaction(SIGTERM, NULL, &after);
    CHECK(after.sa_handler == SIG_DFL);
    close(note[0]);
    close(note[1]);
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
          disarm_restores_previous_handlers, end)
