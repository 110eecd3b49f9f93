/* collect: libunwind, loaded at run time, walking the interrupted thread's
 * native stack from a signal handler (see native_unwind.h). */
#define _GNU_SOURCE 1
#include "collect/native_unwind.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<libunwind.h>)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define LP_HAVE_LIBUNWIND 1
#endif
#endif

#include "collect/sampler.h" /* lp_sampler_text_range */

#ifdef LP_HAVE_LIBUNWIND
/* The header's names are macros for arch-prefixed symbols (_ULx86_64_step):
 * stringify them through the macro so dlsym asks for the real names. */
#define LP_STR2_(x) #x
#define LP_STR_(x)  LP_STR2_(x)

static struct {
    int loaded;
    int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*getcontext)(unw_context_t *);
    uintptr_t loader_lo, loader_hi; /* ld.so's text */
} U;

/* libunwind opens a pipe (its memory checks) at its first use (1.6: the
 * first init, 1.8: the first step), at the two lowest free descriptors: the
 * program's next open() then returned 5, not 3, and that first use came in
 * the signal handler of the first sample. A walk of this thread's stack
 * does it here instead, out of any handler, while placeholders hold every
 * free descriptor below FD_FLOOR, so the pipe lands above them; the
 * placeholders are closed after. F_DUPFD takes the lowest free descriptor
 * itself, so one that another thread opens meanwhile is never touched. */
#define FD_FLOOR 512

static void first_use_above_low_descriptors(void) {
    int floor = FD_FLOOR;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)FD_FLOOR + 32)
        floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 0; /* leave room for the pipe */
    int held[FD_FLOOR], n = 0;
    int base = floor > 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    if (base >= 0) held[n++] = base;
    /* the last one taken may be at floor or above: held until the pipe exists */
    while (n > 0 && n < floor && held[n - 1] < floor) {
        int d = fcntl(base, F_DUPFD_CLOEXEC, 0);
        if (d < 0) break;
        held[n++] = d;
    }
    unw_context_t uc;
    unw_cursor_t cursor;
    if (U.getcontext(&uc) == 0 && U.init_local2(&cursor, &uc, 0) >= 0)
        for (int depth = 0; depth < 64 && U.step(&cursor) > 0; depth++) continue;
    for (int i = 0; i < n; i++) close(held[i]);
}

int lp_native_unwind_load(const char **why) {
    if (U.loaded) return 0;
    static const char *const names[] = {"libunwind.so.8", "libunwind.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        *why = "libunwind (libunwind.so.8) is not installed: on Debian, apt-get install libunwind8";
        return -1;
    }
    *(void **)&U.init_local2 = dlsym(h, LP_STR_(unw_init_local2));
    *(void **)&U.step = dlsym(h, LP_STR_(unw_step));
    *(void **)&U.get_reg = dlsym(h, LP_STR_(unw_get_reg));
    *(void **)&U.getcontext = dlsym(h, LP_STR_(unw_tdep_getcontext));
    if (!U.init_local2 || !U.step || !U.get_reg || !U.getcontext) {
        *why = "the installed libunwind lacks unw_init_local2 (version 1.3 or later is needed)";
        return -1;
    }
    /* __tls_get_addr lives in the dynamic loader */
    void *in_loader = dlsym(RTLD_DEFAULT, "__tls_get_addr");
    if (in_loader) lp_sampler_text_range((uintptr_t)in_loader, &U.loader_lo, &U.loader_hi);
    first_use_above_low_descriptors();
    __atomic_store_n(&U.loaded, 1, __ATOMIC_RELEASE);
    return 0;
}

int lp_native_unwind_loaded(void) { return __atomic_load_n(&U.loaded, __ATOMIC_ACQUIRE); }

int lp_native_unwind(void *ucontext, uintptr_t *ips, int max) {
    if (!__atomic_load_n(&U.loaded, __ATOMIC_ACQUIRE) || max <= 0) return 0;
    unw_cursor_t cursor;
    if (U.init_local2(&cursor, (unw_context_t *)ucontext, UNW_INIT_SIGNAL_FRAME) < 0) return 0;
    unw_word_t ip = 0;
    if (U.get_reg(&cursor, UNW_REG_IP, &ip) < 0) return 0;
    if ((uintptr_t)ip >= U.loader_lo && (uintptr_t)ip < U.loader_hi) return 0;
    int n = 0;
    ips[n++] = (uintptr_t)ip;
    while (n < max && U.step(&cursor) > 0) {
        if (U.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        ips[n++] = (uintptr_t)ip;
    }
    return n;
}

int lp_native_unwind_here(uintptr_t *ips, int max) {
    if (!__atomic_load_n(&U.loaded, __ATOMIC_ACQUIRE) || max <= 0) return 0;
    unw_context_t uc;
    unw_cursor_t cursor;
    if (U.getcontext(&uc) < 0 || U.init_local2(&cursor, &uc, 0) < 0) return 0;
    int n = 0;
    unw_word_t ip = 0;
    while (n < max && U.step(&cursor) > 0) { /* the first step leaves this function */
        if (U.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        ips[n++] = (uintptr_t)ip;
    }
    return n;
}

#else /* built without libunwind's header */

int lp_native_unwind_load(const char **why) {
    *why = "this lprof was built without libunwind's header (apt-get install libunwind-dev, then rebuild)";
    return -1;
}

int lp_native_unwind_loaded(void) { return 0; }

int lp_native_unwind_here(uintptr_t *ips, int max) {
    (void)ips;
    (void)max;
    return 0;
}

int lp_native_unwind(void *ucontext, uintptr_t *ips, int max) {
    (void)ucontext;
    (void)ips;
    (void)max;
    return 0;
}
#endif
