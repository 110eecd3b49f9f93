/* Native frames: the splice of Python frames into a native stack (fake
 * addresses), symbolization of this test binary's own functions and libc's,
 * and libunwind's walk from a real signal handler. */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "aggregate/splice.h"
#include "aggregate/symbols.h"
#include "collect/native_unwind.h"
#include "harness.h"

/* fake address space: eval loop at [0x1000, 0x2000), rest of the interpreter
 * up to 0x8000; an extension at 0x9000; libc at 0xa000 */
#define EVAL       0x1100u
#define INTERP     0x5000u
#define EXT_LEAF   0x9010u
#define EXT_CALLER 0x9210u
#define LIBC       0xa000u
static const lp_splice_rules RULES = {{1, {0x1000}, {0x2000}}, 0x1000, 0x8000, 0};

static lp_rawframe py(uintptr_t code, int entry) {
    lp_rawframe f = {(void *)code, 2, entry ? LP_RAWFRAME_ENTRY : 0};
    return f;
}

static int is_native_at(lp_rawframe f, uintptr_t addr) {
    return f.offset == LP_OFFSET_NATIVE && (uintptr_t)f.code == addr;
}

/* return addresses are stored minus one (inside the call) */
#define RET(a) ((a) + 1)

TEST(c_function_under_its_python_line) {
    /* Python: leaf g (entered from C? no: 3.11+ inlined call) <- f (entry) */
    lp_rawframe p[2] = {py(0x700, 0), py(0x600, 1)};
    /* native: ext leaf <- ext caller <- interpreter helper (hidden) <- eval <- main (start-up) */
    uintptr_t ips[5] = {EXT_LEAF, RET(EXT_CALLER), RET(INTERP), RET(EVAL), RET(LIBC)};
    lp_rawframe out[16];
    int mismatch = -1;
    int n = lp_splice(p, 2, ips, 5, 0, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 0);
    REQUIRE(n == 4);
    CHECK(is_native_at(out[0], EXT_LEAF));
    CHECK(is_native_at(out[1], EXT_CALLER));
    CHECK(out[2].code == p[0].code && out[3].code == p[1].code);
}

TEST(python_callback_under_the_c_function_that_called_it) {
    /* Python: callback (entry) <- outer (entry); native: eval (callback) <-
     * ext trampoline <- eval (outer) */
    lp_rawframe p[2] = {py(0x800, 1), py(0x600, 1)};
    uintptr_t ips[4] = {EVAL, RET(EXT_CALLER), RET(EVAL), RET(LIBC)};
    lp_rawframe out[16];
    int mismatch = -1;
    int n = lp_splice(p, 2, ips, 4, 0, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 0);
    REQUIRE(n == 3);
    CHECK(out[0].code == p[0].code);
    CHECK(is_native_at(out[1], EXT_CALLER));
    CHECK(out[2].code == p[1].code);
}

TEST(eval_loop_split_in_two_parts_splices_at_either) {
    /* a PGO build's eval loop: the exported entry at [0x1000, 0x2000) and
     * its body, where the calls happen, at [0x3000, 0x4000) */
    lp_splice_rules split = RULES;
    REQUIRE(lp_ranges_add(&split.eval, 0x3000, 0x4000) == 1);
    CHECK_EQ_INT(lp_ranges_add(&split.eval, 0x3000, 0x4000), 0); /* held once */
    CHECK_EQ_INT(lp_ranges_add(&split.eval, 0x5000, 0x5000), 0); /* empty */
    lp_rawframe p[2] = {py(0x800, 1), py(0x600, 1)};
    uintptr_t ips[4] = {0x3100, RET(EXT_CALLER), RET(0x3200), RET(LIBC)};
    lp_rawframe out[16];
    int mismatch = -1;
    int n = lp_splice(p, 2, ips, 4, 0, &split, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 0);
    REQUIRE(n == 3);
    CHECK(out[0].code == p[0].code);
    CHECK(is_native_at(out[1], EXT_CALLER));
    CHECK(out[2].code == p[1].code);
    /* with the entry range alone, the body is just more interpreter code:
     * the Python frames then cannot be placed */
    n = lp_splice(p, 2, ips, 4, 0, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 1);
}

TEST(ranges_hold_at_most_their_limit) {
    lp_ranges r = {0};
    for (uintptr_t i = 0; i < LP_RANGES_MAX + 2; i++) lp_ranges_add(&r, i * 16, i * 16 + 8);
    CHECK_EQ_INT(r.n, LP_RANGES_MAX);
    CHECK(lp_ranges_has(&r, 4) && !lp_ranges_has(&r, 12));
    CHECK(!lp_ranges_has(&r, (LP_RANGES_MAX + 1) * 16 + 1));
}

TEST(show_all_keeps_interpreter_and_start_up_frames) {
    lp_rawframe p[1] = {py(0x600, 1)};
    uintptr_t ips[4] = {EXT_LEAF, RET(INTERP), RET(EVAL), RET(LIBC)};
    lp_splice_rules all = RULES;
    all.show_all = 1;
    lp_rawframe out[16];
    int mismatch = -1;
    int n = lp_splice(p, 1, ips, 4, 0, &all, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 0);
    REQUIRE(n == 4);
    CHECK(is_native_at(out[1], INTERP));
    CHECK(out[2].code == p[0].code);
    CHECK(is_native_at(out[3], LIBC));
}

TEST(disagreement_keeps_the_native_leaf_and_every_python_frame) {
    /* three entry frames but one eval call (a truncated native stack) */
    lp_rawframe p[3] = {py(0x700, 1), py(0x650, 1), py(0x600, 1)};
    uintptr_t ips[2] = {EXT_LEAF, RET(EVAL)};
    lp_rawframe out[16];
    int mismatch = 0;
    int n = lp_splice(p, 3, ips, 2, 0, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 1);
    REQUIRE(n == 4);
    CHECK(is_native_at(out[0], EXT_LEAF));
    CHECK(out[1].code == p[0].code && out[3].code == p[2].code);
    /* more eval calls than entry frames */
    uintptr_t more[3] = {EVAL, RET(EVAL), RET(EVAL)};
    n = lp_splice(p, 1, more, 3, 0, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 1);
    CHECK_EQ_INT(n, 1);
}

TEST(truncated_native_walk_puts_the_rest_of_python_rootward) {
    lp_rawframe p[3] = {py(0x700, 1), py(0x650, 1), py(0x600, 1)};
    uintptr_t ips[2] = {EXT_LEAF, RET(EVAL)}; /* the walk hit its limit here */
    lp_rawframe out[16];
    int mismatch = 1;
    int n = lp_splice(p, 3, ips, 2, 1, &RULES, out, 16, &mismatch);
    CHECK_EQ_INT(mismatch, 0);
    REQUIRE(n == 4);
    CHECK(is_native_at(out[0], EXT_LEAF));
    CHECK(out[1].code == p[0].code && out[2].code == p[1].code && out[3].code == p[2].code);
}

TEST(output_is_bounded) {
    lp_rawframe p[1] = {py(0x600, 1)};
    uintptr_t ips[40];
    for (int i = 0; i < 39; i++) ips[i] = EXT_LEAF + (uintptr_t)i * 16;
    ips[39] = RET(EVAL);
    lp_rawframe out[8];
    int mismatch = 0;
    CHECK_EQ_INT(lp_splice(p, 1, ips, 40, 0, &RULES, out, 8, &mismatch), 8);
}

/* ---- symbols ---------------------------------------------------------- */
__attribute__((noinline)) int lprof_test_known_function(int x) { return x * 3 + 1; }
static __attribute__((noinline)) int local_helper(int x) { return x ^ 0x55; }

TEST(own_and_static_functions_by_name) {
    lp_symbol s;
    uintptr_t a = (uintptr_t)(void *)&lprof_test_known_function;
    lp_symbols_lookup(a + 2, &s);
    REQUIRE(s.object && s.name);
    CHECK(strcmp(s.name, "lprof_test_known_function") == 0);
    CHECK(s.start == a);
    CHECK(strstr(s.object, "test_native") != NULL);
    lp_symbols_lookup((uintptr_t)(void *)&local_helper + 1, &s);
    REQUIRE(s.name); /* from .symtab: static functions are not in .dynsym */
    CHECK(strcmp(s.name, "local_helper") == 0);
    CHECK(local_helper(1) != lprof_test_known_function(1));
}

TEST(library_function_and_unknown_address) {
    lp_symbol s;
    lp_symbols_lookup((uintptr_t)(void *)&getpid + 1, &s); /* not intercepted by ASan */
    REQUIRE(s.object && s.name);
    CHECK(strstr(s.object, "libc") != NULL);
    CHECK(strstr(s.name, "getpid") != NULL);
    lp_symbols_lookup(0x10, &s); /* mapped nowhere */
    CHECK(s.object == NULL && s.name == NULL && s.start == 0x10);
}

TEST(demangles_cxx_names_and_copies_c_names) {
    char *c = lp_symbols_demangle("plain_c_name");
    REQUIRE(c);
    CHECK(strcmp(c, "plain_c_name") == 0);
    free(c);
    char *cxx = lp_symbols_demangle("_ZN6lpdemo6Burner3runEi");
    REQUIRE(cxx);
    CHECK(strcmp(cxx, "lpdemo::Burner::run(int)") == 0);
    free(cxx);
    lp_symbols_reset();
}

/* ---- libunwind from a signal handler ------------------------------------ */
static volatile sig_atomic_t got;
static uintptr_t seen[LP_NATIVE_MAX_DEPTH];
static volatile int seen_n;

static void on_prof(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    if (got) return;
    seen_n = lp_native_unwind(uc, seen, LP_NATIVE_MAX_DEPTH);
    got = 1;
}

__attribute__((noinline)) void lprof_test_spin_until_sampled(void) {
    volatile unsigned long x = 0;
    while (!got) x++;
}

__attribute__((noinline)) void lprof_test_outer_caller(void) {
    lprof_test_spin_until_sampled();
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

TEST(unwinds_the_interrupted_thread_from_its_handler) {
    const char *why = NULL;
    if (lp_native_unwind_load(&why) < 0) {
        fprintf(stderr, "libunwind not loadable: %s\n", why);
        CHECK(0); /* make deps installs it: a missing one is a failure here */
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_PROF, &it, NULL);
    lprof_test_outer_caller();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    REQUIRE(seen_n >= 3);
    lp_symbol s;
    lp_symbols_lookup(seen[0], &s);
    REQUIRE(s.name);
    CHECK(strcmp(s.name, "lprof_test_spin_until_sampled") == 0); /* the interrupted PC */
    lp_symbols_lookup(seen[1] - 1, &s);
    REQUIRE(s.name);
    CHECK(strcmp(s.name, "lprof_test_outer_caller") == 0);
    int found_test = 0;
    for (int i = 2; i < seen_n; i++) {
        lp_symbols_lookup(seen[i] - 1, &s);
        if (s.name && strcmp(s.name, "unwinds_the_interrupted_thread_from_its_handler") == 0) found_test = 1;
    }
    CHECK(found_test);
    lp_symbols_reset();
}

static uintptr_t here[16];
static int here_n;

__attribute__((noinline)) void lprof_test_hook_like_caller(void) {
    here_n = lp_native_unwind_here(here, 16);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

TEST(unwinds_from_an_ordinary_call_as_the_allocation_hooks_do) {
    const char *why = NULL;
    REQUIRE(lp_native_unwind_load(&why) == 0);
    lprof_test_hook_like_caller();
    REQUIRE(here_n >= 2);
    lp_symbol s;
    lp_symbols_lookup(here[0] - 1, &s); /* the caller of lp_native_unwind_here first */
    REQUIRE(s.name);
    CHECK(strcmp(s.name, "lprof_test_hook_like_caller") == 0);
    lp_symbols_lookup(here[1] - 1, &s);
    REQUIRE(s.name);
    CHECK(strcmp(s.name, "unwinds_from_an_ordinary_call_as_the_allocation_hooks_do") == 0);
    lp_symbols_reset();
}

RUN_TESTS(c_function_under_its_python_line, python_callback_under_the_c_function_that_called_it,
          eval_loop_split_in_two_parts_splices_at_either, ranges_hold_at_most_their_limit,
          show_all_keeps_interpreter_and_start_up_frames,
          disagreement_keeps_the_native_leaf_and_every_python_frame,
          truncated_native_walk_puts_the_rest_of_python_rootward, output_is_bounded,
          own_and_static_functions_by_name, library_function_and_unknown_address,
          demangles_cxx_names_and_copies_c_names, unwinds_the_interrupted_thread_from_its_handler,
          unwinds_from_an_ordinary_call_as_the_allocation_hooks_do)
