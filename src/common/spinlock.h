/* common: the one spin lock (for tables shared with allocator hooks, where a
 * mutex could allocate or deadlock against the allocator it wraps). Holders
 * never call anything that may allocate or block. Hook-safe; NOT
 * async-signal-safe (a handler interrupting the holder would spin forever). */
#ifndef LPROF_COMMON_SPINLOCK_H
#define LPROF_COMMON_SPINLOCK_H

#include <sched.h>

static inline void lp_spin_lock(int *l) {
    unsigned spins = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++spins > 64) {
                sched_yield(); /* the holder may be descheduled: let it run */
                spins = 0;
            } else {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        }
    }
}

static inline void lp_spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

#endif
