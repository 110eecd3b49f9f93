/* base: shared macros for every lprof C file (no state, no Python). */
#ifndef LPROF_BASE_H
#define LPROF_BASE_H

#include <stddef.h>
#include <stdint.h>

/* Two contexts with different rules (documentation only; the sampler's
 * handler is checked by `make ctest`, see tests/c/check_handler_symbols.sh).
 * LP_SIGNAL_SAFE: may run inside a signal handler (async-signal-safe): no
 * malloc, no locks (not even a spin lock: the interrupted code may hold it),
 * no stdio, no TLS initialisation, no Python API; only async-signal-safe
 * libc calls. Implies LP_HOOK_SAFE.
 * LP_HOOK_SAFE: may run inside an allocator hook (malloc or PyMem
 * wrapper), GIL held or not: no malloc, no Python API; may take a short
 * spin lock (never held across an allocation). */
#define LP_SIGNAL_SAFE
#define LP_HOOK_SAFE

#define LP_LIKELY(x)    __builtin_expect(!!(x), 1)
#define LP_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define LP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LP_UNUSED(x)    ((void)(x))

/* Symbols shared between the extension's translation units; the module is
 * built with -fvisibility=hidden so only PyInit__lprof is exported. */
#define LP_INTERNAL __attribute__((visibility("hidden")))

#endif
