/* Minimal C unit-test harness: CHECK continues, REQUIRE stops the test.
 * Each test_*.c defines tests with TEST(name) and ends with RUN_TESTS(...).
 * Exit status: 0 all passed, 1 a check failed. Prints "N passed, N failed". */
#ifndef LPROF_TEST_HARNESS_H
#define LPROF_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int harness_failed_checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            harness_failed_checks++;                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)
#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            harness_failed_checks++;                                                   \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
            return;                                                                    \
        }                                                                              \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                                                   \
    do {                                                                                                     \
        long long _a = (long long)(a), _b = (long long)(b);                                                  \
        if (_a != _b) {                                                                                      \
            harness_failed_checks++;                                                                         \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, _a, #b, _b); \
        }                                                                                                    \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                       \
    do {                                                                                            \
        double _a = (double)(a), _b = (double)(b);                                                  \
        if (fabs(_a - _b) > (tol)) {                                                                \
            harness_failed_checks++;                                                                \
            fprintf(stderr, "%s:%d: %s == %g, expected %g +- %g\n", __FILE__, __LINE__, #a, _a, _b, \
                    (double)(tol));                                                                 \
        }                                                                                           \
    } while (0)

#define TEST(name) static void name(void)

typedef void (*harness_fn)(void);
#define RUN_TESTS(...)                                            \
    int main(void) {                                              \
        harness_fn fns[] = {__VA_ARGS__};                         \
        const char *names = #__VA_ARGS__;                         \
        int passed = 0, failed = 0;                               \
        (void)names;                                              \
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) { \
            int before = harness_failed_checks;                   \
            fns[i]();                                             \
            if (harness_failed_checks == before) passed++;        \
            else failed++;                                        \
        }                                                         \
        printf("%d passed, %d failed\n", passed, failed);         \
        return failed ? 1 : 0;                                    \
    }

#endif
