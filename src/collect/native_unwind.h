/* collect: native stacks for lprof --native, taken inside the sampler's
 * signal handler with libunwind's local unwinder. libunwind is loaded at run
 * time (dlopen, RTLD_LOCAL: its _Unwind_* exports must not interpose the
 * C++ runtime's), so lprof builds and runs where it is absent; --native then
 * says so. Only libunwind's local-unwinding calls run in the handler
 * (documented async-signal-safe): init_local2 on the signal's own context,
 * step, get_reg. Design: docs/design-sampler.md ("Native frames"). */
#ifndef LPROF_COLLECT_NATIVE_UNWIND_H
#define LPROF_COLLECT_NATIVE_UNWIND_H

#include <stdint.h>

#include "common/base.h"

/* Native frames kept per sample (leaf side). */
#define LP_NATIVE_MAX_DEPTH 256

/* Loads libunwind and finds the dynamic loader's text. 0, or -1 with the
 * reason in *why. Idempotent; call before sampling starts (not signal-safe). */
LP_INTERNAL int lp_native_unwind_load(const char **why);
LP_INTERNAL int lp_native_unwind_loaded(void);

/* Instruction addresses of the interrupted thread, leaf first: ips[0] is
 * the interrupted PC, the rest are return addresses. ucontext is the signal
 * handler's third argument. Returns how many were written (0 when not
 * loaded, or when the PC is inside the dynamic loader, whose tables the
 * unwinder itself reads: a sample there keeps its Python frames only). */
LP_INTERNAL int lp_native_unwind(void *ucontext, uintptr_t *ips, int max) LP_SIGNAL_SAFE;

/* Return addresses of the calling thread from its caller's frame outward
 * (the allocation hooks, lprof --native --memory): no allocation, no lock
 * held across a call out. Returns how many were written (0 when not loaded). */
LP_INTERNAL int lp_native_unwind_here(uintptr_t *ips, int max) LP_HOOK_SAFE;

#endif
