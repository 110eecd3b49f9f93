/* collect/remote: threads stopped with ptrace, unwound with libunwind-ptrace
 * (see remote_native.h). */
#define _GNU_SOURCE 1
#include "collect/remote/remote_native.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#ifdef LPROF_HAVE_LIBUNWIND_PTRACE
#include <dlfcn.h>
#include <libunwind-ptrace.h>

/* libunwind-ptrace, loaded on first use (lprof dump --native only): linked
 * into the extension, its libunwind.so dependency (which exports _Unwind_*)
 * would be loaded into every profiled process. libunwind-ptrace.so has no
 * DT_NEEDED on the unwinder it calls, so that one is loaded global first. */
static struct {
    int tried, ok;
    void *(*upt_create)(pid_t);
    void (*upt_destroy)(void *);
    int (*upt_get_proc_name)(unw_addr_space_t, unw_word_t, char *, size_t, unw_word_t *, void *);
    unw_accessors_t *upt_accessors;
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    void (*destroy_addr_space)(unw_addr_space_t);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*step)(unw_cursor_t *);
    int (*get_proc_info)(unw_cursor_t *, unw_proc_info_t *);
} U;

/* the unwinder's exported names: the header's macros spell them */
#define NAME_(x)     #x
#define UNW_NAME_(x) NAME_(x)

static int load_unwinder(void) {
    if (U.tried) return U.ok;
    U.tried = 1;
    void *gen = dlopen("libunwind-" UNW_NAME_(UNW_TARGET) ".so.8", RTLD_NOW | RTLD_GLOBAL);
    if (gen == NULL) gen = dlopen("libunwind-generic.so", RTLD_NOW | RTLD_GLOBAL);
    void *pt = gen ? dlopen("libunwind-ptrace.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
    if (pt == NULL) pt = gen ? dlopen("libunwind-ptrace.so", RTLD_NOW | RTLD_LOCAL) : NULL;
    if (pt == NULL) return 0;
    *(void **)&U.upt_create = dlsym(pt, "_UPT_create");
    *(void **)&U.upt_destroy = dlsym(pt, "_UPT_destroy");
    *(void **)&U.upt_get_proc_name = dlsym(pt, "_UPT_get_proc_name");
    U.upt_accessors = dlsym(pt, "_UPT_accessors");
    *(void **)&U.create_addr_space = dlsym(gen, UNW_NAME_(unw_create_addr_space));
    *(void **)&U.destroy_addr_space = dlsym(gen, UNW_NAME_(unw_destroy_addr_space));
    *(void **)&U.init_remote = dlsym(gen, UNW_NAME_(unw_init_remote));
    *(void **)&U.get_reg = dlsym(gen, UNW_NAME_(unw_get_reg));
    *(void **)&U.step = dlsym(gen, UNW_NAME_(unw_step));
    *(void **)&U.get_proc_info = dlsym(gen, UNW_NAME_(unw_get_proc_info));
    U.ok = U.upt_create && U.upt_destroy && U.upt_get_proc_name && U.upt_accessors && U.create_addr_space &&
           U.destroy_addr_space && U.init_remote && U.get_reg && U.step && U.get_proc_info;
    return U.ok;
}
#endif

/* the threads of pid, as /proc lists them now */
static int list_threads(lp_rnative_set *set) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)set->pid);
    DIR *d = opendir(path);
    if (d == NULL) return errno == EACCES || errno == EPERM ? LP_RNATIVE_NOPERM : LP_RNATIVE_NOPROC;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end != '\0' || tid <= 0) continue;
        if (set->n == LP_RNATIVE_MAX_THREADS) {
            set->more++;
            continue;
        }
        set->tid[set->n] = (pid_t)tid;
        set->state[set->n] = 0;
        set->resig[set->n] = 0;
        set->n++;
    }
    closedir(d);
    return set->n > 0 ? LP_RNATIVE_OK : LP_RNATIVE_NOPROC;
}

/* waits for thread i's stop after PTRACE_INTERRUPT; a signal that arrived
 * first stops it too (signal-delivery-stop): kept to give back on release */
static void wait_stop(lp_rnative_set *set, int i) {
    /* a thread in uninterruptible sleep (D) stops only when it leaves it:
     * waited for WAIT_STOP_MS at most, then left out (still seized: the
     * kernel detaches it when lprof exits, a moment later) */
    enum { WAIT_STOP_MS = 5000 };
    for (int waited = 0;;) {
        int status;
        pid_t r = waitpid(set->tid[i], &status, __WALL | WNOHANG);
        if (r == 0) {
            if (waited++ >= WAIT_STOP_MS) {
                set->state[i] = LP_RNATIVE_T_NOSTOP;
                return;
            }
            nanosleep(&(struct timespec){0, 1000000}, NULL);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
            set->state[i] = LP_RNATIVE_T_GONE;
            return;
        }
        if (WIFSTOPPED(status)) {
            int sig = WSTOPSIG(status);
            /* PTRACE_EVENT_STOP (the interrupt, or a group-stop): nothing to give back */
            if ((status >> 16) != PTRACE_EVENT_STOP) set->resig[i] = sig;
            set->state[i] = LP_RNATIVE_T_STOPPED;
            return;
        }
    }
}

int lp_rnative_stop_all(pid_t pid, lp_rnative_set *set) {
    set->pid = pid;
    set->n = set->more = 0;
    int rc = list_threads(set);
    if (rc != LP_RNATIVE_OK) return rc;
    int stopped = 0;
    for (int i = 0; i < set->n; i++) {
        if (ptrace(PTRACE_SEIZE, set->tid[i], 0, 0) != 0) {
            if (errno == ESRCH) { /* exited since it was listed */
                set->state[i] = LP_RNATIVE_T_GONE;
                continue;
            }
            int err = errno;
            lp_rnative_release_all(set);
            return err == EPERM || err == EACCES ? LP_RNATIVE_NOPERM : LP_RNATIVE_NOPROC;
        }
        set->state[i] = LP_RNATIVE_T_STOPPED; /* seized: released from here on */
        if (ptrace(PTRACE_INTERRUPT, set->tid[i], 0, 0) != 0) {
            ptrace(PTRACE_DETACH, set->tid[i], 0, 0);
            set->state[i] = LP_RNATIVE_T_GONE;
            continue;
        }
        wait_stop(set, i);
        stopped += set->state[i] == LP_RNATIVE_T_STOPPED;
    }
    if (stopped == 0) {
        lp_rnative_release_all(set);
        return LP_RNATIVE_NOPROC;
    }
    return LP_RNATIVE_OK;
}

void lp_rnative_release_all(lp_rnative_set *set) {
    for (int i = 0; i < set->n; i++) {
        if (set->state[i] != LP_RNATIVE_T_STOPPED) continue;
        /* a failure here means the thread is gone: nothing is left stopped */
        ptrace(PTRACE_DETACH, set->tid[i], 0, (void *)(intptr_t)set->resig[i]);
        set->state[i] = 0;
    }
}

int lp_rnative_available(void) {
#ifdef LPROF_HAVE_LIBUNWIND_PTRACE
    return load_unwinder() ? 1 : -1;
#else
    return 0;
#endif
}

#ifdef LPROF_HAVE_LIBUNWIND_PTRACE
/* ip's symbol; a return address (not the innermost frame) is looked up at
 * ip - 1, inside its call: a call that ends a function (noreturn) would
 * otherwise name the next one */
static void name_of(unw_addr_space_t as, void *upt, uint64_t ip, int inner, lp_rnative_frame *f) {
    unw_word_t off = 0;
    uint64_t at = inner ? ip : ip - 1;
    f->name[0] = '\0';
    f->offset = 0;
    if (U.upt_get_proc_name(as, (unw_word_t)at, f->name, sizeof f->name, &off, upt) == 0 ||
        f->name[0] != '\0') {
        f->name[sizeof f->name - 1] = '\0';
        f->offset = off + (inner ? 0 : 1);
    } else {
        f->name[0] = '\0';
    }
}

int lp_rnative_unwind(lp_rnative_set *set, int i, lp_rnative_frame *out, int max, int *n, int *truncated,
                      uint64_t *tls) {
    *n = 0;
    *truncated = 0;
    *tls = 0;
    if (i < 0 || i >= set->n || set->state[i] != LP_RNATIVE_T_STOPPED) return LP_RNATIVE_GONE;
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, set->tid[i], 0, &regs) != 0)
        return errno == ESRCH ? LP_RNATIVE_GONE : LP_RNATIVE_FAILED;
    *tls = regs.fs_base;
    if (!load_unwinder()) return LP_RNATIVE_UNAVAILABLE;
    unw_addr_space_t as = U.create_addr_space(U.upt_accessors, 0);
    if (as == NULL) return LP_RNATIVE_FAILED;
    void *upt = U.upt_create(set->tid[i]);
    if (upt == NULL) {
        U.destroy_addr_space(as);
        return LP_RNATIVE_FAILED;
    }
    unw_cursor_t c;
    int rc = LP_RNATIVE_OK;
    if (U.init_remote(&c, as, upt) != 0) {
        rc = LP_RNATIVE_FAILED;
    } else {
        for (;;) {
            unw_word_t ip = 0, sp = 0;
            if (U.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip == 0) break;
            if (*n == max) {
                *truncated = 1;
                break;
            }
            out[*n].ip = ip;
            /* 0 when it does not read: the merge then finds nothing in it */
            out[*n].sp = U.get_reg(&c, UNW_REG_SP, &sp) == 0 ? sp : 0;
            name_of(as, upt, ip, *n == 0, &out[*n]);
            /* a stripped library names the nearest exported symbol below ip,
             * often another function: kept only when it starts where the
             * unwind table's procedure does (else library+offset is shown) */
            unw_proc_info_t pi;
            if (out[*n].name[0] && U.get_proc_info(&c, &pi) == 0 && pi.start_ip != 0 &&
                ip - out[*n].offset != pi.start_ip)
                out[*n].name[0] = '\0';
            (*n)++;
            if (U.step(&c) <= 0) break;
        }
    }
    U.upt_destroy(upt);
    U.destroy_addr_space(as);
    return rc;
}
#else
int lp_rnative_unwind(lp_rnative_set *set, int i, lp_rnative_frame *out, int max, int *n, int *truncated,
                      uint64_t *tls) {
    (void)set;
    (void)i;
    (void)out;
    (void)max;
    *n = 0;
    *truncated = 0;
    *tls = 0;
    return LP_RNATIVE_UNAVAILABLE;
}
#endif
