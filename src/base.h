/* base: shared macros for every lprof C file (no state, no Python). */
#ifndef LPROF_BASE_H
#define LPROF_BASE_H

#include <stddef.h>
#include <stdint.h>

/* Marks functions that may be called from a signal handler or an allocator
 * hook: no malloc, no locks, no stdio, no Python API. Documentation only. */
#define LP_SIGNAL_SAFE

#define LP_LIKELY(x) __builtin_expect(!!(x), 1)
#define LP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LP_UNUSED(x) ((void)(x))

/* Symbols shared between the extension's translation units; the module is
 * built with -fvisibility=hidden so only PyInit__lprof is exported. */
#define LP_INTERNAL __attribute__((visibility("hidden")))

#endif
