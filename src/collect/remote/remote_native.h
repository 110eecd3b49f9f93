/* collect/remote: another process's native (C) stacks for `lprof dump
 * --native`: every thread stopped with ptrace (PTRACE_SEIZE, then
 * PTRACE_INTERRUPT: no SIGSTOP is sent, so a tracer that dies leaves no
 * thread stopped: the kernel detaches), each unwound with libunwind-ptrace,
 * then all released. The Python stacks are read (remote.c) between the stop
 * and the release, so that both are of the same moment.
 *
 * Contract:
 * - Pure C (no Python.h). Not signal-safe (libunwind allocates). Every loop
 *   is bounded (LP_RNATIVE_MAX_THREADS, LP_RNATIVE_MAX_DEPTH).
 * - lp_rnative_stop_all releases what it stopped when it fails; after it
 *   succeeds the caller must call lp_rnative_release_all on every path.
 *   A thread stopped for a signal (signal-delivery-stop) gets that signal
 *   back on release, so the target sees what it would have seen.
 * - Built without libunwind-ptrace (no LPROF_HAVE_LIBUNWIND_PTRACE), the
 *   unwinding answers LP_RNATIVE_UNAVAILABLE; the stop and release work. */
#ifndef LPROF_COLLECT_REMOTE_NATIVE_H
#define LPROF_COLLECT_REMOTE_NATIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "common/base.h"

#define LP_RNATIVE_MAX_THREADS 1024
#define LP_RNATIVE_MAX_DEPTH   256
#define LP_RNATIVE_MAX_NAME    256 /* bytes of a symbol name, NUL included */

enum {
    LP_RNATIVE_OK = 0,
    LP_RNATIVE_NOPROC = 1,      /* no such process (or it exited while stopped) */
    LP_RNATIVE_NOPERM = 2,      /* ptrace refused (EPERM): Yama ptrace_scope, another user, a tracer */
    LP_RNATIVE_UNAVAILABLE = 3, /* built without libunwind-ptrace */
    LP_RNATIVE_NOLIB = 6,       /* built with it, but its libraries do not load */
    LP_RNATIVE_NOSTOP = 7,      /* this thread did not stop in time (uninterruptible sleep) */
    LP_RNATIVE_FAILED = 4,      /* the unwinder could not start on this thread, or out of memory */
    LP_RNATIVE_GONE = 5,        /* this thread exited during the dump */
};

/* state of one thread of the stopped set */
enum {
    LP_RNATIVE_T_STOPPED = 1,
    LP_RNATIVE_T_GONE = 2,   /* exited before it stopped */
    LP_RNATIVE_T_NOSTOP = 3, /* did not stop in time (uninterruptible sleep): not unwound */
};

typedef struct {
    pid_t pid;
    int n;    /* threads listed (at most LP_RNATIVE_MAX_THREADS) */
    int more; /* threads left out past the limit */
    pid_t tid[LP_RNATIVE_MAX_THREADS];
    uint8_t state[LP_RNATIVE_MAX_THREADS];
    int resig[LP_RNATIVE_MAX_THREADS]; /* the signal to deliver on release, or 0 */
} lp_rnative_set;

typedef struct {
    uint64_t ip;                    /* the PC (frame 0), a return address (the others) */
    uint64_t offset;                /* ip's offset from the symbol's start, when named */
    uint64_t sp;                    /* its stack pointer: its locals lie from here up to the next frame's */
    char name[LP_RNATIVE_MAX_NAME]; /* "" when no symbol covers ip */
} lp_rnative_frame;

/* 1 when libunwind-ptrace is loaded; 0 built without it; -1 built with
 * it, but its libraries did not load here (not installed at run time) */
LP_INTERNAL int lp_rnative_available(void);

/* Every thread of pid (from /proc/PID/task) stopped. OK, NOPROC, NOPERM. */
LP_INTERNAL int lp_rnative_stop_all(pid_t pid, lp_rnative_set *set);

/* Every stopped thread released (PTRACE_DETACH, its pending signal given back). */
LP_INTERNAL void lp_rnative_release_all(lp_rnative_set *set);

/* Thread i of the set (stopped) unwound: at most max frames innermost first
 * into out, *n of them, *truncated when the stack went on; *tls its thread
 * pointer (fs_base: glibc's pthread_self()). OK, GONE, FAILED, UNAVAILABLE. */
LP_INTERNAL int lp_rnative_unwind(lp_rnative_set *set, int i, lp_rnative_frame *out, int max, int *n,
                                  int *truncated, uint64_t *tls);

#endif
